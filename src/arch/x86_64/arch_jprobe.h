/* SPDX-License-Identifier: MIT */
/*
 * arch_jprobe.h - x86-64 state of a jprobe hit (see jprobe.c):
 *  - the vector registers that may carry arguments at a function's
 *    entry. Everything else in the vector unit is either scratch at an
 *    entry (xmm8-15, the upper halves of ymm8-15) or preserved by any
 *    handler that follows the calling convention (MXCSR and x87 control);
 *  - what the handler's start stub (jprobe.S) reloads after it copied
 *    the top of the stack: the registers it used, and the handler.
 */
#ifndef UKP_ARCH_JPROBE_H
#define UKP_ARCH_JPROBE_H

#include <stdint.h>

struct arch_jprobe_vec {
	uint64_t xmm[8][2];   /* xmm0-7: float, double and __m128 arguments */
	uint64_t ymmh[8][2];  /* upper halves of ymm0-7: __m256 arguments */
	uint64_t have_ymmh;   /* the hit's frame carried the AVX state */
};

/* Offsets used by jprobe.S (checked in jprobe.c). */
struct arch_jprobe_start {
	uint64_t entry;       /* 0: the handler */
	uint64_t cx;          /* 8 */
	uint64_t si;          /* 16 */
	uint64_t di;          /* 24 */
	uint64_t r11;         /* 32 */
};

/* The most of the stack top the handler gets a copy of: the return
 * address and 504 bytes of stack arguments. */
#define ARCH_JPROBE_STACK_BYTES 512

#endif /* UKP_ARCH_JPROBE_H */
