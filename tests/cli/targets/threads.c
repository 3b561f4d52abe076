/* SPDX-License-Identifier: MIT */
/*
 * tgt_threads [N]: four threads, which name themselves "worker-0" to
 * "worker-3", each call work(id, i) for i = 0..N-1 (N = 50 by default);
 * the main thread calls work(-1, 0) once after joining them.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#define NTHREADS 4

static int rounds = 50;
static volatile long sink;

__attribute__((noinline)) long work(int id, int i)
{
	sink += id * 1000 + i;
	return sink;
}

static void *worker(void *arg)
{
	int id = (int)(long)arg, i;
	char name[16];

	/* named before the first probe hit, so that every event has it */
	snprintf(name, sizeof(name), "worker-%d", id);
	pthread_setname_np(pthread_self(), name);
	for (i = 0; i < rounds; i++)
		work(id, i);
	return NULL;
}

int main(int argc, char **argv)
{
	pthread_t t[NTHREADS];
	long i;

	if (argc > 1)
		rounds = atoi(argv[1]);
	for (i = 0; i < NTHREADS; i++)
		pthread_create(&t[i], NULL, worker, (void *)i);
	for (i = 0; i < NTHREADS; i++)
		pthread_join(t[i], NULL);
	work(-1, 0);
	printf("threads done\n");
	return 0;
}
