/* SPDX-License-Identifier: MIT */
/*
 * cmd_trace.c - "ukprobe trace": run a command and print one line per
 * probe hit as it happens, in ftrace's format (trace_pipe):
 *
 *   comm-tid [cpu] seconds.micros: event: (sym+0xoff/0xsize) name=value ...
 *   comm-tid [cpu] seconds.micros: event: (caller+0xoff/0xsize <- func) ...
 *
 * To standard output (or a FIFO, a terminal) the events come over the
 * agent's socket and are printed as they arrive (a slow reader makes the
 * agent drop events, counted). With -o FILE or --json FILE, formatting must not stand
 * between the traced threads and the disk: the agent writes its records,
 * in binary, straight into a temporary file next to FILE (UKP_ENV_RAW_FD),
 * and ukprobe formats that file when the program has ended.
 */
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cli.h"
#include "session.h"
#include "format.h"
#include "trace_recs.h"

static void usage(FILE *out)
{
	fputs("Usage: ukprobe trace -e SPEC [-e SPEC]... [OPTIONS] [--] CMD [ARGS]...\n"
	      "       ukprobe trace -p PID[,PID]... [-d SECONDS] -e SPEC... [OPTIONS]\n"
	      "\n"
	      "Run CMD with probes and print one line per hit, as ftrace does.\n"
	      "\n"
	      "  -e, --event SPEC   a probe, in the kernel's kprobe_events syntax:\n"
	      "                       p[:[GRP/]EVENT] [OBJ:]SYM[+OFFS]|[OBJ:]0xADDR [FETCHARGS]\n"
	      "                       r[MAXACTIVE][:[GRP/]EVENT] [OBJ:]SYM[+0]|[OBJ:]0xADDR [FETCHARGS]\n"
	      "                     SYM may be a glob (deflate*): one probe per function.\n"
	      "                     OBJ:0xADDR is an address of OBJ's ELF file (as nm shows).\n"
	      "                     FETCHARGS: [NAME=]FETCHARG[:TYPE], FETCHARG one of\n"
	      "                       %REG, $argN, $retval, $stack, $stackN, $comm, @ADDR,\n"
	      "                       @SYM[+|-OFFS], +|-OFFS(FETCHARG); TYPE one of u8..u64,\n"
	      "                       s8..s64, x8..x64 (the default is x64), char, string,\n"
	      "                       symbol, bWIDTH@OFFSET/CONTAINER-SIZE\n"
	      "                     With OBJ's debug information (DWARF): OBJ:FILE:LINE,\n"
	      "                     OBJ:FUNC:+N, and variables by name: VAR, NAME=VAR,\n"
	      "                     VAR->FIELD, VAR.FIELD, VAR[N], VAR:string, $params\n"
	      "      --filter EXPR  only the hits of the -e before it that pass EXPR, in\n"
	      "                     the kernel's event filter syntax on its argument names,\n"
	      "                     common_pid and comm: == != < <= > >= & ~ (glob), && || !\n"
	      "                     ( ), e.g. 'size >= 4096 && comm ~ \"ls*\"'\n"
	      "      --trigger stacktrace[:N]\n"
	      "                     after an -e: the user stack of each of its hits (the\n"
	      "                     first N), \" => func+0xoff [obj]\" lines under the event\n"
	      "      --trigger 'hist:keys=FIELD[.MOD][,...][:vals=...][:sort=...][:size=N] [if EXPR]'\n"
	      "                     after an -e: a histogram of its hits, made in the\n"
	      "                     program, printed after the trace (the kernel's hist\n"
	      "                     trigger: MOD hex sym sym-offset log2 buckets=N execname)\n"
	      "      --trigger traceon[:N] [if EXPR], --trigger traceoff[:N] [if EXPR]\n"
	      "                     after an -e: its hits start or stop the recording of\n"
	      "                     every event (the first N changes)\n"
	      "      --tracing-off  start with recording off (until a traceon trigger)\n"
	      "  -E, --events-file FILE  SPECs, one per line (# comments)\n"
	      "  -o, --output FILE  write the trace to FILE instead of standard output\n"
	      "      --json FILE    write a Chrome trace-event (Perfetto) file; without -o\n"
	      "                     no text trace is written then\n"
	      "  -p, --pid PID[,PID]...\n"
	      "                     attach to running processes instead of running CMD;\n"
	      "                     ends on Ctrl-C, SIGTERM, -d, or when they exit\n"
	      "  -d, --duration SECONDS\n"
	      "                     with -p: detach SECONDS after the probes are in place\n"
	      "  -f, --follow       trace forked children and exec'd programs too\n"
	      "      --no-optimize  breakpoint probes only: no jump optimization\n"
	      "  -h, --help         show this help\n"
	      "\n"
	      "CMD's own output is left alone. ukprobe exits as CMD did.\n"
	      "Example:\n"
	      "  ukprobe trace -e 'p:malloc libc.so.6:malloc size=%di:u64' \\\n"
	      "                -e 'r:malloc_ret libc.so.6:malloc ptr=$retval' -- ls\n"
	      "See ukprobe-trace(1).\n",
	      out);
}

/* Is path (NULL: none) a regular file, or one to be made? A FIFO, a
 * terminal or /dev/stdout is read as the trace goes: events stream. */
static bool to_file(const char *path)
{
	struct stat st;

	return !path || stat(path, &st) || S_ISREG(st.st_mode);
}

/* An unnamed file for the agent's records, in the directory of path
 * (the output goes to the same file system), or in $TMPDIR. -1 if none
 * could be made (said why). */
static int raw_open(const char *path)
{
	char *copy = strdup(path), *dir, *tmpl = NULL;
	const char *tmp = getenv("TMPDIR");
	int fd = -1, i;

	if (!copy) {
		ukp_err("out of memory");
		return -1;
	}
	dir = dirname(copy);
	for (i = 0; i < 2 && fd < 0; i++) {
		const char *d = i ? (tmp && *tmp ? tmp : "/tmp") : dir;

		fd = open(d, O_TMPFILE | O_RDWR, 0600);
		if (fd < 0 && asprintf(&tmpl, "%s/.ukprobe-raw-XXXXXX", d) > 0) {
			fd = mkstemp(tmpl);
			if (fd >= 0)
				unlink(tmpl);
			free(tmpl);
			tmpl = NULL;
		}
	}
	if (fd < 0)
		ukp_err("cannot make a file for the trace's records next to %s: %s", path,
			strerror(errno));
	else if (ukp_records_head_write(fd, "the trace's records")) {
		close(fd);
		fd = -1;
	}
	free(copy);
	return fd;
}

int ukp_cmd_trace(int argc, char **argv)
{
	const struct ukp_session_ops ops = { .event = ukp_trace_event, .batch = ukp_trace_batch };
	struct ukp_session s = { .mode = UKP_MODE_TRACE };
	struct ukp_trace_out t = { NULL, NULL };
	const char *output = NULL, *json = NULL;
	int code, raw = -1;
	char num[16];

	code = ukp_cli_parse_run_options(argc, argv, "trace", usage, &s, &output, &json);
	if (code >= 0)
		return code;
	code = ukp_session_prepare(&s);
	if (!code && json) {
		t.json = ukp_json_open(json);
		if (!t.json)
			code = UKP_EXIT_FAIL;
	}
	if (!code && (output || !json)) {
		t.out = ukp_open_output(output);
		if (!t.out)
			code = UKP_EXIT_FAIL;
	}
	/* a file: the agent writes binary records, formatted after the run
	 * (a launched program gets the descriptor through its environment,
	 * an attached one with its settings) */
	if (!code && (output || json) && to_file(output) && to_file(json)) {
		raw = raw_open(output ? output : json);
		snprintf(num, sizeof(num), "%d", raw);
		if (raw < 0 || (!s.npids && setenv(UKP_ENV_RAW_FD, num, 1)))
			code = UKP_EXIT_FAIL;
		s.send_raw = s.npids > 0;
		s.raw_fd = raw;
		s.raw_file = raw >= 0;
	}
	if (!code)
		code = ukp_session_run(&s, &ops, &t);
	if (raw >= 0)
		unsetenv(UKP_ENV_RAW_FD);
	if (ukp_trace_finish(&s, raw, &ops, &t))
		code = code ? code : UKP_EXIT_FAIL;
	return ukp_trace_close(&s, &t, raw, code);
}
