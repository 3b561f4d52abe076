/* SPDX-License-Identifier: MIT */
/*
 * A program busy with what an attach may land in the middle of: one
 * thread forks all the time (each child exits at once, with status 0),
 * one dlopen()s and dlclose()s libz all the time, and the main thread
 * calls work(). Prints "ready", then runs until stdin closes or says
 * "quit", and prints its counts: forks, bad children, loads, and reads
 * of stdin that failed with EINTR.
 */
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static _Atomic bool stop;
static _Atomic long forks, bad, loads;
volatile long sink;

__attribute__((noinline)) void work(long i)
{
	sink += i;
}

static void *forker(void *arg)
{
	(void)arg;
	while (!atomic_load(&stop)) {
		pid_t pid = fork();
		int st;

		if (pid == 0)
			_exit(0);
		if (pid < 0 || waitpid(pid, &st, 0) != pid || !WIFEXITED(st) || WEXITSTATUS(st))
			atomic_fetch_add(&bad, 1);
		atomic_fetch_add(&forks, 1);
	}
	return NULL;
}

static void *loader(void *arg)
{
	(void)arg;
	while (!atomic_load(&stop)) {
		void *h = dlopen("libz.so.1", RTLD_NOW | RTLD_LOCAL);

		if (h)
			dlclose(h);
		atomic_fetch_add(&loads, 1);
	}
	return NULL;
}

static void *worker(void *arg)
{
	long i = 0;

	(void)arg;
	while (!atomic_load(&stop)) {
		work(i++);
		if (i % 1000 == 0)
			usleep(100);
	}
	return NULL;
}

int main(void)
{
	pthread_t f, l, w;
	char line[64];
	long eintr = 0;

	pthread_create(&f, NULL, forker, NULL);
	pthread_create(&l, NULL, loader, NULL);
	pthread_create(&w, NULL, worker, NULL);
	printf("ready\n");
	fflush(stdout);
	for (;;) {
		if (!fgets(line, sizeof(line), stdin)) {
			if (ferror(stdin) && errno == EINTR) {
				eintr++;
				clearerr(stdin);
				continue;
			}
			break;
		}
		if (!strcmp(line, "quit\n"))
			break;
	}
	atomic_store(&stop, true);
	pthread_join(f, NULL);
	pthread_join(l, NULL);
	pthread_join(w, NULL);
	printf("forks %ld bad %ld loads %ld eintr %ld\n", atomic_load(&forks), atomic_load(&bad),
	       atomic_load(&loads), eintr);
	return 0;
}
