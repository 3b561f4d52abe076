// SPDX-License-Identifier: MIT
/*
 * vecuse.c - does code reachable from a function touch the FP/SIMD or SVE
 * state? (arch_code_vector_free, see arch.h), AArch64. Everything here is
 * [reg].
 *
 * The same proof as x86-64's (src/arch/x86_64/vecuse.c), on A64 code as
 * it is loaded: it follows every path from the function's first
 * instruction (b, b.cond, cbz/cbnz, tbz/tbnz, bl, and br/blr through a GOT
 * slot whose target is bound: a PLT stub's "adrp x16; ldr x17, [x16, #o];
 * add x16, x16, #o; br x17", or compiled code's "adrp xN; ldr xM, [xN,
 * #o]; blr xM") and fails at the first instruction that reads or writes
 * the FP/SIMD registers, FPCR, FPSR, FPMR, the SVE or SME state: the
 * scalar FP and Advanced SIMD data-processing group (op0 x111), loads and
 * stores with the V bit, SVE (op0 0010), SME (op0 0000 with bit 31 set),
 * mrs/msr of those system registers and smstart/smstop.
 *
 * It is conservative: an indirect call or jump it cannot follow (a
 * function pointer, a jump table) fails it, unless the caller says that
 * indirect calls are checked separately (the library's own hit path,
 * whose indirect calls are the handlers). Reading a vector register fails
 * it too. A walk longer than WALK_BUDGET instructions fails. A system
 * call does not count: the kernel keeps v0-v31, FPCR and FPSR across it
 * (the SVE bits beyond them it may clear, as a handler's own NEON use
 * would: the ports keep the FP/SIMD state, arch_vecsafe_call).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "flow/code_walk.h"
#include "base/base.h"
#include "core/core.h"
#include "process/process.h"
#include "text/text.h"
#include "optimizer/optimizer.h"

#define WALK_BUDGET 20000

static int64_t sext(uint32_t v, unsigned int bits)
{
	return (int64_t)((uint64_t)v << (64 - bits)) >> (64 - bits);
}

/* What the walk does with one instruction. */
enum step {
	S_NEXT,      /* falls through */
	S_BRANCH,    /* conditional: target, and falls through */
	S_CALL,      /* bl: target, and falls through */
	S_JUMP,      /* b: target only */
	S_ICALL,     /* blr Xn */
	S_IJUMP,     /* br Xn */
	S_END,       /* ret, brk, hlt, udf: the path ends */
	S_VECTOR,    /* touches the FP/SIMD/SVE/SME state */
	S_BAD,       /* unallocated, or an exception level change */
};

/* mrs/msr (register) of FPCR, FPSR, FPMR (S3_3_C4_C4_x) or SVCR
 * (S3_3_C4_C2_2); msr (immediate) of SVCR: smstart/smstop. */
static bool fp_sysreg(uint32_t insn)
{
	uint32_t op0, op1, crn, crm, op2;

	if ((insn & 0xffd00000) == 0xd5100000) { /* mrs/msr (register): op0 2-3 */
		op0 = 2 + ((insn >> 19) & 1);
		op1 = (insn >> 16) & 7;
		crn = (insn >> 12) & 15;
		crm = (insn >> 8) & 15;
		op2 = (insn >> 5) & 7;
		return op0 == 3 && op1 == 3 && crn == 4 &&
		       (crm == 4 || (crm == 2 && op2 == 2));
	}
	if ((insn & 0xfff8f01f) == 0xd500401f) { /* msr (immediate) */
		op1 = (insn >> 16) & 7;
		op2 = (insn >> 5) & 7;
		return op1 == 3 && op2 == 3; /* SVCRSM, SVCRZA, SVCRSMZA */
	}
	return false;
}

/* Branches, exceptions and system instructions (op0 101x). */
static enum step branch_sys(uint32_t insn, uintptr_t pc, uintptr_t *t, unsigned int *rn)
{
	if ((insn & 0x7c000000) == 0x14000000) { /* b, bl */
		*t = pc + (uintptr_t)(sext(insn & 0x3ffffff, 26) * 4);
		return insn >> 31 ? S_CALL : S_JUMP;
	}
	if ((insn & 0xff000010) == 0x54000000) { /* b.cond */
		*t = pc + (uintptr_t)(sext((insn >> 5) & 0x7ffff, 19) * 4);
		return ((insn >> 0) & 15) >= 14 ? S_JUMP : S_BRANCH; /* b.al, b.nv */
	}
	if ((insn & 0x7e000000) == 0x34000000) { /* cbz, cbnz */
		*t = pc + (uintptr_t)(sext((insn >> 5) & 0x7ffff, 19) * 4);
		return S_BRANCH;
	}
	if ((insn & 0x7e000000) == 0x36000000) { /* tbz, tbnz */
		*t = pc + (uintptr_t)(sext((insn >> 5) & 0x3fff, 14) * 4);
		return S_BRANCH;
	}
	if ((insn & 0xfe000000) == 0xd6000000) { /* unconditional, to a register */
		*rn = (insn >> 5) & 31;
		switch ((insn >> 21) & 15) {
		case 0: /* br */
		case 8: /* braa, brab, braaz, brabz */
			return S_IJUMP;
		case 1: /* blr */
		case 9: /* blraa, ... */
			return S_ICALL;
		case 2: /* ret, retaa, retab */
			return S_END;
		default:
			return S_BAD;
		}
	}
	if ((insn & 0xff000000) == 0xd4000000) { /* exception generation */
		switch (insn & 0x00e0001f) {
		case 0x00000001: /* svc */
			return S_NEXT;
		case 0x00200000: /* brk */
		case 0x00400000: /* hlt */
			return S_END;
		default:
			return S_BAD;
		}
	}
	if ((insn & 0xffc00000) == 0xd5000000) /* system */
		return fp_sysreg(insn) ? S_VECTOR : S_NEXT;
	return S_BAD;
}

/* One instruction: what it does to the walk; *t the direct target, *rn
 * the register of an indirect branch. */
static enum step classify(uint32_t insn, uintptr_t pc, uintptr_t *t, unsigned int *rn)
{
	uint32_t op0 = (insn >> 25) & 15;

	if (op0 == 0) /* udf (bit 31 clear) or SME */
		return insn >> 31 ? S_VECTOR : S_END;
	if (op0 == 2) /* SVE */
		return S_VECTOR;
	if (op0 == 1 || op0 == 3)
		return S_BAD;
	if ((op0 & 7) == 7) /* scalar FP and Advanced SIMD */
		return S_VECTOR;
	if ((op0 & 5) == 4) /* loads and stores: bit 26 is V */
		return insn & (1u << 26) ? S_VECTOR : S_NEXT;
	if ((op0 & 14) == 10) /* branches, exceptions, system */
		return branch_sys(insn, pc, t, rn);
	return S_NEXT; /* data processing, immediate or register */
}

/*
 * The GOT slots of the straight-line code before an indirect branch:
 * adrp gives a register a page, ldr Xt, [Xn, #imm] with that page a slot,
 * and an indirect branch through a register holding a slot's value goes
 * where the slot points now (0: unknown). Only adrp, that ldr and add
 * (immediate) may come between (each forgets what its destination held);
 * anything else forgets every register.
 */
struct got_track {
	uintptr_t page[32];
	uintptr_t slot[32];
};

static void track(struct got_track *g, uint32_t insn, uintptr_t pc)
{
	unsigned int d = insn & 31, n = (insn >> 5) & 31;

	if ((insn & 0x9f000000) == 0x90000000) { /* adrp (to xzr: nothing) */
		uint64_t imm = ((insn >> 29) & 3) | (((insn >> 5) & 0x7ffff) << 2);

		if (d != 31)
			g->page[d] = (pc & ~(uintptr_t)0xfff) +
				     (uintptr_t)(sext((uint32_t)imm, 21) << 12);
		g->slot[d] = 0;
	} else if ((insn & 0xffc00000) == 0xf9400000) { /* ldr Xt, [Xn|sp, #uimm12 * 8] */
		uintptr_t slot = n != 31 && g->page[n] ? g->page[n] + ((insn >> 10) & 0xfff) * 8 : 0;

		g->page[d] = 0;
		g->slot[d] = d != 31 ? slot : 0;
	} else if ((insn & 0xff800000) == 0x91000000) { /* add Xd, Xn, #imm (no shift) */
		uintptr_t page = g->page[n] && d != 31 ? g->page[n] + ((insn >> 10) & 0xfff) : 0;

		if (d != 31) {
			g->page[d] = page;
			g->slot[d] = 0;
		}
	} else {
		memset(g, 0, sizeof(*g));
	}
}

/* The bound target of the slot whose value register rn holds, if any.
 * A lazily bound slot points at the PLT's resolver, which saves the
 * vector state itself: the walk follows it and fails there. */
static bool slot_target(const struct got_track *g, unsigned int rn, uintptr_t *target)
{
	uintptr_t v;

	if (rn == 31 || !g->slot[rn] ||
	    arch_copy_nofault(&v, (const void *)g->slot[rn], sizeof(v)) || !v)
		return false;
	*target = v;
	return true;
}

/* [reg] See arch.h. */
int arch_code_vector_free(uintptr_t fn, unsigned int flags, const uintptr_t *safe, size_t nsafe,
			  size_t (*read)(uintptr_t addr, uint8_t *buf, size_t len),
			  const char **why, uintptr_t *where)
{
	struct ukp_walk w;
	int ret = 1;

	*why = NULL;
	*where = fn;
	if (ukp_walk_init(&w, WALK_BUDGET) || ukp_walk_push(&w, fn)) {
		ret = -ENOMEM;
		goto out;
	}
	while (ret == 1 && w.ntodo) {
		uintptr_t pc = w.todo[--w.ntodo];
		struct got_track g;

		memset(&g, 0, sizeof(g));
		while (ukp_walk_mark(&w, pc)) {
			uint8_t buf[4];
			uint32_t insn;
			uintptr_t t = 0;
			unsigned int rn = 31;
			enum step st;

			*where = pc;
			if (++w.insns > WALK_BUDGET) {
				*why = "too much code to check";
				ret = 0;
				break;
			}
			if ((pc & 3) || !ukp_addr_is_text(pc, 4)) {
				*why = "a path leaves the loaded code";
				ret = 0;
				break;
			}
			if (read(pc, buf, sizeof(buf)) != sizeof(buf)) {
				*why = "an instruction cannot be read";
				ret = 0;
				break;
			}
			memcpy(&insn, buf, sizeof(insn));
			st = classify(insn, pc, &t, &rn);
			if (st == S_ICALL || st == S_IJUMP) {
				if (slot_target(&g, rn, &t))
					st = st == S_ICALL ? S_CALL : S_JUMP;
			}
			track(&g, insn, pc);
			switch (st) {
			case S_NEXT:
				break;
			case S_BRANCH:
				if (ukp_walk_push(&w, t)) {
					ret = -ENOMEM;
					goto out;
				}
				break;
			case S_CALL:
				if (!ukp_walk_known_safe(t, safe, nsafe) && ukp_walk_push(&w, t)) {
					ret = -ENOMEM;
					goto out;
				}
				memset(&g, 0, sizeof(g)); /* the callee's registers */
				break;
			case S_JUMP:
				if (!ukp_walk_known_safe(t, safe, nsafe) && ukp_walk_push(&w, t)) {
					ret = -ENOMEM;
					goto out;
				}
				goto next_path;
			case S_ICALL:
				if (!(flags & ARCH_VF_INDIRECT_CALLS_OK)) {
					*why = "an indirect call";
					ret = 0;
					goto next_path;
				}
				memset(&g, 0, sizeof(g));
				break;
			case S_IJUMP:
				*why = "an indirect jump";
				ret = 0;
				goto next_path;
			case S_END:
				goto next_path;
			case S_VECTOR:
				*why = "uses the FP/SIMD or SVE state";
				ret = 0;
				goto next_path;
			case S_BAD:
				*why = "an instruction it cannot follow";
				ret = 0;
				goto next_path;
			}
			pc += 4;
		}
next_path:;
	}
out:
	ukp_walk_free(&w);
	return ret;
}
