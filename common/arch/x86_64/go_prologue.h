/* SPDX-License-Identifier: MIT */
/*
 * go_prologue.h - the stack check every splittable Go function starts
 * with on x86-64 (Go's cmd/internal/obj/x86 stacksplit): where the
 * agent puts a Go function's entry probe (past it: agent/go.c), and
 * where the optimizer knows the goroutine's stack has room
 * (src/optimizer: Go's stack guard leaves StackGuard bytes below the
 * stack pointer of a function that passed it).
 */
#ifndef UKP_GO_PROLOGUE_H
#define UKP_GO_PROLOGUE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

/*
 * [any] The length of the stack check code starts with, or 0 when it
 * has none (a nosplit function, or not the compiler's forms):
 *   cmp 0x10(%r14),%rsp; jbe                      (small frames)
 *   lea -N(%rsp),%r12; cmp 0x10(%r14),%r12; jbe  (medium frames)
 *   mov %rsp,%r12; sub $N,%r12; jb; cmp 0x10(%r14),%r12; jbe (huge frames)
 * The instruction after it runs once per call: when the stack must grow,
 * the function's start runs again after the copy.
 */
static inline size_t ukp_go_prologue_len(const uint8_t *c, size_t n)
{
	static const uint8_t cmp_rsp[] = { 0x49, 0x3b, 0x66, 0x10 };
	static const uint8_t cmp_r12[] = { 0x4d, 0x3b, 0x66, 0x10 };
	size_t p = 0;

	if (n >= 4 && !memcmp(c, cmp_rsp, 4)) {
		p = 4;
	} else {
		if (n >= 5 && c[0] == 0x4c && c[1] == 0x8d && c[2] == 0x64 && c[3] == 0x24)
			p = 5;                                  /* lea disp8(%rsp),%r12 */
		else if (n >= 8 && c[0] == 0x4c && c[1] == 0x8d && c[2] == 0xa4 && c[3] == 0x24)
			p = 8;                                  /* lea disp32(%rsp),%r12 */
		else if (n >= 10 && c[0] == 0x49 && c[1] == 0x89 && c[2] == 0xe4 &&
			 c[3] == 0x49 && c[4] == 0x81 && c[5] == 0xec)
			p = 10;                                 /* mov %rsp,%r12; sub $N,%r12 */
		else
			return 0;
		if (p == 10) {                                  /* jb */
			if (n >= p + 2 && c[p] == 0x72)
				p += 2;
			else if (n >= p + 6 && c[p] == 0x0f && c[p + 1] == 0x82)
				p += 6;
			else
				return 0;
		}
		if (n < p + 4 || memcmp(c + p, cmp_r12, 4))
			return 0;
		p += 4;
	}
	if (n >= p + 2 && c[p] == 0x76)                         /* jbe rel8 */
		return p + 2;
	if (n >= p + 6 && c[p] == 0x0f && c[p + 1] == 0x86)     /* jbe rel32 */
		return p + 6;
	return 0;
}

/*
 * [any] How many bytes of the frame below the stack pointer at the
 * function's start the stack check code starts with covers, with Go's
 * StackSmall (128) for the small form's protrusion below the guard: the
 * check compares the stack pointer less (cover - 128) with the guard
 * (StackGuard bytes above the stack's low end: runtime/stack.go), so a
 * frame of up to cover bytes leaves more than StackGuard - StackSmall
 * (StackLimit, 800 on amd64) below it. 0: no check.
 */
static inline size_t ukp_go_prologue_cover(const uint8_t *c, size_t n)
{
	int32_t d32;
	uint32_t u32;

	if (!ukp_go_prologue_len(c, n))
		return 0;
	if (c[0] == 0x49 && c[1] == 0x3b)               /* cmp 0x10(%r14),%rsp */
		return 128;
	if (c[2] == 0x64)                               /* lea -K(%rsp),%r12 (disp8) */
		return (size_t)(128 - (int8_t)c[4]);
	if (c[2] == 0xa4) {                             /* (disp32) */
		memcpy(&d32, c + 4, 4);
		return d32 > 0 ? 0 : (size_t)(128 - (int64_t)d32);
	}
	memcpy(&u32, c + 6, 4);                         /* sub $K,%r12 */
	return (size_t)(128 + (uint64_t)u32);
}

/* A function's epilogue that frees its frame and returns (ukp_go_epilogue). */
struct ukp_go_epi {
	size_t len;       /* through the ret, inclusive */
	size_t first;     /* the length of its first instruction */
	unsigned long sp_adj; /* the stack pointer at its start is this far below the ret's */
	long fp_at;       /* %rbp at the ret: the word at sp + fp_at at its start */
};

/*
 * [any] Does code start an epilogue of Go's compiler on x86-64, which
 * frees the frame, restores the caller's %rbp and returns, and touches
 * nothing else (the results are in their registers before it)? The
 * forms (cmd/internal/obj/x86 for a frame with a saved %rbp):
 *   mov d(%rsp),%rbp; add $N,%rsp; ret      (Go 1.20 and before)
 *   add $N,%rsp; pop %rbp; ret               (later)
 *   pop %rbp; ret                            (a frame of the %rbp alone)
 * Fills *e when it does.
 */
static inline bool ukp_go_epilogue(const uint8_t *c, size_t n, struct ukp_go_epi *e)
{
	size_t p = 0, add = 0;
	int64_t fp = 0;
	uint32_t imm = 0;
	int32_t d32;

	if (n >= 5 && c[0] == 0x48 && c[1] == 0x8b && c[2] == 0x6c && c[3] == 0x24) {
		fp = (int8_t)c[4];                      /* mov disp8(%rsp),%rbp */
		p = 5;
	} else if (n >= 8 && c[0] == 0x48 && c[1] == 0x8b && c[2] == 0xac && c[3] == 0x24) {
		memcpy(&d32, c + 4, 4);                 /* mov disp32(%rsp),%rbp */
		fp = d32;
		p = 8;
	}
	if (n >= p + 4 && c[p] == 0x48 && c[p + 1] == 0x83 && c[p + 2] == 0xc4) {
		imm = c[p + 3];                         /* add $imm8,%rsp (positive) */
		add = 4;
	} else if (n >= p + 7 && c[p] == 0x48 && c[p + 1] == 0x81 && c[p + 2] == 0xc4) {
		memcpy(&imm, c + p + 3, 4);             /* add $imm32,%rsp (positive) */
		add = 7;
	}
	if (add && (imm >= (add == 4 ? 0x80u : 0x80000000u) || !imm || imm % 8))
		return false;
	e->first = p ? p : add ? add : 1;
	if (p) {                                        /* mov d(%rsp),%rbp; add $N,%rsp; ret */
		/* (the saved %rbp inside the frame the add frees) */
		if (!add || n < p + add + 1 || c[p + add] != 0xc3 || fp < 0 || fp + 8 > imm)
			return false;
		e->len = p + add + 1;
		e->sp_adj = imm;
		e->fp_at = (long)fp;
		return true;
	}
	if (n < add + 2 || c[add] != 0x5d || c[add + 1] != 0xc3) /* [add;] pop %rbp; ret */
		return false;
	e->len = add + 2;
	e->sp_adj = imm + 8;
	e->fp_at = (long)imm;
	return true;
}

#endif
