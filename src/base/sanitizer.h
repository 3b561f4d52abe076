/* SPDX-License-Identifier: MIT */
/*
 * What a build with AddressSanitizer needs told that the compiler cannot
 * see: frames the library leaves without returning (a handler that
 * faulted, a jprobe handler's end). Their redzones stay poisoned in the
 * shadow memory otherwise, and a later, unrelated use of that stack (an
 * intercepted memcpy into a buffer of an uninstrumented frame) is then
 * reported as an overflow, or crashes ASan itself while it describes the
 * address. Where the stale poison lands depends on the signal frame's
 * size, which depends on the CPU's vector state (AVX-512 or not): the
 * same test passed on one machine and crashed on another. In other
 * builds these are empty.
 */
#ifndef UKP_SANITIZER_H
#define UKP_SANITIZER_H

#include <stdint.h>

#if defined(__has_feature)
#if __has_feature(address_sanitizer)
#define UKP_ASAN 1
#endif
#endif
#if defined(__SANITIZE_ADDRESS__)
#define UKP_ASAN 1
#endif

#ifdef UKP_ASAN
void __asan_handle_no_return(void);
void __asan_unpoison_memory_region(void const volatile *addr, size_t size);

/*
 * [any, trap] Frames between lo and hi on the stack the code left ran on
 * (a faulting handler's, from its stack pointer to the frame it goes back
 * to) are left without returning, and so is everything below the
 * current stack pointer on the current stack (the signal handler's own
 * frames, on the thread's stack or on an alternate one):
 * their shadow is cleared, as ASan's longjmp interceptor clears it.
 */
static inline void ukp_asan_frames_left(uintptr_t lo, uintptr_t hi)
{
	__asan_handle_no_return();
	/* (a bound: lo and hi are on one stack, never megabytes apart) */
	if (lo < hi && hi - lo < ((uintptr_t)64 << 20))
		__asan_unpoison_memory_region((void *)lo, hi - lo);
}
#define UKP_ASAN_NO_RETURN() __asan_handle_no_return()
#else
static inline void ukp_asan_frames_left(uintptr_t lo, uintptr_t hi)
{
	(void)lo;
	(void)hi;
}
#define UKP_ASAN_NO_RETURN() ((void)0)
#endif

#endif
