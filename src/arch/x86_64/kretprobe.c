/* SPDX-License-Identifier: MIT */
/*
 * kretprobe.c - x86-64 support for return probes: the size of the
 * trampoline's extended-state save area, the return-address slot at a
 * function entry, shadow-stack detection, and the unwinder's pseudo FDE
 * for the trampoline address (see arch.h and kretprobe_tramp.S).
 */
#include <cpuid.h>
#include <errno.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "internal.h"

#ifndef ARCH_SHSTK_STATUS
#define ARCH_SHSTK_STATUS 0x5005
#endif
#define ARCH_SHSTK_SHSTK (1ULL << 0)

/* XCR0 components the trampoline leaves alone: AMX tile configuration
 * and data (a C handler never uses them, and they are 8 KiB). */
#define XFEATURE_AMX ((1ULL << 17) | (1ULL << 18))
#define XSAVE_LEGACY_AND_HEADER 576

/* Read by the trampoline: the XSAVE component mask (0: use FXSAVE) and
 * the bytes to reserve (the area size plus room for 64-byte alignment). */
__attribute__((visibility("hidden"))) uint64_t ukp_krp_xsave_mask;
__attribute__((visibility("hidden"))) uint64_t ukp_krp_xsave_size = 512 + 64;
/* 1: save with XSAVEC (compacted, skips components in their initial
 * state, typically the AVX-512 upper halves); XRSTOR reads that format. */
__attribute__((visibility("hidden"))) uint64_t ukp_krp_xsavec;

/* Tests force the shadow-stack answer: -1 ask the kernel, 0 no, 1 yes. */
int ukp_shstk_force = -1;

static uint64_t xgetbv0(void)
{
	uint32_t lo, hi;

	__asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
	return ((uint64_t)hi << 32) | lo;
}

/* [reg] */
int arch_kretprobe_init(void)
{
	unsigned int a, b, c, d, i;
	uint64_t mask, end = XSAVE_LEGACY_AND_HEADER;

	if (!__get_cpuid(1, &a, &b, &c, &d) || !(c & bit_OSXSAVE)) {
		ukp_krp_xsave_mask = 0;
		ukp_krp_xsave_size = 512 + 64;
		return 0;
	}
	mask = xgetbv0() & ~XFEATURE_AMX;
	/* Standard (non-compacted) format: component i lives at the offset
	 * CPUID leaf 0xd sub-leaf i gives. */
	for (i = 2; i < 63; i++) {
		if (!(mask & (1ULL << i)))
			continue;
		__cpuid_count(0xd, i, a, b, c, d);
		if ((uint64_t)b + a > end)
			end = (uint64_t)b + a;
	}
	/* The compacted format is never larger than the standard one. */
	ukp_krp_xsave_size = (end + 63) / 64 * 64 + 64;
	ukp_krp_xsave_mask = mask;
	__cpuid_count(0xd, 1, a, b, c, d);
	ukp_krp_xsavec = (a & (1u << 1)) ? 1 : 0;
	return 0;
}

/* [trap] At the entry probe the return address is at the top of the stack. */
UKP_TRAP_TEXT uintptr_t arch_kretprobe_ret_slot(const struct pt_regs *regs)
{
	return regs->sp;
}

/* [any] */
bool arch_shadow_stack_active(void)
{
	unsigned long features = 0;
	long ret;

	if (ukp_shstk_force >= 0)
		return ukp_shstk_force;
	/* Kernels without user shadow stacks answer -EINVAL. A raw system
	 * call: this runs on the trap path, where libc may be probed. */
	__asm__ volatile("syscall"
			 : "=a"(ret)
			 : "a"((long)SYS_arch_prctl), "D"((long)ARCH_SHSTK_STATUS), "S"(&features)
			 : "rcx", "r11", "memory");
	if (ret != 0)
		return false;
	return (features & ARCH_SHSTK_SHSTK) != 0;
}

/* ----------------------------------------------------- pseudo FDE */

#define DW_EH_PE_absptr 0x00
#define DW_CFA_def_cfa  0x0c
#define DW_CFA_offset   0x80
#define DW_CFA_nop      0x00
#define DWARF_RSP       7
#define DWARF_RIP       16

/*
 * One CIE and one FDE, built once at load time (readers see them complete
 * through the release store of pseudo_fde). The FDE uses absolute
 * addresses, so it needs no relocation and describes exactly
 * [trampoline - 1, trampoline + 1).
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
	size_t n;

	/* CIE: "zR", code align 1, data align -8, return column rip,
	 * pointers absolute; CFA = rsp + 0, rip saved at CFA - 8. */
	n = 4;
	n += put_u32(p + n, 0); /* CIE id */
	p[n++] = 1;             /* version */
	p[n++] = 'z';
	p[n++] = 'R';
	p[n++] = 0;
	p[n++] = 1;             /* code alignment (uleb128) */
	p[n++] = 0x78;          /* data alignment -8 (sleb128) */
	p[n++] = DWARF_RIP;     /* return address column */
	p[n++] = 1;             /* augmentation data length */
	p[n++] = DW_EH_PE_absptr;
	p[n++] = DW_CFA_def_cfa;
	p[n++] = DWARF_RSP;
	p[n++] = 0;
	p[n++] = DW_CFA_offset | DWARF_RIP;
	p[n++] = 1;             /* factored: 1 * -8 */
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
