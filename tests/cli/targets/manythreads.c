/* SPDX-License-Identifier: MIT */
/*
 * tgt_manythreads WAVES THREADS N: WAVES waves of THREADS threads; each
 * thread calls hit() N times, then waits until every thread of its wave
 * has (so that THREADS threads are alive at once) and exits. Between
 * waves the program sleeps a little, so that the agent can see the
 * threads of a wave gone. The main thread calls hit() once at the end.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static volatile unsigned long sink;
static pthread_barrier_t barrier;
static long n;

__attribute__((noinline)) void hit(long i)
{
	sink += (unsigned long)i;
}

static void *worker(void *arg)
{
	long i;

	(void)arg;
	for (i = 0; i < n; i++)
		hit(i);
	pthread_barrier_wait(&barrier);
	return NULL;
}

int main(int argc, char **argv)
{
	long waves = argc > 1 ? atol(argv[1]) : 3, threads = argc > 2 ? atol(argv[2]) : 100;
	struct timespec pause = { 0, 300 * 1000 * 1000 };
	pthread_t *t = calloc((size_t)threads, sizeof(*t));
	pthread_attr_t attr;
	long w, i;

	n = argc > 3 ? atol(argv[3]) : 1000;
	if (!t)
		return 1;
	pthread_attr_init(&attr);
	pthread_attr_setstacksize(&attr, 64 * 1024);
	for (w = 0; w < waves; w++) {
		pthread_barrier_init(&barrier, NULL, (unsigned int)threads);
		for (i = 0; i < threads; i++)
			if (pthread_create(&t[i], &attr, worker, NULL))
				return 1;
		for (i = 0; i < threads; i++)
			pthread_join(t[i], NULL);
		pthread_barrier_destroy(&barrier);
		nanosleep(&pause, NULL);
	}
	hit(-1);
	printf("hits %ld\n", waves * threads * n + 1);
	return 0;
}
