/* SPDX-License-Identifier: MIT */
/*
 * jprobe.c - x86-64 support for jprobes: the way into the handler (a
 * copy of the stack top, see jprobe.S), and the argument registers of
 * the vector unit, kept from the hit's signal frame and put back into
 * the frame of the trap that ends the handler.
 *
 * Signal frames hold the FXSAVE image (xmm0-15 at byte 160) and, when
 * the kernel saved extended state, the XSAVE header at byte 512 and the
 * AVX component (upper halves of ymm0-15, non-compacted format) at the
 * offset CPUID leaf 0xd sub-leaf 2 gives. AVX-512 state is not kept:
 * a handler that changes the upper parts of zmm0-7 passes that change
 * on (doc/jprobes.md says so).
 */
#include <cpuid.h>
#include <errno.h>
#include <stddef.h>
#include <ucontext.h>

#include "base/base.h"
#include "core/core.h"
#include "process/process.h"
#include "text/text.h"
#include "optimizer/optimizer.h"

#ifndef FP_XSTATE_MAGIC1
#define FP_XSTATE_MAGIC1 0x46505853u
#endif
#define FPX_SW_OFFSET 464      /* struct _fpx_sw_bytes in the FXSAVE image */
#define XSTATE_BV_OFFSET 512   /* XSAVE header: the components present */
#define XFEATURE_YMM 4ull

/* [reg] once: where the AVX component lies in a signal frame (0: no AVX). */
static size_t ymm_offset;

/* [any] Word copies the compiler cannot turn into a memcpy call. */
static UKP_TRAP_TEXT void copy_qwords(volatile uint64_t *d, const volatile uint64_t *s, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		d[i] = s[i];
}

/* [reg] */
int arch_jprobe_init(void)
{
	unsigned int a, b, c, d;

	if (__get_cpuid(1, &a, &b, &c, &d) && (c & bit_OSXSAVE) && (c & bit_AVX)) {
		__cpuid_count(0xd, 2, a, b, c, d);
		ymm_offset = b;
	}
	return 0;
}

/* [trap] Is the AVX component of this frame there and writable? */
static UKP_TRAP_TEXT unsigned char *frame_ymm(const ucontext_t *uc, uint64_t **bv)
{
	unsigned char *fp = (unsigned char *)uc->uc_mcontext.fpregs;
	const uint32_t *sw;

	if (!fp || !ymm_offset)
		return NULL;
	sw = (const uint32_t *)(fp + FPX_SW_OFFSET);
	/* magic1, extended_size, xfeatures (u64) */
	if (sw[0] != FP_XSTATE_MAGIC1 || sw[1] < ymm_offset + 256 ||
	    !(*(const uint64_t *)(sw + 2) & XFEATURE_YMM))
		return NULL;
	*bv = (uint64_t *)(fp + XSTATE_BV_OFFSET);
	return fp + ymm_offset;
}

/* [trap] Keep the argument registers of the hit's frame. */
UKP_TRAP_TEXT void arch_jprobe_save_vec(struct arch_jprobe_vec *v, const ucontext_t *uc)
{
	const unsigned char *fp = (const unsigned char *)uc->uc_mcontext.fpregs;
	unsigned char *ymm;
	uint64_t *bv;

	if (!fp)
		return;
	copy_qwords(&v->xmm[0][0], (const uint64_t *)(fp + offsetof(struct _libc_fpstate, _xmm)),
		    16);
	ymm = frame_ymm(uc, &bv);
	v->have_ymmh = ymm && (*bv & XFEATURE_YMM);
	if (v->have_ymmh)
		copy_qwords(&v->ymmh[0][0], (const uint64_t *)ymm, 16);
}

/* [trap] Put them into the frame of the trap that ends the handler: the
 * kernel loads them at sigreturn. */
UKP_TRAP_TEXT void arch_jprobe_restore_vec(ucontext_t *uc, const struct arch_jprobe_vec *v)
{
	unsigned char *fp = (unsigned char *)uc->uc_mcontext.fpregs, *ymm;
	static const uint64_t zero[16];
	uint64_t *bv;

	if (!fp)
		return;
	copy_qwords((uint64_t *)(fp + offsetof(struct _libc_fpstate, _xmm)), &v->xmm[0][0], 16);
	ymm = frame_ymm(uc, &bv);
	if (!ymm)
		return;
	/* a component absent from xstate_bv is loaded in its initial state
	 * (zero): mark it present with the hit's values (or zeros) */
	copy_qwords((uint64_t *)ymm, v->have_ymmh ? &v->ymmh[0][0] : zero, 16);
	*bv |= XFEATURE_YMM;
}

extern char ukp_jprobe_start[];

_Static_assert(offsetof(struct arch_jprobe_start, entry) == 0 &&
	       offsetof(struct arch_jprobe_start, cx) == 8 &&
	       offsetof(struct arch_jprobe_start, si) == 16 &&
	       offsetof(struct arch_jprobe_start, di) == 24 &&
	       offsetof(struct arch_jprobe_start, r11) == 32, "jprobe.S offsets");

/*
 * [trap] Send the thread to entry through ukp_jprobe_start with the
 * registers regs (those of the hit, at a function's entry): up to
 * ARCH_JPROBE_STACK_BYTES of the stack top (as much as can be read) are
 * copied right below regs->sp, and the handler runs on that copy; regs
 * become what ukp_jprobe_start starts with (the trap writes them into
 * the signal context). Returns 0, or -EFAULT (regs unchanged) when the
 * stack cannot take it.
 */
UKP_TRAP_TEXT int arch_jprobe_start(struct pt_regs *regs, struct arch_jprobe_start *st,
				    uintptr_t entry)
{
	uintptr_t sp = regs->sp, page_end, copy, v;
	size_t n = ARCH_JPROBE_STACK_BYTES / 8;

	/* the copy stops at the end of readable memory (a stack near the
	 * top of its mapping); 16-byte steps keep the alignment */
	if (arch_load_word_nofault(&v, (const void *)(sp + n * 8 - 8))) {
		page_end = (sp | 4095) + 1;
		n = ((page_end - sp) / 8) & ~(size_t)1;
	}
	if (n < 2 || arch_load_word_nofault(&v, (const void *)sp))
		return -EFAULT;
	copy = sp - n * 8;
	if (arch_load_word_nofault(&v, (const void *)copy) ||
	    arch_store_word_nofault((void *)copy, v))
		return -EFAULT;
	st->entry = entry;
	st->cx = regs->cx;
	st->si = regs->si;
	st->di = regs->di;
	st->r11 = regs->r11;
	regs->si = sp;
	regs->di = copy;
	regs->sp = copy;
	regs->cx = n;
	regs->r11 = (uintptr_t)st;
	regs->ip = (uintptr_t)ukp_jprobe_start;
	return 0;
}
