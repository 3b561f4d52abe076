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

#endif
