/* SPDX-License-Identifier: MIT */
/*
 * cmd_run.c - "ukprobe run": a bpftrace-language script on a program's
 * functions (doc/scripts.md). The script is parsed and checked here
 * (script/), translated to C, built into a shared object with the
 * system's C compiler, and loaded by the agent, whose probes then run
 * its code; its printf records and maps come back here to be printed as
 * bpftrace prints them.
 */
#include <errno.h>
#include <stdint.h>
#include <glob.h>
#include <signal.h>
#include <libgen.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "session.h"
#include "dwarf/dwarf_cli.h"
#include "script/script.h"
#include "script/script_out.h"

static void usage(FILE *out)
{
	fputs("Usage: ukprobe run -e 'PROGRAM' [ARG...] [OPTIONS] -- CMD [ARGS]...\n"
	      "       ukprobe run FILE [ARG...] [OPTIONS] -- CMD [ARGS]...\n"
	      "       ukprobe run -e 'PROGRAM' | FILE [ARG...] -p PID[,PID]... [-d SECONDS]\n"
	      "\n"
	      "Run CMD under a script in bpftrace's language, compiled to native code:\n"
	      "uprobe:OBJ:FUNC and uretprobe:OBJ:FUNC probes (FUNC may be a glob, OBJ a\n"
	      "path or a loaded object's name), BEGIN and END, predicates, maps and\n"
	      "aggregations, printf. The output is bpftrace's.\n"
	      "\n"
	      "  -e PROGRAM         the script's text (else FILE)\n"
	      "  ARG...             the script's positional parameters $1, $2, ...\n"
	      "  -p, --pid PID[,PID]...\n"
	      "                     attach to running processes instead of running CMD;\n"
	      "                     ends on Ctrl-C, SIGTERM, -d, or when they exit\n"
	      "  -d, --duration SECONDS\n"
	      "                     with -p: detach SECONDS after the probes are in place\n"
	      "  -f, --follow       trace the children CMD forks and the programs they\n"
	      "                     exec too (their maps merged; BEGIN and END are CMD's)\n"
	      "      --no-optimize  breakpoint probes only: no jump optimization\n"
	      "      --emit-c       print the script's C translation and exit\n"
	      "  -h, --help         show this help\n"
	      "\n"
	      "The script is built with the system's C compiler (cc, or $UKPROBE_CC).\n"
	      "See ukprobe-run(1).\n",
	      out);
}

struct run {
	struct script *sc;
	const struct ukp_spec *specs; /* as parsed, before the DWARF resolution */
	bool exited;              /* the script called exit() */
	struct script_out *out;
};

static void on_event(struct ukp_session *s, struct ukp_image *img, const struct ukp_probe_info *pi,
		     const struct ukp_rec *rec, void *arg)
{
	struct run *r = arg;

	(void)s;
	(void)pi;
	script_out_record(r->out, img, rec->data, rec->h.len - UKP_REC_HEADER);
}

static int on_script(struct ukp_session *s, struct ukp_image *img, const char *p, size_t len,
		     void *arg)
{
	struct run *r = arg;
	struct ukp_msg_script_hdr h;

	if (len >= sizeof(h)) {
		memcpy(&h, p, sizeof(h));
		if (h.kind == UKP_SCRIPT_EXIT) {
			/* exit(): attached, detach; launched, the agent ends
			 * the program by SIGTERM, which is then no failure */
			r->exited = true;
			s->stop = true;
			return 0;
		}
		if (h.kind == UKP_SCRIPT_BEGUN) {
			/* out before the program's own first write */
			fflush(NULL);
			ukp_region_begun(img);
			return 0;
		}
	}
	return script_out_msg(r->out, img, p, len);
}

/* a probe that matches nothing: where it is in the script */
static void on_spec_error(struct ukp_session *s, int spec, const char *msg, void *arg)
{
	struct run *r = arg;
	int i;

	(void)s;
	if (r->sc->origin && spec >= 0 && spec < r->sc->norigin)
		spec = r->sc->origin[spec];
	for (i = 0; i < r->sc->nprobes; i++)
		if (r->sc->probes[i].spec == spec) {
			const struct probe *p = &r->sc->probes[i];

			script_error(r->sc, p->line, p->col, p->end, "%s", msg);
			return;
		}
	ukp_err("%s", msg);
}

/* The DWARF resolution's error about SPEC spec (column col of its
 * text): at the args->NAME it is about, else at the probe. */
static void on_dwarf_error(int spec, int col, const char *msg, void *arg)
{
	const struct run *r = arg;
	const struct ukp_spec *s = &r->specs[spec];
	int i, j;

	for (i = 0; i < r->sc->nprobes; i++) {
		const struct probe *p = &r->sc->probes[i];
		const struct block *b = &r->sc->blocks[p->block];

		if (p->spec != spec)
			continue;
		for (j = s->nargs - 1; j >= 0; j--)
			if (col >= s->args[j].col && j < b->nfetch) {
				const struct node *at = b->fetch_at[j];

				script_error(r->sc, at->line, at->col, at->end, "%s", msg);
				return;
			}
		script_error(r->sc, p->line, p->col, p->end, "%s", msg);
		return;
	}
	ukp_err("%s", msg);
}

static void on_batch(struct ukp_session *s, void *arg)
{
	(void)s;
	fflush(stdout);
	(void)arg;
}

static char *read_file(const char *path)
{
	FILE *f = fopen(path, "r");
	char *buf = NULL;
	size_t n = 0, cap = 0;
	int c;

	if (!f) {
		ukp_err("cannot read %s: %s", path, strerror(errno));
		return NULL;
	}
	while ((c = fgetc(f)) != EOF) {
		if (n + 2 > cap) {
			cap = cap ? cap * 2 : 4096;
			buf = realloc(buf, cap);
			if (!buf) {
				fclose(f);
				return NULL;
			}
		}
		buf[n++] = (char)c;
	}
	fclose(f);
	if (!buf)
		buf = calloc(1, 1);
	else
		buf[n] = '\0';
	return buf;
}

/* An OBJ as bpftrace takes it: a library's short name ("libc") is the
 * file the system's library directories have for it ("libc.so.6"), by
 * its name, which the agent knows a loaded object by; anything else
 * (a path, "libc.so.6", the program's name) as it is. */
static char *object_name(const char *obj)
{
	static const char *const dirs[] = {
		"/lib/*-linux-*", "/usr/lib/*-linux-*", "/lib64", "/usr/lib64", "/lib", "/usr/lib",
		"/usr/local/lib",
	};
	size_t i, k;

	if (strchr(obj, '/') || strstr(obj, ".so") || strncmp(obj, "lib", 3))
		return strdup(obj);
	for (i = 0; i < sizeof(dirs) / sizeof(dirs[0]); i++) {
		char pat[512];
		glob_t g;

		snprintf(pat, sizeof(pat), "%s/%s.so.*", dirs[i], obj);
		if (glob(pat, 0, NULL, &g))
			continue;
		for (k = 0; k < g.gl_pathc; k++) {
			char *base = strrchr(g.gl_pathv[k], '/') + 1;

			/* "libc.so.6", not "libc.so.6.debug" nor a linker script */
			if (ukp_is_program(g.gl_pathv[k]) || strchr(base + strlen(obj) + 4, '.'))
				continue;
			base = strdup(base);
			globfree(&g);
			return base;
		}
		globfree(&g);
	}
	return strdup(obj);
}

/* -p PID[,PID]...: appended to s->pids. 0 or -1 (said why). */
static int parse_pids(const char *arg, struct ukp_session *s)
{
	const char *p = arg;

	while (*p) {
		char *end;
		long v = strtol(p, &end, 10);

		if (end == p || v <= 0 || v > INT32_MAX || (*end && *end != ',')) {
			ukp_err("-p %s: not a process id (PID[,PID...])", arg);
			return -1;
		}
		s->pids = realloc(s->pids, ((size_t)s->npids + 1) * sizeof(*s->pids));
		if (!s->pids)
			return -1;
		s->pids[s->npids++] = (pid_t)v;
		p = *end ? end + 1 : end;
	}
	return 0;
}

/* The script's uprobes and usdt probes as SPECs, one each, in order,
 * with what their block fetches through the SPEC (args->NAME, a usdt
 * probe's argN, uaddr()): argument i of the SPEC is the block's fetch i
 * (sema.c). */
static int make_specs(struct script *sc, struct ukp_session *s)
{
	char **texts = calloc((size_t)sc->nspecs + 1, sizeof(*texts));
	int i, j, n = 0, err;

	if (!texts)
		return -1;
	for (i = 0; i < sc->nprobes; i++) {
		const struct probe *p = &sc->probes[i];
		const struct block *b = &sc->blocks[p->block];
		char *obj, *t;
		size_t len;
		FILE *f;

		if (p->type > P_USDT)
			continue;
		obj = object_name(p->obj);
		f = obj ? open_memstream(&t, &len) : NULL;
		if (!f) {
			free(obj);
			return -1;
		}
		fprintf(f, "%c:run/p%d %s:%s", p->type == P_URETPROBE ? 'r' : 'p', i, obj, p->func);
		for (j = 0; j < b->nfetch; j++)
			fprintf(f, " %c%d=%s", b->fetch[j][0], j, b->fetch[j] + 2);
		fclose(f);
		texts[n++] = t;
		free(obj);
	}
	err = n ? ukp_cli_parse_specs(texts, n, &s->specs) : 0;
	s->nspecs = n;
	/* uaddr(): the symbol's address itself, not the word there */
	for (i = 0; !err && i < n; i++)
		for (j = 0; j < s->specs[i].nargs; j++)
			if (s->specs[i].args[j].name[0] == 'u' &&
			    s->specs[i].args[j].base == UKP_FA_SYM)
				s->specs[i].args[j].nderef = 0;
	for (i = 0; i < n; i++)
		free(texts[i]);
	free(texts);
	return err;
}

int ukp_cmd_run(int argc, char **argv)
{
	struct ukp_session s = { .mode = UKP_MODE_STAT };
	struct script sc = { .file = "stdin" };
	struct ukp_session_ops ops = { .event = on_event, .batch = on_batch };
	struct run r = { .sc = &sc };
	const char *program = NULL, *file = NULL;
	bool emit_c = false;
	char *dir = NULL, *so = NULL;
	int i, code;

	for (i = 1; i < argc; i++) {
		const char *a = argv[i];

		if (!strcmp(a, "--")) {
			i++;
			break;
		} else if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
			usage(stdout);
			return 0;
		} else if (!strcmp(a, "-e")) {
			if (++i == argc) {
				ukp_err("-e needs a program");
				return UKP_EXIT_USAGE;
			}
			program = argv[i];
		} else if (!strcmp(a, "--no-optimize")) {
			s.no_optimize = true;
		} else if (!strcmp(a, "--emit-c")) {
			emit_c = true;
		} else if (!strcmp(a, "-p") || !strcmp(a, "--pid")) {
			if (++i == argc || parse_pids(argv[i], &s))
				return UKP_EXIT_USAGE;
		} else if (!strcmp(a, "-d") || !strcmp(a, "--duration")) {
			char *end;

			if (++i == argc || (s.duration = strtod(argv[i], &end)) <= 0 || *end) {
				ukp_err("-d needs a number of seconds");
				return UKP_EXIT_USAGE;
			}
		} else if (!strcmp(a, "-f") || !strcmp(a, "--follow")) {
			s.follow = true;
		} else if (a[0] == '-' && a[1]) {
			ukp_err("run: unknown option '%s'", a);
			fputs("Try 'ukprobe run --help'.\n", stderr);
			return UKP_EXIT_USAGE;
		} else if (!program && !file) {
			file = a;
		} else {
			sc.params = realloc(sc.params, (size_t)(sc.nparams + 1) * sizeof(*sc.params));
			sc.params[sc.nparams++] = argv[i];
		}
	}
	if (!program && !file) {
		ukp_err("run: no program: -e 'PROGRAM' or FILE");
		fputs("Try 'ukprobe run --help'.\n", stderr);
		return UKP_EXIT_USAGE;
	}
	if (file) {
		sc.src = read_file(file);
		sc.file = file;
		if (!sc.src)
			return UKP_EXIT_USAGE;
	} else {
		sc.src = strdup(program);
	}
	if (script_parse(&sc) || script_check(&sc))
		return UKP_EXIT_USAGE;
	if (emit_c)
		return script_gen(&sc, stdout) ? UKP_EXIT_FAIL : 0;
	if (i >= argc && !s.npids) {
		ukp_err("run: no command to run: ukprobe run ... -- CMD [ARGS], or -p PID");
		return UKP_EXIT_USAGE;
	}
	if (i < argc && s.npids) {
		ukp_err("run: -p PID or -- CMD, not both");
		return UKP_EXIT_USAGE;
	}
	if (s.duration && !s.npids) {
		ukp_err("run: -d goes with -p");
		return UKP_EXIT_USAGE;
	}
	s.cmd = i < argc ? argv + i : NULL;
	if (make_specs(&sc, &s))
		return UKP_EXIT_USAGE;
	{
		/* args->NAME: the parameters by name through the debug
		 * information; a function inlined elsewhere gets a SPEC per
		 * copy, each running its original's handler */
		struct ukp_dw_where where = { .cmd = s.cmd, .pids = s.pids, .npids = s.npids,
					      .err = on_dwarf_error, .err_arg = &r };
		int n0 = s.nspecs;

		r.specs = s.specs;
		if (ukp_dwarf_resolve_specs(&s.specs, &s.nspecs, &sc.origin, &where)) {
			ukp_cli_free_specs(s.specs, s.nspecs);
			return UKP_EXIT_USAGE;
		}
		sc.norigin = s.nspecs;
		if (s.nspecs == n0) {
			free(sc.origin);
			sc.origin = NULL;
		}
	}
	so = script_build(&sc, &dir);
	if (!so) {
		script_cleanup(dir);
		return UKP_EXIT_FAIL;
	}
	r.out = script_out_new(&sc, stdout);
	if (!r.out || setenv(UKP_ENV_SCRIPT, so, 1)) {
		ukp_err("out of memory");
		script_cleanup(dir);
		return UKP_EXIT_FAIL;
	}
	s.script_msg = on_script;
	s.script_arg = &r;
	s.spec_error = on_spec_error;
	if (s.npids) {
		/* attached: the agent gets the script's path with CONFIG */
		s.load = so;
		s.load_script = true;
	}
	code = ukp_session_prepare(&s);
	if (!code) {
		code = ukp_session_run(&s, &ops, &r);
		if (s.first && !s.first->setup_failed && script_out_started(r.out))
			script_out_end(r.out, s.first);
		if (r.exited && code == 128 + SIGTERM)
			code = 0;
	}
	fflush(stdout);
	ukp_session_free(&s);
	ukp_cli_free_specs(s.specs, s.nspecs);
	script_cleanup(dir);
	free(so);
	free(sc.origin);
	return code;
}
