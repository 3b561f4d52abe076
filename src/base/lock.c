/* SPDX-License-Identifier: MIT */
/*
 * lock.c - the library's mutex and condition variable (lock.h) on futex
 * words. The mutex is the three-state one (free, held, held with
 * sleepers): an uncontended lock and unlock are one atomic each and no
 * system call; a contended unlock wakes one sleeper. The condition
 * variable is a sequence number: a waiter reads it, lets the mutex go
 * and sleeps while it is unchanged; signal and broadcast change it and
 * wake. [reg]
 */
#include <errno.h>
#include <limits.h>

#include "base/base.h"
#include "base/lock.h"
#include "base/sys.h"

#define FUTEX_PRIVATE 128

/*
 * Where a thread of the library's sleeps (the optimizer's, waiting for
 * work): outside ukprobes_text, which the static library's whole code is
 * moved into (scripts/mkstatic.sh). A thread scan takes a thread whose
 * pc is in ukprobes_text for one inside the probe handlers, which may
 * resume in a detour: one sleeping here would keep every quarantined
 * detour from being reclaimed (as one sleeping in libc's futex call did
 * not).
 */
__attribute__((noinline, section("ukprobes_wait"))) static long
futex_wait(_Atomic uint32_t *w, uint32_t val, const struct timespec *rel)
{
	return arch_syscall4(__NR_futex, (long)w, 0 /* FUTEX_WAIT */ | FUTEX_PRIVATE, val,
			     (long)rel);
}

static void futex_wake(_Atomic uint32_t *w, int n)
{
	arch_syscall4(__NR_futex, (long)w, 1 /* FUTEX_WAKE */ | FUTEX_PRIVATE, n, 0);
}

bool ukp_fmutex_trylock(struct ukp_fmutex *m)
{
	uint32_t free = 0;

	return atomic_compare_exchange_strong_explicit(&m->v, &free, 1, memory_order_acquire,
						       memory_order_relaxed);
}

void ukp_fmutex_lock(struct ukp_fmutex *m)
{
	uint32_t c = 0;

	if (atomic_compare_exchange_strong_explicit(&m->v, &c, 1, memory_order_acquire,
						    memory_order_relaxed))
		return;
	/* held: say there is a sleeper, and sleep until it is free */
	if (c != 2)
		c = atomic_exchange_explicit(&m->v, 2, memory_order_acquire);
	while (c != 0) {
		futex_wait(&m->v, 2, NULL);
		c = atomic_exchange_explicit(&m->v, 2, memory_order_acquire);
	}
}

void ukp_fmutex_unlock(struct ukp_fmutex *m)
{
	if (atomic_exchange_explicit(&m->v, 0, memory_order_release) == 2)
		futex_wake(&m->v, 1);
}

static bool cond_sleep(struct ukp_fcond *c, struct ukp_fmutex *m, const struct timespec *rel)
{
	uint32_t seq = atomic_load_explicit(&c->seq, memory_order_relaxed);
	long r;

	ukp_fmutex_unlock(m);
	r = futex_wait(&c->seq, seq, rel);
	/* (taken as contended: a sleeper woken with it may not be alone) */
	while (atomic_exchange_explicit(&m->v, 2, memory_order_acquire) != 0)
		futex_wait(&m->v, 2, NULL);
	return r != -ETIMEDOUT;
}

void ukp_fcond_wait(struct ukp_fcond *c, struct ukp_fmutex *m)
{
	cond_sleep(c, m, NULL);
}

bool ukp_fcond_timedwait(struct ukp_fcond *c, struct ukp_fmutex *m, const struct timespec *rel)
{
	return cond_sleep(c, m, rel);
}

void ukp_fcond_signal(struct ukp_fcond *c)
{
	atomic_fetch_add_explicit(&c->seq, 1, memory_order_release);
	futex_wake(&c->seq, 1);
}

void ukp_fcond_broadcast(struct ukp_fcond *c)
{
	atomic_fetch_add_explicit(&c->seq, 1, memory_order_release);
	futex_wake(&c->seq, INT_MAX);
}
