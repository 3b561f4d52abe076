// SPDX-License-Identifier: MIT
/*
 * opt_region.c - the instruction that keeps a probe point from being
 * jump-optimized (opt_region.h).
 */
#include <Zydis/Zydis.h>

#include "arch/arch.h"
#include "opt_region.h"

/* What kind of instruction the relocator refused. */
static const char *kind_of(const ZydisDecodedInstruction *insn)
{
	switch (insn->meta.category) {
	case ZYDIS_CATEGORY_COND_BR:
		return "jcc";
	case ZYDIS_CATEGORY_UNCOND_BR:
		return (insn->attributes & ZYDIS_ATTRIB_IS_RELATIVE) ? "jmp (tail call)"
								     : "indirect jmp";
	case ZYDIS_CATEGORY_CALL:
		return "call";
	case ZYDIS_CATEGORY_RET:
		return "ret (function shorter than the jump)";
	default:
		break;
	}
	if (insn->mnemonic == ZYDIS_MNEMONIC_SYSCALL)
		return "syscall";
	if (insn->encoding != ZYDIS_INSTRUCTION_ENCODING_LEGACY)
		return "VEX/EVEX-encoded instruction";
	if (insn->opcode_map == ZYDIS_OPCODE_MAP_DEFAULT && insn->opcode >= 0xd8 &&
	    insn->opcode <= 0xdf)
		return "x87 instruction";
	return ZydisMnemonicGetString(insn->mnemonic);
}

const char *opt_region_blocker(const uint8_t *code, size_t avail, uintptr_t addr)
{
	ZydisDecoder dec;
	size_t pos = 0;

	if (!ZYAN_SUCCESS(ZydisDecoderInit(&dec, ZYDIS_MACHINE_MODE_LONG_64, ZYDIS_STACK_WIDTH_64)))
		return NULL;
	while (pos < UKP_OPT_JUMP_SIZE && pos < avail) {
		ZydisDecodedInstruction insn;
		uint8_t out[UKP_MAX_INSN_SIZE];
		const char *why = NULL;
		size_t olen;
		enum arch_reloc_end ends;
		int n;

		/* relocated to its own address: only the refusal matters */
		n = arch_relocate_insn(code + pos, avail - pos, addr + pos, addr + pos, out, &olen,
				       &ends, &why);
		if (n > 0) {
			pos += (size_t)n;
			if (ends != ARCH_RELOC_NEXT)
				return NULL;
			continue;
		}
		if (!ZYAN_SUCCESS(ZydisDecoderDecodeInstruction(&dec, NULL, code + pos, avail - pos,
								&insn)))
			return "undecodable";
		return kind_of(&insn);
	}
	return NULL;
}
