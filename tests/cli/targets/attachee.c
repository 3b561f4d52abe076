/* SPDX-License-Identifier: MIT */
/*
 * A long-running program for ukprobe -p: threads blocked in read() on a
 * pipe, in nanosleep, in a futex (condition variable), in epoll_wait,
 * one thread that calls work() in a loop, one that waits inside
 * blocker() (the test's return probe stays pending at a detach), and
 * IDLE more threads waiting on a condition variable.
 *
 *   tgt_attachee [IDLE [MODE]]
 *
 * MODE (the bad cases of ukprobe -p): "nodump" (PR_SET_DUMPABLE 0),
 * "traceme" (traced by its parent), "exit-on-attach" (the process exits
 * when the agent starts its first thread, while ukprobe injects it; the
 * program exports pthread_create and pthread_getcpuclockid, which the agent's reference
 * binds to), "die-in-attach" (killed by SIGKILL once the agent said
 * HELLO, before it registers the probes: the program exports sendmsg);
 * where the main thread waits for its input (the thread ukprobe stops):
 * "main-epoll" (epoll_wait), "main-sleep" (nanosleep, polling),
 * "main-futex" (sem_wait: a futex; another thread reads the input).
 *
 * It prints "ready" when every thread runs, then reads commands from
 * standard input:
 *   kick   blocker() returns once (the thread enters it again)
 *   fork   a child calls work() until the parent quits (prints its pid)
 *   forks N  N children one after the other, each calls in_child() 10 times
 *          and exits at once; each is reaped as soon as it ends (as a
 *          server's short-lived workers); prints "forked N"
 *   quit   every thread is woken and joined; the program prints what it
 *          saw and exits with status 3
 * What it checks itself: no system call failed with EINTR; blocker()
 * returned its value to its caller each time; its signal actions (every
 * signal) and its signal mask are those it set up; its SIGUSR1 handler
 * still runs.
 */
#include <errno.h>
#include <pthread.h>
#include <sys/socket.h>
#include <time.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <dlfcn.h>
#include <poll.h>
#include <semaphore.h>
#include <sys/epoll.h>
#include <sys/prctl.h>
#include <sys/ptrace.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static int blk_pipe[2], rd_pipe[2], ep_pipe[2], child_pipe[2];
static pid_t child;
static volatile int quitting;
static int eintr;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cond = PTHREAD_COND_INITIALIZER;
static volatile unsigned long works, blocks_ok, blocks_bad;
static volatile sig_atomic_t usr1;
static int started; /* threads past glibc's start (signals unblocked) */

static void thread_started(void)
{
	__atomic_add_fetch(&started, 1, __ATOMIC_RELEASE);
}

static void note_eintr(const char *where)
{
	__atomic_add_fetch(&eintr, 1, __ATOMIC_RELAXED);
	fprintf(stderr, "EINTR in %s\n", where);
}

__attribute__((noinline)) int work(int i)
{
	return i * 3 + 1;
}

/* Called by the short-lived children of "forks N" only. */
__attribute__((noinline)) int in_child(int i)
{
	return i * 5 + 2;
}

/* An [FTRACE] probe point: the function starts with a 5-byte NOP. */
__attribute__((noinline, patchable_function_entry(5, 0))) int nop_entry(int i)
{
	return i + 7;
}

/* Waits for one byte; returns it plus 1000. */
__attribute__((noinline)) int blocker(void)
{
	char c;
	ssize_t n;

	while ((n = read(blk_pipe[0], &c, 1)) < 0)
		if (errno == EINTR)
			note_eintr("blocker read");
	return n == 1 ? c + 1000 : -1;
}

static void *blocker_main(void *arg)
{
	(void)arg;
	thread_started();
	while (!quitting) {
		int v = blocker();

		if (v == 'k' + 1000 || v == 'q' + 1000)
			blocks_ok++;
		else
			blocks_bad++;
	}
	return NULL;
}

static void *worker_main(void *arg)
{
	struct timespec d = { 0, 2000000 };
	int i = 0;

	(void)arg;
	thread_started();
	while (!quitting) {
		if (work(i) != i * 3 + 1 || nop_entry(i) != i + 7)
			abort();
		i++;
		works++;
		if (nanosleep(&d, NULL) && errno == EINTR)
			note_eintr("worker nanosleep");
	}
	return NULL;
}

static void *reader_main(void *arg)
{
	char c;
	ssize_t n;

	(void)arg;
	thread_started();
	while ((n = read(rd_pipe[0], &c, 1)) < 0)
		if (errno == EINTR)
			note_eintr("read");
	return NULL;
}

static void *sleeper_main(void *arg)
{
	struct timespec d = { 3600, 0 }, rem;

	(void)arg;
	thread_started();
	/* woken by quit with SIGUSR2 (its handler runs: that EINTR is
	 * expected) */
	while (!quitting) {
		if (nanosleep(&d, &rem) && errno == EINTR && !quitting)
			note_eintr("nanosleep");
	}
	return NULL;
}

static void *epoll_main(void *arg)
{
	int ep = epoll_create1(0), n;
	struct epoll_event ev = { .events = EPOLLIN }, out;

	(void)arg;
	thread_started();
	epoll_ctl(ep, EPOLL_CTL_ADD, ep_pipe[0], &ev);
	while ((n = epoll_wait(ep, &out, 1, -1)) < 0)
		if (errno == EINTR)
			note_eintr("epoll_wait");
	close(ep);
	return NULL;
}

static void *idle_main(void *arg)
{
	(void)arg;
	thread_started();
	pthread_mutex_lock(&lock);
	while (!quitting)
		pthread_cond_wait(&cond, &lock);
	pthread_mutex_unlock(&lock);
	return NULL;
}

static sem_t line_sem, line_done;
static char shared_line[64];
static int line_eof;

/* main-futex: the input, one line at a time, handed to the main thread. */
static void *stdin_main(void *arg)
{
	(void)arg;
	for (;;) {
		if (!fgets(shared_line, sizeof(shared_line), stdin))
			line_eof = 1;
		sem_post(&line_sem);
		if (line_eof)
			return NULL;
		while (sem_wait(&line_done))
			;
	}
}

static int exit_on_attach, die_in_attach, ready;

/* Found first by the agent's references (the program exports them):
 * pthread_create() (the agent's session thread) and
 * pthread_getcpuclockid() (ukprobes_kthread_run() learning the C
 * library's thread descriptor) are what the agent's first thread start
 * calls, inside the call ukprobe injects; sendmsg() with a descriptor is the
 * agent's HELLO (its region's memfd), before it registers the probes. */
int pthread_create(pthread_t *t, const pthread_attr_t *attr, void *(*fn)(void *), void *arg)
{
	static int (*real)(pthread_t *, const pthread_attr_t *, void *(*)(void *), void *);

	if (exit_on_attach && ready)
		_exit(5);
	if (!real)
		real = (int (*)(pthread_t *, const pthread_attr_t *, void *(*)(void *), void *))
			dlsym(RTLD_NEXT, "pthread_create");
	return real(t, attr, fn, arg);
}

int pthread_getcpuclockid(pthread_t t, clockid_t *c)
{
	static int (*real)(pthread_t, clockid_t *);

	if (exit_on_attach && ready)
		_exit(5);
	if (!real)
		real = (int (*)(pthread_t, clockid_t *))dlsym(RTLD_NEXT, "pthread_getcpuclockid");
	return real(t, c);
}

ssize_t sendmsg(int fd, const struct msghdr *m, int flags)
{
	static ssize_t (*real)(int, const struct msghdr *, int);
	ssize_t n;

	if (!real)
		real = (ssize_t (*)(int, const struct msghdr *, int))dlsym(RTLD_NEXT, "sendmsg");
	n = real(fd, m, flags);
	if (die_in_attach && ready && m->msg_controllen)
		raise(SIGKILL);
	return n;
}

static void on_usr1(int sig)
{
	(void)sig;
	usr1++;
}

static void on_usr2(int sig)
{
	(void)sig;
}

static struct sigaction acts[65];

static int actions_changed(void)
{
	int sig, n = 0;

	for (sig = 1; sig < 65; sig++) {
		struct sigaction now;

		memset(&now, 0, sizeof(now));
		if (sig == SIGKILL || sig == SIGSTOP || sigaction(sig, NULL, &now))
			continue;
		if (now.sa_handler != acts[sig].sa_handler || now.sa_flags != acts[sig].sa_flags ||
		    memcmp(&now.sa_mask, &acts[sig].sa_mask, 8)) {
			/* (the kernel's mask is 64 bits; glibc leaves the rest
			 * of sigset_t undefined) */
			fprintf(stderr, "signal %d: action changed (%p %x -> %p %x)\n", sig, (void *)acts[sig].sa_handler, (unsigned)acts[sig].sa_flags, (void *)now.sa_handler, (unsigned)now.sa_flags);
			n++;
		}
	}
	return n;
}

int main(int argc, char **argv)
{
	int idle = argc > 1 ? atoi(argv[1]) : 0, i, sig;
	pthread_t blk, wrk, rd, slp, epl, *idlers = calloc((size_t)idle + 1, sizeof(pthread_t));
	struct sigaction sa;
	sigset_t mask0, mask1;
	char line[64];

	const char *mode = argc > 2 ? argv[2] : "";

	if (pipe(blk_pipe) || pipe(rd_pipe) || pipe(ep_pipe) || pipe(child_pipe))
		return 1;
	if (!strcmp(mode, "nodump"))
		prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
	if (!strcmp(mode, "traceme") && ptrace(PTRACE_TRACEME, 0, NULL, NULL))
		return 1;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_usr1;
	sigaction(SIGUSR1, &sa, NULL);
	sa.sa_handler = on_usr2;
	sigaction(SIGUSR2, &sa, NULL);
	sa.sa_handler = SIG_IGN;
	sigaction(SIGURG, &sa, NULL);
	for (sig = 1; sig < 65; sig++)
		sigaction(sig, NULL, &acts[sig]);
	sigemptyset(&mask0);
	sigaddset(&mask0, SIGWINCH);
	pthread_sigmask(SIG_BLOCK, &mask0, NULL);
	pthread_sigmask(SIG_BLOCK, NULL, &mask0);
	pthread_create(&blk, NULL, blocker_main, NULL);
	pthread_create(&wrk, NULL, worker_main, NULL);
	pthread_create(&rd, NULL, reader_main, NULL);
	pthread_create(&slp, NULL, sleeper_main, NULL);
	pthread_create(&epl, NULL, epoll_main, NULL);
	for (i = 0; i < idle; i++)
		pthread_create(&idlers[i], NULL, idle_main, NULL);
	while (__atomic_load_n(&started, __ATOMIC_ACQUIRE) < 5 + idle) {
		struct timespec d = { 0, 100000 };

		nanosleep(&d, NULL);
	}
	exit_on_attach = !strcmp(mode, "exit-on-attach");
	die_in_attach = !strcmp(mode, "die-in-attach");
	ready = 1;
	printf("ready\n");
	fflush(stdout);
	for (;;) {
		if (!strcmp(mode, "main-futex")) {
			static pthread_t in;

			if (!in) {
				sem_init(&line_sem, 0, 0);
				sem_init(&line_done, 0, 0);
				pthread_create(&in, NULL, stdin_main, NULL);
			}
			while (sem_wait(&line_sem))
				if (errno == EINTR)
					note_eintr("main sem_wait");
			if (line_eof)
				break;
			snprintf(line, sizeof(line), "%s", shared_line);
			sem_post(&line_done);
		} else if (!strcmp(mode, "main-epoll")) {
			static int ep = -1;
			struct epoll_event ev = { .events = EPOLLIN }, out;

			if (ep < 0) {
				ep = epoll_create1(0);
				epoll_ctl(ep, EPOLL_CTL_ADD, 0, &ev);
			}
			if (epoll_wait(ep, &out, 1, -1) < 0 && errno == EINTR)
				note_eintr("main epoll_wait");
		} else if (!strcmp(mode, "main-sleep")) {
			struct pollfd pfd = { 0, POLLIN, 0 };
			struct timespec d = { 0, 200000000 }, rem;

			while (poll(&pfd, 1, 0) == 0)
				if (nanosleep(&d, &rem) && errno == EINTR)
					note_eintr("main nanosleep");
		}
		if (strcmp(mode, "main-futex") && !fgets(line, sizeof(line), stdin)) {
			if (ferror(stdin) && errno == EINTR) {
				note_eintr("main read");
				clearerr(stdin);
				continue;
			}
			break;
		}
		if (!strcmp(line, "kick\n")) {
			if (write(blk_pipe[1], "k", 1) != 1)
				return 1;
		} else if (!strcmp(line, "fork\n")) {
			child = fork();
			if (child == 0) {
				struct pollfd pfd = { child_pipe[0], POLLIN, 0 };
				struct timespec d = { 0, 2000000 };

				close(child_pipe[1]);
				for (i = 0; poll(&pfd, 1, 0) == 0; i++) {
					work(1000 + i);
					nanosleep(&d, NULL);
				}
				exit(0);
			}
			printf("child %d\n", (int)child);
			fflush(stdout);
		} else if (!strncmp(line, "forks ", 6)) {
			int n = atoi(line + 6), k, j;

			for (k = 0; k < n; k++) {
				pid_t c = fork();

				if (c == 0) {
					for (j = 0; j < 10; j++)
						in_child(j);
					exit(0);
				}
				if (c > 0)
					waitpid(c, NULL, 0);
			}
			printf("forked %d\n", n);
			fflush(stdout);
		} else if (!strcmp(line, "usr1\n")) {
			raise(SIGUSR1);
			printf("usr1 %d\n", (int)usr1);
			fflush(stdout);
		} else if (!strcmp(line, "quit\n")) {
			break;
		}
	}
	quitting = 1;
	if (write(blk_pipe[1], "q", 1) != 1 || write(rd_pipe[1], "r", 1) != 1 ||
	    write(ep_pipe[1], "e", 1) != 1)
		return 1;
	pthread_kill(slp, SIGUSR2);
	pthread_mutex_lock(&lock);
	pthread_cond_broadcast(&cond);
	pthread_mutex_unlock(&lock);
	pthread_join(blk, NULL);
	pthread_join(wrk, NULL);
	pthread_join(rd, NULL);
	pthread_join(slp, NULL);
	pthread_join(epl, NULL);
	for (i = 0; i < idle; i++)
		pthread_join(idlers[i], NULL);
	close(child_pipe[1]);
	if (child > 0) {
		int st = -1;

		waitpid(child, &st, 0);
		printf("child status %d\n", st);
	}
	pthread_sigmask(SIG_BLOCK, NULL, &mask1);
	printf("eintr %d\nblocker ok %lu bad %lu\nworked %s\nactions changed %d\nmask %s\n",
	       eintr, blocks_ok, blocks_bad, works > 0 ? "yes" : "no", actions_changed(),
	       memcmp(&mask0, &mask1, 8) ? "changed" : "same");
	free(idlers);
	return 3;
}
