/* SPDX-License-Identifier: MIT */
/*
 * spawner.c - children made every way a program makes them, for -f
 * (case follow_spawn; built dynamic, tgt_spawner, and static,
 * tgt_spawner_static):
 *   tgt_spawner [-w] HOW N [PROG ARGS...]
 * leaf(1) in the parent, then one child made by HOW:
 *   fork      fork()
 *   rawfork   syscall(SYS_fork) (x86-64; elsewhere SYS_clone, SIGCHLD)
 *   rawclone  syscall(SYS_clone, SIGCHLD, 0, ...)
 *   vfork     vfork()
 *   clonevm   clone(CLONE_VM | CLONE_VFORK | SIGCHLD) on a stack of its own
 *   spawn     posix_spawn() (PROG only)
 *   exec      none: the program itself execs PROG (PROG only)
 * The child calls leaf(100 + k) for k in [0, N) unless it shares the
 * parent's memory (vfork, clonevm), then runs PROG if given, else
 * _exit(0)s. The parent waits for it and calls leaf(3), then prints
 * "done STATUS". With -w it first prints "ready" and waits for a line on
 * its standard input, calling leaf(0) every 10 ms meanwhile (ukprobe -p:
 * its first event says the probes are in place).
 *   tgt_spawner leaf N   leaf(200 + k) for k in [0, N), then exits 0
 *                        (the program the children run)
 *   tgt_spawner hold N   the same, then prints "held" and waits for a
 *                        line on its standard input before leaf(300)
 *                        (ukprobe -p -f: the exec'd program looked at
 *                        after the detach)
 *   tgt_spawner occupy   prints "ranges?", reads a line of "LO-HI" ranges (hex), maps
 *                        each (anonymous, zeroed, MAP_FIXED_NOREPLACE),
 *                        prints "occupied N" (N mapped), waits for a
 *                        line, then reads them all and prints "intact"
 *                        (ukprobe -p without -f: the agent's addresses,
 *                        taken by the program the process exec'd, are
 *                        not the agent's to unmap at the detach)
 */
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

__attribute__((noinline)) int leaf(int n)
{
	__asm__ volatile("" ::: "memory");
	return n * 2;
}

static char **prog;
static int count;

static void child_work(void)
{
	for (int k = 0; k < count; k++)
		leaf(100 + k);
}

static _Noreturn void child_end(void)
{
	if (prog) {
		execve(prog[0], prog, environ);
		_exit(126);
	}
	_exit(0);
}

static int clone_fn(void *arg)
{
	(void)arg;
	child_end();
}

/* "occupy" (see the top) */
static int occupy(void)
{
	static struct {
		unsigned long lo, hi;
	} r[64];
	static char buf[8192];
	int n = 0, mapped = 0;
	char *p = buf, *end;

	printf("ranges?\n"); /* (the line comes after: the parent's stdio read no part of it) */
	fflush(stdout);
	if (!fgets(buf, sizeof(buf), stdin))
		return 2;
	while (n < 64) {
		r[n].lo = strtoul(p, &end, 16);
		if (end == p || *end != '-')
			break;
		r[n].hi = strtoul(end + 1, &p, 16);
		if (r[n].hi <= r[n].lo)
			break;
		if (mmap((void *)r[n].lo, r[n].hi - r[n].lo, PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0) == (void *)r[n].lo)
			mapped++;
		else
			r[n].lo = r[n].hi = 0; /* (taken: not looked at) */
		n++;
	}
	printf("occupied %d\n", mapped);
	fflush(stdout);
	if (!fgets(buf, sizeof(buf), stdin))
		return 2;
	for (int i = 0; i < n; i++)
		for (unsigned long a = r[i].lo; a < r[i].hi; a += 4096)
			if (*(volatile char *)a)
				return 3;
	printf("intact\n");
	return 0;
}

int main(int argc, char **argv)
{
	static char stack[256 * 1024] __attribute__((aligned(16)));
	const char *how;
	int status = -1, argi = 1;
	pid_t pid;
	char line[64];

	if (argc == 3 && (!strcmp(argv[1], "leaf") || !strcmp(argv[1], "hold"))) {
		for (int k = 0; k < atoi(argv[2]); k++)
			leaf(200 + k);
		if (argv[1][0] == 'h') {
			printf("held\n");
			fflush(stdout);
			if (!fgets(line, sizeof(line), stdin))
				return 2;
			leaf(300);
		}
		return 0;
	}
	if (argc == 2 && !strcmp(argv[1], "occupy"))
		return occupy();
	if (argc > 1 && !strcmp(argv[1], "-w")) {
		struct pollfd in = { .fd = 0, .events = POLLIN };

		printf("ready\n");
		fflush(stdout);
		do
			leaf(0);
		while (poll(&in, 1, 10) == 0);
		if (!fgets(line, sizeof(line), stdin))
			return 2;
		argi++;
	}
	if (argc < argi + 2) {
		fprintf(stderr, "usage: tgt_spawner [-w] HOW N [PROG ARGS...]\n");
		return 2;
	}
	how = argv[argi];
	count = atoi(argv[argi + 1]);
	prog = argc > argi + 2 ? argv + argi + 2 : NULL;
	leaf(1);
	fflush(stdout);
	if (!strcmp(how, "fork")) {
		pid = fork();
	} else if (!strcmp(how, "rawfork")) {
#ifdef SYS_fork
		pid = (pid_t)syscall(SYS_fork);
#else
		pid = (pid_t)syscall(SYS_clone, SIGCHLD, 0, 0, 0, 0);
#endif
	} else if (!strcmp(how, "rawclone")) {
		pid = (pid_t)syscall(SYS_clone, SIGCHLD, 0, 0, 0, 0);
	} else if (!strcmp(how, "vfork")) {
		pid = vfork();
		if (pid == 0)
			child_end();
	} else if (!strcmp(how, "clonevm")) {
		pid = clone(clone_fn, stack + sizeof(stack), CLONE_VM | CLONE_VFORK | SIGCHLD, NULL);
	} else if (!strcmp(how, "exec") && prog) {
		child_end();
	} else if (!strcmp(how, "spawn") && prog) {
		if (posix_spawn(&pid, prog[0], NULL, NULL, prog, environ))
			pid = -1;
	} else {
		fprintf(stderr, "unknown HOW %s\n", how);
		return 2;
	}
	if (pid < 0) {
		perror(how);
		return 1;
	}
	if (pid == 0) {
		child_work();
		child_end();
	}
	while (waitpid(pid, &status, 0) < 0)
		;
	leaf(3);
	printf("done %d\n", WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status));
	return 0;
}
