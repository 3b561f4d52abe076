/* SPDX-License-Identifier: MIT */
/*
 * loadee.c - the program test_loader.c loads the agent stub into. It
 * prints "ready pid=PID marker=ADDR", waits for the end of its standard
 * input, and then prints what it found and exits with status 7. Its
 * threads meanwhile, by mode (argv[1]):
 *
 *   threads   blocked in system calls that a stop interrupts, each of a
 *             kind the kernel restarts (or not) in its own way: nanosleep,
 *             read, epoll_wait, a condition variable's futex, select,
 *             poll; any failure of theirs (EINTR, or a restart code seen
 *             by the program) counts as an error; argv[2] "poll" or
 *             "epoll": the main thread waits for stdin in that call
 *   malloc    one thread holds the C library's malloc lock (malloc_stats()
 *             blocked writing to a full stderr), the main thread waits
 *             for that lock in malloc()
 *   fork      one thread inside fork(), blocked in its atfork handler
 *   dlopen    one thread inside dlopen(), blocked in the constructor of
 *             the object it loads (libukp_blockctor.so)
 *   forkloop  threads that fork, and malloc and free, all the time
 *
 * With LOADEE_COUNTER_FD=N (the CLI's attach tests, tests/cli) one more
 * thread, in every mode, reads bytes from descriptor N and calls
 * loadee_counted() once for each: a call the test makes happen, to be
 * counted exactly while the other threads are held as above; for a
 * newline it writes "counted TOTAL" to standard output, and a 'g' lets
 * the dlopen mode's constructor return (its gate). It ends at the end of
 * N's input, and is not among the threads the last line counts.
 */
#include <errno.h>
#include <fcntl.h>
#include <malloc.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/select.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#ifndef LOADEE_STATIC
#include <dlfcn.h>
#endif

volatile uint64_t marker = 0x5eed1234abcdULL;

static atomic_int stop, errors, in_place;
static int pipe_fd[2], gate[2], started[2];
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static int cv_flag;

static _Thread_local const char *kind = "main";
static char failed[256]; /* the kinds that failed, first failures first */
static pthread_mutex_t failed_mu = PTHREAD_MUTEX_INITIALIZER;

static void error_if(int bad)
{
	if (!bad)
		return;
	if (atomic_fetch_add(&errors, 1) < 8) {
		pthread_mutex_lock(&failed_mu);
		snprintf(failed + strlen(failed), sizeof(failed) - strlen(failed), " %s:%d", kind,
			 errno);
		pthread_mutex_unlock(&failed_mu);
	}
}

static void *t_nanosleep(void *a)
{
	(void)a;
	kind = "nanosleep";
	while (!atomic_load(&stop)) {
		struct timespec ts = { 0, 20 * 1000 * 1000 };

		error_if(nanosleep(&ts, NULL) != 0);
	}
	return NULL;
}

static void *t_read(void *a)
{
	char c;

	(void)a;
	kind = "read";
	error_if(read(pipe_fd[0], &c, 1) != 1);
	return NULL;
}

static void *t_epoll(void *a)
{
	int ep = epoll_create1(EPOLL_CLOEXEC);
	struct epoll_event ev = { .events = EPOLLIN }, out;

	(void)a;
	kind = "epoll_wait";
	error_if(ep < 0 || epoll_ctl(ep, EPOLL_CTL_ADD, gate[0], &ev));
	while (!atomic_load(&stop))
		error_if(epoll_wait(ep, &out, 1, 30) < 0);
	close(ep);
	return NULL;
}

static void *t_cond(void *a)
{
	(void)a;
	kind = "cond";
	pthread_mutex_lock(&mu);
	while (!cv_flag)
		error_if(pthread_cond_wait(&cv, &mu) != 0);
	pthread_mutex_unlock(&mu);
	return NULL;
}

static void *t_select(void *a)
{
	(void)a;
	kind = "select";
	while (!atomic_load(&stop)) {
		struct timeval tv = { 0, 25 * 1000 };

		error_if(select(0, NULL, NULL, NULL, &tv) != 0);
	}
	return NULL;
}

static void *t_poll(void *a)
{
	(void)a;
	kind = "poll";
	while (!atomic_load(&stop))
		error_if(poll(NULL, 0, 25) != 0);
	return NULL;
}

/* malloc: fill stderr (a pipe nobody reads yet), then malloc_stats()
 * blocks writing to it with the main arena's lock held */
static void *t_malloc_holder(void *a)
{
	static char buf[4096];

	(void)a;
	fcntl(2, F_SETFL, O_NONBLOCK);
	while (write(2, buf, sizeof(buf)) > 0)
		;
	fcntl(2, F_SETFL, 0);
	atomic_store(&in_place, 1);
	malloc_stats();
	return NULL;
}

static void prepare_blocks(void)
{
	char c;

	if (!atomic_load(&in_place)) {
		atomic_store(&in_place, 1);
		error_if(read(gate[0], &c, 1) != 1);
	}
}

static void *t_forker(void *a)
{
	pid_t p;

	(void)a;
	pthread_atfork(prepare_blocks, NULL, NULL);
	p = fork();
	if (p == 0)
		_exit(0);
	error_if(p < 0 || waitpid(p, NULL, 0) != p);
	return NULL;
}

static void *t_forkloop(void *a)
{
	(void)a;
	kind = "forkloop";
	while (!atomic_load(&stop)) {
		pid_t p = fork();

		if (p == 0)
			_exit(0);
		error_if(p < 0 || waitpid(p, NULL, 0) != p);
	}
	return NULL;
}

static void *t_allocs(void *a)
{
	(void)a;
	kind = "allocs";
	while (!atomic_load(&stop)) {
		void *p = malloc(100 + (size_t)(rand() % 5000));

		error_if(!p);
		free(p);
	}
	return NULL;
}

/* what a probe counts (noinline, kept: one call per byte) */
__attribute__((noinline, used)) void loadee_counted(int n)
{
	__asm__ volatile("" : : "r"(n) : "memory");
}

static void *t_counter(void *a)
{
	int fd = (int)(intptr_t)a, n = 0;
	char c, line[64];

	kind = "counter";
	while (read(fd, &c, 1) == 1) {
		if (c == 'g') {
			error_if(write(gate[1], "x", 1) != 1);
			continue;
		}
		if (c == '\n') {
			int k = snprintf(line, sizeof(line), "counted %d\n", n);

			error_if(write(1, line, (size_t)k) != k);
			continue;
		}
		loadee_counted(++n);
	}
	return NULL;
}

#ifndef LOADEE_STATIC
static void *t_dlopen(void *a)
{
	void *h;

	(void)a;
	h = dlopen((const char *)a, RTLD_NOW);
	error_if(!h);
	if (h)
		dlclose(h);
	return NULL;
}
#endif

/* Wait for the end of stdin, in read() (a stop makes it -ERESTARTSYS),
 * poll() with a timeout (-ERESTART_RESTARTBLOCK) or epoll_wait() (EINTR):
 * the main thread is the one the loader makes its system calls in. */
static void wait_stdin(const char *how)
{
	int ep = -1;
	char c;

	if (!strcmp(how, "epoll")) {
		struct epoll_event ev = { .events = EPOLLIN };

		ep = epoll_create1(EPOLL_CLOEXEC);
		error_if(ep < 0 || epoll_ctl(ep, EPOLL_CTL_ADD, 0, &ev));
	}
	for (;;) {
		ssize_t r;

		if (!strcmp(how, "poll")) {
			struct pollfd pfd = { 0, POLLIN, 0 };
			int k = poll(&pfd, 1, 40);

			error_if(k < 0);
			if (k <= 0)
				continue;
		} else if (ep >= 0) {
			struct epoll_event out;
			int k = epoll_wait(ep, &out, 1, 40);

			error_if(k < 0);
			if (k <= 0)
				continue;
		}
		r = read(0, &c, 1);
		if (r == 0)
			break;
		error_if(r < 0);
		if (r < 0 && errno != EINTR)
			break;
	}
	if (ep >= 0)
		close(ep);
}

int main(int argc, char **argv)
{
	const char *mode = argc > 1 ? argv[1] : "threads";
	pthread_t th[8], counter;
	const char *counter_fd = getenv("LOADEE_COUNTER_FD");
	int n = 0, i;
	char line[128];
	void *mem = NULL;

	if (pipe(pipe_fd) || pipe(gate) || pipe(started))
		return 1;
	/* (before the modes' threads: the malloc mode's holder takes the
	 * lock that pthread_create's allocation would wait for) */
	if (counter_fd &&
	    pthread_create(&counter, NULL, t_counter, (void *)(intptr_t)atoi(counter_fd)))
		return 1;
	if (!strcmp(mode, "threads")) {
		void *(*fns[])(void *) = { t_nanosleep, t_read, t_epoll, t_cond, t_select, t_poll };

		for (i = 0; i < 6; i++)
			pthread_create(&th[n++], NULL, fns[i], NULL);
	} else if (!strcmp(mode, "malloc")) {
		pthread_create(&th[n++], NULL, t_malloc_holder, NULL);
	} else if (!strcmp(mode, "fork")) {
		pthread_create(&th[n++], NULL, t_forker, NULL);
	} else if (!strcmp(mode, "forkloop")) {
		pthread_create(&th[n++], NULL, t_forkloop, NULL);
		pthread_create(&th[n++], NULL, t_forkloop, NULL);
		pthread_create(&th[n++], NULL, t_allocs, NULL);
#ifndef LOADEE_STATIC
	} else if (!strcmp(mode, "dlopen") && argc > 2) {
		snprintf(line, sizeof(line), "%d", started[1]);
		setenv("UKP_STARTED_FD", line, 1);
		snprintf(line, sizeof(line), "%d", gate[0]);
		setenv("UKP_GATE_FD", line, 1);
		pthread_create(&th[n++], NULL, t_dlopen, argv[2]);
		error_if(read(started[0], line, 1) != 1);
		atomic_store(&in_place, 1);
#endif
	} else {
		fprintf(stderr, "loadee: unknown mode %s\n", mode);
		return 2;
	}
	while ((!strcmp(mode, "malloc") || !strcmp(mode, "fork")) && !atomic_load(&in_place))
		usleep(1000);
	/* no stdio before the malloc mode's malloc(): its buffer is malloc()ed */
	i = snprintf(line, sizeof(line), "ready pid=%d marker=%p\n", (int)getpid(), (void *)&marker);
	error_if(write(1, line, (size_t)i) != i);
	if (!strcmp(mode, "malloc"))
		mem = malloc(5000); /* waits for the holder's lock */
	wait_stdin(argc > 2 && !strcmp(mode, "threads") ? argv[2] : "read");
	free(mem);
	atomic_store(&stop, 1);
	pthread_mutex_lock(&mu);
	cv_flag = 1;
	pthread_cond_broadcast(&cv);
	pthread_mutex_unlock(&mu);
	error_if(write(pipe_fd[1], "x", 1) != 1 || write(gate[1], "x", 1) != 1);
	for (i = 0; i < n; i++)
		pthread_join(th[i], NULL);
	if (counter_fd)
		pthread_join(counter, NULL);
	printf("done mode=%s threads=%d errors=%d%s marker=%llx\n", mode, n, atomic_load(&errors),
	       failed, (unsigned long long)marker);
	return 7;
}
