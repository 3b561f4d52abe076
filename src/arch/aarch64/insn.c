// SPDX-License-Identifier: MIT
/*
 * insn.c - AArch64 instruction analysis for probing.
 *
 * Decides, for the 32-bit instruction at a probe point, whether it can be
 * probed at all (and with which errno it is refused), whether the trap
 * handler simulates it (every instruction that reads or writes pc, see
 * core.c) or whether it runs out of line from a slot, and builds the slot
 * and boost images. The classification follows the kernel's arm64
 * kprobes (arm_probe_decode_insn, aarch64_insn_is_steppable), with the
 * differences user space allows written where they are made. Encodings
 * are from the Arm ARM's A64 encoding index.
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

#define A64_B_INSN UINT32_C(0x14000000)

/* [reg] The bits lo..lo+n-1 of insn. */
static uint32_t field(uint32_t insn, unsigned int lo, unsigned int n)
{
	return (insn >> lo) & ((UINT32_C(1) << n) - 1);
}

/* [reg] The n-bit field at lo, sign-extended. */
static int64_t sfield(uint32_t insn, unsigned int lo, unsigned int n)
{
	uint64_t v = field(insn, lo, n);

	return (int64_t)(v << (64 - n)) >> (64 - n);
}

static void put_insn(uint8_t *p, uint32_t insn)
{
	p[0] = (uint8_t)insn;
	p[1] = (uint8_t)(insn >> 8);
	p[2] = (uint8_t)(insn >> 16);
	p[3] = (uint8_t)(insn >> 24);
}

/* The one why of an encoding known to be unallocated: arch_insn_length
 * tells those from instructions that decode but are refused. */
static const char unallocated[] = "unallocated encoding";

static int refuse(struct ukp_arch_insn *ai, int err, const char *why)
{
	ai->why = why;
	return err;
}

/* [any] See arch.h. */
const char *arch_insn_why(const struct ukp_arch_insn *ai)
{
	return ai->why;
}

/*
 * Load/store exclusive register and pair (ldxr, ldaxr, stxr, stlxr,
 * ldxp, ldaxp, stxp, stlxp and their b/h forms): bits 29:24 = 001000 and
 * o2 (bit 23) = 0. The same space with size 0x and o1 (bit 21) set is
 * casp: one atomic instruction that leaves no monitor behind, so unlike
 * the kernel's mask (which covers it) it is not an exclusive here.
 */
static bool is_exclusive(uint32_t insn)
{
	if ((insn & UINT32_C(0x3f800000)) != UINT32_C(0x08000000))
		return false;
	return field(insn, 31, 1) || !field(insn, 21, 1);
}

static bool is_load_exclusive(uint32_t insn)
{
	return is_exclusive(insn) && field(insn, 22, 1);
}

static bool is_store_exclusive(uint32_t insn)
{
	return is_exclusive(insn) && !field(insn, 22, 1);
}

/* [reg] */
int arch_check_boundary(const uint8_t *code, size_t off, size_t avail)
{
	size_t pos, stop;

	if (off % 4 || off >= avail || avail - off < 4)
		return -EILSEQ;
	stop = off > UKP_EXCL_SCAN_BYTES ? off - UKP_EXCL_SCAN_BYTES : 0;
	for (pos = off; pos > stop;) {
		uint32_t insn;

		pos -= 4;
		insn = arch_a64_read_insn(code + pos);
		if (is_store_exclusive(insn))
			return 0;
		if (is_load_exclusive(insn))
			return -EINVAL;	/* inside ldxr ... stxr */
	}
	return 0;
}

/*
 * The hints that run from the boost copy as from the original: nop and
 * those the kernel steps (pac*, xpaclri, bti). Other hints also run out
 * of line, with the trap back: aut* may fault by design (FEAT_FPAC), wfe
 * and wfi wait, and an unknown hint is kept where the core sees it end.
 */
static bool hint_boostable(uint32_t insn)
{
	switch (field(insn, 5, 7)) {	/* CRm:op2 */
	case 0:		/* nop */
	case 7:		/* xpaclri */
	case 8:		/* pacia1716 */
	case 10:	/* pacib1716 */
	case 24:	/* paciaz */
	case 25:	/* paciasp */
	case 26:	/* pacibz */
	case 27:	/* pacibsp */
	case 32:	/* bti */
	case 34:	/* bti c */
	case 36:	/* bti j */
	case 38:	/* bti jc */
		return true;
	default:
		return false;
	}
}

/* System registers EL0 code reads and writes all the time (mrs/msr). */
static bool sysreg_boostable(uint32_t insn)
{
	switch (field(insn, 5, 15)) {	/* o0:op1:CRn:CRm:op2 (op0 = 2 + o0) */
	case 0x5a10:	/* nzcv */
	case 0x5a20:	/* fpcr */
	case 0x5a21:	/* fpsr */
	case 0x5e82:	/* tpidr_el0 */
	case 0x5e83:	/* tpidrro_el0 */
		return true;
	default:
		return false;
	}
}

/*
 * [reg] The system instruction space (1101 0101 0x): hints, barriers,
 * pstate and system register moves, sys/sysl, and the 128-bit forms.
 * None reads or writes pc except tstart, whose failure path resumes
 * after it, in the slot. The kernel refuses msr and most hints because a
 * step at EL1 must not change DAIF or wait; at EL0 they either work the
 * same from the slot or trap for the kernel (SIGILL, which the core maps
 * back to the probed address), so they run out of line.
 */
static int classify_system(struct ukp_arch_insn *ai, uint32_t insn, bool *boost)
{
	if ((insn & UINT32_C(0xffffffe0)) == UINT32_C(0xd5233060))
		return refuse(ai, -EOPNOTSUPP, "tstart: its failure path resumes relative to pc");
	*boost = false;
	if ((insn & UINT32_C(0xfffff01f)) == UINT32_C(0xd503201f))
		*boost = hint_boostable(insn);
	else if ((insn & UINT32_C(0xfffff01f)) == UINT32_C(0xd503301f))
		*boost = field(insn, 5, 3) >= 4 && field(insn, 5, 3) <= 6; /* dsb dmb isb */
	else if ((insn & UINT32_C(0xffd00000)) == UINT32_C(0xd5100000))
		*boost = sysreg_boostable(insn);	/* msr/mrs (register) */
	return 0;
}

/* [reg] Exception generation (1101 0100): only svc is run (out of line). */
static int classify_exception(struct ukp_arch_insn *ai, uint32_t insn, bool *boost)
{
	uint32_t opc = field(insn, 21, 3), ll = field(insn, 0, 2);

	if (field(insn, 2, 3))
		return refuse(ai, -EILSEQ, unallocated);
	switch (opc) {
	case 0:
		if (ll == 1) {
			/* The core keeps signals deliverable while it
			 * blocks, and needs the trap back to restore the
			 * mask: never boosted. */
			ai->blocking = true;
			*boost = false;
			return 0;
		}
		if (ll)
			return refuse(ai, -EILSEQ, "exception instruction (hvc/smc)");
		break;
	case 1:
		if (!ll)
			return refuse(ai, -EILSEQ, "exception instruction (brk)");
		break;
	case 2:
		if (!ll)
			return refuse(ai, -EILSEQ, "exception instruction (hlt)");
		break;
	case 3:
		if (!ll)
			return refuse(ai, -EOPNOTSUPP, "tcancel: transactional memory");
		break;
	case 5:
		if (ll)
			return refuse(ai, -EILSEQ, "exception instruction (dcps)");
		break;
	}
	return refuse(ai, -EILSEQ, unallocated);
}

/* [reg] Unconditional branch (register): 1101 011 opc op2 op3 Rn op4. */
static int classify_branch_reg(struct ukp_arch_insn *ai, uint32_t insn)
{
	uint32_t opc = field(insn, 21, 4), op3 = field(insn, 10, 6);
	uint32_t rn = field(insn, 5, 5), op4 = field(insn, 0, 5);
	bool auth = (op3 & 0x3e) == 2;	/* 00001x: key A or B */

	if (field(insn, 16, 5) != 0x1f)
		return refuse(ai, -EILSEQ, unallocated);
	if (opc <= 2 && op3 == 0 && op4 == 0) {
		static const uint8_t sim[3] = { UKP_SIM_BR, UKP_SIM_BLR, UKP_SIM_RET };

		ai->sim = sim[opc];
		ai->reg = (uint8_t)rn;
		return 0;
	}
	if ((opc <= 2 && auth && op4 == 0x1f) || ((opc == 8 || opc == 9) && auth))
		return refuse(ai, -EOPNOTSUPP,
			      "pointer-authenticated branch (braa, blraa, retaa, ...)");
	if ((opc == 4 || opc == 5) && rn == 0x1f && ((op3 == 0 && op4 == 0) || (auth && op4 == 0x1f)))
		return refuse(ai, -EOPNOTSUPP, "exception return (eret, eretaa, drps)");
	return refuse(ai, -EILSEQ, unallocated);
}

/*
 * [reg] Branches, exception generation and system instructions (op0 =
 * 101x). Everything that transfers control is simulated or refused; an
 * encoding of this space not known here is refused, never run out of
 * line, since a newer branch would read pc (a newer system instruction
 * would not, but telling them apart needs this table to know it).
 */
static int classify_branch_sys(struct ukp_arch_insn *ai, uint32_t insn, bool *boost)
{
	if ((insn & UINT32_C(0x7c000000)) == UINT32_C(0x14000000)) {		/* b, bl */
		ai->sim = field(insn, 31, 1) ? UKP_SIM_BL : UKP_SIM_B;
		ai->imm = sfield(insn, 0, 26) * 4;
		return 0;
	}
	if ((insn & UINT32_C(0xff000000)) == UINT32_C(0x54000000)) {		/* b.cond */
		/* bit 4 set: bc.cond (FEAT_HBC), the same branch with a
		 * hint that it is consistent; the kernel's b.cond mask
		 * (0xff000010) does not match it. */
		ai->sim = UKP_SIM_BCOND;
		ai->cond = (uint8_t)field(insn, 0, 4);
		ai->imm = sfield(insn, 5, 19) * 4;
		return 0;
	}
	if ((insn & UINT32_C(0x7e000000)) == UINT32_C(0x34000000)) {		/* cbz, cbnz */
		ai->sim = field(insn, 24, 1) ? UKP_SIM_CBNZ : UKP_SIM_CBZ;
		ai->is64 = (uint8_t)field(insn, 31, 1);
		ai->reg = (uint8_t)field(insn, 0, 5);
		ai->imm = sfield(insn, 5, 19) * 4;
		return 0;
	}
	if ((insn & UINT32_C(0x7e000000)) == UINT32_C(0x36000000)) {		/* tbz, tbnz */
		ai->sim = field(insn, 24, 1) ? UKP_SIM_TBNZ : UKP_SIM_TBZ;
		ai->bit = (uint8_t)(field(insn, 31, 1) << 5 | field(insn, 19, 5));
		ai->reg = (uint8_t)field(insn, 0, 5);
		ai->imm = sfield(insn, 5, 14) * 4;
		return 0;
	}
	if ((insn & UINT32_C(0xfe000000)) == UINT32_C(0xd6000000))
		return classify_branch_reg(ai, insn);
	if ((insn & UINT32_C(0xff000000)) == UINT32_C(0xd4000000))
		return classify_exception(ai, insn, boost);
	if ((insn & UINT32_C(0xff800000)) == UINT32_C(0xd5000000))
		return classify_system(ai, insn, boost);
	return refuse(ai, -EILSEQ, unallocated);
}

/* [reg] Loads and stores (op0 = x1x0). */
static int classify_load_store(struct ukp_arch_insn *ai, uint32_t insn)
{
	if ((insn & UINT32_C(0x3b000000)) == UINT32_C(0x18000000)) {		/* literal */
		uint32_t opc = field(insn, 30, 2);

		if (field(insn, 26, 1)) {
			if (opc == 3)
				return refuse(ai, -EILSEQ, unallocated);
			return refuse(ai, -EOPNOTSUPP, "FP/SIMD ldr (literal) reads pc");
		}
		if (opc == 3)
			return refuse(ai, -EOPNOTSUPP, "prfm (literal) reads pc");
		ai->sim = opc == 0 ? UKP_SIM_LDR_LIT32 : opc == 1 ? UKP_SIM_LDR_LIT64 :
								 UKP_SIM_LDRSW_LIT;
		ai->reg = (uint8_t)field(insn, 0, 5);
		ai->imm = sfield(insn, 5, 19) * 4;
		return 0;
	}
	if ((insn & UINT32_C(0x3b200c00)) == UINT32_C(0x19000400))
		return refuse(ai, -EOPNOTSUPP,
			      "memory copy/set (FEAT_MOPS): the kernel restarts the sequence at "
			      "pc - 4 or pc - 8");
	if (is_exclusive(insn))
		return refuse(ai, -EINVAL,
			      "load/store exclusive: a trap inside the sequence clears the "
			      "exclusive monitor");
	return 0;
}

/* [reg] classify.h */
int ukp_a64_classify(struct ukp_arch_insn *ai, uint32_t insn, bool *boost)
{
	*boost = true;
	switch (field(insn, 25, 4)) {	/* op0 */
	case 0x0:
		if (field(insn, 31, 1))
			return 0;	/* SME */
		if (field(insn, 16, 9) == 0)
			return refuse(ai, -EILSEQ, "permanently undefined (udf)");
		return refuse(ai, -EILSEQ, unallocated);
	case 0x1:
	case 0x3:
		return refuse(ai, -EILSEQ, unallocated);
	case 0x8:
	case 0x9:							/* DP immediate */
		if ((insn & UINT32_C(0x1f000000)) == UINT32_C(0x10000000)) {	/* adr, adrp */
			bool page = field(insn, 31, 1);
			int64_t imm = sfield(insn, 5, 19) * 4 + (int64_t)field(insn, 29, 2);

			ai->sim = page ? UKP_SIM_ADRP : UKP_SIM_ADR;
			ai->reg = (uint8_t)field(insn, 0, 5);
			ai->imm = page ? imm * 4096 : imm;
		}
		return 0;
	case 0xa:
	case 0xb:
		return classify_branch_sys(ai, insn, boost);
	case 0x4:
	case 0x6:
	case 0xc:
	case 0xe:
		return classify_load_store(ai, insn);
	default:	/* SVE (0x2), DP register, SIMD and FP */
		return 0;
	}
}

/*
 * [reg] The boost copy for slot + UKP_BOOST_OFFSET: the instruction, then
 * "b addr + 4" from slot + UKP_BOOST_OFFSET + 4, if a b (+-128 MiB)
 * reaches. The kernel's arm64 kprobes have no booster; here no
 * instruction that runs out of line reads pc, so the copy is the same
 * word wherever it runs.
 */
static void prepare_boost(struct ukp_arch_insn *ai, struct ukp_slot_img *img, uint32_t insn,
			  uintptr_t addr, uintptr_t slot)
{
	uintptr_t from = slot + UKP_BOOST_OFFSET + 4;
	int64_t rel = (int64_t)(addr + 4 - from);

	if (rel < -(INT64_C(1) << 27) || rel >= INT64_C(1) << 27 || rel % 4)
		return;
	put_insn(img->boost_image, insn);
	put_insn(img->boost_image + 4, A64_B_INSN | (uint32_t)((rel >> 2) & 0x3ffffff));
	img->boost_len = 8;
	ai->boostable = true;
}

/* [reg] */
int arch_prepare_insn(struct ukp_arch_insn *ai, struct ukp_slot_img *img, const uint8_t *code,
		      size_t avail, uintptr_t addr, uintptr_t slot)
{
	struct ukp_slot_img scratch;
	uint32_t insn;
	bool boost;
	int ret;

	if (!img)
		img = &scratch;
	memset(ai, 0, sizeof(*ai));
	memset(img, 0, sizeof(*img));
	ai->len = 4;
	if (avail < 4)
		return refuse(ai, -EILSEQ, "fewer than 4 bytes of instruction");
	if (addr % 4)
		return refuse(ai, -EILSEQ, "address not 4-aligned");
	insn = arch_a64_read_insn(code);
	ai->opcode = insn;
	ret = ukp_a64_classify(ai, insn, &boost);
	if (ret)
		return ret;
	if (ai->sim != UKP_SIM_NONE) {
		/* Under a guarded control stack (FEAT_GCS) bl/blr push and
		 * ret pops the return address there too, which a simulation
		 * from the signal handler cannot do (as the x86 core refuses
		 * its call relocation under a shadow stack). */
		if ((ai->sim == UKP_SIM_BL || ai->sim == UKP_SIM_BLR || ai->sim == UKP_SIM_RET) &&
		    arch_shadow_stack_active())
			return refuse(ai, -EOPNOTSUPP,
				      "a call or return cannot be simulated under a guarded "
				      "control stack");
		return 0;
	}

	put_insn(img->slot_image, insn);
	put_insn(img->slot_image + 4, UKP_SSTEP_BREAKPOINT_INSN);
	img->slot_len = 8;
	ai->ool = true;
	if (boost && !ai->blocking && slot % 4 == 0)
		prepare_boost(ai, img, insn, addr, slot);
	return 0;
}

/* [reg] */
size_t arch_insn_length(const uint8_t *code, size_t avail)
{
	struct ukp_arch_insn ai;
	bool boost;

	if (avail < 4)
		return 0;
	memset(&ai, 0, sizeof(ai));
	/* Every refusal but "unallocated" is an instruction that decodes. */
	if (ukp_a64_classify(&ai, arch_a64_read_insn(code), &boost) == -EILSEQ &&
	    ai.why == unallocated)
		return 0;
	return 4;
}

/* [reg] ret, b, b.cond, cbz/cbnz, tbz/tbnz; br (an indirect jump) falls
 * through as on x86-64. */
enum arch_insn_flow arch_insn_flow(const uint8_t *code, size_t avail, uintptr_t addr,
				   size_t *len, uintptr_t *target)
{
	uint32_t i;
	int64_t off;

	*len = arch_insn_length(code, avail);
	if (!*len)
		return ARCH_FLOW_NEXT;
	i = arch_a64_read_insn(code);
	if ((i & 0xfffffc1fu) == 0xd65f0000u)          /* ret Xn */
		return ARCH_FLOW_RET;
	if ((i & 0xfc000000u) == 0x14000000u)          /* b imm26 */
		off = (int64_t)((int32_t)(i << 6) >> 6) * 4;
	else if ((i & 0xff000010u) == 0x54000000u ||    /* b.cond imm19 */
		 (i & 0x7e000000u) == 0x34000000u)      /* cbz/cbnz imm19 */
		off = (int64_t)((int32_t)(i << 8) >> 13) * 4;
	else if ((i & 0x7e000000u) == 0x36000000u)      /* tbz/tbnz imm14 */
		off = (int64_t)((int32_t)(i << 13) >> 18) * 4;
	else
		return ARCH_FLOW_NEXT;
	*target = addr + (uintptr_t)off;
	return ARCH_FLOW_JUMP;
}
