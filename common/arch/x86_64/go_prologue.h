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

/* [any] The length of the NOP at c (0x90, 0f 1f /0, with 66/2e
 * prefixes: the assembler's padding before a branch), or 0. */
static inline size_t ukp_x86_nop_len(const uint8_t *c, size_t n)
{
	size_t p = 0, len;
	uint8_t mod, rm;

	while (p < n && p < 6 && (c[p] == 0x66 || c[p] == 0x2e))
		p++;
	if (p < n && c[p] == 0x90)
		return p + 1;
	if (n < p + 3 || c[p] != 0x0f || c[p + 1] != 0x1f || (c[p + 2] & 0x38))
		return 0;
	mod = c[p + 2] >> 6;
	rm = c[p + 2] & 7;
	len = p + 3;
	if (mod != 3 && rm == 4)
		len++;                                  /* SIB */
	if (mod == 1)
		len += 1;
	else if (mod == 2 || (mod == 0 && rm == 5))
		len += 4;
	return len <= n ? len : 0;
}

/*
 * [any] Does code start an epilogue of Go's compiler on x86-64, which
 * frees the frame, restores the caller's %rbp and returns, and touches
 * nothing else (the results are in their registers before it)? The
 * forms (cmd/internal/obj/x86, a frame with a saved %rbp, each RET
 * expanded in place, so that a jump to the RET lands on the first):
 *   mov d(%rsp),%rbp; add $N,%rsp; ret      (Go 1.20 and before)
 *   add $N,%rsp; pop %rbp; ret               (later)
 *   pop %rbp; ret                            (a frame of the %rbp alone)
 * where `add $128` is `sub $-128`, and NOPs may pad before the ret
 * (the assembler aligns branches). Fills *e when it does.
 */
static inline bool ukp_go_epilogue(const uint8_t *c, size_t n, struct ukp_go_epi *e)
{
	size_t p = 0, first = 0, k;
	int64_t fp = -1, adj = 0;
	int32_t d32;
	bool mov = false;

	if (n >= 4 && c[0] == 0x48 && c[1] == 0x8b && c[2] == 0x2c && c[3] == 0x24) {
		fp = 0;                                 /* mov (%rsp),%rbp */
		p = 4;
	} else if (n >= 5 && c[0] == 0x48 && c[1] == 0x8b && c[2] == 0x6c && c[3] == 0x24) {
		fp = (int8_t)c[4];                      /* mov disp8(%rsp),%rbp */
		p = 5;
	} else if (n >= 8 && c[0] == 0x48 && c[1] == 0x8b && c[2] == 0xac && c[3] == 0x24) {
		memcpy(&d32, c + 4, 4);                 /* mov disp32(%rsp),%rbp */
		fp = d32;
		p = 8;
	}
	mov = p != 0;
	first = p;
	if (n >= p + 4 && c[p] == 0x48 && c[p + 1] == 0x83 && (c[p + 2] == 0xc4 || c[p + 2] == 0xec)) {
		adj = c[p + 2] == 0xc4 ? (int8_t)c[p + 3] : -(int64_t)(int8_t)c[p + 3];
		k = 4;                                  /* add $imm8,%rsp; sub $-imm8,%rsp */
	} else if (n >= p + 7 && c[p] == 0x48 && c[p + 1] == 0x81 &&
		   (c[p + 2] == 0xc4 || c[p + 2] == 0xec)) {
		memcpy(&d32, c + p + 3, 4);             /* add $imm32,%rsp; sub $-imm32,%rsp */
		adj = c[p + 2] == 0xc4 ? d32 : -(int64_t)d32;
		k = 7;
	} else {
		k = 0;
	}
	if (k && (adj <= 0 || adj % 8))
		return false;
	if (!first)
		first = k;
	p += k;
	if (mov) {
		/* (the saved %rbp inside the frame the add frees) */
		if (!k || fp < 0 || fp + 8 > adj)
			return false;
	} else {
		if (n < p + 1 || c[p] != 0x5d)          /* pop %rbp */
			return false;
		if (!first)
			first = 1;
		fp = adj;
		adj += 8;
		p++;
	}
	while (p < n && c[p] != 0xc3 && (k = ukp_x86_nop_len(c + p, n - p)))
		p += k;
	if (p >= n || c[p] != 0xc3)
		return false;
	e->len = p + 1;
	e->first = first;
	e->sp_adj = (unsigned long)adj;
	e->fp_at = (long)fp;
	return true;
}

#endif
