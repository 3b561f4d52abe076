/* SPDX-License-Identifier: MIT */
/*
 * options.c - the options the commands that run a program share.
 */
#include <errno.h>
#include <getopt.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "session.h"
#include "dwarf/dwarf_cli.h"
#include "filter.h"

enum { OPT_JSON = 256, OPT_NO_OPTIMIZE, OPT_FILTER, OPT_TRIGGER, OPT_TRACING_OFF, OPT_USDT };

/* -p PID[,PID...]: appended to s->pids. 0 or -1 (said why). */
static int parse_pids(const char *arg, struct ukp_session *s)
{
	const char *p = arg;

	while (*p) {
		char *end;
		long v;
		pid_t *np;
		int i;

		errno = 0;
		v = strtol(p, &end, 10);
		if (end == p || errno || v <= 0 || v > INT32_MAX || (*end && *end != ',')) {
			ukp_err("-p %s: not a process id (PID[,PID...])", arg);
			return -1;
		}
		for (i = 0; i < s->npids && s->pids[i] != (pid_t)v; i++)
			;
		if (i < s->npids) {
			/* given twice: attached once */
			p = *end ? end + 1 : end;
			continue;
		}
		np = realloc(s->pids, ((size_t)s->npids + 1) * sizeof(*np));
		if (!np) {
			ukp_err("out of memory");
			return -1;
		}
		s->pids = np;
		s->pids[s->npids++] = (pid_t)v;
		p = *end ? end + 1 : end;
	}
	if (!s->npids) {
		ukp_err("-p needs a process id");
		return -1;
	}
	return 0;
}

/*
 * --filter EXPR after -e SPEC: compiled against its SPEC (errors with a
 * caret in EXPR). Several --filter for one -e are and-ed, as perf does.
 * 0 or -1 (said why).
 */
static int compile_filters(struct ukp_spec *specs, char **filters, const int *origin, int n)
{
	struct ukp_spec_error err;
	struct ukp_filter *f;
	int i;

	for (i = 0; i < n; i++) {
		char *text = filters[origin[i]], *p;

		if (!text)
			continue;
		/* each part on its own first: the caret points into what was typed */
		for (p = text; p; p = strchr(p, UKP_FILTER_SEP)) {
			char *part, *end;

			if (*p == UKP_FILTER_SEP)
				p++;
			end = strchr(p, UKP_FILTER_SEP);
			part = strndup(p, end ? (size_t)(end - p) : strlen(p));
			if (!part) {
				ukp_err("out of memory");
				return -1;
			}
			if (ukp_filter_compile(part, &specs[i], &f, &err)) {
				ukp_spec_err(part, err.col, "%s", err.msg);
				free(part);
				return -1;
			}
			free(f);
			free(part);
		}
		if (strchr(text, UKP_FILTER_SEP)) {
			/* (A) && (B) */
			size_t len = strlen(text);
			char *both = malloc(2 * len + 8), *o = both;

			if (!both) {
				ukp_err("out of memory");
				return -1;
			}
			*o++ = '(';
			for (p = text; *p; p++) {
				if (*p == UKP_FILTER_SEP) {
					memcpy(o, ") && (", 6);
					o += 6;
				} else {
					*o++ = *p;
				}
			}
			*o++ = ')';
			*o = '\0';
			free(text);
			filters[origin[i]] = text = both;
		}
		if (ukp_filter_compile(text, &specs[i], &specs[i].filter, &err)) {
			ukp_spec_err(text, err.col, "%s", err.msg);
			return -1;
		}
		specs[i].filter_text = strdup(text);
		if (!specs[i].filter_text) {
			ukp_err("out of memory");
			return -1;
		}
	}
	return 0;
}

/* --trigger TEXT after -e SPEC (trace; stat takes hist): one per -e.
 * 0 or -1 (said why). */
static int parse_triggers(struct ukp_spec *specs, char **triggers, const int *origin, int n,
			  enum ukp_mode mode)
{
	struct ukp_spec_error err;
	int i;

	for (i = 0; i < n; i++) {
		const char *trig = triggers[origin[i]];

		if (!trig)
			continue;
		if (ukp_trigger_parse(trig, &specs[i], &err)) {
			ukp_spec_err(trig, err.col, "%s", err.msg);
			return -1;
		}
		if (mode == UKP_MODE_STAT && (specs[i].stacktrace || specs[i].onoff)) {
			ukp_spec_err(trig, 0, "stat prints no events: %s is for ukprobe trace",
				     specs[i].stacktrace ? "stacktrace"
				     : specs[i].onoff > 0 ? "traceon" : "traceoff");
			return -1;
		}
		specs[i].trigger_text = strdup(trig);
		if (!specs[i].trigger_text) {
			ukp_err("out of memory");
			return -1;
		}
	}
	return 0;
}

/* --filter EXPR for the -e before it: kept in filters[i] (malloc'ed;
 * several joined by UKP_FILTER_SEP). 0 or -1 (said why). */
static int add_filter(char **filters, int ntexts, const char *arg)
{
	char *old, *text;

	if (!ntexts) {
		ukp_err("--filter %s: a filter applies to the -e SPEC before it, and there is none",
			arg);
		return -1;
	}
	old = filters[ntexts - 1];
	if (old) {
		if (asprintf(&text, "%s%c%s", old, UKP_FILTER_SEP, arg) < 0)
			text = NULL;
	} else {
		text = strdup(arg);
	}
	if (!text) {
		ukp_err("out of memory");
		return -1;
	}
	free(old);
	filters[ntexts - 1] = text;
	return 0;
}

/* The SPECs of -e and -E, each with its --filter (malloc'ed, several
 * joined by UKP_FILTER_SEP) and --trigger texts, in order. */
struct spec_texts {
	char **texts, **filters, **triggers;
	int n, cap;
	char **owned; /* texts read from -E files */
	int nowned;
};

/* 0 or -1 (said why); an owned text is freed on failure. */
static int add_text(struct spec_texts *t, char *text, bool owned)
{
	if (t->n == t->cap) {
		int cap = t->cap ? 2 * t->cap : 64;
		char **texts = realloc(t->texts, (size_t)cap * sizeof(char *));
		char **filters = texts ? realloc(t->filters, (size_t)cap * sizeof(char *)) : NULL;
		char **triggers = filters ? realloc(t->triggers, (size_t)cap * sizeof(char *)) : NULL;
		char **own = triggers ? realloc(t->owned, (size_t)cap * sizeof(char *)) : NULL;

		if (texts)
			t->texts = texts;
		if (filters)
			t->filters = filters;
		if (triggers)
			t->triggers = triggers;
		if (own)
			t->owned = own;
		if (!own) {
			if (owned)
				free(text);
			ukp_err("out of memory");
			return -1;
		}
		t->cap = cap;
	}
	t->filters[t->n] = NULL;
	t->triggers[t->n] = NULL;
	t->texts[t->n++] = text;
	if (owned)
		t->owned[t->nowned++] = text;
	return 0;
}

/*
 * -E FILE: one SPEC per line; blank lines and lines starting with '#'
 * are skipped (for thousands of probes, which argv would make unwieldy).
 * 0 or -1 (said why).
 */
static int add_file(struct spec_texts *t, const char *path)
{
	FILE *f = fopen(path, "r");
	char *line = NULL;
	size_t cap = 0;
	ssize_t len;
	int ret = 0;

	if (!f) {
		ukp_err("%s: %s", path, strerror(errno));
		return -1;
	}
	while (!ret && (len = getline(&line, &cap, f)) >= 0) {
		char *b = line, *e = line + len;

		while (e > b && (e[-1] == '\n' || e[-1] == '\r' || e[-1] == ' ' || e[-1] == '\t'))
			*--e = '\0';
		while (*b == ' ' || *b == '\t')
			b++;
		if (!*b || *b == '#')
			continue;
		b = strdup(b);
		if (!b) {
			ukp_err("out of memory");
			ret = -1;
			break;
		}
		ret = add_text(t, b, true);
	}
	if (!ret && ferror(f)) {
		ukp_err("%s: %s", path, strerror(errno));
		ret = -1;
	}
	free(line);
	fclose(f);
	return ret;
}

static void free_texts(struct spec_texts *t)
{
	int i;

	for (i = 0; i < t->nowned; i++)
		free(t->owned[i]);
	for (i = 0; t->filters && i < t->n; i++)
		free(t->filters[i]);
	free(t->owned);
	free(t->texts);
	free(t->filters);
	free(t->triggers);
}

/* What one option did (run_option). */
enum opt_result { OPT_DONE, OPT_USAGE, OPT_BAD, OPT_FAIL, OPT_HELP, OPT_OTHER };

/* -d SECONDS into s->duration. */
static enum opt_result duration_option(struct ukp_session *s)
{
	char *end;

	errno = 0;
	s->duration = strtod(optarg, &end);
	if (end == optarg || *end || errno || !(s->duration > 0) || s->duration > 1e7) {
		ukp_err("-d %s: not a duration in seconds", optarg);
		return OPT_USAGE;
	}
	return OPT_DONE;
}

/* --trigger TEXT for the -e before it (one per -e). */
static enum opt_result trigger_option(struct spec_texts *t)
{
	if (!t->n) {
		ukp_err("--trigger %s: a trigger applies to the -e SPEC before it, and "
			"there is none", optarg);
		return OPT_USAGE;
	}
	if (t->triggers[t->n - 1]) {
		ukp_err("--trigger %s: one --trigger per -e SPEC", optarg);
		return OPT_USAGE;
	}
	t->triggers[t->n - 1] = optarg;
	return OPT_DONE;
}

/* The SPECs and what goes with each: -e, -E, --filter, --trigger
 * (OPT_OTHER: not one of these). */
static enum opt_result spec_option(int c, struct spec_texts *t, const struct ukp_session *s,
				   const char **bad)
{
	switch (c) {
	case 'e':
		return add_text(t, optarg, false) ? OPT_FAIL : OPT_DONE;
	case 'E':
		return add_file(t, optarg) ? OPT_USAGE : OPT_DONE;
	case OPT_FILTER:
	case OPT_TRIGGER:
		if (s->mode == UKP_MODE_PROBES) {
			*bad = c == OPT_FILTER ? "--filter" : "--trigger";
			return OPT_BAD;
		}
		if (c == OPT_TRIGGER)
			return trigger_option(t);
		return add_filter(t->filters, t->n, optarg) ? OPT_USAGE : OPT_DONE;
	default:
		return OPT_OTHER;
	}
}

/* What is traced and how: -f, -p, -d, --no-optimize, --usdt,
 * --tracing-off (OPT_OTHER: not one of these). */
static enum opt_result target_option(int c, struct ukp_session *s, const char **bad)
{
	switch (c) {
	case 'f':
		if (s->mode == UKP_MODE_PROBES) {
			*bad = "--follow";
			return OPT_BAD;
		}
		s->follow = true;
		return OPT_DONE;
	case 'p':
		if (!UKP_CAN_ATTACH) {
			ukp_err("-p: attaching to a running process is not supported on "
				UKP_ARCH_NAME " yet: start the program under ukprobe");
			return OPT_USAGE;
		}
		return parse_pids(optarg, s) ? OPT_USAGE : OPT_DONE;
	case 'd':
		return duration_option(s);
	case OPT_NO_OPTIMIZE:
		s->no_optimize = true;
		return OPT_DONE;
	case OPT_USDT:
		if (s->mode != UKP_MODE_PROBES) {
			*bad = "--usdt";
			return OPT_BAD;
		}
		s->usdt = true;
		return OPT_DONE;
	case OPT_TRACING_OFF:
		if (s->mode != UKP_MODE_TRACE) {
			*bad = "--tracing-off";
			return OPT_BAD;
		}
		s->tracing_off = true;
		return OPT_DONE;
	default:
		return OPT_OTHER;
	}
}

/* An option getopt_long did not take: an argument missing (':'), or
 * unknown. */
static enum opt_result wrong_option(int c, char **argv)
{
	/* a short option, or a long one (its argv word) */
	bool is_short = optopt > 0 && optopt < 128;

	if (c == ':' && is_short)
		ukp_err("option -%c needs an argument", optopt);
	else if (c == ':')
		ukp_err("option %s needs an argument", argv[optind - 1]);
	else if (is_short)
		ukp_err("unknown option -%c", optopt);
	else
		ukp_err("unknown option %s", argv[optind - 1]);
	return OPT_USAGE;
}

/* One option c (getopt_long's) of a run command into t, s, *output and
 * *json; *bad names an option that is not for this command. */
static enum opt_result run_option(int c, char **argv, struct spec_texts *t, struct ukp_session *s,
				  const char **output, const char **json, const char **bad)
{
	enum opt_result r = spec_option(c, t, s, bad);

	if (r == OPT_OTHER)
		r = target_option(c, s, bad);
	if (r != OPT_OTHER)
		return r;
	switch (c) {
	case 'o':
		*output = optarg;
		return OPT_DONE;
	case OPT_JSON:
		if (!json) {
			*bad = "--json";
			return OPT_BAD;
		}
		*json = optarg;
		return OPT_DONE;
	case 'h':
		return OPT_HELP;
	default:
		return wrong_option(c, argv);
	}
}

/* The SPEC texts of t parsed into s->specs, resolved from DWARF (a SPEC
 * may become one per copy of its line), with their filters and
 * triggers. cmd: the command (for DWARF look-ups in it). 0, or
 * UKP_EXIT_USAGE (said). */
static int specs_from_texts(struct ukp_session *s, struct spec_texts *t, char **cmd)
{
	struct ukp_dw_where where = { 0 };
	int *origin = NULL;  /* origin[i]: the -e of SPEC i */

	if (ukp_cli_parse_specs(t->texts, t->n, &s->specs))
		return UKP_EXIT_USAGE;
	s->nspecs = t->n;
	where.cmd = cmd;
	where.pids = s->pids;
	where.npids = s->npids;
	if (ukp_dwarf_resolve_specs(&s->specs, &s->nspecs, &origin, &where)) {
		ukp_cli_free_specs(s->specs, s->nspecs);
		s->specs = NULL;
		s->nspecs = 0;
		return UKP_EXIT_USAGE;
	}
	if (compile_filters(s->specs, t->filters, origin, s->nspecs) ||
	    parse_triggers(s->specs, t->triggers, origin, s->nspecs, s->mode)) {
		free(origin);
		return UKP_EXIT_USAGE;
	}
	free(origin);
	return 0;
}

/* Every option of argv into t, s, *output and *json. -1 to go on,
 * else the exit code to return (help printed: 0). */
static int read_options(int argc, char **argv, const char *name, void (*usage)(FILE *),
			struct spec_texts *t, struct ukp_session *s, const char **output,
			const char **json)
{
	static const struct option opts[] = {
		{ "event", required_argument, NULL, 'e' },
		{ "events-file", required_argument, NULL, 'E' },
		{ "output", required_argument, NULL, 'o' },
		{ "follow", no_argument, NULL, 'f' },
		{ "pid", required_argument, NULL, 'p' },
		{ "duration", required_argument, NULL, 'd' },
		{ "json", required_argument, NULL, OPT_JSON },
		{ "no-optimize", no_argument, NULL, OPT_NO_OPTIMIZE },
		{ "tracing-off", no_argument, NULL, OPT_TRACING_OFF },
		{ "usdt", no_argument, NULL, OPT_USDT },
		{ "filter", required_argument, NULL, OPT_FILTER },
		{ "trigger", required_argument, NULL, OPT_TRIGGER },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char *shorts = s->mode == UKP_MODE_PROBES ? "+:e:E:o:p:h" : "+:e:E:o:fp:d:h";
	const char *bad = NULL;
	int c;

	optind = 1;
	opterr = 0; /* the messages name ukprobe and the command */
	while ((c = getopt_long(argc, argv, shorts, opts, NULL)) != -1) {
		switch (run_option(c, argv, t, s, output, json, &bad)) {
		case OPT_DONE:
			break;
		case OPT_HELP:
			usage(stdout);
			return 0;
		case OPT_BAD:
			ukp_err("option '%s' is not for ukprobe %s", bad, name);
			return UKP_EXIT_USAGE;
		case OPT_FAIL:
			return UKP_EXIT_FAIL;
		default:
			return UKP_EXIT_USAGE;
		}
	}
	return -1;
}

/* Options that cannot go together: 0, or -1 (said why). */
static int check_together(int argc, char **argv, const struct ukp_session *s)
{
	if (s->duration > 0 && !s->npids) {
		ukp_err("option -d is for a process ukprobe attaches to (-p PID)");
		return -1;
	}
	if (s->npids && optind < argc && s->mode != UKP_MODE_PROBES) {
		ukp_err("-p PID and a command (%s) cannot go together", argv[optind]);
		return -1;
	}
	return 0;
}

/*
 * -e SPEC (repeatable), -E FILE (repeatable: a file of SPECs), --filter EXPR
 * (after an -e), -o FILE, -f (not for probes), --no-optimize, --usdt
 * (probes only),
 * --json FILE (when json is not NULL), -h. s->mode tells the command.
 */
int ukp_cli_parse_run_options(int argc, char **argv, const char *name, void (*usage)(FILE *),
			      struct ukp_session *s, const char **output, const char **json)
{
	struct spec_texts t = { 0 };
	int code = read_options(argc, argv, name, usage, &t, s, output, json);

	if (code < 0 && check_together(argc, argv, s))
		code = UKP_EXIT_USAGE;
	if (code == UKP_EXIT_USAGE) {
		fprintf(stderr, "Try 'ukprobe %s --help'.\n", name);
	} else if (code < 0) {
		/* probes OBJ [GLOB]: no SPEC; the command makes one */
		code = s->mode == UKP_MODE_PROBES && !t.n ? 0 : specs_from_texts(s, &t, argv + optind);
		s->cmd = argv + optind;
		code = code ? code : -1;
	}
	free_texts(&t);
	return code;
}
