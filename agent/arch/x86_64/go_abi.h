/* SPDX-License-Identifier: MIT */
/*
 * go_abi.h - Go's register ABI on x86-64 (ABIInternal, Go 1.17 and
 * later), for go.c and the Go handlers of handlers.c: the integer
 * argument registers, the register that holds the current goroutine (g),
 * and the stack check every splittable Go function starts with.
 */
#ifndef UKPA_GO_ABI_H
#define UKPA_GO_ABI_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <ukprobes.h>

#define GO_W(r) (offsetof(struct pt_regs, r) / sizeof(unsigned long))
/* $arg1..$arg9: the words of struct pt_regs that hold them */
static const unsigned char ukpa_go_arg_words[] = {
	GO_W(ax), GO_W(bx), GO_W(cx), GO_W(di), GO_W(si), GO_W(r8), GO_W(r9), GO_W(r10), GO_W(r11),
};
#undef GO_W

/* [hit] The current goroutine's g. */
static inline uintptr_t ukpa_go_g(const struct pt_regs *regs)
{
	return regs->r14;
}

/*
 * [init] The length of the stack check code starts with, or 0 when it
 * has none (a nosplit function, or not the compiler's forms):
 *   cmp 0x10(%r14),%rsp; jbe                      (small frames)
 *   lea -N(%rsp),%r12; cmp 0x10(%r14),%r12; jbe  (medium frames)
 *   mov %rsp,%r12; sub $N,%r12; jb; cmp 0x10(%r14),%r12; jbe (huge frames)
 * The instruction after it runs once per call: when the stack must grow,
 * the function's start runs again after the copy.
 */
static inline size_t ukpa_go_prologue_len(const uint8_t *c, size_t n)
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
