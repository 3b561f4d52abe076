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

#include "arch/x86_64/go_prologue.h"

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

/* [init] The length of the stack check code starts with, or 0
 * (common/arch/x86_64/go_prologue.h, which the library's optimizer
 * shares). */
static inline size_t ukpa_go_prologue_len(const uint8_t *c, size_t n)
{
	return ukp_go_prologue_len(c, n);
}

/* [hit] The registers at the return of an exit (ukprobes_func_exits)
 * from those at its start: the stack and frame pointers the return has,
 * its address. 0, or -1 when the saved frame pointer cannot be read. */
static inline int ukpa_go_exit_regs(struct pt_regs *r, const struct ukprobes_func_exit *x)
{
	unsigned long fp;

	if (x->fp_at >= 0) {
		if (copy_from_user_nofault(&fp, (const void *)(r->sp + (unsigned long)x->fp_at),
					   sizeof(fp)))
			return -1;
		r->bp = fp;
	}
	r->sp += x->sp_adj;
	r->ip = x->ret;
	return 0;
}

#endif
