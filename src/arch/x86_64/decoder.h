/* SPDX-License-Identifier: MIT */
/*
 * decoder.h - the Zydis decoders of the x86-64 code (private to
 * src/arch/x86_64): set up once, immutable afterwards, so decoding only
 * reads them. [reg]
 */
#ifndef UKP_X86_DECODER_H
#define UKP_X86_DECODER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <Zydis/Zydis.h>

/* The 64-bit decoder (minimal: lengths and raw fields only, no operand
 * analysis, about twice as fast), or NULL if Zydis refused to set it up. */
const ZydisDecoder *ukp_x86_decoder(bool minimal);

/* What the scans of a whole object's code read of an instruction
 * (decode_lite.c): Zydis's raw fields, by the same names. */
struct x86_lite {
	uint8_t len;
	bool has_modrm;         /* ZYDIS_ATTRIB_HAS_MODRM */
	uint8_t mod, rm;        /* raw.modrm (when has_modrm) */
	struct {
		uint8_t size;   /* bits; 0: none */
		bool rel;       /* is_relative */
		uint64_t value; /* value.u: sign-extended when relative (for
				 * the others only the low size bits are
				 * meant) */
	} imm[2];
	uint8_t disp_size;      /* raw.disp.size */
	int64_t disp;           /* raw.disp.value */
	uint8_t flow;           /* LITE_FLOW_*: what a flow scan must know */
};

/* x86_lite.flow: a lea of a rip-relative address (its target is an
 * address the function takes), or an instruction only the full scan
 * reads (a jmp through a register or memory, a far jmp; any lea the
 * table left to Zydis), or neither. */
enum { LITE_FLOW_PLAIN, LITE_FLOW_LEA_RIP, LITE_FLOW_FULL };

/*
 * [reg] Decode the instruction at p (avail bytes readable) for its
 * struct x86_lite: the common encodings from a table, the rest with the
 * minimal decoder, with the same answer as Zydis's minimal decoding of
 * the same bytes. False where that decoding fails.
 */
bool ukp_x86_decode_lite(const ZydisDecoder *minimal, const uint8_t *p, size_t avail,
			 struct x86_lite *out);
/* [reg] The table part alone: false for what it leaves to Zydis (tests). */
bool ukp_x86_lite_fast(const uint8_t *p, size_t avail, struct x86_lite *out);

#endif
