// SPDX-License-Identifier: MIT
/*
 * branches.c - the control transfers in a piece of AArch64 code
 * (arch_branches.h). [reg] context.
 *
 * Every instruction is 4 bytes and 4-aligned, so a scan is a walk over
 * words. What is here: the direct branches (b, bl, b.cond, cbz/cbnz,
 * tbz/tbnz) that ARCH_FLOW_DIRECT_ONLY asks for (the blacklist's closure
 * over direct calls, blacklist.c), and padding. The full analysis the
 * jump optimizer needs (jump tables, pointer jumps, addresses taken,
 * literals) comes with jump optimization on AArch64, which this port
 * does not have yet: it answers -EOPNOTSUPP, and the optimizer leaves
 * every probe on its breakpoint.
 */
#include <errno.h>
#include <string.h>

#include "base/base.h"
#include "core/core.h"
#include "process/process.h"
#include "text/text.h"
#include "optimizer/optimizer.h"
#include "arch/arch_branches.h"

#define A64_NOP 0xd503201fu

static int64_t sext(uint64_t v, unsigned int bits)
{
	return (int64_t)(v << (64 - bits)) >> (64 - bits);
}

/* The target of a direct branch at pc, or false. */
static bool direct_target(uint32_t insn, uintptr_t pc, uintptr_t *target)
{
	if ((insn & 0x7c000000u) == 0x14000000u) /* b, bl */
		*target = pc + (uintptr_t)(sext(insn & 0x3ffffffu, 26) * 4);
	else if ((insn & 0xff000010u) == 0x54000000u || /* b.cond */
		 (insn & 0x7e000000u) == 0x34000000u)   /* cbz, cbnz */
		*target = pc + (uintptr_t)(sext((insn >> 5) & 0x7ffffu, 19) * 4);
	else if ((insn & 0x7e000000u) == 0x36000000u)   /* tbz, tbnz */
		*target = pc + (uintptr_t)(sext((insn >> 5) & 0x3fffu, 14) * 4);
	else
		return false;
	return true;
}

int arch_scan_flow(const struct arch_code_part *parts, size_t nparts, uintptr_t code_lo,
		   uintptr_t code_hi, unsigned int flags, arch_flow_fn fn, void *arg)
{
	size_t p, off;

	(void)code_lo;
	(void)code_hi;
	if (!(flags & ARCH_FLOW_DIRECT_ONLY))
		return -EOPNOTSUPP;
	for (p = 0; p < nparts; p++) {
		for (off = 0; off + 4 <= parts[p].len; off += 4) {
			uint32_t insn;
			uintptr_t t;
			int ret;

			memcpy(&insn, parts[p].code + off, 4);
			if (!direct_target(insn, parts[p].addr + off, &t))
				continue;
			ret = fn(arg, ARCH_FLOW_DIRECT, parts[p].addr + off, t);
			if (ret)
				return ret;
		}
	}
	return 0;
}

int arch_scan_literals(const struct arch_literal_scan *scan)
{
	(void)scan;
	return -EOPNOTSUPP; /* only the jump optimizer asks (see above) */
}

/* Padding between functions: nop, udf #0 (zero words), brk. */
bool arch_is_padding(const uint8_t *code, size_t avail, size_t len)
{
	size_t off;

	if (len % 4 || avail < len)
		return false;
	for (off = 0; off < len; off += 4) {
		uint32_t w;

		memcpy(&w, code + off, 4);
		if (w != A64_NOP && w != 0 && (w & 0xffe0001fu) != 0xd4200000u)
			return false;
	}
	return true;
}
