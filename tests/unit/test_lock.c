// SPDX-License-Identifier: MIT
/*
 * test_lock.c - the library's futex mutex and condition variable
 * (src/base/lock.h): mutual exclusion under contention, trylock, every
 * item a producer signals reaching the consumer, a broadcast waking every
 * waiter, a timed wait ending when its time has passed, and a fork child
 * freeing a mutex its parent's other thread held.
 */
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <criterion/criterion.h>

#include "base/lock.h"

static struct ukp_fmutex mu = UKP_FMUTEX_INIT;
static struct ukp_fcond cv = UKP_FCOND_INIT;
static long counter;

#define THREADS 4
#define ROUNDS 200000

static void *adder(void *a)
{
	(void)a;
	for (int i = 0; i < ROUNDS; i++) {
		ukp_fmutex_lock(&mu);
		counter++; /* not atomic: the mutex makes it exact */
		ukp_fmutex_unlock(&mu);
	}
	return NULL;
}

Test(lock, mutual_exclusion)
{
	pthread_t t[THREADS];

	for (int i = 0; i < THREADS; i++)
		cr_assert_eq(pthread_create(&t[i], NULL, adder, NULL), 0);
	for (int i = 0; i < THREADS; i++)
		pthread_join(t[i], NULL);
	cr_assert_eq(counter, (long)THREADS * ROUNDS);
	cr_assert_eq(atomic_load(&mu.v), 0u, "free at the end");
}

Test(lock, trylock)
{
	cr_assert(ukp_fmutex_trylock(&mu));
	cr_assert(!ukp_fmutex_trylock(&mu), "held");
	ukp_fmutex_unlock(&mu);
	cr_assert(ukp_fmutex_trylock(&mu), "free again");
	ukp_fmutex_unlock(&mu);
}

#define ITEMS 100000
static long queued, taken;

static void *consumer(void *a)
{
	(void)a;
	ukp_fmutex_lock(&mu);
	while (taken < ITEMS) {
		while (!queued)
			ukp_fcond_wait(&cv, &mu);
		queued--;
		taken++;
	}
	ukp_fmutex_unlock(&mu);
	return NULL;
}

Test(lock, signal_every_item)
{
	pthread_t t;

	cr_assert_eq(pthread_create(&t, NULL, consumer, NULL), 0);
	for (int i = 0; i < ITEMS; i++) {
		ukp_fmutex_lock(&mu);
		queued++;
		ukp_fcond_signal(&cv);
		ukp_fmutex_unlock(&mu);
	}
	pthread_join(t, NULL);
	cr_assert_eq(taken, ITEMS);
	cr_assert_eq(queued, 0);
}

static int go, woken;
static _Atomic int held;

static void *waiter(void *a)
{
	(void)a;
	ukp_fmutex_lock(&mu);
	while (!go)
		ukp_fcond_wait(&cv, &mu);
	woken++;
	ukp_fmutex_unlock(&mu);
	return NULL;
}

Test(lock, broadcast_wakes_all)
{
	pthread_t t[THREADS];

	for (int i = 0; i < THREADS; i++)
		cr_assert_eq(pthread_create(&t[i], NULL, waiter, NULL), 0);
	ukp_fmutex_lock(&mu);
	go = 1;
	ukp_fcond_broadcast(&cv);
	ukp_fmutex_unlock(&mu);
	for (int i = 0; i < THREADS; i++)
		pthread_join(t[i], NULL);
	cr_assert_eq(woken, THREADS);
}

static long ms_since(const struct timespec *t0)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (t.tv_sec - t0->tv_sec) * 1000 + (t.tv_nsec - t0->tv_nsec) / 1000000;
}

Test(lock, timedwait_times_out)
{
	struct timespec rel = { 0, 30 * 1000 * 1000 }, t0;
	bool woke = true;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	ukp_fmutex_lock(&mu);
	/* nobody signals: a wake before the time is spurious, and waits again */
	while (woke && ms_since(&t0) < 30)
		woke = ukp_fcond_timedwait(&cv, &mu, &rel);
	cr_assert(atomic_load(&mu.v) != 0, "held again after the wait");
	ukp_fmutex_unlock(&mu);
	cr_assert_geq(ms_since(&t0), 30);
}

static void *holder(void *a)
{
	(void)a;
	ukp_fmutex_lock(&mu);
	atomic_store(&held, 1);
	for (;;)
		pause();
	return NULL;
}

Test(lock, fork_child_frees)
{
	pthread_t t;
	pid_t p;
	int st;

	cr_assert_eq(pthread_create(&t, NULL, holder, NULL), 0);
	while (!atomic_load(&held))
		sched_yield();
	p = fork();
	if (p == 0) {
		/* the holder does not exist here */
		if (ukp_fmutex_trylock(&mu))
			_exit(1);
		ukp_fmutex_init(&mu);
		ukp_fmutex_lock(&mu);
		ukp_fmutex_unlock(&mu);
		_exit(0);
	}
	cr_assert_eq(waitpid(p, &st, 0), p);
	cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0, "status %#x", st);
}
