/* SPDX-License-Identifier: MIT */
/*
 * cmd_trace.c - "ukprobe trace": run a command and print one line per
 * probe hit as it happens, in ftrace's format (trace_pipe):
 *
 *   comm-tid [cpu] seconds.micros: event: (sym+0xoff/0xsize) name=value ...
 *   comm-tid [cpu] seconds.micros: event: (caller+0xoff/0xsize <- func) ...
 */
#include <stdlib.h>
#include <string.h>

#include "cli.h"

static void usage(FILE *out)
{
	fputs("Usage: ukprobe trace -e SPEC [-e SPEC]... [OPTIONS] [--] CMD [ARGS]...\n"
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
	      "  -E, --events-file FILE  SPECs, one per line (# comments)\n"
	      "  -o, --output FILE  write the trace to FILE instead of standard output\n"
	      "      --json FILE    write a Chrome trace-event (Perfetto) file; without -o\n"
	      "                     no text trace is written then\n"
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

struct trace_out {
	FILE *out;
	struct ukp_json *json;
};

static void print_event(struct ukp_session *s, struct ukp_image *img,
			const struct ukp_probe_info *pi, const struct ukp_rec *rec, void *arg)
{
	struct trace_out *t = arg;
	const struct ukp_spec *spec = &s->specs[pi->spec];
	char comm[sizeof(rec->comm) + 1], buf[32];

	if (t->json)
		ukp_json_event(t->json, s, img, pi, rec);
	if (!t->out)
		return;
	memcpy(comm, rec->comm, sizeof(rec->comm));
	comm[sizeof(rec->comm)] = '\0';
	fprintf(t->out, "%16s-%-7d [%03d] %5lu.%06lu: %s: (", comm, rec->tid, rec->cpu,
		(unsigned long)(rec->ts / 1000000000ULL),
		(unsigned long)(rec->ts % 1000000000ULL / 1000), pi->event);
	if (spec->is_return)
		fprintf(t->out, "%s <- %s)", ukp_image_addr(img, rec->caller, buf, sizeof(buf)),
			pi->func_name);
	else
		fprintf(t->out, "%s)", pi->where);
	ukp_format_args(t->out, img, spec, rec);
	fputc('\n', t->out);
}

/* the trace streams: whatever arrived together is written out */
static void flush_batch(struct ukp_session *s, void *arg)
{
	struct trace_out *t = arg;

	(void)s;
	if (t->out)
		fflush(t->out);
}

int ukp_cmd_trace(int argc, char **argv)
{
	const struct ukp_session_ops ops = { .event = print_event, .batch = flush_batch };
	struct ukp_session s = { .mode = UKP_MODE_TRACE };
	struct trace_out t = { NULL, NULL };
	const char *output = NULL, *json = NULL;
	int code;

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
	if (!code)
		code = ukp_session_run(&s, &ops, &t);
	if (t.json && ukp_json_close(t.json, &s))
		code = code ? code : UKP_EXIT_FAIL;
	if (t.out && t.out != stdout && fclose(t.out))
		code = code ? code : UKP_EXIT_FAIL;
	else if (t.out == stdout)
		fflush(stdout);
	ukp_session_free(&s);
	ukp_cli_free_specs(s.specs, s.nspecs);
	return code;
}
