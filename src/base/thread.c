/* SPDX-License-Identifier: MIT */
/*
 * thread.c - the library's own threads (the optimizer's, a large scan's
 * helper, an agent's): started with every signal blocked but the ones
 * the library owns.
 */
#include <pthread.h>
#include <signal.h>

#include "base/base.h"

/*
 * [reg] Start a thread of the library's own (the optimizer, a scan's
 * helper): from its first instruction every signal is blocked but the
 * library's (UKP_OWNED_MASK), so that it takes breakpoints in the libc
 * it calls (malloc, in a helper of a scan that runs while a probe on
 * malloc is in place) and answers thread scans, and never runs the
 * program's handlers. The mask is set through whichever pthread_sigmask
 * the library's calls reach: this interposer when the library was
 * preloaded, libc's when it was dlopen()ed (ukprobe -p), where blocking
 * SIGTRAP is real and a breakpoint hit would kill the process.
 * 0 or an errno value.
 */
int ukp_thread_start(pthread_t *t, void *(*fn)(void *), void *arg)
{
	sigset_t mask, old;
	int sig, ret;

	sigfillset(&mask);
	for (sig = 1; sig <= 64; sig++)
		if (UKP_OWNED_MASK & (1ULL << (sig - 1)))
			sigdelset(&mask, sig);
	pthread_sigmask(SIG_SETMASK, &mask, &old);
	ret = pthread_create(t, NULL, fn, arg);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	return ret;
}
