/* SPDX-License-Identifier: MIT */
/*
 * step(1) in the parent, fork, step(2) in the child (which exits), then
 * step(3) in the parent after waiting for the child.
 */
#include <stdio.h>
#include <sys/wait.h>
#include <unistd.h>

__attribute__((noinline)) int step(int n)
{
	return n * 2;
}

int main(void)
{
	int status = 0;
	pid_t pid;

	step(1);
	fflush(stdout);
	pid = fork();
	if (pid == 0) {
		step(2);
		printf("child done\n");
		return 0;
	}
	waitpid(pid, &status, 0);
	step(3);
	printf("parent done, child status %d\n", WEXITSTATUS(status));
	return 0;
}
