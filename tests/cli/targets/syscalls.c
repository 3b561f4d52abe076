/* SPDX-License-Identifier: MIT */
/*
 * tgt_syscalls MODE: the system-call sequences that the cases run
 * Debian's python3 for on x86-64 (clitest.py: SLEEPER, ONOFF_PY), for
 * an architecture whose python3 is not installed (AArch64 under
 * qemu-user), made through the same libc functions:
 *   sleeper  clock_nanosleep five times 2 ms, then twice 120 ms;
 *   onoff    to fd 50 (/dev/null): write "a" 3 times, getppid, "b" 4
 *            times, getuid, "c" 5 times, getppid, "d" twice, getuid;
 *   hist     to fd 50: 10 writes of 100 bytes, 5 of 5000, 3 of 70000, 7
 *            of 4096; opens /etc/hostname 4 times, /etc/passwd twice;
 *            sleeps as sleeper; with "fork" after it, forks, and both
 *            write 3 bytes to fd 50, the child twice (clitest.py:
 *            HIST_PY);
 *   sigmask  SIGMASK_PY's steps: SIGTRAP blocked, raised, seen pending,
 *            the SigBlk of a program a child execs (this one, "status"),
 *            unblocked (its handler runs), then a mask of three and
 *            sigtimedwait; each printed.
 */
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static void nap(long ns)
{
	struct timespec ts = { ns / 1000000000L, ns % 1000000000L };

	clock_nanosleep(CLOCK_MONOTONIC, 0, &ts, NULL);
}

static void w(const char *tag, int k)
{
	while (k-- > 0)
		if (write(50, tag, 1) != 1)
			perror("write");
}

static int to_fd50(void)
{
	int fd = open("/dev/null", O_WRONLY);

	return fd >= 0 && dup2(fd, 50) == 50 ? 0 : -1;
}

static void sleeper(void)
{
	int i;

	for (i = 0; i < 5; i++)
		nap(2000000);
	for (i = 0; i < 2; i++)
		nap(120000000);
}

static int hist(int fork_too)
{
	static const struct {
		size_t n;
		int k;
	} writes[] = { { 100, 10 }, { 5000, 5 }, { 70000, 3 }, { 4096, 7 } };
	static char buf[70000];
	size_t i;
	int k;
	pid_t pid;

	if (to_fd50())
		return 1;
	memset(buf, 'x', sizeof(buf));
	for (i = 0; i < sizeof(writes) / sizeof(writes[0]); i++)
		for (k = 0; k < writes[i].k; k++)
			if (write(50, buf, writes[i].n) != (ssize_t)writes[i].n)
				return 1;
	for (k = 0; k < 6; k++)
		close(open(k < 4 ? "/etc/hostname" : "/etc/passwd", O_RDONLY));
	sleeper();
	if (!fork_too)
		return 0;
	pid = fork();
	if (write(50, "yyy", 3) != 3)
		return 1;
	if (pid) {
		waitpid(pid, NULL, 0);
		return 0;
	}
	if (write(50, "zzz", 3) != 3)
		_exit(1);
	_exit(0);
}

static volatile sig_atomic_t got;

static void on_trap(int sig)
{
	got = sig;
}

static void print_set(const char *what, const sigset_t *set)
{
	int sig;

	printf("%s", what);
	for (sig = 1; sig < 65; sig++)
		if (sigismember(set, sig) == 1)
			printf(" %d", sig);
	printf(" got %d\n", (int)got);
}

static int status(void)
{
	char line[256];
	FILE *f = fopen("/proc/self/status", "r");

	while (f && fgets(line, sizeof(line), f))
		if (!strncmp(line, "SigBlk:", 7))
			printf("child %s", line);
	return 0;
}

static int trap_mask(const char *self)
{
	sigset_t set, cur;
	pid_t pid;
	int sig;

	sigemptyset(&set);
	sigaddset(&set, SIGTRAP);
	sigprocmask(SIG_BLOCK, &set, NULL);
	sigprocmask(SIG_BLOCK, NULL, &cur);
	print_set("mask", &cur);
	signal(SIGTRAP, on_trap);
	kill(getpid(), SIGTRAP);
	sigpending(&cur);
	print_set("pending", &cur);
	fflush(stdout);
	/* as python's subprocess: a program the child execs reads it */
	pid = fork();
	if (pid == 0) {
		execl(self, self, "status", (char *)NULL);
		_exit(127);
	}
	waitpid(pid, NULL, 0);
	sigprocmask(SIG_UNBLOCK, &set, NULL);
	sigpending(&cur);
	print_set("pending", &cur);
	sigemptyset(&set);
	sigaddset(&set, SIGSEGV);
	sigaddset(&set, SIGUSR1);
	sigaddset(&set, SIGTRAP);
	sigprocmask(SIG_SETMASK, &set, NULL);
	sigprocmask(SIG_BLOCK, NULL, &cur);
	print_set("mask", &cur);
	got = 0;
	kill(getpid(), SIGTRAP);
	sigemptyset(&set);
	sigaddset(&set, SIGTRAP);
	sig = sigtimedwait(&set, NULL, &(struct timespec){ 0, 0 });
	printf("wait %d got %d\n", sig, (int)got);
	return 0;
}

int main(int argc, char **argv)
{
	if (argc > 1 && !strcmp(argv[1], "sleeper")) {
		sleeper();
		return 0;
	}
	if (argc > 1 && !strcmp(argv[1], "sigmask"))
		return trap_mask(argv[0]);
	if (argc > 1 && !strcmp(argv[1], "status"))
		return status();
	if (argc > 1 && !strcmp(argv[1], "hist"))
		return hist(argc > 2 && !strcmp(argv[2], "fork"));
	if (argc > 1 && !strcmp(argv[1], "onoff")) {
		if (to_fd50())
			return 1;
		w("a", 3);
		getppid();
		w("b", 4);
		getuid();
		w("c", 5);
		getppid();
		w("d", 2);
		getuid();
		return 0;
	}
	fprintf(stderr, "usage: tgt_syscalls sleeper|onoff|hist [fork]|sigmask\n");
	return 2;
}
