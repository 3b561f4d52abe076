/* SPDX-License-Identifier: MIT */
/*
 * static_work.c - a statically linked program with threads, for
 * ukprobe -p with the freestanding agent (case_attach_static):
 *   tgt_static_work
 * prints "ready" once its ticker thread runs, then reads commands:
 *   run N BASE   work(BASE + k) for k in [0, N), then "ran N SUM"
 *   errno N      errno = N, work(1), then prints "errno" and errno as it is
 *   die SIG      ends by that signal (raise: SIGKILL, SIGSEGV, SIGABRT...)
 *   fork N K [HOW] N children, each forked in spawn() and calling
 *                work(5000000 + k) for k in [0, K), then ending HOW:
 *                exit: _exit(0) (the default); raw: exit_group through
 *                syscall() (no exit_group instruction of its own); kill:
 *                raise(SIGKILL); nest: forks a grandchild in spawn() that
 *                calls work(6000000 + k) for k in [0, K) and _exit(0)s,
 *                waits for it and _exit(0)s; exec:PATH: runs PATH (with
 *                "run 5 0" and "quit" on its standard input: this
 *                program, or its dynamic build, ends with status 3);
 *                then "forked N ok" once every child ended so
 *   rfork N K VIA  N children made by a raw system call through the C
 *                library's syscall() in rspawn() (VIA: fork, clone:
 *                clone(SIGCHLD, 0), clone3: clone3 with exit_signal
 *                SIGCHLD, var: fork, its number passed in a register to
 *                sys_var(), whose call of syscall() makes other calls
 *                too), each calling work(5000000 + k) for k in
 *                [0, K) and _exit(0)ing; then "rforked N ok" once every
 *                child ended so ("rforked N nosys" when the kernel or a
 *                filter refuses the call with ENOSYS or EPERM)
 *   sysargs      calls through syscall() whose results and errno it prints
 *                ("sysargs" and a line each): a failure (close(-1)), six
 *                arguments (mmap of a memfd at an offset: the byte read
 *                there), clone3 with arguments it cannot read, errno
 *                after a raw fork (kept), the child's own getpid, and
 *                sys_var()'s getpid
 *   sysloop N    N calls of syscall(SYS_getppid), then "sysloop N NS":
 *                the thread's CPU nanoseconds per call
 *   tfork T N K  T threads at once, each forking N children one after
 *                the other in spawn() (each child calls work(5000000 + k)
 *                for k in [0, K) and _exit(0)s) and calling work(7000000)
 *                10 times per child while it runs; then "tforked T*N ok"
 *                once every child ended with status 0
 *   sigs         prints every signal's action as the program sees it
 *                (sigaction(): handler, flags, mask, restorer), one line
 *                each, then "sigs end"
 *   trapblock    blocks SIGTRAP (sigprocmask), calls work(1), prints
 *                "trapblock" and whether its mask says SIGTRAP blocked
 *   segv         installs a SIGSEGV handler (sigaction), dereferences
 *                NULL, recovers in it (siglongjmp), prints "segv" and
 *                whether sigaction reads its own handler back
 *   quit         exits with status 3
 * Its ticker thread calls tick() every millisecond meanwhile. It has
 * handlers of its own for SIGUSR1 and SIGSEGV (their actions must be its
 * own again after a detach: case_attach_static_unload).
 */
#include <pthread.h>
#include <errno.h>
#include <setjmp.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

static _Atomic int quitting, started;

__attribute__((noinline)) long work(long i)
{
	__asm__ volatile("" ::: "memory");
	return 3 * i + 1;
}

__attribute__((noinline)) int tick(int n)
{
	__asm__ volatile("" ::: "memory");
	return n + 1;
}

__attribute__((noinline)) int spawn(void)
{
	__asm__ volatile("" ::: "memory");
	return fork();
}

/* (AArch64 has no fork system call: clone with SIGCHLD is one) */
#ifdef SYS_fork
#define FORK_NR SYS_fork
#define FORK_ARGS
#else
#define FORK_NR SYS_clone
#define FORK_ARGS , (long)SIGCHLD, 0L, 0L, 0L, 0L
#endif

/* syscall(nr) with nr in a register: a call site whose number is not
 * a constant */
__attribute__((noinline)) long sys_var(long nr)
{
	__asm__ volatile("" : "+r"(nr));
	return syscall(nr FORK_ARGS); /* (a getpid ignores them) */
}

/* "rfork"'s raw fork (see the top): the kernel's result, as syscall()
 * gives it. */
__attribute__((noinline)) long rspawn(const char *via)
{
	__asm__ volatile("" ::: "memory");
	if (!strcmp(via, "clone"))
		return syscall(SYS_clone, (long)SIGCHLD, 0L, 0L, 0L, 0L);
#ifdef SYS_clone3
	if (!strcmp(via, "clone3")) {
		/* struct clone_args: flags, pidfd, child_tid, parent_tid,
		 * exit_signal, stack, stack_size, tls */
		unsigned long long args[8] = { 0, 0, 0, 0, SIGCHLD, 0, 0, 0 };

		return syscall(SYS_clone3, args, sizeof(args));
	}
#endif
	if (!strcmp(via, "fork"))
		return syscall(FORK_NR FORK_ARGS);
	if (!strcmp(via, "var"))
		return sys_var(FORK_NR);
	errno = ENOSYS;
	return -1;
}

static long cpu_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return ts.tv_sec * 1000000000L + ts.tv_nsec;
}

/* A thread of "tfork T N K" (see the top): how many of its children
 * ended with status 0. */
static long tfork_n, tfork_k;

static void *tforker(void *arg)
{
	long ok = 0;
	int st;

	(void)arg;
	for (long c = 0; c < tfork_n; c++) {
		pid_t pid = spawn();

		if (pid == 0) {
			for (long j = 0; j < tfork_k; j++)
				work(5000000 + j);
			_exit(0);
		}
		for (int j = 0; j < 10; j++)
			work(7000000);
		ok += pid > 0 && waitpid(pid, &st, 0) == pid && WIFEXITED(st) && !WEXITSTATUS(st);
	}
	return (void *)ok;
}

/* A forked child of "fork N K HOW" (see the top). */
static void child(long base, const char *how)
{
	int st;

	for (long j = 0; j < base; j++)
		work(5000000 + j);
	if (!strcmp(how, "raw"))
		syscall(SYS_exit_group, 0);
	if (!strcmp(how, "kill"))
		raise(SIGKILL);
	if (!strncmp(how, "exec:", 5)) {
		static const char cmds[] = "run 5 0\nquit\n";
		int fds[2];

		if (pipe(fds) || write(fds[1], cmds, sizeof(cmds) - 1) != sizeof(cmds) - 1 ||
		    close(fds[1]) || dup2(fds[0], 0) < 0)
			_exit(1);
		execl(how + 5, how + 5, (char *)NULL);
		_exit(127);
	}
	if (!strcmp(how, "nest")) {
		if (spawn() == 0) {
			for (long j = 0; j < base; j++)
				work(6000000 + j);
			_exit(0);
		}
		if (wait(&st) < 0 || !WIFEXITED(st) || WEXITSTATUS(st))
			_exit(1);
	}
	_exit(0);
}

static void on_usr1(int sig, siginfo_t *si, void *uc)
{
	(void)sig;
	(void)si;
	(void)uc;
}

static void on_segv_start(int sig)
{
	signal(sig, SIG_DFL);
}

static void print_sigs(void)
{
	for (int sig = 1; sig < 65; sig++) {
		struct sigaction sa;
		unsigned long mask = 0;

		if (sigaction(sig, NULL, &sa))
			continue;
		for (int k = 1; k < 65; k++)
			if (sigismember(&sa.sa_mask, k) == 1)
				mask |= 1UL << (k - 1);
		printf("sig %d %p %#x %#lx %p\n", sig, (void *)sa.sa_handler, (unsigned)sa.sa_flags,
		       mask, (void *)sa.sa_restorer);
	}
	printf("sigs end\n");
	fflush(stdout);
}

static sigjmp_buf segv_back;

static void on_segv(int sig)
{
	(void)sig;
	siglongjmp(segv_back, 1);
}

static void *ticker(void *arg)
{
	struct timespec d = { 0, 1000000 };
	int n = 0;

	(void)arg;
	/* (its signal mask is its own by now: the C library set it before
	 * calling this) */
	atomic_store(&started, 1);
	while (!atomic_load(&quitting)) {
		n = tick(n);
		nanosleep(&d, NULL);
	}
	return NULL;
}

int main(void)
{
	char line[128];
	pthread_t t;

	struct sigaction sa = { .sa_sigaction = on_usr1, .sa_flags = SA_SIGINFO | SA_RESTART };

	sigemptyset(&sa.sa_mask);
	sigaddset(&sa.sa_mask, SIGUSR2);
	sigaction(SIGUSR1, &sa, NULL);
	signal(SIGSEGV, on_segv_start);
	pthread_create(&t, NULL, ticker, NULL);
	while (!atomic_load(&started)) {
		struct timespec d = { 0, 100000 };

		nanosleep(&d, NULL);
	}
	printf("ready\n");
	fflush(stdout);
	while (fgets(line, sizeof(line), stdin)) {
		long n, base, k, sum = 0;

		if (sscanf(line, "run %ld %ld", &n, &base) == 2) {
			for (k = 0; k < n; k++)
				sum += work(base + k);
			printf("ran %ld %ld\n", n, sum);
			fflush(stdout);
		} else if (sscanf(line, "errno %ld", &n) == 1) {
			errno = (int)n;
			sum = work(1);
			printf("errno %d %ld\n", errno, sum);
			fflush(stdout);
		} else if (sscanf(line, "die %ld", &n) == 1) {
			signal((int)n, SIG_DFL);
			raise((int)n);
		} else if (sscanf(line, "fork %ld %ld", &n, &base) == 2) {
			char how[256] = "exit";
			int ok = 0, st;

			sscanf(line, "fork %*d %*d %255s", how);
			for (k = 0; k < n; k++) {
				if (spawn() == 0)
					child(base, how);
			}
			while (wait(&st) > 0)
				ok += !strcmp(how, "kill") ? WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL
				      : WIFEXITED(st) &&
						WEXITSTATUS(st) == (strncmp(how, "exec:", 5) ? 0 : 3);
			printf("forked %ld %s\n", n, ok == n ? "ok" : "failed");
			fflush(stdout);
		} else if (sscanf(line, "rfork %ld %ld", &n, &base) == 2) {
			char via[16] = "fork";
			int ok = 0, st, nosys = 0;

			sscanf(line, "rfork %*d %*d %15s", via);
			for (k = 0; k < n; k++) {
				long pid = rspawn(via);

				if (pid == 0) {
					for (long j = 0; j < base; j++)
						work(5000000 + j);
					_exit(0);
				}
				nosys += pid < 0 && (errno == ENOSYS || errno == EPERM);
			}
			while (wait(&st) > 0)
				ok += WIFEXITED(st) && !WEXITSTATUS(st);
			printf("rforked %ld %s\n", n, nosys ? "nosys" : ok == n ? "ok" : "failed");
			fflush(stdout);
		} else if (!strcmp(line, "sysargs\n")) {
			long r;
			int fd, st;
			char *m;

			printf("sysargs\n");
			errno = 0;
			r = syscall(SYS_close, -1L);
			printf("close(-1) %ld %d\n", r, errno);
			fd = (int)syscall(SYS_memfd_create, "sysargs", 0L);
			if (fd < 0 || ftruncate(fd, 8192) || pwrite(fd, "x", 1, 4096) != 1)
				printf("memfd failed\n");
			m = (char *)syscall(SYS_mmap, 0L, 4096L, (long)PROT_READ, (long)MAP_SHARED,
					    (long)fd, 4096L);
			printf("mmap at 4096 %c\n", m == MAP_FAILED ? '?' : m[0]);
			close(fd);
#ifdef SYS_clone3
			errno = 0;
			r = syscall(SYS_clone3, (void *)8, 64L);
			printf("clone3(bad) %ld %d\n", r, errno);
#endif
			errno = 1234;
			r = syscall(FORK_NR FORK_ARGS);
			if (r == 0)
				_exit(syscall(SYS_getpid) == getpid() && getpid() != getppid() ? 7 : 1);
			printf("fork errno %d\n", errno);
			printf("sys_var(getpid) %s\n", sys_var(SYS_getpid) == getpid() ? "same" : "differs");
			waitpid((pid_t)r, &st, 0);
			printf("child status %d\n", WIFEXITED(st) ? WEXITSTATUS(st) : -1);
			fflush(stdout);
		} else if (sscanf(line, "sysloop %ld", &n) == 1) {
			long t0 = cpu_ns();

			for (k = 0; k < n; k++)
				sum += syscall(SYS_getppid);
			printf("sysloop %ld %.1f\n", n, (double)(cpu_ns() - t0) / (double)n);
			fflush(stdout);
		} else if (sscanf(line, "tfork %ld %ld %ld", &n, &tfork_n, &tfork_k) == 3 && n <= 16) {
			pthread_t th[16];
			long ok = 0;

			for (k = 0; k < n; k++)
				pthread_create(&th[k], NULL, tforker, NULL);
			for (k = 0; k < n; k++) {
				void *r;

				pthread_join(th[k], &r);
				ok += (long)r;
			}
			printf("tforked %ld %s\n", n * tfork_n, ok == n * tfork_n ? "ok" : "failed");
			fflush(stdout);
		} else if (!strncmp(line, "sigs", 4)) {
			print_sigs();
		} else if (!strncmp(line, "trapblock", 9)) {
			sigset_t set, now;

			sigemptyset(&set);
			sigaddset(&set, SIGTRAP);
			sigprocmask(SIG_BLOCK, &set, NULL);
			sum = work(1);
			sigprocmask(SIG_BLOCK, NULL, &now);
			sigprocmask(SIG_UNBLOCK, &set, NULL);
			printf("trapblock %ld %d\n", sum, sigismember(&now, SIGTRAP));
			fflush(stdout);
		} else if (!strncmp(line, "segv", 4)) {
			struct sigaction sa, back;
			volatile int *volatile nowhere = NULL;
			volatile int caught = 0;

			memset(&sa, 0, sizeof(sa));
			sa.sa_handler = on_segv;
			sigaction(SIGSEGV, &sa, NULL);
			if (sigsetjmp(segv_back, 1))
				caught = 1;
			else
				k = *nowhere;
			sigaction(SIGSEGV, NULL, &back);
			printf("segv %d %d\n", caught, back.sa_handler == on_segv);
			fflush(stdout);
		} else if (!strncmp(line, "quit", 4)) {
			break;
		}
	}
	atomic_store(&quitting, 1);
	pthread_join(t, NULL);
	return 3;
}
