/* SPDX-License-Identifier: MIT */
/*
 * golden_insn FILE.in: the decoder's and relocator's verdicts on the
 * instructions of FILE.in, one line each, for comparison with FILE.out
 * (tests/golden/insn/, as Zydis keeps its test cases; run by
 * tests/golden/run.py). An input line is "ADDR: BYTES" (hex); '#' starts
 * a comment. For each: what arch_prepare_insn() makes of it for an
 * out-of-line slot at SLOT (length, out of line or emulated, boostable,
 * the slot's bytes), and what arch_relocate_insn() makes of it for a
 * jump-optimization copy at DEST (the copy's bytes and how it ends), or
 * the errno and reason each gives.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/base.h"
#include "core/core.h"
#include "process/process.h"
#include "text/text.h"
#include "optimizer/optimizer.h"

/* the slot bytes of the last arch_prepare_insn() */
static struct ukp_slot_img img;

#define SLOT 0x500000UL
#define DEST 0x600000UL

static const char *err_name(int e)
{
	switch (e) {
	case -EILSEQ: return "-EILSEQ";
	case -EINVAL: return "-EINVAL";
	case -EOPNOTSUPP: return "-EOPNOTSUPP";
	case -ENOMEM: return "-ENOMEM";
	default: return "-E?";
	}
}

static void hex(const uint8_t *b, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		printf("%s%02x", i ? " " : "", b[i]);
}

int main(int argc, char **argv)
{
	static const char *const ends[] = { "next", "leaves", "call" };
	char line[512];
	FILE *in;

	if (argc != 2 || !(in = fopen(argv[1], "r"))) {
		fprintf(stderr, "usage: golden_insn FILE.in\n");
		return 2;
	}
	while (fgets(line, sizeof(line), in)) {
		struct ukp_arch_insn ai;
		uint8_t code[32], out[UKP_OPT_RELOC_MAX + 16];
		enum arch_reloc_end end = ARCH_RELOC_NEXT;
		const char *why = NULL;
		size_t n = 0, out_len = 0;
		unsigned long addr;
		char *p = strchr(line, '#'), *q;
		int ret;

		if (p)
			*p = '\0';
		addr = strtoul(line, &q, 16);
		if (q == line || *q != ':')
			continue;
		for (p = q + 1; n < sizeof(code);) {
			unsigned long b = strtoul(p, &q, 16);

			if (q == p)
				break;
			code[n++] = (uint8_t)b;
			p = q;
		}
		printf("%lx: ", addr);
		hex(code, n);
		memset(&ai, 0, sizeof(ai));
		ret = arch_prepare_insn(&ai, &img, code, n, addr, SLOT);
		if (ret) {
			printf(" | prepare %s (%s)", err_name(ret), arch_insn_why(&ai) ? arch_insn_why(&ai) : "");
		} else {
			printf(" | len %u %s%s%s | slot ", ai.len, ai.ool ? "ool" : "emulated",
			       ai.boostable ? " boost" : "", ai.blocking ? " blocking" : "");
			hex(img.slot_image, img.slot_len);
		}
		ret = arch_relocate_insn(code, n, addr, DEST, out, &out_len, &end, &why);
		if (ret < 0) {
			printf(" | reloc %s (%s)\n", err_name(ret), why ? why : "");
		} else {
			printf(" | reloc ");
			hex(out, out_len);
			printf(" end %s\n", ends[end]);
		}
	}
	fclose(in);
	return 0;
}
