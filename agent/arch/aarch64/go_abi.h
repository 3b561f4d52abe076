/* SPDX-License-Identifier: MIT */
/*
 * go_abi.h - Go's register ABI on AArch64 (ABIInternal, Go 1.18 and
 * later), for go.c and the Go handlers of handlers.c: the integer
 * argument registers, the register that holds the current goroutine (g),
 * and the stack check every splittable Go function starts with.
 */
#ifndef UKPA_GO_ABI_H
#define UKPA_GO_ABI_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <ukprobes.h>

/* $arg1..$arg16: x0-x15 */
static const unsigned char ukpa_go_arg_words[] = {
	0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15,
};

/* [hit] The current goroutine's g (x28). */
static inline uintptr_t ukpa_go_g(const struct pt_regs *regs)
{
	return regs->regs[28];
}

/*
 * [init] The length of the stack check code starts with, or 0: the
 * compiler's check loads g's stackguard0 (ldr x16, [x28, #16]), compares
 * and branches to the growth path with b.ls, within its first few
 * instructions. The instruction after the b.ls runs once per call.
 */
static inline size_t ukpa_go_prologue_len(const uint8_t *c, size_t n)
{
	bool ldr = false;
	size_t p;

	for (p = 0; p + 4 <= n && p < 6 * 4; p += 4) {
		uint32_t i = (uint32_t)c[p] | (uint32_t)c[p + 1] << 8 | (uint32_t)c[p + 2] << 16 |
			     (uint32_t)c[p + 3] << 24;

		if (i == 0xf9400b90u)                   /* ldr x16, [x28, #16] */
			ldr = true;
		else if (ldr && (i & 0xff00001fu) == 0x54000009u) /* b.ls */
			return p + 4;
	}
	return 0;
}

/* [hit] The registers at the return of an exit (ukprobes_func_exits):
 * here every exit is its return instruction. */
static inline int ukpa_go_exit_regs(struct pt_regs *r, const struct ukprobes_func_exit *x)
{
	unsigned long fp;

	if (x->fp_at >= 0) {
		if (copy_from_user_nofault(&fp, (const void *)(r->sp + (unsigned long)x->fp_at),
					   sizeof(fp)))
			return -1;
		r->regs[29] = fp;
	}
	r->sp += x->sp_adj;
	r->pc = x->ret;
	return 0;
}

#endif
