/* SPDX-License-Identifier: MIT */
/*
 * vecuse.c - does code reachable from a function touch the vector, x87
 * or MXCSR state? (arch_code_vector_free, see arch.h). Everything here
 * is [reg].
 *
 * The jump-optimized hit path does not save the vector state when every
 * handler it calls leaves it alone (vecstate.c): then a probe hit costs
 * about what the kernel's optprobes cost, which never save it. This walk
 * is the proof, done on the machine code as it is loaded: it follows
 * every path from the function's first instruction (conditional and
 * direct branches, direct calls, calls and jumps through a GOT slot whose
 * target is bound) and fails at the first instruction that reads or
 * writes an x87, MMX, XMM, YMM, ZMM, mask or AMX register, MXCSR or the
 * x87 control/status/tag words, or saves/restores extended state.
 *
 * It is conservative: an indirect call or jump it cannot follow (a
 * function pointer, a jump table) fails it, unless the caller says that
 * indirect calls are checked separately (the library's own hit path,
 * whose indirect calls are the handlers). Reading a vector register
 * fails it too, though reading does not change the state. A walk longer
 * than WALK_BUDGET instructions fails. System calls do not count: the
 * kernel preserves the user's extended state across them.
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
#include "symbols/symbols.h"
#include "decoder.h"

#define WALK_BUDGET 20000

static bool vector_reg(ZydisRegister r)
{
	switch (ZydisRegisterGetClass(r)) {
	case ZYDIS_REGCLASS_X87:
	case ZYDIS_REGCLASS_MMX:
	case ZYDIS_REGCLASS_XMM:
	case ZYDIS_REGCLASS_YMM:
	case ZYDIS_REGCLASS_ZMM:
	case ZYDIS_REGCLASS_TMM:
	case ZYDIS_REGCLASS_MASK:
		return true;
	default:
		break;
	}
	switch (r) {
	case ZYDIS_REGISTER_MXCSR:
	case ZYDIS_REGISTER_X87CONTROL:
	case ZYDIS_REGISTER_X87STATUS:
	case ZYDIS_REGISTER_X87TAG:
	case ZYDIS_REGISTER_XCR0:
		return true;
	default:
		return false;
	}
}

/* Instructions whose state access is implicit (no register operand
 * names it): extended-state save/restore, x87 control, MMX exit, AVX
 * upper-half clearing, ... */
static bool vector_category(ZydisInstructionCategory c)
{
	switch (c) {
	case ZYDIS_CATEGORY_X87_ALU:
	case ZYDIS_CATEGORY_FCMOV:
	case ZYDIS_CATEGORY_MMX:
	case ZYDIS_CATEGORY_AMD3DNOW:
	case ZYDIS_CATEGORY_XSAVE:
	case ZYDIS_CATEGORY_XSAVEOPT:
	case ZYDIS_CATEGORY_AMX_TILE:
	case ZYDIS_CATEGORY_SSE:
	case ZYDIS_CATEGORY_AVX:
	case ZYDIS_CATEGORY_AVX2:
	case ZYDIS_CATEGORY_AVX2GATHER:
	case ZYDIS_CATEGORY_AVX512:
	case ZYDIS_CATEGORY_AVX512_4FMAPS:
	case ZYDIS_CATEGORY_AVX512_4VNNIW:
	case ZYDIS_CATEGORY_AVX512_BITALG:
	case ZYDIS_CATEGORY_AVX512_VBMI:
	case ZYDIS_CATEGORY_AVX512_VP2INTERSECT:
	case ZYDIS_CATEGORY_KMASK:
	case ZYDIS_CATEGORY_VFMA:
	case ZYDIS_CATEGORY_FMA4:
	case ZYDIS_CATEGORY_XOP:
	case ZYDIS_CATEGORY_FP16:
	case ZYDIS_CATEGORY_AES:
	case ZYDIS_CATEGORY_SHA:
	case ZYDIS_CATEGORY_PCLMULQDQ:
	case ZYDIS_CATEGORY_VAES:
	case ZYDIS_CATEGORY_VPCLMULQDQ:
	case ZYDIS_CATEGORY_GFNI:
	case ZYDIS_CATEGORY_KEYLOCKER:
	case ZYDIS_CATEGORY_KEYLOCKER_WIDE:
		return true;
	default:
		return false;
	}
}

static bool touches_vector(const ZydisDecodedInstruction *in, const ZydisDecodedOperand *ops)
{
	unsigned int i;

	if (vector_category(in->meta.category))
		return true;
	for (i = 0; i < in->operand_count; i++) {
		const ZydisDecodedOperand *o = &ops[i];

		if (o->type == ZYDIS_OPERAND_TYPE_REGISTER && vector_reg(o->reg.value))
			return true;
	}
	return false;
}

/*
 * The target of a call/jmp through memory, when it is a RIP-relative
 * slot with no index (a GOT entry, "call *foo@GOTPCREL(%rip)" or a PLT
 * stub's "jmp *foo@GOT(%rip)"): the pointer it holds now. A lazily bound
 * slot points back into the PLT, whose resolver saves the vector state
 * itself and then goes to a target unknown here: the walk follows the
 * resolver and fails there, which is the conservative answer.
 */
static bool slot_target(const ZydisDecodedInstruction *in, const ZydisDecodedOperand *op,
			uintptr_t pc, uintptr_t *target)
{
	uintptr_t slot, v;

	if (op->type != ZYDIS_OPERAND_TYPE_MEMORY || op->mem.base != ZYDIS_REGISTER_RIP ||
	    op->mem.index != ZYDIS_REGISTER_NONE || op->mem.segment == ZYDIS_REGISTER_FS ||
	    op->mem.segment == ZYDIS_REGISTER_GS)
		return false;
	slot = pc + in->length + (uintptr_t)op->mem.disp.value;
	if (arch_copy_nofault(&v, (const void *)slot, sizeof(v)) || !v)
		return false;
	*target = v;
	return true;
}

static bool direct_target(const ZydisDecodedInstruction *in, const ZydisDecodedOperand *op,
			  uintptr_t pc, uintptr_t *target)
{
	if (op->type != ZYDIS_OPERAND_TYPE_IMMEDIATE || !op->imm.is_relative)
		return false;
	*target = pc + in->length + (uintptr_t)op->imm.value.s;
	return true;
}

/* [reg] See arch.h. */
int arch_code_vector_free(uintptr_t fn, unsigned int flags, const uintptr_t *safe, size_t nsafe,
			  size_t (*read)(uintptr_t addr, uint8_t *buf, size_t len),
			  const char **why, uintptr_t *where)
{
	const ZydisDecoder *dec = ukp_x86_decoder(false);
	struct ukp_walk w;
	int ret = 1;

	*why = NULL;
	*where = fn;
	if (!dec)
		return -ENOSYS;
	if (ukp_walk_init(&w, WALK_BUDGET) || ukp_walk_push(&w, fn)) {
		ret = -ENOMEM;
		goto out;
	}
	while (ret == 1 && w.ntodo) {
		uintptr_t pc = w.todo[--w.ntodo];

		while (ukp_walk_mark(&w, pc)) {
			ZydisDecodedInstruction in;
			ZydisDecodedOperand ops[ZYDIS_MAX_OPERAND_COUNT];
			uint8_t buf[UKP_MAX_INSN_SIZE];
			const ZydisDecodedOperand *op0 = &ops[0];
			uintptr_t t;
			size_t n;

			*where = pc;
			if (++w.insns > WALK_BUDGET) {
				*why = "too much code to check";
				ret = 0;
				break;
			}
			if (!ukp_addr_is_text(pc, 1)) {
				*why = "a path leaves the loaded code";
				ret = 0;
				break;
			}
			n = read(pc, buf, sizeof(buf));
			if (!n || !ZYAN_SUCCESS(ZydisDecoderDecodeFull(dec, buf, n, &in, ops))) {
				*why = "an instruction does not decode";
				ret = 0;
				break;
			}
			if (touches_vector(&in, ops)) {
				*why = "uses the vector, x87 or MXCSR state";
				ret = 0;
				break;
			}
			switch (in.mnemonic) {
			case ZYDIS_MNEMONIC_RET:
			case ZYDIS_MNEMONIC_HLT:
			case ZYDIS_MNEMONIC_UD0:
			case ZYDIS_MNEMONIC_UD1:
			case ZYDIS_MNEMONIC_UD2:
			case ZYDIS_MNEMONIC_INT3:
				goto next_path;
			case ZYDIS_MNEMONIC_CALL:
				if (direct_target(&in, op0, pc, &t) || slot_target(&in, op0, pc, &t)) {
					if (!ukp_walk_known_safe(t, safe, nsafe) && ukp_walk_push(&w, t)) {
						ret = -ENOMEM;
						goto out;
					}
				} else if (!(flags & ARCH_VF_INDIRECT_CALLS_OK)) {
					*why = "an indirect call";
					ret = 0;
					goto next_path;
				}
				break;
			case ZYDIS_MNEMONIC_JMP:
				if (direct_target(&in, op0, pc, &t) || slot_target(&in, op0, pc, &t)) {
					if (!ukp_walk_known_safe(t, safe, nsafe) && ukp_walk_push(&w, t)) {
						ret = -ENOMEM;
						goto out;
					}
				} else {
					*why = "an indirect jump";
					ret = 0;
				}
				goto next_path;
			default:
				if (in.meta.category == ZYDIS_CATEGORY_COND_BR &&
				    direct_target(&in, op0, pc, &t) && ukp_walk_push(&w, t)) {
					ret = -ENOMEM;
					goto out;
				}
				if (in.meta.category == ZYDIS_CATEGORY_INTERRUPT ||
				    in.meta.category == ZYDIS_CATEGORY_SYSRET) {
					*why = "an interrupt instruction";
					ret = 0;
					goto next_path;
				}
				break;
			}
			pc += in.length;
		}
next_path:;
	}
out:
	ukp_walk_free(&w);
	return ret;
}
