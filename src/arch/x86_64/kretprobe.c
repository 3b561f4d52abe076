/* SPDX-License-Identifier: MIT */
/*
 * kretprobe.c - x86-64 support for return probes: the size of the
 * trampoline's extended-state save area, the return-address slot at a
 * function entry and shadow-stack detection (see arch.h and
 * kretprobe_tramp.S).
 */
#include <cpuid.h>
#include <errno.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "base/base.h"
#include "core/core.h"
#include "process/process.h"
#include "text/text.h"
#include "optimizer/optimizer.h"

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
