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

enum { OPT_JSON = 256, OPT_NO_OPTIMIZE };

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
 * -e SPEC (repeatable), -o FILE, -f (not for probes), --no-optimize,
 * --json FILE (when json is not NULL), -h. s->mode tells the command.
 */
int ukp_cli_parse_run_options(int argc, char **argv, const char *name, void (*usage)(FILE *),
			      struct ukp_session *s, const char **output, const char **json)
{
	static const struct option opts[] = {
		{ "event", required_argument, NULL, 'e' },
		{ "output", required_argument, NULL, 'o' },
		{ "follow", no_argument, NULL, 'f' },
		{ "pid", required_argument, NULL, 'p' },
		{ "duration", required_argument, NULL, 'd' },
		{ "json", required_argument, NULL, OPT_JSON },
		{ "no-optimize", no_argument, NULL, OPT_NO_OPTIMIZE },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	char **texts = calloc((size_t)argc, sizeof(*texts));
	const char *bad = NULL;
	int ntexts = 0, c;

	if (!texts) {
		ukp_err("out of memory");
		return UKP_EXIT_FAIL;
	}
	optind = 1;
	opterr = 0; /* the messages below name ukprobe and the command */
	while ((c = getopt_long(argc, argv, s->mode == UKP_MODE_PROBES ? "+:e:o:p:h" : "+:e:o:fp:d:h",
				opts, NULL)) != -1) {
		switch (c) {
		case 'e':
			texts[ntexts++] = optarg;
			break;
		case 'o':
			*output = optarg;
			break;
		case 'f':
			if (s->mode == UKP_MODE_PROBES) {
				bad = "--follow";
				goto bad_option;
			}
			s->follow = true;
			break;
		case 'p':
			if (parse_pids(optarg, s))
				goto usage;
			break;
		case 'd': {
			char *end;

			errno = 0;
			s->duration = strtod(optarg, &end);
			if (end == optarg || *end || errno || !(s->duration > 0) ||
			    s->duration > 1e7) {
				ukp_err("-d %s: not a duration in seconds", optarg);
				goto usage;
			}
			break;
		}
		case OPT_NO_OPTIMIZE:
			s->no_optimize = true;
			break;
		case OPT_JSON:
			if (!json) {
				bad = "--json";
				goto bad_option;
			}
			*json = optarg;
			break;
		case 'h':
			usage(stdout);
			free(texts);
			return 0;
		case ':':
			/* a short option, or a long one (its argv word) */
			if (optopt > 0 && optopt < 128)
				ukp_err("option -%c needs an argument", optopt);
			else
				ukp_err("option %s needs an argument", argv[optind - 1]);
			goto usage;
		default:
			if (optopt > 0 && optopt < 128)
				ukp_err("unknown option -%c", optopt);
			else
				ukp_err("unknown option %s", argv[optind - 1]);
			goto usage;
		}
	}
	if (s->duration > 0 && !s->npids) {
		ukp_err("option -d is for a process ukprobe attaches to (-p PID)");
		goto usage;
	}
	if (s->npids && optind < argc && s->mode != UKP_MODE_PROBES) {
		ukp_err("-p PID and a command (%s) cannot go together", argv[optind]);
		goto usage;
	}
	/* probes OBJ [GLOB]: no SPEC; the command makes one */
	if (s->mode == UKP_MODE_PROBES && !ntexts) {
		free(texts);
		s->cmd = argv + optind;
		return -1;
	}
	if (ukp_cli_parse_specs(texts, ntexts, &s->specs)) {
		free(texts);
		return UKP_EXIT_USAGE;
	}
	s->nspecs = ntexts;
	free(texts);
	s->cmd = argv + optind;
	return -1;

bad_option:
	ukp_err("option '%s' is not for ukprobe %s", bad, name);
usage:
	fprintf(stderr, "Try 'ukprobe %s --help'.\n", name);
	free(texts);
	return UKP_EXIT_USAGE;
}
