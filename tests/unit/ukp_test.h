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

/*
 * Deliberate faults, in assembly so that UBSan (which would report the
 * undefined behaviour itself and stop) lets the CPU raise the signal.
 */
static inline int ukt_load_int(const volatile void *p)
{
	int v;

	__asm__ volatile("movl (%1), %0" : "=r"(v) : "r"(p) : "memory");
	return v;
}

static inline int ukt_idiv(int a, int b)
{
	int q;

	__asm__ volatile("cltd\n\tidivl %2" : "=a"(q) : "a"(a), "r"(b) : "rdx", "cc");
	return q;
}

#endif
