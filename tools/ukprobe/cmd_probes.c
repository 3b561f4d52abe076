/* SPDX-License-Identifier: MIT */
/*
 * cmd_probes.c - "ukprobe probes": what SPECs resolve to, without
 * tracing anything.
 *
 *   ukprobe probes -e SPEC... [--] CMD [ARGS]...
 *   ukprobe probes OBJ [GLOB]
 *
 * The first form runs CMD with the agent in probes mode: the agent
 * resolves and registers every SPEC from its constructor, reports, and
 * ends the process before main() runs (the objects' own initializers do
 * run). The second lists the functions of OBJ that match GLOB (default
 * "*"), as the SPEC "p OBJ:GLOB" would probe them. The object is loaded
 * for real, in a process of its own, so that the list is what the
 * library decides on the code as loaded (symbols, instruction
 * boundaries, blacklist, endbr64): a program is run as in the first form;
 * a shared library is dlopen()ed by the agent inside ukprobe-host, a
 * program that does nothing. (dlopen() in ukprobe itself would run the
 * library's initializers in ukprobe, mix its signal handlers with the
 * library's, and cannot load a position-independent executable at all.)
 */
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "sdt_refusal.h"
#include "session.h"
#include "dwarf/dwarf_cli.h"

static void usage(FILE *out)
{
	fputs("Usage: ukprobe probes -e SPEC [-e SPEC]... [-o FILE] [--] CMD [ARGS]...\n"
	      "       ukprobe probes [-o FILE] OBJ [GLOB]\n"
	      "       ukprobe probes --usdt [-o FILE] OBJ [PROVIDER:NAME]\n"
	      "       ukprobe probes -p PID -e SPEC... | -p PID OBJ [GLOB]\n"
	      "       ukprobe probes --lines OBJ:FUNC\n"
	      "       ukprobe probes --vars OBJ:FUNC|OBJ:FILE:LINE|OBJ:FUNC:+N\n"
	      "\n"
	      "Show what SPECs resolve to in CMD (CMD's main() does not run), or list\n"
	      "the functions of OBJ (a path, or a library name such as libz.so.1)\n"
	      "that match GLOB (default *) as 'p OBJ:GLOB' would probe them; from\n"
	      "OBJ's debug information, the source lines of FUNC that have code\n"
	      "(--lines), or the variables a probe there can name (--vars).\n"
	      "\n"
	      "  -e, --event SPEC   a probe (see ukprobe trace --help)\n"
	      "  -p, --pid PID      in the running process PID (OBJ: as it has it loaded)\n"
	      "  -E, --events-file FILE  SPECs, one per line (# comments)\n"
	      "  -o, --output FILE  write the list to FILE instead of standard output\n"
	      "      --usdt         list OBJ's SDT probes (<sys/sdt.h>, USDT): each\n"
	      "                     PROVIDER:NAME (a glob; NAME alone: any provider)\n"
	      "                     with its ELF address, semaphore and argument specs\n"
	      "      --no-optimize  breakpoint probes only: no jump optimization\n"
	      "  -h, --help         show this help\n"
	      "\n"
	      "Columns: the event; the address in this run; the probe point; the\n"
	      "address in the object's ELF file (usable as OBJ:0xADDR); whether the\n"
	      "probe is optimized (jump, ftrace) or why not; for a function that\n"
	      "cannot be probed, why, and for an object not loaded yet, that the\n"
	      "probe waits for it.\n"
	      "See ukprobe-probes(1).\n",
	      out);
}

struct probes_out {
	FILE *out;
	bool header;
	bool usdt;      /* --usdt: the SDT probes' own columns */
};

static const char *base_name(const char *path)
{
	const char *s = strrchr(path, '/');

	return s ? s + 1 : path;
}

static void header(struct probes_out *o)
{
	if (o->header)
		return;
	o->header = true;
	if (o->usdt)
		fprintf(o->out, "%-36s %-28s %-28s %-10s %s\n", "SDT PROBE", "ELF ADDRESS",
			"SEMAPHORE", "OPTIMIZED", "ARGUMENTS");
	else
		fprintf(o->out, "%-36s %-18s %-44s %-28s %s\n", "EVENT", "ADDRESS",
			"PROBE POINT", "ELF ADDRESS", "OPTIMIZED");
}

/* An SDT probe's where (agent/probes.c): "%PROVIDER:NAME[ args=SPECS]
 * [ semaphore=0xELFADDR][ refused=N,...]", cut in four (args, sem and
 * refused "" when none). */
static void sdt_parts(const char *where, char *point, size_t plen, char *args, size_t alen,
		      char *sem, size_t slen, char *refused, size_t rlen)
{
	const char *a = strstr(where, " args="), *m = strstr(where, " semaphore="),
		   *r = strstr(where, " refused="), *end = r ? r : where + strlen(where);
	size_t n = a ? (size_t)(a - where) : m ? (size_t)(m - where) : (size_t)(end - where);

	snprintf(point, plen, "%.*s", (int)n, where);
	snprintf(args, alen, "%.*s", a ? (int)((m ? m : end) - a - 6) : 0, a ? a + 6 : "");
	snprintf(sem, slen, "%.*s", m ? (int)(end - m - 11) : 0, m ? m + 11 : "");
	snprintf(refused, rlen, "%s", r ? r + 9 : "");
}

/* "  # $argN: why" for each argument of args (the note's specs) that
 * refused ("N,M") lists: the forms ukprobe does not fetch. */
static void sdt_refusals(FILE *out, const char *args, const char *refused)
{
	const char *r = refused;

	while (*r) {
		long want = strtol(r, (char **)&r, 10);
		const char *s = args, *e = args;
		long k;

		for (k = 1; *s; k++) {
			while (*s == ' ')
				s++;
			/* (AArch64's "[sp, 16]" has a blank inside) */
			for (e = s; *e && (*e != ' ' || (memchr(s, '[', (size_t)(e - s)) &&
							 !memchr(s, ']', (size_t)(e - s))));
			     e++)
				;
			if (k == want)
				break;
			s = e;
		}
		if (k == want && e > s) {
			bool known;

			fprintf(out, "  # $arg%ld: %s", want, ukp_sdt_refusal(s, (size_t)(e - s), &known));
		}
		if (*r == ',')
			r++;
		else
			break;
	}
}

static void show_probe(struct ukp_session *s, struct ukp_image *img,
		       const struct ukp_probe_report *r, void *arg)
{
	struct probes_out *o = arg;
	const struct ukp_msg_probe *m = r->m;
	const struct ukp_spec *spec = &s->specs[m->spec];
	char name[2 * UKP_SPEC_NAME_MAX + 2], addr[24], elf[512], point[512];

	(void)img;
	/* a SPEC that failed as a whole is an error (images.c) */
	if (m->err && !(m->flags & UKP_PROBE_GLOB))
		return;
	header(o);
	snprintf(name, sizeof(name), "%s/%s", spec->group,
		 m->flags & UKP_PROBE_PENDING && spec->is_glob ? spec->symbol : r->event);
	if (m->flags & UKP_PROBE_PENDING) {
		if (spec->is_sdt)
			snprintf(point, sizeof(point), "%%%s%s", spec->symbol,
				 spec->is_glob ? " (each match)" : "");
		else if (spec->is_glob)
			snprintf(point, sizeof(point), "%s (each match)", spec->symbol);
		else if (spec->is_addr)
			snprintf(point, sizeof(point), "-");
		else
			snprintf(point, sizeof(point), "%s+0x%lx", spec->symbol, spec->offset);
		if (spec->is_glob || spec->is_sdt)
			snprintf(elf, sizeof(elf), "%s", base_name(r->object));
		else
			snprintf(elf, sizeof(elf), "%s:0x%lx", base_name(r->object),
				 (unsigned long)m->addr);
		fprintf(o->out, "%-36s %-18s %-44s %-28s %s\n", name, "-", point, elf,
			"pending: not loaded yet, probed when it is");
		return;
	}
	if (m->err) {
		/* one match of a glob that cannot be probed */
		struct ukp_failure f = { m->err, m->what, m->argi, m->addr, r->object, r->why };
		char msg[512], fn[256];

		ukp_explain_failure(spec, &f, msg, sizeof(msg));
		snprintf(fn, sizeof(fn), "%s+0x%lx", r->where, spec->offset);
		fprintf(o->out, "%-36s %-18s %-44s %-28s cannot probe: %s\n", name, "-", fn, "-", msg);
		return;
	}
	snprintf(addr, sizeof(addr), "0x%lx", (unsigned long)m->addr);
	snprintf(elf, sizeof(elf), "%s:0x%lx", base_name(r->object),
		 (unsigned long)(m->addr - m->base));
	if (spec->is_sdt) {
		char args[512], sem[64], semat[600], refused[64];
		const char *opt = m->opt == 1 ? "jump" : m->opt == 2 ? "ftrace" : m->opt == 0 ? "no: " : "?";

		sdt_parts(r->where, point, sizeof(point), args, sizeof(args), sem, sizeof(sem), refused,
			  sizeof(refused));
		if (!o->usdt) {
			fprintf(o->out, "%-36s %-18s %-44s %-28s %s%s\n", name, addr, point, elf, opt,
				m->opt == 0 ? r->why : "");
			return;
		}
		snprintf(semat, sizeof(semat), "%s%s%s", sem[0] ? base_name(r->object) : "-",
			 sem[0] ? ":" : "", sem);
		fprintf(o->out, "%-36s %-28s %-28s %-10s %s%s%s", point + 1, elf, semat,
			m->opt == 1 ? "jump" : m->opt == 2 ? "ftrace" : "no", args[0] ? args : "-",
			m->opt == 0 ? "  # not optimized: " : "", m->opt == 0 ? r->why : "");
		sdt_refusals(o->out, args, refused);
		fputc('\n', o->out);
		return;
	}
	if (spec->is_watch) {
		/* a data watchpoint: which mechanism it got */
		fprintf(o->out, "%-36s %-18s %-44s %-28s watchpoint: %s\n", name, addr, r->where,
			elf, r->why);
		return;
	}
	fprintf(o->out, "%-36s %-18s %-44s %-28s %s%s\n", name, addr, r->where, elf,
		m->opt == 1 ? "jump" : m->opt == 2 ? "ftrace" : m->opt == 0 ? "no: " : "?", m->opt == 0 ? r->why : "");
}

/* "ukprobe probes OBJ [GLOB]": the SPEC, and what runs to load OBJ.
 * *path: OBJ's path when it has one (free it). */
static int object_session(struct ukp_session *s, char **args, char **spec_text, char **argv1,
			  char **pathp)
{
	const char *obj = args[0], *glob = args[1] ? args[1] : "*";
	char *path = NULL, *text, pat[1024];
	int code;

	/* --usdt: "p OBJ:%PROVIDER:NAME", GLOB the note's PROVIDER:NAME
	 * (or its NAME) */
	if (s->usdt) {
		snprintf(pat, sizeof(pat), "%%%s%s", strchr(glob, ':') ? "" : "*:", glob);
		glob = pat;
	}

	if (args[1] && args[2]) {
		ukp_err("ukprobe probes OBJ [GLOB]: one object and one pattern");
		return UKP_EXIT_USAGE;
	}
	if (s->npids) {
		/* attached: the object as the process has it loaded (or
		 * pending: the process is not made to load anything) */
		if (asprintf(&text, "p %s:%s", obj, glob) < 0)
			return UKP_EXIT_FAIL;
		s->made_spec = true;
		*spec_text = text;
		code = ukp_cli_parse_specs(spec_text, 1, &s->specs) ? UKP_EXIT_USAGE : 0;
		if (!code)
			s->nspecs = 1;
		return code;
	}
	if (strchr(obj, '/')) {
		path = realpath(obj, NULL);
		if (!path) {
			ukp_err("%s: no such file", obj);
			return UKP_EXIT_FAIL;
		}
	} else if (!strstr(obj, ".so")) {
		path = ukp_find_command(obj); /* "ls": a program in PATH */
	}
	*pathp = path;
	if (path && ukp_is_program(path)) {
		/* run it: the agent stops it before main() */
		argv1[0] = strdup(path);
	} else {
		/* a library: the host dlopen()s it */
		argv1[0] = ukp_find_host();
		s->load = path ? path : obj;
	}
	if (!argv1[0])
		return UKP_EXIT_FAIL;
	s->cmd = argv1;
	s->made_spec = true;
	if (asprintf(&text, "p %s:%s", path ? path : obj, glob) < 0)
		return UKP_EXIT_FAIL;
	*spec_text = text;
	code = ukp_cli_parse_specs(spec_text, 1, &s->specs) ? UKP_EXIT_USAGE : 0;
	if (!code)
		s->nspecs = 1;
	return code;
}

/* probes --lines|--vars POINT (dwarf_list.c) */
static int list_source(int argc, char **argv)
{
	struct ukp_dw_where w = { 0 };
	char *cmd[2] = { NULL, NULL };
	const char *colon;

	if (argc != 3) {
		ukp_err("ukprobe probes %s takes one OBJ:FUNC%s", argv[1],
			strcmp(argv[1], "--vars") ? "" : " or OBJ:FILE:LINE");
		fputs("Try 'ukprobe probes --help'.\n", stderr);
		return UKP_EXIT_USAGE;
	}
	/* OBJ may be a program in PATH */
	colon = strchr(argv[2], ':');
	if (colon && !memmem(argv[2], (size_t)(colon - argv[2]), ".so", 3)) {
		cmd[0] = strndup(argv[2], (size_t)(colon - argv[2]));
		w.cmd = cmd;
	}
	{
		int code = ukp_dwarf_list(!strcmp(argv[1], "--vars"), argv[2], &w, stdout);

		free(cmd[0]);
		return code;
	}
}

int ukp_cmd_probes(int argc, char **argv)
{
	const struct ukp_session_ops ops = { .probe = show_probe };
	struct ukp_session s = { .mode = UKP_MODE_PROBES };
	struct probes_out o = { NULL, false, false };
	char *spec_text = NULL, *argv1[2] = { NULL, NULL }, *path = NULL;
	const char *output = NULL;
	int code;

	if (argc >= 2 && (!strcmp(argv[1], "--lines") || !strcmp(argv[1], "--vars")))
		return list_source(argc, argv);
	code = ukp_cli_parse_run_options(argc, argv, "probes", usage, &s, &output, NULL);
	if (code >= 0)
		return code;
	code = 0;
	o.usdt = s.usdt;
	if (s.usdt && (s.nspecs || !s.cmd[0])) {
		ukp_err("--usdt takes an object: ukprobe probes --usdt OBJ [PROVIDER:NAME]");
		return UKP_EXIT_USAGE;
	}
	if (!s.nspecs) {
		if (!s.cmd[0]) {
			ukp_err("nothing to show: ukprobe probes -e SPEC -- CMD, or ukprobe probes OBJ");
			fputs("Try 'ukprobe probes --help'.\n", stderr);
			return UKP_EXIT_USAGE;
		}
		code = object_session(&s, s.cmd, &spec_text, argv1, &path);
	}
	if (!code)
		code = ukp_session_prepare(&s);
	if (!code) {
		o.out = ukp_open_output(output);
		code = o.out ? ukp_session_run(&s, &ops, &o) : UKP_EXIT_FAIL;
		if (!code && s.probe_errors)
			code = UKP_EXIT_FAIL;
	}
	if (o.out && fclose(o.out))
		code = code ? code : UKP_EXIT_FAIL;
	ukp_session_free(&s);
	ukp_cli_free_specs(s.specs, s.nspecs);
	free(spec_text);
	free(argv1[0]);
	free(path);
	return code;
}
