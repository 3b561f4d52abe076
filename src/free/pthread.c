/* SPDX-License-Identifier: MIT */
/*
 * pthread.c - the few pthread functions the freestanding agent's code
 * calls, on futex words of its own (the program may have no pthreads at
 * all: Go's runtime, a static C program): mutexes (the agent's own
 * locks: counts.c, probes.c), condition waits, one-time initialisation.
 * The thread functions of the dynamic agent's fallback (pthread_create
 * and its attributes) are not reached: threads here are the raw ones of
 * ukprobes_kthread_run(). Thread-specific data (the watchpoints'
 * alternate stacks) is refused: ENOSYS. The atfork handlers are kept
 * for the agent's fork sites (below).
 */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <time.h>

#include "syscall_raw.h"
#include "base/sys.h"

/* The time left until the CLOCK_REALTIME deadline until, in *left:
 * false when it has passed. */
static bool time_left(const struct timespec *until, struct timespec *left)
{
	struct timespec now;

	clock_gettime(CLOCK_REALTIME, &now);
	left->tv_sec = until->tv_sec - now.tv_sec;
	left->tv_nsec = until->tv_nsec - now.tv_nsec;
	if (left->tv_nsec < 0) {
		left->tv_nsec += 1000000000L;
		left->tv_sec--;
	}
	return left->tv_sec >= 0;
}

/* a mutex is its first word: 0 free, 1 taken, 2 taken with waiters */
static _Atomic uint32_t *word(void *m)
{
	return (_Atomic uint32_t *)m;
}

int pthread_mutex_init(pthread_mutex_t *m, const pthread_mutexattr_t *a)
{
	(void)a;
	atomic_store(word(m), 0);
	return 0;
}

int pthread_mutex_trylock(pthread_mutex_t *m)
{
	uint32_t z = 0;

	return atomic_compare_exchange_strong(word(m), &z, 1) ? 0 : EBUSY;
}

int pthread_mutex_lock(pthread_mutex_t *m)
{
	uint32_t z = 0;

	if (atomic_compare_exchange_strong(word(m), &z, 1))
		return 0;
	while (atomic_exchange(word(m), 2) != 0)
		ukp_sys_futex_wait((uint32_t *)word(m), 2, NULL);
	return 0;
}

int pthread_mutex_timedlock(pthread_mutex_t *m, const struct timespec *until)
{
	uint32_t z = 0;

	if (atomic_compare_exchange_strong(word(m), &z, 1))
		return 0;
	while (atomic_exchange(word(m), 2) != 0) {
		struct timespec left;

		if (!time_left(until, &left))
			return ETIMEDOUT;
		ukp_sys_futex_wait((uint32_t *)word(m), 2, &left);
	}
	return 0;
}

int pthread_mutex_unlock(pthread_mutex_t *m)
{
	if (atomic_exchange(word(m), 0) == 2)
		ukp_sys_futex_wake((uint32_t *)word(m), 1);
	return 0;
}

/* a condition is a sequence word: a wait sleeps while it is unchanged */
int pthread_cond_timedwait(pthread_cond_t *c, pthread_mutex_t *m, const struct timespec *until)
{
	uint32_t seq = atomic_load(word(c));
	struct timespec left;
	int ret = 0;

	pthread_mutex_unlock(m);
	if (!time_left(until, &left))
		ret = ETIMEDOUT;
	else if (ukp_sys_futex_wait((uint32_t *)word(c), seq, &left) == -ETIMEDOUT)
		ret = ETIMEDOUT;
	pthread_mutex_lock(m);
	return ret;
}

int pthread_cond_wait(pthread_cond_t *c, pthread_mutex_t *m)
{
	uint32_t seq = atomic_load(word(c));

	pthread_mutex_unlock(m);
	ukp_sys_futex_wait((uint32_t *)word(c), seq, NULL);
	pthread_mutex_lock(m);
	return 0;
}

int pthread_cond_broadcast(pthread_cond_t *c)
{
	atomic_fetch_add(word(c), 1);
	ukp_sys_futex_wake((uint32_t *)word(c), INT32_MAX);
	return 0;
}

int pthread_cond_signal(pthread_cond_t *c)
{
	atomic_fetch_add(word(c), 1);
	ukp_sys_futex_wake((uint32_t *)word(c), 1);
	return 0;
}

/* 0 never run, 1 running, 2 done */
int pthread_once(pthread_once_t *o, void (*fn)(void))
{
	_Atomic uint32_t *w = (_Atomic uint32_t *)o;
	uint32_t z = 0;

	if (atomic_load(w) == 2)
		return 0;
	if (atomic_compare_exchange_strong(w, &z, 1)) {
		fn();
		atomic_store(w, 2);
		ukp_sys_futex_wake((uint32_t *)w, INT32_MAX);
		return 0;
	}
	while (atomic_load(w) != 2)
		ukp_sys_futex_wait((uint32_t *)w, 1, NULL);
	return 0;
}

pthread_t pthread_self(void)
{
	return (pthread_t)arch_syscall3(__NR_gettid, 0, 0, 0);
}

int pthread_key_create(pthread_key_t *k, void (*d)(void *))
{
	(void)k;
	(void)d;
	return ENOSYS;
}

int pthread_setspecific(pthread_key_t k, const void *v)
{
	(void)k;
	(void)v;
	return ENOSYS;
}

/* The atfork handlers: nobody but the agent's fork sites runs them (the
 * program's C library knows nothing of them; agent/free/fork_sites.c
 * runs them around each fork of the program's it sees, with -f). Given
 * by constructors and set-up code before the program forks ([init]). */
#define MAX_ATFORK 16
static struct {
	void (*prepare)(void), (*parent)(void), (*child)(void);
} atfork[MAX_ATFORK];
static _Atomic int natfork;

int pthread_atfork(void (*prepare)(void), void (*parent)(void), void (*child)(void))
{
	int i = atomic_fetch_add(&natfork, 1);

	if (i >= MAX_ATFORK) {
		atomic_fetch_sub(&natfork, 1);
		return ENOMEM;
	}
	atfork[i].prepare = prepare;
	atfork[i].parent = parent;
	atfork[i].child = child;
	return 0;
}

/* [init] As a C library's fork() runs them: the prepare handlers last
 * given first, the others in the order given. */
void ukp_free_atfork_prepare(void)
{
	for (int i = atomic_load(&natfork); i-- > 0;)
		if (atfork[i].prepare)
			atfork[i].prepare();
}

void ukp_free_atfork_parent(void)
{
	for (int i = 0, n = atomic_load(&natfork); i < n; i++)
		if (atfork[i].parent)
			atfork[i].parent();
}

void ukp_free_atfork_child(void)
{
	for (int i = 0, n = atomic_load(&natfork); i < n; i++)
		if (atfork[i].child)
			atfork[i].child();
}
