/* SPDX-License-Identifier: MIT */
/*
 * tgt_forker [--exec PROG [ARGS]] [--exec-now PROG [ARGS]]:
 * step(1) in the parent, fork, step(2) in the child, which exits (or
 * with --exec runs PROG), then step(3) in the parent after waiting for
 * the child. --exec-now: step(1), then exec PROG without forking.
 */
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

__attribute__((noinline)) int step(int n)
{
	return n * 2;
}

int main(int argc, char **argv)
{
	int status = 0;
	pid_t pid;

	step(1);
	fflush(stdout);
	if (argc > 2 && !strcmp(argv[1], "--exec-now")) {
		execv(argv[2], argv + 2);
		perror("execv");
		return 126;
	}
	pid = fork();
	if (pid == 0) {
		step(2);
		if (argc > 2 && !strcmp(argv[1], "--exec")) {
			execv(argv[2], argv + 2);
			perror("execv");
			return 126;
		}
		printf("child done\n");
		return 0;
	}
	waitpid(pid, &status, 0);
	step(3);
	printf("parent done, child status %d\n", WEXITSTATUS(status));
	return 0;
}
