// SPDX-License-Identifier: MIT
/*
 * insn.c - x86-64 instruction analysis for probing, on top of Zydis 4.
 *
 * Decides, for the instruction at a probe point, whether it can be probed
 * at all (and with which errno it is refused), whether the trap handler
 * emulates it (every instruction that changes ip or pushes a return
 * address, see core.c) or whether it runs out of line from a slot, and
 * builds the slot image in that case.
 *
 * Every function here runs at registration time ([reg]): under the
 * registry mutex, never in a signal handler. Zydis types stay in this
 * file; the rest of the library only sees struct ukp_arch_insn.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include <Zydis/Zydis.h>

#include "arch/arch.h"
#include "decoder.h"
#include "emu_ops.h"

/* [reg] The full 64-bit decoder, or NULL. */
static const ZydisDecoder *get_decoder(void)
{
	return ukp_x86_decoder(false);
}

/* [reg] */
int arch_check_boundary(const uint8_t *code, size_t off, size_t avail)
{
	const ZydisDecoder *dec = get_decoder();
	ZydisDecodedInstruction insn;
	size_t pos = 0;

	if (!dec || off >= avail)
		return -EILSEQ;

	/* Lengths are all we need: skip operand decoding (NULL context). */
	while (pos < off) {
		if (!ZYAN_SUCCESS(ZydisDecoderDecodeInstruction(dec, NULL, code + pos,
								avail - pos, &insn)))
			return -EILSEQ;
		pos += insn.length;
	}
	return pos == off ? 0 : -EILSEQ;
}

/* The texts of ai->why_off are in this object's read-only data, within
 * 2 GiB of this one. (Addresses as integers: pointer arithmetic across
 * objects is undefined.) */
static const char why_base[] = "";

static void set_why(struct ukp_arch_insn *ai, const char *why)
{
	ai->why_off = why ? (int32_t)((intptr_t)(uintptr_t)why - (intptr_t)(uintptr_t)why_base) : 0;
}

/* [any] See arch.h. */
const char *arch_insn_why(const struct ukp_arch_insn *ai)
{
	return ai->why_off ? (const char *)((uintptr_t)why_base + (uintptr_t)(intptr_t)ai->why_off)
			   : NULL;
}

static int refuse(struct ukp_arch_insn *ai, int err, const char *why)
{
	set_why(ai, why);
	return err;
}

static bool is_legacy_prefix(uint8_t b)
{
	switch (b) {
	case 0x26: case 0x2e: case 0x36: case 0x3e: case 0x64: case 0x65:
	case 0x66: case 0x67: case 0xf0: case 0xf2: case 0xf3:
		return true;
	default:
		return false;
	}
}

/*
 * [reg] Zydis decodes in 64-bit mode, where pop ss (17) and the absolute
 * far call/jmp (9a, ea) are invalid opcodes. They are still what the
 * bytes say, and arch.h gives them their own errno (the kernel's
 * mov/pop ss and far transfer rules), so look at the opcode byte before
 * calling the bytes plain garbage.
 */
static int refuse_undecodable(struct ukp_arch_insn *ai, const uint8_t *code, size_t avail)
{
	size_t i = 0;

	while (i < avail && is_legacy_prefix(code[i]))
		i++;
	if (i < avail && (code[i] & 0xf0) == 0x40)	/* REX */
		i++;
	if (i < avail) {
		switch (code[i]) {
		case 0x17:
			return refuse(ai, -EINVAL, "pop ss masks exceptions");
		case 0x9a:
		case 0xea:
			return refuse(ai, -EOPNOTSUPP, "far call/jmp");
		}
	}
	return refuse(ai, -EILSEQ, "undecodable instruction");
}

/* Instructions that raise an exception by design (breakpoints, traps). */
static bool is_exception_insn(const ZydisDecodedInstruction *insn)
{
	switch (insn->mnemonic) {
	case ZYDIS_MNEMONIC_INT3:
	case ZYDIS_MNEMONIC_INT:
	case ZYDIS_MNEMONIC_INTO:
	case ZYDIS_MNEMONIC_INT1:
	case ZYDIS_MNEMONIC_UD0:
	case ZYDIS_MNEMONIC_UD1:
	case ZYDIS_MNEMONIC_UD2:
		return true;
	default:
		return false;
	}
}

/*
 * mov ss / pop ss hold off interrupts and debug traps until after the
 * next instruction: our trailing int3 would be swallowed.
 */
static bool loads_ss(const ZydisDecodedInstruction *insn, const ZydisDecodedOperand *ops)
{
	if (insn->mnemonic != ZYDIS_MNEMONIC_MOV && insn->mnemonic != ZYDIS_MNEMONIC_POP)
		return false;
	return insn->operand_count > 0 && ops[0].type == ZYDIS_OPERAND_TYPE_REGISTER &&
	       ops[0].reg.value == ZYDIS_REGISTER_SS;
}

/*
 * In 64-bit mode Intel ignores 0x66 on near branches and AMD honours it
 * (16-bit ip): the two disagree, so such a branch is refused (as uprobes
 * does).
 */
static bool has_opsize_prefix(const ZydisDecodedInstruction *insn)
{
	unsigned int i;

	for (i = 0; i < insn->raw.prefix_count; i++)
		if (insn->raw.prefixes[i].value == 0x66)
			return true;
	return false;
}

static bool writes_ip(const ZydisDecodedInstruction *insn, const ZydisDecodedOperand *ops)
{
	unsigned int i;

	for (i = 0; i < insn->operand_count; i++) {
		if (ops[i].type != ZYDIS_OPERAND_TYPE_REGISTER ||
		    !(ops[i].actions & ZYDIS_OPERAND_ACTION_MASK_WRITE))
			continue;
		if (ops[i].reg.value == ZYDIS_REGISTER_RIP || ops[i].reg.value == ZYDIS_REGISTER_EIP)
			return true;
	}
	return false;
}

/* pt_regs word of a general-purpose register of any width, or NONE. */
static uint8_t gpr_word(ZydisRegister reg)
{
	if (reg == ZYDIS_REGISTER_RIP || reg == ZYDIS_REGISTER_EIP)
		return UKP_EMU_REG_RIP;

	switch (ZydisRegisterGetLargestEnclosing(ZYDIS_MACHINE_MODE_LONG_64, reg)) {
	case ZYDIS_REGISTER_RAX: return UKP_PT_REGS_WORD(ax);
	case ZYDIS_REGISTER_RCX: return UKP_PT_REGS_WORD(cx);
	case ZYDIS_REGISTER_RDX: return UKP_PT_REGS_WORD(dx);
	case ZYDIS_REGISTER_RBX: return UKP_PT_REGS_WORD(bx);
	case ZYDIS_REGISTER_RSP: return UKP_PT_REGS_WORD(sp);
	case ZYDIS_REGISTER_RBP: return UKP_PT_REGS_WORD(bp);
	case ZYDIS_REGISTER_RSI: return UKP_PT_REGS_WORD(si);
	case ZYDIS_REGISTER_RDI: return UKP_PT_REGS_WORD(di);
	case ZYDIS_REGISTER_R8:  return UKP_PT_REGS_WORD(r8);
	case ZYDIS_REGISTER_R9:  return UKP_PT_REGS_WORD(r9);
	case ZYDIS_REGISTER_R10: return UKP_PT_REGS_WORD(r10);
	case ZYDIS_REGISTER_R11: return UKP_PT_REGS_WORD(r11);
	case ZYDIS_REGISTER_R12: return UKP_PT_REGS_WORD(r12);
	case ZYDIS_REGISTER_R13: return UKP_PT_REGS_WORD(r13);
	case ZYDIS_REGISTER_R14: return UKP_PT_REGS_WORD(r14);
	case ZYDIS_REGISTER_R15: return UKP_PT_REGS_WORD(r15);
	default:                 return UKP_EMU_REG_NONE;
	}
}

/* jmp/jcc/call/loop with an immediate displacement from the next ip. */
static int prepare_relative(struct ukp_arch_insn *ai, const ZydisDecodedInstruction *insn,
			    enum ukp_emu_op op, uint8_t cond)
{
	if (has_opsize_prefix(insn))
		return refuse(ai, -EOPNOTSUPP, "relative branch with a 0x66 prefix");
	ai->emu = op;
	ai->cond = cond;
	ai->rel = (int32_t)insn->raw.imm[0].value.s;	/* rel8/rel32, sign-extended by Zydis */
	ai->addr_size = insn->address_width;	/* loop/jrcxz: the cx width */
	return 0;
}

static int prepare_ret(struct ukp_arch_insn *ai, const ZydisDecodedInstruction *insn)
{
	if (has_opsize_prefix(insn))
		return refuse(ai, -EOPNOTSUPP, "ret with a 0x66 prefix");
	ai->emu = UKP_EMU_RET;
	ai->imm = insn->opcode == 0xc2 ? (uint16_t)insn->raw.imm[0].value.u : 0;
	return 0;
}

/*
 * ff /2 and ff /4. The kernel refuses the memory form ("TODO: support
 * memory addressing"); we record the operand as pt_regs word indices so
 * the trap handler can compute the address and read the target.
 */
static int prepare_indirect(struct ukp_arch_insn *ai, const ZydisDecodedInstruction *insn,
			    const ZydisDecodedOperand *ops, enum ukp_emu_op op)
{
	const ZydisDecodedOperand *o = &ops[0];

	if (has_opsize_prefix(insn))
		return refuse(ai, -EOPNOTSUPP, "indirect branch with a 0x66 prefix");

	ai->emu = op;
	ai->addr_size = insn->address_width;
	if (o->type == ZYDIS_OPERAND_TYPE_REGISTER) {
		ai->ind_mem = 0;
		ai->ind_base = gpr_word(o->reg.value);
		if (ai->ind_base >= UKP_PT_REGS_NWORDS)
			return refuse(ai, -EOPNOTSUPP, "indirect branch through an odd register");
		return 0;
	}
	if (o->type != ZYDIS_OPERAND_TYPE_MEMORY)
		return refuse(ai, -EOPNOTSUPP, "indirect branch with an odd operand");
	/* We cannot read another thread's fs/gs base from a signal handler
	 * cheaply; other segment overrides are ignored in 64-bit mode. */
	if (o->mem.segment == ZYDIS_REGISTER_FS || o->mem.segment == ZYDIS_REGISTER_GS)
		return refuse(ai, -EOPNOTSUPP, "indirect branch through fs/gs");

	ai->ind_mem = 1;
	ai->ind_base = gpr_word(o->mem.base);
	ai->ind_index = gpr_word(o->mem.index);
	if ((o->mem.base != ZYDIS_REGISTER_NONE && ai->ind_base == UKP_EMU_REG_NONE) ||
	    (o->mem.index != ZYDIS_REGISTER_NONE && ai->ind_index >= UKP_PT_REGS_NWORDS))
		return refuse(ai, -EOPNOTSUPP, "indirect branch with an odd address");
	ai->ind_scale = ai->ind_index == UKP_EMU_REG_NONE ? 0 : o->mem.scale;
	ai->ind_disp = o->mem.disp.has_displacement ? (int32_t)o->mem.disp.value : 0; /* disp8/32 */
	return 0;
}

/*
 * [reg] Control transfers. Returns 0 when the instruction was prepared
 * for emulation, a negative errno when it cannot be probed, or 1 when it
 * is none of the transfers handled here.
 */
static int prepare_branch(struct ukp_arch_insn *ai, const ZydisDecodedInstruction *insn,
			  const ZydisDecodedOperand *ops)
{
	uint8_t op = insn->opcode;

	if (insn->encoding != ZYDIS_INSTRUCTION_ENCODING_LEGACY)
		return 1;

	if (insn->opcode_map == ZYDIS_OPCODE_MAP_0F) {
		if (op >= 0x80 && op <= 0x8f)
			return prepare_relative(ai, insn, UKP_EMU_JCC, op & 0xf);
		return 1;
	}
	if (insn->opcode_map != ZYDIS_OPCODE_MAP_DEFAULT)
		return 1;

	if (op >= 0x70 && op <= 0x7f)
		return prepare_relative(ai, insn, UKP_EMU_JCC, op & 0xf);

	switch (op) {
	case 0xe0:
		return prepare_relative(ai, insn, UKP_EMU_LOOPNE, 0);
	case 0xe1:
		return prepare_relative(ai, insn, UKP_EMU_LOOPE, 0);
	case 0xe2:
		return prepare_relative(ai, insn, UKP_EMU_LOOP, 0);
	case 0xe3:
		return prepare_relative(ai, insn, UKP_EMU_JRCXZ, 0);
	case 0xe8:
		return prepare_relative(ai, insn, UKP_EMU_CALL, 0);
	case 0xe9:
	case 0xeb:
		return prepare_relative(ai, insn, UKP_EMU_JMP, 0);
	case 0xc2:
	case 0xc3:
		return prepare_ret(ai, insn);
	case 0xca:
	case 0xcb:
		return refuse(ai, -EOPNOTSUPP, "far ret");
	case 0xff:
		switch (insn->raw.modrm.reg) {
		case 2:
			return prepare_indirect(ai, insn, ops, UKP_EMU_CALL_IND);
		case 4:
			return prepare_indirect(ai, insn, ops, UKP_EMU_JMP_IND);
		case 3:
		case 5:
			return refuse(ai, -EOPNOTSUPP, "far call/jmp");
		}
		return 1;
	}
	return 1;
}

/* Any memory operand, explicit or an lea/agen one, based on rip or eip. */
static bool has_rip_operand(const ZydisDecodedInstruction *insn, const ZydisDecodedOperand *ops)
{
	unsigned int i;

	for (i = 0; i < insn->operand_count; i++)
		if (ops[i].type == ZYDIS_OPERAND_TYPE_MEMORY &&
		    (ops[i].mem.base == ZYDIS_REGISTER_RIP || ops[i].mem.base == ZYDIS_REGISTER_EIP))
			return true;
	return false;
}

/*
 * Rewrite the disp32 of a rip-relative operand so that, run from slot,
 * the instruction addresses the same byte as at addr. The length does
 * not change, so the next ip moves by exactly addr - slot.
 */
static int rebase_rip_disp(struct ukp_arch_insn *ai, uint8_t *image,
			   const ZydisDecodedInstruction *insn, uintptr_t addr, uintptr_t slot)
{
	int64_t moved = (int64_t)(addr - slot);
	int64_t disp;
	uint8_t *p;

	/* rip-relative is always mod=00 rm=101 with a 4-byte displacement
	 * (never disp8*N, even in EVEX). */
	if (insn->raw.disp.size != 32 || insn->raw.disp.offset + 4u > insn->length)
		return refuse(ai, -EINVAL, "unexpected rip-relative encoding");

	if (__builtin_add_overflow(insn->raw.disp.value, moved, &disp))
		return refuse(ai, -EINVAL, "new displacement does not fit into s32");
	if (insn->address_width == 32)
		disp = (int32_t)(uint32_t)disp;	/* eip-relative wraps at 4 GiB */
	else if (disp != (int32_t)disp)
		return refuse(ai, -EINVAL, "new displacement does not fit into s32");

	p = image + insn->raw.disp.offset;
	p[0] = (uint8_t)disp;
	p[1] = (uint8_t)(disp >> 8);
	p[2] = (uint8_t)(disp >> 16);
	p[3] = (uint8_t)(disp >> 24);
	return 0;
}

/*
 * Two-byte (0f xx) opcodes whose copy may run without a trap back: plain
 * computations and moves that neither change ip nor depend on it, nor
 * trap by design, nor are privileged. Conservative: the kernel's
 * twobyte_is_boostable plus the SSE/SSE2 arithmetic and moves that user
 * code is full of. Left out on purpose: 0f 00/01 (system), 05/07
 * (syscall/sysret), 0b/b9/ff (ud), 0f 31-37 (rdtsc, sysenter, ...),
 * 0f 38/3a (three-byte maps), 0f 78/79 (vmread/vmwrite), 0f a2 (cpuid,
 * may trap in a VM), 0f ae (fxsave/xsave/fences group), 0f c7 (group 9).
 */
static bool twobyte_boostable(uint8_t op)
{
	if (op == 0x0d || op == 0x18 || op == 0x1f)		/* prefetch, nop */
		return true;
	if (op >= 0x10 && op <= 0x17)				/* movups ... movhps */
		return true;
	if (op >= 0x28 && op <= 0x2f)				/* movaps, cvt, comis */
		return true;
	if (op >= 0x40 && op <= 0x4f)				/* cmovcc */
		return true;
	if (op >= 0x50 && op <= 0x76)				/* SSE arithmetic, shifts, cmpeq */
		return true;
	if (op == 0x7e || op == 0x7f)				/* movd/movq/movdqa stores */
		return true;
	if (op >= 0x90 && op <= 0x9f)				/* setcc */
		return true;
	switch (op) {
	case 0xa3: case 0xa4: case 0xa5: case 0xab: case 0xac: case 0xad: case 0xaf:
	case 0xb0: case 0xb1: case 0xb3: case 0xb6: case 0xb7: case 0xbb: case 0xbc:
	case 0xbd: case 0xbe: case 0xbf: case 0xc0: case 0xc1: case 0xc2: case 0xc3:
	case 0xc4: case 0xc5: case 0xc6:
		return true;
	}
	if (op >= 0xc8 && op <= 0xcf)				/* bswap */
		return true;
	return op >= 0xd0 && op <= 0xfe;			/* SSE2 integer */
}

/*
 * [reg] The kernel's can_boost() (arch/x86/kernel/kprobes/core.c) for an
 * instruction that runs out of line: may its copy jump straight back to
 * addr + len, with no trap after it? Only legacy-encoded instructions of
 * the one-byte map and a whitelist of the two-byte map; no CS-override
 * (0x2e) or address-size (0x67) prefix.
 */
static bool can_boost(const ZydisDecodedInstruction *insn, const uint8_t *code)
{
	uint8_t op = insn->opcode, reg = insn->raw.modrm.reg;
	unsigned int i;

	if (insn->encoding != ZYDIS_INSTRUCTION_ENCODING_LEGACY)
		return false;		/* VEX/EVEX/XOP/3DNow!: more than 2 opcode bytes */
	for (i = 0; i < insn->raw.prefix_count; i++)
		if (insn->raw.prefixes[i].value == 0x2e || insn->raw.prefixes[i].value == 0x67)
			return false;
	if (insn->opcode_map == ZYDIS_OPCODE_MAP_0F)
		return twobyte_boostable(op);
	if (insn->opcode_map != ZYDIS_OPCODE_MAP_DEFAULT)
		return false;
	(void)code;
	if (op == 0x62 || (op >= 0x70 && op <= 0x7f) || op == 0x9a || (op >= 0xcc && op <= 0xce) ||
	    op == 0xd6 || (op >= 0xd8 && op <= 0xdf) || (op >= 0xe0 && op <= 0xe3) ||
	    op == 0xe8 || op == 0xe9 || op == 0xeb || (op >= 0xf0 && op <= 0xf4))
		return false;
	switch (op) {
	case 0xc0: case 0xc1: case 0xd0: case 0xd1: case 0xd2: case 0xd3:
		return reg != 6;	/* Grp2: /6 is undefined (sal alias) */
	case 0xf6: case 0xf7:
		return reg != 1;	/* Grp3: /1 is undefined (test alias) */
	case 0xfe:
		return reg <= 1;	/* Grp4: inc/dec only */
	case 0xff:
		/* Grp5: inc/dec (and jmp indirect in the kernel; here /2 and
		 * /4 are emulated, never copied) */
		return reg <= 1;
	}
	return true;
}

/*
 * [reg] The boost image for slot + UKP_BOOST_OFFSET: the instruction,
 * re-based there, then jmp rel32 to addr + len. Leaves ai->boostable
 * false when the instruction must trap back after its copy.
 */
static void prepare_boost(struct ukp_arch_insn *ai, struct ukp_slot_img *img, const uint8_t *code,
			  const ZydisDecodedInstruction *insn, const ZydisDecodedOperand *ops,
			  uintptr_t addr, uintptr_t slot)
{
	uintptr_t bslot = slot + UKP_BOOST_OFFSET;
	int64_t rel;
	uint8_t *j;

	ai->boostable = false;
	img->boost_len = 0;
	if (ai->blocking || ai->is_syscall || insn->length > UKP_BOOST_MAX_INSN ||
	    !can_boost(insn, code))
		return;
	memcpy(img->boost_image, code, insn->length);
	if (has_rip_operand(insn, ops)) {
		int32_t why = ai->why_off;

		if (rebase_rip_disp(ai, img->boost_image, insn, addr, bslot)) {
			ai->why_off = why;	/* not an error: just not boosted */
			return;
		}
	}
	rel = (int64_t)(addr + insn->length) - (int64_t)(bslot + insn->length + UKP_BOOST_JMP_SIZE);
	if (rel != (int32_t)rel)
		return;
	j = img->boost_image + insn->length;
	j[0] = 0xe9;
	j[1] = (uint8_t)rel;
	j[2] = (uint8_t)(rel >> 8);
	j[3] = (uint8_t)(rel >> 16);
	j[4] = (uint8_t)(rel >> 24);
	img->boost_len = insn->length + UKP_BOOST_JMP_SIZE;
	ai->boostable = true;
}

static int prepare_ool(struct ukp_arch_insn *ai, struct ukp_slot_img *img, const uint8_t *code,
		       const ZydisDecodedInstruction *insn, const ZydisDecodedOperand *ops,
		       uintptr_t addr, uintptr_t slot)
{
	int ret;

	memcpy(img->slot_image, code, insn->length);
	if (has_rip_operand(insn, ops)) {
		ret = rebase_rip_disp(ai, img->slot_image, insn, addr, slot);
		if (ret)
			return ret;
	}
	img->slot_image[insn->length] = UKP_BREAKPOINT_INSN;
	img->slot_len = insn->length + UKP_BREAKPOINT_SIZE;
	ai->ool = true;
	/* syscall leaves the slot address in rcx; arch_resume_ool fixes it. */
	ai->is_syscall = insn->mnemonic == ZYDIS_MNEMONIC_SYSCALL;
	/* a system call may block for long: keep it interruptible */
	ai->blocking = ai->is_syscall;
	prepare_boost(ai, img, code, insn, ops, addr, slot);
	return 0;
}

/* [reg] */
int arch_prepare_insn(struct ukp_arch_insn *ai, struct ukp_slot_img *img, const uint8_t *code,
		      size_t avail, uintptr_t addr, uintptr_t slot)
{
	struct ukp_slot_img scratch;
	const ZydisDecoder *dec = get_decoder();
	ZydisDecodedInstruction insn;
	ZydisDecodedOperand ops[ZYDIS_MAX_OPERAND_COUNT];
	int ret;

	if (!img)
		img = &scratch;
	memset(ai, 0, sizeof(*ai));
	memset(img, 0, sizeof(*img));
	ai->ind_base = UKP_EMU_REG_NONE;
	ai->ind_index = UKP_EMU_REG_NONE;

	if (avail > UKP_MAX_INSN_SIZE)
		avail = UKP_MAX_INSN_SIZE;
	if (!dec)
		return refuse(ai, -EILSEQ, "no decoder");
	if (!ZYAN_SUCCESS(ZydisDecoderDecodeFull(dec, code, avail, &insn, ops)))
		return refuse_undecodable(ai, code, avail);
	ai->len = insn.length;

	if (is_exception_insn(&insn))
		return refuse(ai, -EILSEQ, "exception instruction");
	if (loads_ss(&insn, ops))
		return refuse(ai, -EINVAL, "mov/pop ss masks exceptions");

	switch (insn.mnemonic) {
	case ZYDIS_MNEMONIC_IRET:
	case ZYDIS_MNEMONIC_IRETD:
	case ZYDIS_MNEMONIC_IRETQ:
	case ZYDIS_MNEMONIC_UIRET:
		return refuse(ai, -EOPNOTSUPP, "iret");
	case ZYDIS_MNEMONIC_XBEGIN:
		/* The abort path would resume relative to the slot. */
		return refuse(ai, -EOPNOTSUPP, "xbegin");
	case ZYDIS_MNEMONIC_ENCLU:
		/* EENTER/ERESUME/EEXIT transfer control (Zydis does not say so). */
		return refuse(ai, -EOPNOTSUPP, "enclu");
	default:
		break;
	}

	ret = prepare_branch(ai, &insn, ops);
	if (ret <= 0)
		return ret;

	/*
	 * Anything else that sets ip would leave from the slot and never
	 * reach the trailing int3 (sysenter, rsm, ...). syscall comes back
	 * to the slot; privileged ones fault there and the core maps the
	 * fault back to addr.
	 */
	if (writes_ip(&insn, ops) && insn.mnemonic != ZYDIS_MNEMONIC_SYSCALL &&
	    !(insn.attributes & ZYDIS_ATTRIB_IS_PRIVILEGED))
		return refuse(ai, -EOPNOTSUPP, "changes ip and is not emulated");

	return prepare_ool(ai, img, code, &insn, ops, addr, slot);
}

/*
 * [reg] A call at the end of a region, copied to dest: push the return
 * address the original pushes (addr + len, the first byte after the
 * region: arch_opt_prepare refuses a call that is not the region's last
 * instruction), then jump where the original calls:
 *
 *     ff 35 05 00 00 00    push 5(%rip)        (the literal below)
 *     e9 rel32             jmp target          (ff 25 disp32 and push
 *     .quad addr + len                          6(%rip) for call *m(%rip))
 *
 * The callee sees the stack the original call gives it and returns into
 * the original code, so no thread ever returns into the detour: a thread
 * in the callee is not "in the detour" for the thread scans, and the
 * unwinder, exceptions and kretprobes see the real return address. The
 * push is the only instruction that can fault (no stack left), exactly
 * where and as the original call would (rsp unchanged, the fault address
 * the stack slot); the fault map sends it back to the call. Direct calls
 * and calls through rip-relative memory (-fno-plt) only: the GOT slot is
 * mapped, so the jmp cannot fault after the push has moved rsp. Refused
 * under a hardware shadow stack, whose copy of the return address would
 * be missing at the callee's ret.
 */
/*
 * call *%reg or call *d(%base,%index,s) with at most a REX prefix, no
 * rip and no %rsp in the operand, 6 bytes at most (with the push and the
 * literal: UKP_OPT_RELOC_MAX): the same bytes with ModRM.reg = 4 are a
 * jmp through the same operand, which reads the same pointer after a
 * push of the return address (%rsp, which the push moves, is not in it).
 */
static bool indirect_call_copyable(const ZydisDecodedInstruction *insn,
				   const ZydisDecodedOperand *ops)
{
	if (insn->encoding != ZYDIS_INSTRUCTION_ENCODING_LEGACY ||
	    insn->opcode_map != ZYDIS_OPCODE_MAP_DEFAULT || insn->opcode != 0xff ||
	    insn->raw.modrm.reg != 2 || insn->raw.prefix_count > 1 ||
	    (insn->raw.prefix_count == 1 && !(insn->attributes & ZYDIS_ATTRIB_HAS_REX)) ||
	    insn->operand_width != 64 || 6 + insn->length + 8 > UKP_OPT_RELOC_MAX)
		return false;
	if (ops[0].type == ZYDIS_OPERAND_TYPE_REGISTER)
		return ops[0].reg.value != ZYDIS_REGISTER_RSP;
	return ops[0].type == ZYDIS_OPERAND_TYPE_MEMORY &&
	       ops[0].mem.segment != ZYDIS_REGISTER_FS && ops[0].mem.segment != ZYDIS_REGISTER_GS &&
	       ops[0].mem.base != ZYDIS_REGISTER_RIP && ops[0].mem.base != ZYDIS_REGISTER_EIP &&
	       ops[0].mem.base != ZYDIS_REGISTER_RSP && ops[0].mem.index != ZYDIS_REGISTER_RSP;
}

static int relocate_call(const ZydisDecodedInstruction *insn, const ZydisDecodedOperand *ops,
			 const uint8_t *code, uintptr_t addr, uintptr_t dest, uint8_t *out,
			 size_t *out_len, const char **why)
{
	uintptr_t ret_addr = addr + insn->length;
	bool direct = insn->opcode == 0xe8;
	size_t lit;
	int64_t rel;
	int32_t r32;

	if (!direct && indirect_call_copyable(insn, ops)) {
		if (arch_shadow_stack_active()) {
			*why = "a call in the region cannot be relocated under a shadow stack";
			return -EOPNOTSUPP;
		}
		/* push the return address; the same operand with /4: a jmp */
		lit = 6 + insn->length;
		out[0] = 0xff;                  /* push (lit - 6)(%rip) */
		out[1] = 0x35;
		r32 = (int32_t)(lit - 6);
		memcpy(out + 2, &r32, 4);
		memcpy(out + 6, code, insn->length);
		out[6 + insn->raw.modrm.offset] = (uint8_t)((code[insn->raw.modrm.offset] & ~0x38) |
							  (4 << 3));
		memcpy(out + lit, &ret_addr, 8);
		*out_len = lit + 8;
		return insn->length;
	}
	if (insn->raw.prefix_count || insn->encoding != ZYDIS_INSTRUCTION_ENCODING_LEGACY ||
	    insn->opcode_map != ZYDIS_OPCODE_MAP_DEFAULT ||
	    !(direct || (insn->opcode == 0xff && insn->raw.modrm.reg == 2 &&
			 ops[0].type == ZYDIS_OPERAND_TYPE_MEMORY &&
			 ops[0].mem.base == ZYDIS_REGISTER_RIP &&
			 ops[0].mem.index == ZYDIS_REGISTER_NONE && insn->length == 6))) {
		*why = "a call in the region is not relocatable (only call rel32, call *m(%rip), "
		       "and call through a register or memory not based on %rsp)";
		return -EOPNOTSUPP;
	}
	if (arch_shadow_stack_active()) {
		*why = "a call in the region cannot be relocated under a shadow stack";
		return -EOPNOTSUPP;
	}
	/* the jmp: e9 rel32 or ff 25 disp32, ending at dest + lit */
	lit = direct ? 11 : 12;
	if (direct)
		rel = (int64_t)(ret_addr + (uintptr_t)insn->raw.imm[0].value.s) - (int64_t)(dest + lit);
	else
		rel = (int64_t)(ret_addr + (uintptr_t)insn->raw.disp.value) - (int64_t)(dest + lit);
	if (rel != (int32_t)rel) {
		*why = "a call in the region cannot reach its target from the detour";
		return -EINVAL;
	}
	out[0] = 0xff;                          /* push (lit - 6)(%rip) */
	out[1] = 0x35;
	r32 = (int32_t)(lit - 6);
	memcpy(out + 2, &r32, 4);
	if (direct) {
		out[6] = 0xe9;
	} else {
		out[6] = 0xff;
		out[7] = 0x25;
	}
	r32 = (int32_t)rel;
	memcpy(out + lit - 4, &r32, 4);
	memcpy(out + lit, &ret_addr, 8);
	*out_len = lit + 8;
	return insn->length;
}

/*
 * [reg] One instruction of a jump-optimized region, copied to dest (the
 * kernel's copy_optimized_instructions step). It must be boostable (runs
 * anywhere and falls through: no system call or exception, no
 * ip-dependent prefix), or:
 *  - a relative jmp/jcc, re-encoded with a rel32 to the same target;
 *  - jmp *x (a tail call) or push x: they read no ip but a rip-relative
 *    operand's, which is re-based;
 *  - ret: it reads no ip either, and returns to the caller from the copy
 *    as from the original;
 *  - a call, which must be the region's last instruction (relocate_call).
 * *ends tells whether nothing after it runs from the copy (jmp, ret) or
 * the callee returns right after it (call). A rip-relative operand is
 * re-based for dest. Writes the copy to out (at most UKP_OPT_RELOC_MAX
 * bytes, *out_len of them) and returns the length of the original
 * instruction, or a negative errno with *why set.
 */
int arch_relocate_insn(const uint8_t *code, size_t avail, uintptr_t addr, uintptr_t dest,
		       uint8_t *out, size_t *out_len, enum arch_reloc_end *ends, const char **why)
{
	const ZydisDecoder *dec = get_decoder();
	ZydisDecodedInstruction insn;
	ZydisDecodedOperand ops[ZYDIS_MAX_OPERAND_COUNT];
	struct ukp_arch_insn ai;
	uint8_t op;

	memset(&ai, 0, sizeof(ai));
	*ends = ARCH_RELOC_NEXT;
	if (avail > UKP_MAX_INSN_SIZE)
		avail = UKP_MAX_INSN_SIZE;
	if (!dec || !ZYAN_SUCCESS(ZydisDecoderDecodeFull(dec, code, avail, &insn, ops))) {
		*why = "undecodable instruction in the region";
		return -EILSEQ;
	}
	op = insn.opcode;
	if (insn.encoding == ZYDIS_INSTRUCTION_ENCODING_LEGACY && !has_opsize_prefix(&insn) &&
	    ((insn.opcode_map == ZYDIS_OPCODE_MAP_DEFAULT &&
	      ((op >= 0x70 && op <= 0x7f) || op == 0xe9 || op == 0xeb)) ||
	     (insn.opcode_map == ZYDIS_OPCODE_MAP_0F && op >= 0x80 && op <= 0x8f))) {
		/* jcc/jmp rel: the same target, from dest */
		uintptr_t target = addr + insn.length + (uintptr_t)insn.raw.imm[0].value.s;
		bool jmp = insn.opcode_map == ZYDIS_OPCODE_MAP_DEFAULT && (op == 0xe9 || op == 0xeb);
		size_t n = jmp ? 5 : 6;
		int64_t rel = (int64_t)target - (int64_t)(dest + n);
		int32_t r32 = (int32_t)rel;

		if (rel != r32) {
			*why = "a jump in the region cannot reach its target from the detour";
			return -EINVAL;
		}
		if (jmp) {
			out[0] = 0xe9;
		} else {
			out[0] = 0x0f;
			out[1] = (uint8_t)(0x80 | (op & 0xf));
		}
		memcpy(out + n - 4, &r32, 4);
		*out_len = n;
		*ends = jmp ? ARCH_RELOC_LEAVES : ARCH_RELOC_NEXT;
		return insn.length;
	}
	if (insn.encoding == ZYDIS_INSTRUCTION_ENCODING_LEGACY && !has_opsize_prefix(&insn) &&
	    insn.opcode_map == ZYDIS_OPCODE_MAP_DEFAULT && op == 0xff &&
	    (insn.raw.modrm.reg == 4 || insn.raw.modrm.reg == 6) &&
	    !(insn.operand_count && ops[0].type == ZYDIS_OPERAND_TYPE_MEMORY &&
	      (ops[0].mem.segment == ZYDIS_REGISTER_FS || ops[0].mem.segment == ZYDIS_REGISTER_GS))) {
		/* jmp *x (a tail call: nothing after it runs from the copy)
		 * and push x read no ip but a rip-relative operand's */
		memcpy(out, code, insn.length);
		if (has_rip_operand(&insn, ops) && rebase_rip_disp(&ai, out, &insn, addr, dest)) {
			*why = "a rip-relative operand in the region is out of reach of the detour";
			return -EINVAL;
		}
		*out_len = insn.length;
		*ends = insn.raw.modrm.reg == 4 ? ARCH_RELOC_LEAVES : ARCH_RELOC_NEXT;
		return insn.length;
	}
	if (insn.encoding == ZYDIS_INSTRUCTION_ENCODING_LEGACY && !has_opsize_prefix(&insn) &&
	    insn.opcode_map == ZYDIS_OPCODE_MAP_DEFAULT && (op == 0xc3 || op == 0xc2)) {
		/* ret [imm16] (also repz/bnd ret): the return address is on
		 * the stack, not in ip */
		memcpy(out, code, insn.length);
		*out_len = insn.length;
		*ends = ARCH_RELOC_LEAVES;
		return insn.length;
	}
	if (insn.meta.category == ZYDIS_CATEGORY_CALL &&
	    insn.encoding == ZYDIS_INSTRUCTION_ENCODING_LEGACY &&
	    insn.opcode_map == ZYDIS_OPCODE_MAP_DEFAULT && (op == 0xe8 || op == 0xff)) {
		int n = relocate_call(&insn, ops, code, addr, dest, out, out_len, why);

		if (n > 0)
			*ends = ARCH_RELOC_CALL;
		return n;
	}
	if (is_exception_insn(&insn) || loads_ss(&insn, ops) ||
	    insn.mnemonic == ZYDIS_MNEMONIC_SYSCALL || writes_ip(&insn, ops) ||
	    insn.meta.category == ZYDIS_CATEGORY_CALL ||
	    insn.meta.category == ZYDIS_CATEGORY_COND_BR ||
	    insn.meta.category == ZYDIS_CATEGORY_UNCOND_BR ||
	    insn.meta.category == ZYDIS_CATEGORY_RET || !can_boost(&insn, code)) {
		*why = "an instruction in the region is not relocatable (call, return, system call, ...)";
		return -EOPNOTSUPP;
	}
	memcpy(out, code, insn.length);
	if (has_rip_operand(&insn, ops) && rebase_rip_disp(&ai, out, &insn, addr, dest)) {
		*why = "a rip-relative operand in the region is out of reach of the detour";
		return -EINVAL;
	}
	*out_len = insn.length;
	return insn.length;
}

/* [reg] Length of the instruction at code, or 0 if it does not decode. */
size_t arch_insn_length(const uint8_t *code, size_t avail)
{
	const ZydisDecoder *dec = get_decoder();
	ZydisDecodedInstruction insn;

	if (!dec || !ZYAN_SUCCESS(ZydisDecoderDecodeInstruction(dec, NULL, code, avail, &insn)))
		return 0;
	return insn.length;
}

/* [reg] */
enum arch_insn_flow arch_insn_flow(const uint8_t *code, size_t avail, uintptr_t addr,
				   size_t *len, uintptr_t *target)
{
	const ZydisDecoder *dec = get_decoder();
	ZydisDecodedOperand ops[ZYDIS_MAX_OPERAND_COUNT];
	ZydisDecodedInstruction insn;
	ZyanU64 to;

	*len = 0;
	if (!dec || !ZYAN_SUCCESS(ZydisDecoderDecodeFull(dec, code, avail, &insn, ops)))
		return ARCH_FLOW_NEXT;
	*len = insn.length;
	if (insn.meta.category == ZYDIS_CATEGORY_RET)
		return ARCH_FLOW_RET;
	if ((insn.meta.category == ZYDIS_CATEGORY_UNCOND_BR ||
	     insn.meta.category == ZYDIS_CATEGORY_COND_BR) &&
	    ops[0].type == ZYDIS_OPERAND_TYPE_IMMEDIATE &&
	    ZYAN_SUCCESS(ZydisCalcAbsoluteAddress(&insn, &ops[0], addr, &to))) {
		*target = (uintptr_t)to;
		return ARCH_FLOW_JUMP;
	}
	return ARCH_FLOW_NEXT;
}

/* [reg] A linear decode of the whole function: it holds no data on
 * x86-64, and an instruction that does not decode answers false. */
bool arch_opt_entry_template_ok(const uint8_t *code, size_t len)
{
	const ZydisDecoder *dec = get_decoder();
	ZydisDecodedInstruction insn;
	size_t pos = 0;

	if (!dec)
		return false;
	while (pos < len) {
		if (!ZYAN_SUCCESS(ZydisDecoderDecodeInstruction(dec, NULL, code + pos, len - pos,
								&insn)))
			return false;
		switch (insn.mnemonic) {
		case ZYDIS_MNEMONIC_STD:
		case ZYDIS_MNEMONIC_POPF:
		case ZYDIS_MNEMONIC_POPFD:
		case ZYDIS_MNEMONIC_POPFQ:
		case ZYDIS_MNEMONIC_IRET:
		case ZYDIS_MNEMONIC_IRETD:
		case ZYDIS_MNEMONIC_IRETQ:
			return false;
		default:
			break;
		}
		pos += insn.length;
	}
	return true;
}

/* [reg] */
size_t arch_patchable_nops(const uint8_t *code, size_t avail)
{
	const ZydisDecoder *dec = get_decoder();
	ZydisDecodedInstruction insn;
	size_t pos = 0;

	if (!dec)
		return 0;
	while (pos < UKP_OPT_JUMP_SIZE && pos < avail) {
		if (!ZYAN_SUCCESS(ZydisDecoderDecodeInstruction(dec, NULL, code + pos, avail - pos,
								&insn)) ||
		    insn.mnemonic != ZYDIS_MNEMONIC_NOP)
			return 0;
		pos += insn.length;
	}
	return pos >= UKP_OPT_JUMP_SIZE ? pos : 0;
}
