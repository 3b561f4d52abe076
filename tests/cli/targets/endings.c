/* SPDX-License-Identifier: MIT */
/*
 * Calls hit() exactly 100,000 times, then ends as argv[1] says: exit,
 * _exit, exit_group (the raw system call, as Go ends), abort, kill
 * (SIGKILL to itself), segv (a write through NULL, no handler), or
 * fork-_exit / fork-kill (a forked child makes the calls and ends so;
 * the parent waits and exits 0). With "wait" as argv[2] it first prints
 * "ready" and reads a line from stdin (an attach comes then).
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#define CALLS 100000

volatile long sink;

__attribute__((noinline)) void hit(long i)
{
	sink += i;
}

static void calls(void)
{
	long i;

	for (i = 0; i < CALLS; i++)
		hit(i);
}

static void end(const char *how)
{
	if (!strcmp(how, "exit"))
		exit(0);
	if (!strcmp(how, "_exit"))
		_exit(0);
	if (!strcmp(how, "exit_group"))
		syscall(SYS_exit_group, 0);
	if (!strcmp(how, "abort"))
		abort();
	if (!strcmp(how, "kill"))
		kill(getpid(), SIGKILL);
	if (!strcmp(how, "segv"))
		*(volatile int *)0 = 1;
	fprintf(stderr, "endings: no such ending: %s\n", how);
	exit(2);
}

int main(int argc, char **argv)
{
	char line[64];
	pid_t pid;
	int st;

	if (argc < 2)
		return 2;
	if (argc > 2 && !strcmp(argv[2], "wait")) {
		printf("ready\n");
		fflush(stdout);
		if (!fgets(line, sizeof(line), stdin))
			return 3;
	}
	if (strncmp(argv[1], "fork-", 5)) {
		calls();
		end(argv[1]);
		return 4;
	}
	fflush(NULL);
	pid = fork();
	if (pid < 0)
		return 5;
	if (pid == 0) {
		calls();
		end(argv[1] + 5);
	}
	while (waitpid(pid, &st, 0) < 0)
		;
	return 0;
}
