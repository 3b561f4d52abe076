/* SPDX-License-Identifier: MIT */
/*
 * decoder.h - the Zydis decoders of the x86-64 code (private to
 * src/arch/x86_64): set up once, immutable afterwards, so decoding only
 * reads them. [reg]
 */
#ifndef UKP_X86_DECODER_H
#define UKP_X86_DECODER_H

#include <stdbool.h>

#include <Zydis/Zydis.h>

/* The 64-bit decoder (minimal: lengths and raw fields only, no operand
 * analysis, about twice as fast), or NULL if Zydis refused to set it up. */
const ZydisDecoder *ukp_x86_decoder(bool minimal);

#endif
