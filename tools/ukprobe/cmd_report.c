/* SPDX-License-Identifier: MIT */
/*
 * cmd_report.c - "ukprobe report": print a recording of "ukprobe record"
 * (record_dir.c) as "ukprobe trace" prints a run: the same lines, the
 * same bytes (trace_print.c is the formatter of both), and the hist
 * tables; or a Perfetto file (--json).
 */
#include <getopt.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "format.h"
#include "session.h"

static void usage(FILE *out)
{
	fputs("Usage: ukprobe report [-i DIR] [-o FILE] [--json FILE]\n"
	      "\n"
	      "Print the events 'ukprobe record' recorded, as 'ukprobe trace' prints them.\n"
	      "\n"
	      "  -i, --input DIR    the recording (default " UKP_RECORD_DEFAULT ")\n"
	      "  -o, --output FILE  write the trace to FILE instead of standard output\n"
	      "      --json FILE    write a Chrome trace-event (Perfetto) file; without -o\n"
	      "                     no text trace is written then\n"
	      "  -h, --help         show this help\n"
	      "See ukprobe-report(1).\n",
	      out);
}

enum { OPT_JSON = 256 };

int ukp_cmd_report(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "input", required_argument, NULL, 'i' },
		{ "output", required_argument, NULL, 'o' },
		{ "json", required_argument, NULL, OPT_JSON },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const struct ukp_session_ops ops = { .event = ukp_trace_event, .batch = ukp_trace_batch };
	struct ukp_session s = { .mode = UKP_MODE_TRACE, .raw_file = true };
	struct ukp_trace_out t = { NULL, NULL };
	const char *dir = UKP_RECORD_DEFAULT, *output = NULL, *json = NULL;
	int c, code, raw = -1;

	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, "+i:o:h", longopts, NULL)) != -1) {
		switch (c) {
		case 'i':
			dir = optarg;
			break;
		case 'o':
			output = optarg;
			break;
		case OPT_JSON:
			json = optarg;
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			if (optopt && strchr("io", optopt))
				ukp_err("option '-%c' needs an argument", optopt);
			else
				ukp_err("unknown option '%s' of ukprobe report", argv[optind - 1]);
			fprintf(stderr, "Try 'ukprobe report --help'.\n");
			return UKP_EXIT_USAGE;
		}
	}
	if (optind < argc) {
		ukp_err("unexpected argument '%s' (the recording is given with -i DIR)",
			argv[optind]);
		return UKP_EXIT_USAGE;
	}
	code = 0;
	if (json) {
		t.json = ukp_json_open(json);
		if (!t.json)
			code = UKP_EXIT_FAIL;
	}
	if (!code && (output || !json)) {
		t.out = ukp_open_output(output);
		if (!t.out)
			code = UKP_EXIT_FAIL;
	}
	if (!code) {
		code = ukp_record_replay(dir, &s, &ops, &t, &raw);
		if (code < 0)
			code = UKP_EXIT_FAIL; /* damaged: what it held is shown */
		if (code != UKP_EXIT_FAIL || raw >= 0) {
			if (ukp_trace_finish(&s, raw, &ops, &t))
				code = UKP_EXIT_FAIL;
		}
	}
	return ukp_trace_close(&s, &t, raw, code);
}
