/* SPDX-License-Identifier: MIT */
/*
 * lock.h - the library's own locks: a mutex and a condition variable,
 * each a futex word of its own (private to the process). No pthread, no
 * allocation, no TLS, no errno: what a build without libc needs
 * (doc/static_agent.md), and what the library uses in the dynamic build
 * too. The mutex is not recursive and has no owner: a fork child whose
 * atfork handler held one makes it free again (ukp_fmutex_init).
 *
 * [reg] context (they may sleep); never in the hit path.
 */
#ifndef UKP_LOCK_H
#define UKP_LOCK_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <time.h>

/* 0 free, 1 held, 2 held with (maybe) sleepers */
struct ukp_fmutex {
	_Atomic uint32_t v;
};
#define UKP_FMUTEX_INIT { 0 }

void ukp_fmutex_lock(struct ukp_fmutex *m);
bool ukp_fmutex_trylock(struct ukp_fmutex *m);
void ukp_fmutex_unlock(struct ukp_fmutex *m);

/* free again (a fork child whose atfork handler held it) */
static inline void ukp_fmutex_init(struct ukp_fmutex *m)
{
	atomic_store(&m->v, 0);
}

/* Wakes may be spurious: callers wait in a loop on their condition. */
struct ukp_fcond {
	_Atomic uint32_t seq;
};
#define UKP_FCOND_INIT { 0 }

void ukp_fcond_wait(struct ukp_fcond *c, struct ukp_fmutex *m);
/* at most *rel (a relative time); false once it has passed */
bool ukp_fcond_timedwait(struct ukp_fcond *c, struct ukp_fmutex *m, const struct timespec *rel);
void ukp_fcond_signal(struct ukp_fcond *c);
void ukp_fcond_broadcast(struct ukp_fcond *c);

static inline void ukp_fcond_init(struct ukp_fcond *c)
{
	atomic_store(&c->seq, 0);
}

#endif
