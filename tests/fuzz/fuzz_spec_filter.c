/* SPDX-License-Identifier: MIT */
/*
 * fuzz_spec_filter.c - libFuzzer target for ukprobe's parsers: one input
 * is one event as it travels to the agent, "SPEC" or "SPEC\x1fFILTER"
 * (filter.h). The SPEC is parsed, the filter compiled against it, and a
 * compiled filter is run over an event record made of the input's bytes
 * (every field, fault bit and comm). Built and run by scripts/fuzz.sh.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "filter.h"
#include "spec.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	unsigned char rec[UKP_SPEC_PAYLOAD_MAX];
	struct ukp_spec_error err;
	struct ukp_spec spec;
	char *text, comm[16];
	size_t i;

	if (size > 4096)
		return 0;
	text = malloc(size + 1);
	if (!text)
		return 0;
	memcpy(text, data, size);
	text[size] = '\0';
	if (!ukp_spec_parse_line(text, &spec, &err, NULL)) {
		if (spec.filter) {
			/* the event's payload, fault bits and comm from the input */
			for (i = 0; i < sizeof(rec); i++)
				rec[i] = size ? data[(i * 7) % size] : 0;
			for (i = 0; i < sizeof(comm); i++)
				comm[i] = size ? (char)data[(i * 3 + 1) % size] : 0;
			ukp_filter_run(spec.filter, &spec, rec, size ? data[0] * 0x01010101u : 0, comm,
				       (int)size);
			memset(rec, 0, sizeof(rec));
			ukp_filter_run(spec.filter, &spec, rec, 0, comm, 0);
		}
		ukp_spec_free(&spec);
	} else if (err.col < 0 || err.col > (int)size || !err.msg[0]) {
		abort(); /* an error points into the input and says something */
	}
	/* the glob alone: pattern before the first NUL-free half, string after */
	ukp_filter_glob(text, text + size / 2, size - size / 2);
	free(text);
	return 0;
}
