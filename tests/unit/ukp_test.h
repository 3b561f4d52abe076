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

#endif
