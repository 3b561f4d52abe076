// SPDX-License-Identifier: MIT
/*
 * jprobe.c - AArch64 support for jprobes: the way into the handler (a
 * copy of the stack top, see jprobe.S), and the vector argument
 * registers v0-v7, kept from the hit's signal frame and put back into
 * the frame of the trap that ends the handler.
 *
 * The frame's FP/SIMD record (struct fpsimd_context) holds v0-v31; when
 * the frame also has an SVE record with register data, the low 128 bits
 * of z0-z7 there are v0-v7 as well: both are written, because a kernel
 * takes the FP/SIMD record's values for them and qemu-user the SVE
 * record's. The rest of the SVE state (z0-z7 beyond 128 bits, p0-p3:
 * SVE arguments) is not kept, as x86-64 does not keep zmm0-7
 * (doc/jprobes.md).
 */
#include <asm/sigcontext.h>
#include <errno.h>
#include <stddef.h>
#include <ucontext.h>

#include "base/base.h"
#include "core/core.h"
#include "process/process.h"
#include "text/text.h"
#include "optimizer/optimizer.h"
#include "sigframe.h"

/* PSTATE.BTYPE: the branch type a BTI landing pad checks */
#define A64_PSTATE_BTYPE_MASK (UINT64_C(3) << 10)

/* [trap] Word copies the compiler cannot turn into a memcpy call. */
static UKP_TRAP_TEXT void copy_qwords(volatile uint64_t *d, const volatile uint64_t *s, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		d[i] = s[i];
}

/*
 * [reg] Under a guarded control stack the handler's calls push return
 * addresses that jprobe_return() never pops, and a handler's own return
 * to ukp_jprobe_handler_ret is refused: jprobes cannot work there.
 */
int arch_jprobe_init(void)
{
	return arch_shadow_stack_active() ? -EOPNOTSUPP : 0;
}

/* [trap] The low 128 bits of z0 in the frame's SVE record, when it has
 * register data (a record of the header only says "no SVE state"). */
static UKP_TRAP_TEXT unsigned char *frame_sve_z0(const ucontext_t *uc, unsigned int *zsize)
{
	struct sve_context *sve = a64_frame_record(uc, SVE_MAGIC, sizeof(*sve));
	unsigned int vq;

	if (!sve || sve->head.size <= sizeof(*sve))
		return NULL;
	vq = sve_vq_from_vl(sve->vl);
	if (!vq || sve->head.size < SVE_SIG_ZREG_OFFSET(vq, 8))
		return NULL;
	*zsize = vq * 16;
	return (unsigned char *)sve + SVE_SIG_ZREG_OFFSET(vq, 0);
}

/* [trap] Keep v0-v7 of the hit's frame. */
UKP_TRAP_TEXT void arch_jprobe_save_vec(struct arch_jprobe_vec *v, const ucontext_t *uc)
{
	const struct fpsimd_context *fp = a64_frame_record(uc, FPSIMD_MAGIC, sizeof(*fp));

	v->have = fp != NULL;
	if (fp)
		copy_qwords(&v->v[0][0], (const uint64_t *)(const void *)fp->vregs, 16);
}

/* [trap] Put them into the frame of the trap that ends the handler: the
 * kernel loads them at sigreturn. */
UKP_TRAP_TEXT void arch_jprobe_restore_vec(ucontext_t *uc, const struct arch_jprobe_vec *v)
{
	struct fpsimd_context *fp = a64_frame_record(uc, FPSIMD_MAGIC, sizeof(*fp));
	unsigned char *z;
	unsigned int zsize, i;

	if (!v->have || !fp)
		return;
	copy_qwords((uint64_t *)(void *)fp->vregs, &v->v[0][0], 16);
	z = frame_sve_z0(uc, &zsize);
	if (!z)
		return;
	for (i = 0; i < 8; i++)
		copy_qwords((uint64_t *)(void *)(z + i * zsize), v->v[i], 2);
}

extern char ukp_jprobe_start[];

_Static_assert(offsetof(struct arch_jprobe_start, entry) == 0 &&
	       offsetof(struct arch_jprobe_start, src) == 8 &&
	       offsetof(struct arch_jprobe_start, x17) == 16, "jprobe.S offsets");
_Static_assert(ARCH_JPROBE_STACK_BYTES % 16 == 0, "sp stays 16-byte aligned");

/*
 * [trap] Send the thread to entry through ukp_jprobe_start with the
 * registers regs (those of the hit, at a function's entry): up to
 * ARCH_JPROBE_STACK_BYTES of the stack top (as much as can be read, in
 * 16-byte steps to keep sp aligned) are copied right below regs->sp,
 * and the handler runs on that copy. Returns 0, or -EFAULT when the
 * stack cannot take it.
 */
UKP_TRAP_TEXT int arch_jprobe_start(struct pt_regs *regs, struct arch_jprobe_start *st,
				    uintptr_t entry)
{
	uintptr_t sp = regs->sp, copy, v;
	size_t n = ARCH_JPROBE_STACK_BYTES;

	if (sp & 15)
		return -EFAULT; /* not a function's entry: the stub's sp must be aligned */
	/* the copy stops at the end of readable memory (a stack near the
	 * top of its mapping): nothing above it can be an argument */
	if (arch_load_word_nofault(&v, (const void *)(sp + n - 8))) {
		uintptr_t end = (sp + n - 8) & ~(uintptr_t)4095;

		n = end > sp ? (end - sp) & ~(size_t)15 : 0;
	}
	if (n && arch_load_word_nofault(&v, (const void *)sp))
		return -EFAULT;
	copy = sp - n;
	/* the lowest word of the copy (a word of this signal frame, written
	 * back unchanged) and the one below, which the handler's frame takes
	 * first: a stack without room fails here, not in the stub */
	if (arch_load_word_nofault(&v, (const void *)(copy - 8)) ||
	    arch_store_word_nofault((void *)(copy - 8), v))
		return -EFAULT;
	st->entry = entry;
	st->src = sp;
	st->x17 = regs->regs[17];
	regs->regs[16] = n;
	regs->regs[17] = (uintptr_t)st;
	regs->sp = copy;
	regs->pc = (uintptr_t)ukp_jprobe_start;
	/* the stub is reached as by a return, not a branch to a landing pad */
	regs->pstate &= ~(uint64_t)A64_PSTATE_BTYPE_MASK;
	return 0;
}
