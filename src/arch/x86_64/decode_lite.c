// SPDX-License-Identifier: MIT
/*
 * decode_lite.c - the few fields of an instruction that the scans of a
 * whole object's code need (branches.c: the direct transfers of the flow
 * index and the literals of a non-PIE executable), fast; and whether a
 * function's flow scan can do with them (x86_lite.flow).
 *
 * Compiled code is mostly a handful of plain encodings (mov, call, jcc,
 * test, cmp, lea, push, pop, the ALU forms): an opcode with at most one
 * REX prefix before it, a ModRM byte, a SIB byte, a displacement and an
 * immediate whose sizes the opcode and ModRM tell. Those are decoded
 * here from a table; everything else (any other prefix, any other
 * opcode, an encoding whose ModRM.reg or mod the table does not accept,
 * bytes that end before the instruction) goes to Zydis's minimal
 * decoder. Where this file answers, the answer is Zydis's: test_codeflow
 * compares both on every REX, ModRM and SIB byte of every opcode handled
 * here.
 *
 * [reg] everything here (the table is constant).
 */
#include <string.h>

#include "decoder.h"

/* What an opcode takes (one-byte map, then the 0F map). */
enum {
	L_OK = 0x001,    /* handled */
	L_MODRM = 0x002,
	L_IMM8 = 0x004,
	L_IMM32 = 0x008,
	L_IMMV = 0x010,  /* B8+r: 32 bits, 64 with REX.W */
	L_REL8 = 0x020,
	L_REL32 = 0x040,
	L_NOREX = 0x080, /* not after a REX prefix */
	L_MEM = 0x100,   /* ModRM.mod != 3 */
	L_REG0 = 0x200,  /* ModRM.reg == 0 */
	L_NOT6 = 0x400,  /* ModRM.reg != 6 */
	L_GRP3 = 0x800,  /* F6/F7: reg 0 with an immediate, 2-7 without, 1 not */
	L_GRP5 = 0x1000, /* FF: reg 0, 1, 2, 4, 6 */
	L_GRP4 = 0x2000, /* FE: reg 0, 1 */
};

#define M (L_OK | L_MODRM)
#define ALU(b) [b] = M, [b + 1] = M, [b + 2] = M, [b + 3] = M, \
	[b + 4] = L_OK | L_IMM8, [b + 5] = L_OK | L_IMM32
#define R8(b, f) [b] = f, [b + 1] = f, [b + 2] = f, [b + 3] = f, \
	[b + 4] = f, [b + 5] = f, [b + 6] = f, [b + 7] = f

static const uint16_t one[256] = {
	ALU(0x00), ALU(0x08), ALU(0x10), ALU(0x18), ALU(0x20), ALU(0x28), ALU(0x30), ALU(0x38),
	R8(0x50, L_OK), R8(0x58, L_OK),
	[0x63] = M,
	[0x68] = L_OK | L_IMM32 | L_NOREX, [0x69] = M | L_IMM32,
	[0x6a] = L_OK | L_IMM8 | L_NOREX, [0x6b] = M | L_IMM8,
	R8(0x70, L_OK | L_REL8 | L_NOREX), R8(0x78, L_OK | L_REL8 | L_NOREX),
	[0x80] = M | L_IMM8, [0x81] = M | L_IMM32, [0x83] = M | L_IMM8,
	R8(0x84, M), [0x8d] = M | L_MEM,
	R8(0x90, L_OK), [0x98] = L_OK, [0x99] = L_OK,
	[0xa8] = L_OK | L_IMM8, [0xa9] = L_OK | L_IMM32,
	R8(0xb0, L_OK | L_IMM8), R8(0xb8, L_OK | L_IMMV),
	[0xc0] = M | L_IMM8 | L_NOT6, [0xc1] = M | L_IMM8 | L_NOT6,
	[0xc3] = L_OK, [0xc6] = M | L_IMM8 | L_REG0, [0xc7] = M | L_IMM32 | L_REG0,
	[0xc9] = L_OK, [0xcc] = L_OK,
	[0xd0] = M | L_NOT6, [0xd1] = M | L_NOT6, [0xd2] = M | L_NOT6, [0xd3] = M | L_NOT6,
	[0xe8] = L_OK | L_REL32 | L_NOREX, [0xe9] = L_OK | L_REL32 | L_NOREX,
	[0xeb] = L_OK | L_REL8 | L_NOREX,
	[0xf6] = M | L_GRP3, [0xf7] = M | L_GRP3, [0xfe] = M | L_GRP4, [0xff] = M | L_GRP5,
};

static const uint16_t two[256] = {
	[0x1f] = M | L_REG0,
	R8(0x40, M), R8(0x48, M),
	R8(0x80, L_OK | L_REL32 | L_NOREX), R8(0x88, L_OK | L_REL32 | L_NOREX),
	[0xaf] = M, [0xb6] = M, [0xb7] = M, [0xbe] = M, [0xbf] = M,
};

#undef M
#undef ALU
#undef R8

static int64_t sext(uint64_t v, unsigned int bits)
{
	return (int64_t)(v << (64 - bits)) >> (64 - bits);
}

/* x86 is little-endian. One load of the field's size: a copy of a
 * variable size into a wider variable is byte stores, then a load that
 * waits for them (the whole-object scans' hottest spot). */
static uint64_t le(const uint8_t *p, unsigned int bytes)
{
	uint32_t v32;
	uint64_t v = 0;

	switch (bytes) {
	case 1:
		return p[0];
	case 4:
		memcpy(&v32, p, 4);
		return v32;
	case 8:
		memcpy(&v, p, 8);
		return v;
	}
	memcpy(&v, p, bytes);
	return v;
}

/* [reg] */
bool ukp_x86_lite_fast(const uint8_t *p, size_t avail, struct x86_lite *out)
{
	size_t n = 0;
	unsigned int f, rex = 0, immbits = 0, op;
	bool rel = false, map0f = false;

	if (avail < 1)
		return false;
	if ((p[0] & 0xf0) == 0x40) {
		rex = p[0];
		n = 1;
	}
	if (n >= avail)
		return false;
	if (p[n] == 0x0f) {
		if (++n >= avail)
			return false;
		f = two[p[n]];
		map0f = true;
	} else {
		f = one[p[n]];
	}
	op = p[n];
	if (!(f & L_OK) || (rex && (f & L_NOREX)))
		return false;
	/* each field (a memset of the struct is a rep stos: slow to start) */
	out->has_modrm = false;
	out->mod = out->rm = 0;
	out->imm[0].size = out->imm[1].size = 0;
	out->imm[0].rel = out->imm[1].rel = false;
	out->imm[0].value = out->imm[1].value = 0;
	out->disp_size = 0;
	out->disp = 0;
	out->flow = LITE_FLOW_PLAIN;
	n++;
	if (f & L_MODRM) {
		unsigned int modrm, mod, reg, rm;

		if (n >= avail)
			return false;
		modrm = p[n++];
		mod = modrm >> 6;
		reg = (modrm >> 3) & 7;
		rm = modrm & 7;
		if (((f & L_MEM) && mod == 3) || ((f & L_REG0) && reg) || ((f & L_NOT6) && reg == 6) ||
		    ((f & L_GRP3) && reg == 1) || ((f & L_GRP4) && reg > 1) ||
		    ((f & L_GRP5) && (reg == 3 || reg == 5 || reg == 7)))
			return false;
		if ((f & L_GRP3) && reg == 0)
			f |= p[n - 2] == 0xf6 ? L_IMM8 : L_IMM32;
		if (!map0f && op == 0xff && reg == 4)
			out->flow = LITE_FLOW_FULL;	/* jmp *r/m */
		else if (!map0f && op == 0x8d && mod == 0 && rm == 5)
			out->flow = LITE_FLOW_LEA_RIP;
		out->has_modrm = true;
		out->mod = (uint8_t)mod;
		out->rm = (uint8_t)rm;
		if (mod != 3 && rm == 4) {
			if (n >= avail)
				return false;
			if (mod == 0 && (p[n] & 7) == 5)
				out->disp_size = 32;	/* no base */
			n++;
		}
		if (mod == 0 && rm == 5)
			out->disp_size = 32;		/* rip-relative */
		else if (mod == 1)
			out->disp_size = 8;
		else if (mod == 2)
			out->disp_size = 32;
		if (out->disp_size) {
			if (n + out->disp_size / 8 > avail)
				return false;
			out->disp = sext(le(p + n, out->disp_size / 8), out->disp_size);
			n += out->disp_size / 8;
		}
	}
	if (f & (L_IMM8 | L_REL8))
		immbits = 8;
	else if (f & (L_IMM32 | L_REL32))
		immbits = 32;
	else if (f & L_IMMV)
		immbits = (rex & 8) ? 64 : 32;
	rel = f & (L_REL8 | L_REL32);
	if (immbits) {
		uint64_t v;

		if (n + immbits / 8 > avail)
			return false;
		v = le(p + n, immbits / 8);
		out->imm[0].size = (uint8_t)immbits;
		out->imm[0].rel = rel;
		out->imm[0].value = rel ? (uint64_t)sext(v, immbits) : v;
		n += immbits / 8;
	}
	out->len = (uint8_t)n;
	return true;
}

/* [reg] */
bool ukp_x86_decode_lite(const ZydisDecoder *minimal, const uint8_t *p, size_t avail,
			 struct x86_lite *out)
{
	ZydisDecodedInstruction insn;
	unsigned int i;

	if (ukp_x86_lite_fast(p, avail, out))
		return true;
	if (!ZYAN_SUCCESS(ZydisDecoderDecodeInstruction(minimal, NULL, p, avail, &insn)))
		return false;
	out->len = insn.length;
	out->has_modrm = insn.attributes & ZYDIS_ATTRIB_HAS_MODRM;
	out->mod = insn.raw.modrm.mod;
	out->rm = insn.raw.modrm.rm;
	for (i = 0; i < 2; i++) {
		out->imm[i].size = insn.raw.imm[i].size;
		out->imm[i].rel = insn.raw.imm[i].is_relative;
		out->imm[i].value = insn.raw.imm[i].value.u;
	}
	out->disp_size = insn.raw.disp.size;
	out->disp = insn.raw.disp.value;
	out->flow = (insn.mnemonic == ZYDIS_MNEMONIC_JMP && !insn.raw.imm[0].is_relative) ||
				    insn.mnemonic == ZYDIS_MNEMONIC_LEA ?
			    LITE_FLOW_FULL :
			    LITE_FLOW_PLAIN;
	return true;
}
