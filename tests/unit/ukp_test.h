/* SPDX-License-Identifier: MIT */
/* Helpers shared by the unit tests. */
#ifndef UKP_TEST_H
#define UKP_TEST_H

/*
 * A probe target: a real, separate function whose calls the compiler may
 * not fold, clone, inline or constant-propagate (GCC removes calls to a
 * plain noinline pure function whose result it can compute).
 */
#if defined(__clang__)
#define UKP_TARGET __attribute__((noinline, optnone, used))
#else
#define UKP_TARGET __attribute__((noipa, used))
#endif

#include <stdbool.h>
#include <stdint.h>
#include <string.h>
#include <ukprobes.h>

/*
 * In a build with AddressSanitizer: the first poisoned byte in the 32 KiB
 * of stack below the caller's frame, or NULL. Frames that returned
 * cleared their poison; only frames left without returning (a faulting
 * handler's, abandoned by the library) leave it there, and a later use
 * of that stack by uninstrumented code is then reported as an overflow.
 * NULL in other builds.
 */
#if defined(__has_feature)
#if __has_feature(address_sanitizer)
#define UKT_ASAN 1
#endif
#endif
#if defined(__SANITIZE_ADDRESS__)
#define UKT_ASAN 1
#endif
#ifdef UKT_ASAN
#include <sanitizer/asan_interface.h>
#endif
static __attribute__((noinline, unused)) void *ukt_stale_stack_poison(void)
{
#ifdef UKT_ASAN
	char here;
	/* below this frame's own redzones */
	char *top = (char *)&here - 256;

	__asm__ volatile("" : : "r"(&here) : "memory");
	return __asan_region_is_poisoned(top - 32768, 32768);
#else
	return NULL;
#endif
}

/*
 * Deliberate faults, in assembly so that UBSan (which would report the
 * undefined behaviour itself and stop) lets the CPU raise the signal.
 */
static inline int ukt_load_int(const volatile void *p)
{
	int v;

#if defined(__x86_64__)
	__asm__ volatile("movl (%1), %0" : "=r"(v) : "r"(p) : "memory");
#elif defined(__aarch64__)
	__asm__ volatile("ldr %w0, [%1]" : "=r"(v) : "r"(p) : "memory");
#endif
	return v;
}

/* The breakpoint instruction as the library writes it over a probed
 * address (x86-64: int3; AArch64: brk #0x004). */
static inline bool ukt_breakpoint_at(const void *addr)
{
#if defined(__x86_64__)
	static const uint8_t bp[] = { 0xcc };
#elif defined(__aarch64__)
	static const uint8_t bp[] = { 0x80, 0x00, 0x20, 0xd4 };
#endif
	return memcmp((const void *)addr, bp, sizeof(bp)) == 0;
}

/* The first kprobe_opcode_t of the code at addr (what struct kprobe's
 * opcode holds: x86-64 a byte, AArch64 an instruction). */
static inline kprobe_opcode_t ukt_opcode_at(const void *addr)
{
	kprobe_opcode_t v;

	memcpy(&v, (const void *)addr, sizeof(v));
	return v;
}

#if defined(__x86_64__)
/* x86-64 only: AArch64's sdiv does not trap on a zero divisor. */
static inline int ukt_idiv(int a, int b)
{
	int q;

	__asm__ volatile("cltd\n\tidivl %2" : "=a"(q) : "a"(a), "r"(b) : "rdx", "cc");
	return q;
}
#endif

#endif
