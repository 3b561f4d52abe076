/* SPDX-License-Identifier: MIT */
/*
 * cmd_record.c - "ukprobe record": run a command with probes, as trace
 * does, and record its events in binary into a directory (record_dir.c)
 * for "ukprobe report" to print later, as perf record and uftrace record
 * do: during the run nothing is formatted, so that the formatting does
 * not compete with the program for the CPUs.
 */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "format.h"
#include "session.h"

static void usage(FILE *out)
{
	fputs("Usage: ukprobe record [-o DIR] -e SPEC [-e SPEC]... [OPTIONS] [--] CMD [ARGS]...\n"
	      "       ukprobe record [-o DIR] -p PID[,PID]... [-d SECONDS] -e SPEC... [OPTIONS]\n"
	      "\n"
	      "Run CMD with probes and record every hit, in binary, into DIR; then\n"
	      "'ukprobe report -i DIR' prints what 'ukprobe trace' would have printed.\n"
	      "\n"
	      "  -o, --output DIR   the recording's directory (default " UKP_RECORD_DEFAULT "; made,\n"
	      "                     or an earlier recording there replaced)\n"
	      "  -e, --event SPEC, -E FILE, --filter EXPR, --trigger ..., --tracing-off,\n"
	      "  -p PID, -d SECONDS, -f, --no-optimize\n"
	      "                     as for ukprobe trace (ukprobe trace --help)\n"
	      "  -h, --help         show this help\n"
	      "\n"
	      "CMD's own output is left alone. ukprobe exits as CMD did.\n"
	      "Example:\n"
	      "  ukprobe record -o malloc.data -e 'p:malloc libc.so.6:malloc size=%di:u64' -- ls\n"
	      "  ukprobe report -i malloc.data\n"
	      "See ukprobe-record(1).\n",
	      out);
}

int ukp_cmd_record(int argc, char **argv)
{
	/* nothing formatted now: the packets go into the recording as they
	 * are handled (the images are followed, their events not printed) */
	const struct ukp_session_ops ops = { 0 };
	struct ukp_session s = { .mode = UKP_MODE_TRACE };
	const char *dir = NULL;
	char num[16];
	int code, raw = -1;

	code = ukp_cli_parse_run_options(argc, argv, "record", usage, &s, &dir, NULL);
	if (code >= 0)
		return code;
	if (!dir)
		dir = UKP_RECORD_DEFAULT;
	code = ukp_session_prepare(&s);
	if (!code) {
		s.record = ukp_record_create(dir, &s, &raw);
		if (!s.record)
			code = UKP_EXIT_FAIL;
	}
	if (!code) {
		/* the agent's records go straight into the directory (a
		 * launched program gets the descriptor through its
		 * environment, an attached one with its settings) */
		snprintf(num, sizeof(num), "%d", raw);
		if (!s.npids && setenv(UKP_ENV_RAW_FD, num, 1))
			code = UKP_EXIT_FAIL;
		s.send_raw = s.npids > 0;
		s.raw_fd = raw;
		s.raw_file = true;
	}
	if (!code)
		code = ukp_session_run(&s, &ops, NULL);
	unsetenv(UKP_ENV_RAW_FD);
	if (s.record && ukp_record_finish(s.record, &s))
		code = code ? code : UKP_EXIT_FAIL;
	s.record = NULL;
	if (raw >= 0)
		close(raw);
	ukp_session_free(&s);
	ukp_cli_free_specs(s.specs, s.nspecs);
	return code;
}
