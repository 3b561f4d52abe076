/* SPDX-License-Identifier: MIT */
/*
 * fuzz_spec_filter.c - libFuzzer target for ukprobe's parsers and the
 * parsed form its agent reads. One input is one -e with its options:
 * "SPEC", then "\x1fF" FILTER and "\x1fT" TRIGGER (the seed corpus's
 * form). The SPEC is parsed, the filter compiled against it, the
 * trigger parsed; what parses goes through the wire form
 * (common/spec_wire.c) and must come back as the same form, and its
 * filter is run over an event record made of the input's bytes (every
 * field, fault bit and comm). The input's bytes are also decoded as the
 * records of a form behind a valid header: the decoder must refuse or
 * take them without reading or writing out of bounds. Built and run by
 * scripts/fuzz.sh.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "filter.h"
#include "filter_branch.h"
#include "hist.h"
#include "proto.h"
#include "spec.h"
#include "spec_wire.h"

#define SEP '\x1f'
#define NREGS 21

/* The branch program the agent runs (filter_branch.h), where one can be
 * built, decides as the postfix program on the same values: read from a
 * record, and from registers as the fetch cuts them into one. */
static void branch_agrees(const struct ukp_filter *f, const struct ukp_spec *spec,
			  const uint8_t *data, size_t size)
{
	static struct ukp_fbranch fb;
	uint64_t words[UKP_SPEC_PAYLOAD_MAX / 8], regs[NREGS];
	unsigned char rec[UKP_SPEC_PAYLOAD_MAX];
	size_t i;
	int a;

	for (i = 0; i < sizeof(words); i++)
		((unsigned char *)words)[i] = size ? data[(i * 5 + 2) % size] : 0;
	for (i = 0; i < sizeof(regs); i++)
		((unsigned char *)regs)[i] = size ? data[(i * 11 + 3) % size] : 0;
	if (!ukp_fbranch_build(f, spec, UKP_FB_RECORD, &fb)) {
		memcpy(rec, words, sizeof(rec));
		if (ukp_fbranch_run(&fb, words) != ukp_filter_run(f, spec, rec, 0, NULL, 0))
			abort();
	}
	/* the values by argument number, each as its slot holds it (the
	 * agent's direct fetch, agent/filter_hit.c) */
	if (!ukp_fbranch_build(f, spec, UKP_FB_ARGS, &fb)) {
		uint64_t args[UKP_SPEC_MAX_ARGS] = { 0 };

		memcpy(rec, words, sizeof(rec));
		for (a = 0; a < spec->nargs; a++)
			if (spec->args[a].off + 8 <= sizeof(rec))
				memcpy(&args[a], rec + spec->args[a].off, 8);
		if (ukp_fbranch_run(&fb, args) != ukp_filter_run(f, spec, rec, 0, NULL, 0))
			abort();
	}
	if (!ukp_fbranch_build(f, spec, UKP_FB_REGS, &fb)) {
		memset(rec, 0, sizeof(rec));
		for (a = 0; a < spec->nargs; a++) {
			const struct ukp_fetcharg *fa = &spec->args[a];
			uint64_t v;

			if (!fa->plain_reg)
				continue;
			if (fa->param >= NREGS)
				abort(); /* a register the registers do not hold */
			v = regs[fa->param];
			if (fa->size < 8)
				v &= (1ULL << (fa->size * 8)) - 1;
			memcpy(rec + fa->off, &v, sizeof(v));
		}
		if (ukp_fbranch_run(&fb, regs) != ukp_filter_run(f, spec, rec, 0, NULL, 0))
			abort();
	}
}

static void run_filter(const struct ukp_filter *f, const struct ukp_spec *spec,
		       const uint8_t *data, size_t size)
{
	unsigned char rec[UKP_SPEC_PAYLOAD_MAX];
	char comm[16];
	size_t i;

	/* the event's payload, fault bits and comm from the input */
	for (i = 0; i < sizeof(rec); i++)
		rec[i] = size ? data[(i * 7) % size] : 0;
	for (i = 0; i < sizeof(comm); i++)
		comm[i] = size ? (char)data[(i * 3 + 1) % size] : 0;
	ukp_filter_run(f, spec, rec, size ? data[0] * 0x01010101u : 0, comm, (int)size);
	memset(rec, 0, sizeof(rec));
	ukp_filter_run(f, spec, rec, 0, comm, 0);
	branch_agrees(f, spec, data, size);
}

/* SPEC\x1fF...\x1fT...: 0, or -1 (a part did not parse; nothing to free) */
static int parse(char *text, struct ukp_spec *spec, size_t size)
{
	struct ukp_spec_error err;
	char *opt = strchr(text, SEP);

	if (opt)
		*opt++ = '\0';
	if (ukp_spec_parse(text, spec, &err)) {
		if (err.col < 0 || err.col > (int)size || !err.msg[0])
			abort(); /* an error points into the input and says something */
		return -1;
	}
	while (opt) {
		char *next = strchr(opt, SEP);
		int ret = -1;

		if (next)
			*next++ = '\0';
		if (*opt == 'F' && !spec->filter) {
			ret = ukp_filter_compile(opt + 1, spec, &spec->filter, &err);
			spec->filter_text = ret ? NULL : strdup(opt + 1);
		} else if (*opt == 'T' && !spec->trigger_text) {
			ret = ukp_trigger_parse(opt + 1, spec, &err);
			spec->trigger_text = ret ? NULL : strdup(opt + 1);
		}
		if (ret) {
			ukp_spec_free(spec);
			return -1;
		}
		opt = next;
	}
	return 0;
}

static void round_trip(const struct ukp_spec *spec, const uint8_t *data, size_t size)
{
	size_t len, len2;
	void *form = ukp_specs_encode(spec, 1, &len), *form2;
	struct ukp_spec *back;
	uint32_t version;
	int n;

	if (!form)
		return;
	/* variables by name go to the agent only as the CLI resolved them
	 * from DWARF (tools/ukprobe/dwarf/dwarf_spec.c): the agent refuses them */
	if (spec->has_vars) {
		if (ukp_specs_decode(form, len, NREGS, &back, &n, &version) == UKP_SPECS_OK)
			abort();
		free(form);
		return;
	}
	if (ukp_specs_decode(form, len, NREGS, &back, &n, &version) != UKP_SPECS_OK || n != 1)
		abort(); /* what the parser gives, the agent takes */
	form2 = ukp_specs_encode(back, 1, &len2);
	if (!form2 || len2 != len || memcmp(form, form2, len))
		abort(); /* and it comes back the same */
	if (back->filter)
		run_filter(back->filter, back, data, size);
	free(form);
	free(form2);
	ukp_spec_free(back);
	free(back);
}

/* The input as the records of a form of one SPEC. */
static void decode_raw(const uint8_t *data, size_t size)
{
	struct ukp_specs_header h;
	unsigned char *form = malloc(sizeof(h) + size);
	struct ukp_spec *back;
	uint32_t version;
	int n;

	if (!form)
		return;
	ukp_specs_header_init(&h, 1);
	h.size = sizeof(h) + size;
	memcpy(form, &h, sizeof(h));
	memcpy(form + sizeof(h), data, size);
	if (ukp_specs_decode(form, sizeof(h) + size, NREGS, &back, &n, &version) == UKP_SPECS_OK) {
		if (back->filter)
			run_filter(back->filter, back, data, size);
		ukp_spec_free(back);
		free(back);
	}
	free(form);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct ukp_spec spec;
	char *text;

	if (size > 4096)
		return 0;
	decode_raw(data, size);
	text = malloc(size + 1);
	if (!text)
		return 0;
	memcpy(text, data, size);
	text[size] = '\0';
	if (!parse(text, &spec, size)) {
		if (spec.filter)
			run_filter(spec.filter, &spec, data, size);
		round_trip(&spec, data, size);
		ukp_spec_free(&spec);
	}
	/* the glob alone: pattern before the first NUL-free half, string after */
	memcpy(text, data, size);
	ukp_filter_glob(text, text + size / 2, size - size / 2);
	free(text);
	return 0;
}
