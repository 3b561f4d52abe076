/* SPDX-License-Identifier: MIT */
/*
 * fuzz_record.c - libFuzzer target for what ukprobe report reads: a
 * recording of ukprobe record (tools/ukprobe/record_dir.c), its session
 * file (the SPECs' form, the session's packets, its start and end) and
 * the agent's records file, which anyone may hand report. One input is
 * a 4-byte little-endian length, that many bytes of session, and the
 * rest the records; both are written into a directory of the fuzzer's
 * own and reported, as ukprobe report does (text and --json, to
 * /dev/null). Nothing may be read or written out of bounds, whatever
 * the bytes. Built and run by scripts/fuzz.sh (corpus:
 * tests/fuzz/corpus_record: recordings made by gen_record_seeds.sh, whose
 * records files hold RECS messages).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "format.h"
#include "session.h"

static char dir[64];
static FILE *devnull;

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	devnull = fopen("/dev/null", "w");
	/* the messages ukprobe prints about bad input: not to libFuzzer's log */
	stderr = devnull;
	snprintf(dir, sizeof(dir), "/tmp/fuzz_record.XXXXXX");
	if (!devnull || !mkdtemp(dir))
		abort();
	return 0;
}

static void put_file(const char *name, const uint8_t *p, size_t n)
{
	char path[128];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	f = fopen(path, "w");
	if (!f || fwrite(p, 1, n, f) != n || fclose(f))
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const struct ukp_session_ops ops = { .event = ukp_trace_event, .batch = ukp_trace_batch };
	struct ukp_session s = { .mode = UKP_MODE_TRACE, .raw_file = true };
	struct ukp_trace_out t = { devnull, NULL };
	size_t n;
	int raw = -1, code;

	if (size < 4)
		return 0;
	t.json = ukp_json_open("/dev/null");
	n = data[0] | (size_t)data[1] << 8 | (size_t)data[2] << 16 | (size_t)data[3] << 24;
	if (n > size - 4)
		n = size - 4;
	put_file("session", data + 4, n);
	put_file("records", data + 4 + n, size - 4 - n);
	code = ukp_record_replay(dir, &s, &ops, &t, &raw);
	if (code != UKP_EXIT_FAIL || raw >= 0)
		ukp_trace_finish(&s, raw, &ops, &t);
	if (raw >= 0)
		close(raw);
	if (t.json)
		ukp_json_close(t.json, &s);
	ukp_session_free(&s);
	ukp_cli_free_specs(s.specs, s.nspecs);
	return 0;
}
