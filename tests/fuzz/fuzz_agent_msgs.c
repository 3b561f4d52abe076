/* SPDX-License-Identifier: MIT */
/*
 * fuzz_agent_msgs.c - libFuzzer target for what ukprobe reads from an
 * agent (common/proto.h): the packets of a session (FROM, HELLO, PROBE,
 * SYM, EVENT, STAT, HIST, END, DETACHED), which an attached or traced
 * process writes and a root ukprobe parses. One input is a run of
 * packets, each a 2-byte little-endian length and that many bytes,
 * handed to ukp_session_packet() as the socket delivers them, for SPECs
 * of every fetch type, with a stacktrace and a hist trigger. Every event
 * is formatted as trace and --json print it, the hist tables and the
 * end-of-run report after the last packet. Nothing may be read or
 * written out of bounds, whatever the bytes. Built and run by
 * scripts/fuzz.sh (corpus: tests/fuzz/corpus_msgs).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "session.h"
#include "format.h"
#include "filter.h"

static const char *const spec_texts[] = {
	"p:a prog:f x=%di:u32 y=%si:s16 c=%dx:char s=+0(%cx):string sym=%r8:symbol "
	"b=+0(%r9):b3@2/8 h=%ax:x64 n=$comm",
	"r:b prog:g ret=$retval:s64 s=+8($retval):string",
	"p:c prog:h",
	"p:d prog:k v=%di:u64",
};

static struct ukp_spec *specs;
static int nspecs;
static FILE *devnull;

struct out {
	FILE *out;
	struct ukp_json *json;
};

static void on_event(struct ukp_session *s, struct ukp_image *img,
		     const struct ukp_probe_info *pi, const struct ukp_rec *rec, void *arg)
{
	struct out *o = arg;
	const struct ukp_spec *spec = &s->specs[pi->spec];
	char buf[32];

	if (o->json)
		ukp_json_event(o->json, s, img, pi, rec);
	fprintf(o->out, "%.16s-%d %s: (%s", rec->comm, rec->tid, pi->event,
		spec->is_return ? ukp_image_addr(img, rec->caller, buf, sizeof(buf))
				: ukp_where_code(pi->where));
	if (spec->is_return)
		fprintf(o->out, " <- %s", pi->func_name);
	fputc(')', o->out);
	ukp_format_args(o->out, img, spec, rec);
	fputc('\n', o->out);
	if (spec->stacktrace)
		ukp_format_stack(o->out, img, spec, rec);
}

static void on_probe(struct ukp_session *s, struct ukp_image *img,
		     const struct ukp_probe_report *r, void *arg)
{
	struct out *o = arg;

	(void)s;
	(void)img;
	/* what ukprobe probes prints of each */
	fprintf(o->out, "%s %s %s %s\n", r->event, r->where, r->object, r->why);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	const char *triggers[] = { NULL, NULL, "stacktrace:8",
				   "hist:keys=v.sym,common_pid.execname:vals=hitcount" };
	struct ukp_spec_error err;
	int i;

	(void)argc;
	(void)argv;
	devnull = fopen("/dev/null", "w");
	nspecs = (int)(sizeof(spec_texts) / sizeof(spec_texts[0]));
	/* the messages ukprobe prints about bad input: not to libFuzzer's log */
	stderr = devnull;
	if (!devnull || ukp_cli_parse_specs((char **)spec_texts, nspecs, &specs))
		abort();
	for (i = 0; i < nspecs; i++)
		if (triggers[i] && ukp_trigger_parse(triggers[i], &specs[i], &err))
			abort();
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const struct ukp_session_ops ops = { .event = on_event, .probe = on_probe };
	struct ukp_session s = { .specs = specs, .nspecs = nspecs, .mode = UKP_MODE_TRACE };
	struct out o = { devnull, ukp_json_open("/dev/null") };
	size_t pos = 0;

	while (pos + 2 <= size && !s.protocol_error) {
		size_t n = data[pos] | (size_t)data[pos + 1] << 8;
		char *pkt;

		pos += 2;
		if (n > size - pos)
			n = size - pos;
		/* a copy of its own size: reading past it is ASan's to see */
		pkt = malloc(n ? n : 1);
		if (!pkt)
			break;
		memcpy(pkt, data + pos, n);
		ukp_session_packet(&s, pkt, n, &ops, &o);
		free(pkt);
		pos += n;
	}
	if (!s.protocol_error) {
		ukp_hist_print(devnull, &s);
		ukp_report_end(&s);
	}
	if (o.json)
		ukp_json_close(o.json, &s);
	ukp_images_free(&s);
	ukp_hist_free_rows(&s);
	return 0;
}
