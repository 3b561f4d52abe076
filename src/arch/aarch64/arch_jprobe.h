/* SPDX-License-Identifier: MIT */
/*
 * arch_jprobe.h - AArch64 state of a jprobe hit (see jprobe.c):
 *  - the vector registers that may carry arguments at a function's
 *    entry (v0-v7, AAPCS64); everything else is either scratch at an
 *    entry or preserved by a handler that follows the calling convention;
 *  - what the handler's start stub (jprobe.S) reads while it copies the
 *    stack top: where from, the handler, and the x17 it used.
 */
#ifndef UKP_ARCH_JPROBE_H
#define UKP_ARCH_JPROBE_H

#include <stdint.h>

struct arch_jprobe_vec {
	uint64_t v[8][2];     /* q0-q7: float, double and vector arguments */
	uint64_t have;        /* the hit's frame carried the FP/SIMD record */
};

/* Offsets used by jprobe.S (checked in jprobe.c). */
struct arch_jprobe_start {
	uint64_t entry;       /* 0: the handler */
	uint64_t src;         /* 8: the hit's sp, the copy's source */
	uint64_t x17;         /* 16: the hit's x17 (the stub's pointer to this) */
};

/* The most of the stack top the handler gets a copy of: stack
 * arguments (the return address is in x30). */
#define ARCH_JPROBE_STACK_BYTES 512

#endif /* UKP_ARCH_JPROBE_H */
