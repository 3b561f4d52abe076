// SPDX-License-Identifier: MIT
/*
 * kretprobe.c - AArch64 support for return probes: the frame slot at a
 * function entry, the guarded control stack check, and the unwinder's
 * pseudo FDE for the trampoline address (see arch.h, arch_kretprobe.h
 * and kretprobe_tramp.S).
 */
#include <errno.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/prctl.h>

#include "internal.h"

#ifndef PR_GET_SHADOW_STACK_STATUS
#define PR_GET_SHADOW_STACK_STATUS 74
#endif
#define PR_SHADOW_STACK_ENABLE (1UL << 0)

/* [reg] The trampoline keeps no vector state of its own: nothing to size. */
int arch_kretprobe_init(void)
{
	return 0;
}

/* [trap] The frame's identity: the stack pointer at the entry, which the
 * function's return leaves as it found it. */
UKP_TRAP_TEXT uintptr_t arch_kretprobe_ret_slot(const struct pt_regs *regs)
{
	return regs->sp;
}

/* [any] A guarded control stack (GCS) checks every return against its
 * own copy: the link register cannot be swapped then. */
bool arch_shadow_stack_active(void)
{
	unsigned long status = 0;

	return prctl(PR_GET_SHADOW_STACK_STATUS, &status, 0, 0, 0) == 0 &&
	       (status & PR_SHADOW_STACK_ENABLE);
}

/* ----------------------------------------------------- pseudo FDE */

#define DW_EH_PE_absptr 0x00
#define DW_CFA_def_cfa  0x0c
#define DW_CFA_nop      0x00
#define DWARF_SP        31
#define DWARF_X30       30

/*
 * One CIE and one FDE, built once at load time, for the zero-size frame
 * at the byte before the trampoline (kretprobe_unwind.c): CFA = sp, and
 * the return address column x30 without a rule, so that an unwinder
 * takes it from where the frame it just left saved x30 (the word
 * ukp_krp_restore_one has put the real return address back into).
 * Absolute addresses: no relocation.
 */
static _Alignas(8) unsigned char eh_buf[64];
static const void *_Atomic pseudo_fde;
static uintptr_t pseudo_func;

static size_t put_u32(unsigned char *p, uint32_t v)
{
	memcpy(p, &v, 4);
	return 4;
}

static size_t put_u64(unsigned char *p, uint64_t v)
{
	memcpy(p, &v, 8);
	return 8;
}

static void build_pseudo_fde(void)
{
	unsigned char *p = eh_buf, *cie = eh_buf, *fde;
	size_t n = 4;

	n += put_u32(p + n, 0); /* CIE id */
	p[n++] = 1;             /* version */
	p[n++] = 'z';
	p[n++] = 'R';
	p[n++] = 0;
	p[n++] = 4;             /* code alignment (uleb128) */
	p[n++] = 0x78;          /* data alignment -8 (sleb128) */
	p[n++] = DWARF_X30;     /* return address column */
	p[n++] = 1;             /* augmentation data length */
	p[n++] = DW_EH_PE_absptr;
	p[n++] = DW_CFA_def_cfa;
	p[n++] = DWARF_SP;
	p[n++] = 0;
	while (n % 8)
		p[n++] = DW_CFA_nop;
	put_u32(p, (uint32_t)(n - 4));

	fde = p + n;
	pseudo_func = (uintptr_t)ukp_kretprobe_trampoline - 1;
	n = 4;
	n += put_u32(fde + n, (uint32_t)((fde + 4) - cie)); /* CIE pointer */
	n += put_u64(fde + n, pseudo_func);                  /* pc begin */
	n += put_u64(fde + n, 2);                            /* pc range */
	fde[n++] = 0;                                        /* augmentation length */
	while (n % 8)
		fde[n++] = DW_CFA_nop;
	put_u32(fde, (uint32_t)(n - 4));
	put_u32(fde + n, 0); /* terminator */
	atomic_store_explicit(&pseudo_fde, fde, memory_order_release);
}

/* [any] */
const void *arch_kretprobe_pseudo_fde(uintptr_t *func)
{
	const void *f = atomic_load_explicit(&pseudo_fde, memory_order_acquire);

	if (f)
		*func = pseudo_func;
	return f;
}

/* Built at load time: the unwinder may ask before any registration. */
__attribute__((constructor)) static void kretprobe_arch_ctor(void)
{
	build_pseudo_fde();
}
