// SPDX-License-Identifier: MIT
/*
 * reloc.c - AArch64 instructions copied into a jump-optimization detour
 * (arch_relocate_insn), and the patchable NOPs an entry may start with
 * (arch_patchable_nops).
 *
 * A copy runs at dest instead of addr: everything that reads pc is
 * re-encoded for dest, or rewritten into a longer sequence where the
 * original's range does not reach from there:
 *   b                b target                                  (+-128 MiB)
 *   b.cond, cbz, tbz the same with the target re-based, or
 *                    the inverse condition over 8 bytes, then b target
 *   bl               ldr x30, 8f; b target; 8: .quad addr + 4
 *   blr xN           ldr x30, 8f; br xN; 8: .quad addr + 4
 *   adr              adr, or adrp + add                        (+-4 GiB)
 *   adrp             adrp                                      (+-4 GiB)
 *   ldr (literal)    ldr (literal), or adrp [+ add] + ldr [Xt] (+-4 GiB)
 *   prfm (literal)   prfm (literal), or nop (a prefetch is a hint)
 *   br, ret, retaa   the same word: they read a register, not pc
 * A call returns into the original code after it (x30 = addr + 4), like
 * x86's relocated call: no thread ever returns into the detour. x30 is
 * free as the literal's register because the call overwrites it anyway;
 * blr x30 (which reads it) is refused. The longest copy is 16 bytes
 * (UKP_OPT_RELOC_MAX). br from the detour sets BTYPE 01 as long as the
 * detour's pages are not guarded (no PROT_BTI), which a "bti c" target
 * accepts.
 *
 * Every function here runs at registration time ([reg]).
 */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "arch/arch.h"
#include "classify.h"
#include "sim_ops.h"

#define A64_NOP UINT32_C(0xd503201f)

static void put_insn(uint8_t *p, uint32_t insn)
{
	p[0] = (uint8_t)insn;
	p[1] = (uint8_t)(insn >> 8);
	p[2] = (uint8_t)(insn >> 16);
	p[3] = (uint8_t)(insn >> 24);
}

/* Does the byte offset rel fit a signed field of bits, in units of 4? */
static bool fits_words(int64_t rel, unsigned int bits)
{
	int64_t lim = INT64_C(1) << (bits - 1);

	return rel % 4 == 0 && rel / 4 >= -lim && rel / 4 < lim;
}

/* The immediate field of bits at lo, replaced by rel / 4. */
static uint32_t with_imm(uint32_t insn, unsigned int lo, unsigned int bits, int64_t rel)
{
	uint32_t mask = ((UINT32_C(1) << bits) - 1) << lo;

	return (insn & ~mask) | (((uint32_t)(rel / 4) << lo) & mask);
}

static uint32_t enc_b(int64_t rel)
{
	return UINT32_C(0x14000000) | ((uint32_t)(rel / 4) & 0x3ffffff);
}

/* adrp rd, the page of target, from pc; false when +-4 GiB is not enough */
static bool enc_adrp(uint32_t *insn, unsigned int rd, uintptr_t pc, uintptr_t target)
{
	int64_t pages = ((int64_t)(target >> 12) - (int64_t)(pc >> 12));
	uint32_t v = (uint32_t)pages & 0x1fffff;

	if (pages < -(INT64_C(1) << 20) || pages >= INT64_C(1) << 20)
		return false;
	*insn = UINT32_C(0x90000000) | (v & 3) << 29 | (v >> 2) << 5 | rd;
	return true;
}

/* add xd, xn, #lo12 (64-bit, no shift) */
static uint32_t enc_add_lo12(unsigned int rd, unsigned int rn, uintptr_t target)
{
	return UINT32_C(0x91000000) | (uint32_t)(target & 0xfff) << 10 | rn << 5 | rd;
}

static int too_far(const char **why)
{
	*why = "an instruction in the region cannot reach its target from the detour";
	return -EINVAL;
}

/* b.cond, cbz/cbnz, tbz/tbnz: re-based, or inverted over a b target. */
static int relocate_cond(const struct ukp_arch_insn *ai, uint32_t insn, uintptr_t target,
			 uintptr_t dest, uint8_t *out, size_t *out_len, const char **why)
{
	unsigned int lo = 5, bits = ai->sim == UKP_SIM_TBZ || ai->sim == UKP_SIM_TBNZ ? 14 : 19;
	int64_t rel = (int64_t)(target - dest);
	uint32_t skip;

	if (ai->sim == UKP_SIM_BCOND && ai->cond >= 14) {	/* al, nv: always */
		if (!fits_words(rel, 26))
			return too_far(why);
		put_insn(out, enc_b(rel));
		*out_len = 4;
		return 0;
	}
	if (fits_words(rel, bits)) {
		put_insn(out, with_imm(insn, lo, bits, rel));
		*out_len = 4;
		return 0;
	}
	rel = (int64_t)(target - (dest + 4));
	if (!fits_words(rel, 26))
		return too_far(why);
	/* the inverse: cond ^ 1, cbz <-> cbnz, tbz <-> tbnz (bit 24) */
	skip = ai->sim == UKP_SIM_BCOND ? insn ^ 1 : insn ^ (UINT32_C(1) << 24);
	put_insn(out, with_imm(skip, lo, bits, 8));
	put_insn(out + 4, enc_b(rel));
	*out_len = 8;
	return 0;
}

/* bl / blr xN: x30 = addr + 4 from a literal, then go. */
static int relocate_call(const struct ukp_arch_insn *ai, uintptr_t addr, uintptr_t dest,
			 uint8_t *out, size_t *out_len, const char **why)
{
	uint64_t ret_addr = addr + 4;
	unsigned int i;

	if (arch_shadow_stack_active()) {
		*why = "a call in the region cannot be relocated under a guarded control stack";
		return -EOPNOTSUPP;
	}
	if (ai->sim == UKP_SIM_BLR && ai->reg == 30) {
		*why = "blr x30 in the region is not relocatable";
		return -EOPNOTSUPP;
	}
	if (ai->sim == UKP_SIM_BL) {
		int64_t rel = (int64_t)(addr + (uintptr_t)ai->imm - (dest + 4));

		if (!fits_words(rel, 26))
			return too_far(why);
		put_insn(out + 4, enc_b(rel));
	} else {
		put_insn(out + 4, UINT32_C(0xd61f0000) | (uint32_t)ai->reg << 5);	/* br */
	}
	put_insn(out, UINT32_C(0x58000040) | 30);	/* ldr x30, .+8 */
	for (i = 0; i < 8; i++)
		out[8 + i] = (uint8_t)(ret_addr >> (8 * i));
	*out_len = 16;
	return 0;
}

/* adr / adrp: the same address into the same register. */
static int relocate_adr(const struct ukp_arch_insn *ai, uint32_t insn, uintptr_t addr,
			uintptr_t dest, uint8_t *out, size_t *out_len, const char **why)
{
	uintptr_t target = ai->sim == UKP_SIM_ADRP ? (addr & ~(uintptr_t)0xfff) + (uintptr_t)ai->imm :
						      addr + (uintptr_t)ai->imm;
	int64_t rel = (int64_t)(target - dest);
	uint32_t w;

	if (ai->reg == 31) {		/* writes xzr: nothing to do */
		put_insn(out, A64_NOP);
		*out_len = 4;
		return 0;
	}
	if (ai->sim == UKP_SIM_ADR && rel >= -(INT64_C(1) << 20) && rel < INT64_C(1) << 20) {
		uint32_t v = (uint32_t)rel & 0x1fffff;

		put_insn(out, (insn & UINT32_C(0x9f00001f)) | (v & 3) << 29 | (v >> 2) << 5);
		*out_len = 4;
		return 0;
	}
	if (!enc_adrp(&w, ai->reg, dest, target))
		return too_far(why);
	put_insn(out, w);
	*out_len = 4;
	if (ai->sim == UKP_SIM_ADR) {
		put_insn(out + 4, enc_add_lo12(ai->reg, ai->reg, target));
		*out_len = 8;
	}
	return 0;
}

/* ldr/ldrsw (literal) of a general register. */
static int relocate_ldr(const struct ukp_arch_insn *ai, uint32_t insn, uintptr_t addr,
			uintptr_t dest, uint8_t *out, size_t *out_len, const char **why)
{
	uintptr_t target = addr + (uintptr_t)ai->imm;
	unsigned int rt = ai->reg, size = ai->sim == UKP_SIM_LDR_LIT64 ? 8 : 4;
	uint32_t adrp, ld = ai->sim == UKP_SIM_LDR_LIT32 ? UINT32_C(0xb9400000) :
			    ai->sim == UKP_SIM_LDR_LIT64 ? UINT32_C(0xf9400000) :
							   UINT32_C(0xb9800000);
	size_t n = 4;

	if (fits_words((int64_t)(target - dest), 19)) {
		put_insn(out, with_imm(insn, 5, 19, (int64_t)(target - dest)));
		*out_len = 4;
		return 0;
	}
	if (rt == 31) {	/* xzr cannot be the base of the long form */
		*why = "ldr (literal) into xzr in the region is out of reach of the detour";
		return -EINVAL;
	}
	if (!enc_adrp(&adrp, rt, dest, target))
		return too_far(why);
	put_insn(out, adrp);
	if ((target & 0xfff) % size) {	/* not a scaled offset: add it first */
		put_insn(out + 4, enc_add_lo12(rt, rt, target));
		put_insn(out + 8, ld | rt << 5 | rt);
		n = 12;
	} else {
		put_insn(out + 4, ld | (uint32_t)((target & 0xfff) / size) << 10 | rt << 5 | rt);
		n = 8;
	}
	*out_len = n;
	return 0;
}

/* FP/SIMD ldr and prfm (literal): probing refuses them, a copy can
 * re-base them; out of reach, a prefetch becomes a nop. */
static int relocate_other_literal(uint32_t insn, uintptr_t addr, uintptr_t dest, uint8_t *out,
				  size_t *out_len, const char **why)
{
	uintptr_t target = addr + (uintptr_t)((int64_t)((int32_t)(insn << 8) >> 13) * 4);
	bool prfm = (insn & UINT32_C(0xff000000)) == UINT32_C(0xd8000000);

	if (fits_words((int64_t)(target - dest), 19))
		put_insn(out, with_imm(insn, 5, 19, (int64_t)(target - dest)));
	else if (prfm)
		put_insn(out, A64_NOP);
	else
		return too_far(why);
	*out_len = 4;
	return 0;
}

/* [reg] */
int arch_relocate_insn(const uint8_t *code, size_t avail, uintptr_t addr, uintptr_t dest,
		       uint8_t *out, size_t *out_len, enum arch_reloc_end *ends, const char **why)
{
	struct ukp_arch_insn ai;
	uint32_t insn;
	bool boost;
	int ret;

	*ends = ARCH_RELOC_NEXT;
	if (avail < 4 || addr % 4 || dest % 4) {
		*why = "undecodable instruction in the region";
		return -EILSEQ;
	}
	insn = arch_a64_read_insn(code);
	memset(&ai, 0, sizeof(ai));
	ret = ukp_a64_classify(&ai, insn, &boost);
	if (ret == -EOPNOTSUPP) {
		/* literal forms a copy can re-base: FP/SIMD ldr, prfm */
		if ((insn & UINT32_C(0x3b000000)) == UINT32_C(0x18000000) &&
		    (insn & UINT32_C(0xc4000000)) != UINT32_C(0xc4000000)) {
			ret = relocate_other_literal(insn, addr, dest, out, out_len, why);
			return ret ? ret : 4;
		}
		/* retaa/retab: authenticated with sp, not pc */
		if ((insn & UINT32_C(0xfffffbff)) == UINT32_C(0xd65f0bff)) {
			put_insn(out, insn);
			*out_len = 4;
			*ends = ARCH_RELOC_LEAVES;
			return 4;
		}
	}
	if (ret) {
		*why = ret == -EILSEQ ? "undecodable or exception instruction in the region" :
			"an instruction in the region is not relocatable (exclusive, "
			"authenticated branch, memory copy/set, ...)";
		return ret == -EILSEQ ? -EILSEQ : -EOPNOTSUPP;
	}
	switch (ai.sim) {
	case UKP_SIM_NONE:
		if (!boost || ai.blocking) {
			*why = "an instruction in the region is not relocatable (system call, "
			       "wait, system register, ...)";
			return -EOPNOTSUPP;
		}
		put_insn(out, insn);
		*out_len = 4;
		return 4;
	case UKP_SIM_B: {
		int64_t rel = (int64_t)(addr + (uintptr_t)ai.imm - dest);

		if (!fits_words(rel, 26))
			return too_far(why);
		put_insn(out, enc_b(rel));
		*out_len = 4;
		*ends = ARCH_RELOC_LEAVES;
		return 4;
	}
	case UKP_SIM_BCOND:
	case UKP_SIM_CBZ:
	case UKP_SIM_CBNZ:
	case UKP_SIM_TBZ:
	case UKP_SIM_TBNZ:
		ret = relocate_cond(&ai, insn, addr + (uintptr_t)ai.imm, dest, out, out_len, why);
		if (!ret && ai.sim == UKP_SIM_BCOND && ai.cond >= 14)
			*ends = ARCH_RELOC_LEAVES;
		return ret ? ret : 4;
	case UKP_SIM_BL:
	case UKP_SIM_BLR:
		ret = relocate_call(&ai, addr, dest, out, out_len, why);
		if (!ret)
			*ends = ARCH_RELOC_CALL;
		return ret ? ret : 4;
	case UKP_SIM_BR:
	case UKP_SIM_RET:
		put_insn(out, insn);
		*out_len = 4;
		*ends = ARCH_RELOC_LEAVES;
		return 4;
	case UKP_SIM_ADR:
	case UKP_SIM_ADRP:
		ret = relocate_adr(&ai, insn, addr, dest, out, out_len, why);
		return ret ? ret : 4;
	default:	/* ldr, ldrsw (literal) */
		ret = relocate_ldr(&ai, insn, addr, dest, out, out_len, why);
		return ret ? ret : 4;
	}
}

/* [reg] A nop (-fpatchable-function-entry) covers the 4-byte b of an
 * optimized probe on its own. */
size_t arch_patchable_nops(const uint8_t *code, size_t avail)
{
	size_t pos = 0;

	while (pos < UKP_OPT_JUMP_SIZE && pos + 4 <= avail &&
	       arch_a64_read_insn(code + pos) == A64_NOP)
		pos += 4;
	return pos >= UKP_OPT_JUMP_SIZE ? pos : 0;
}
