/* SPDX-License-Identifier: MIT */
/*
 * options.c - the options the commands that run a program share.
 */
#include <getopt.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

enum { OPT_JSON = 256, OPT_NO_OPTIMIZE };

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
	while ((c = getopt_long(argc, argv, s->mode == UKP_MODE_PROBES ? "+:e:o:h" : "+:e:o:fh",
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
