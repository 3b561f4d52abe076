/* SPDX-License-Identifier: MIT */
/*
 * decoder.c - the Zydis decoders shared by the instruction analysis
 * (insn.c) and the control-flow scanner (branches.c). [reg]
 */
#include <pthread.h>

#include "decoder.h"

static ZydisDecoder full, minimal;
static bool ok;
static pthread_once_t once = PTHREAD_ONCE_INIT;

static void init(void)
{
	ok = ZYAN_SUCCESS(ZydisDecoderInit(&full, ZYDIS_MACHINE_MODE_LONG_64,
					   ZYDIS_STACK_WIDTH_64)) &&
	     ZYAN_SUCCESS(ZydisDecoderInit(&minimal, ZYDIS_MACHINE_MODE_LONG_64,
					   ZYDIS_STACK_WIDTH_64)) &&
	     ZYAN_SUCCESS(ZydisDecoderEnableMode(&minimal, ZYDIS_DECODER_MODE_MINIMAL, ZYAN_TRUE));
}

/* [reg] */
const ZydisDecoder *ukp_x86_decoder(bool want_minimal)
{
	pthread_once(&once, init);
	if (!ok)
		return NULL;
	return want_minimal ? &minimal : &full;
}
