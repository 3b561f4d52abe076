/* SPDX-License-Identifier: MIT */
/*
 * A server's shape (issue 27, postgres): it opens descriptors, which
 * take the lowest free numbers (as accept() does), forks a child that
 * uses them, and closes them in the parent. Each child checks that every
 * descriptor its parent opened just before the fork is still open on
 * /dev/null: the agent's fork handler once closed one of them (its own
 * connection's number, which the detach had just closed and the program
 * reused), and a PostgreSQL backend then failed with 'epoll_ctl()
 * failed: File exists'. Prints "ready", forks until stdin says "quit"
 * (or closes), then prints "forks N bad B".
 */
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#define NFDS 16

static int child(const int *fds)
{
	struct stat null, st;
	int i;

	if (stat("/dev/null", &null))
		return 2;
	for (i = 0; i < NFDS; i++)
		if (fstat(fds[i], &st) || st.st_rdev != null.st_rdev || !S_ISCHR(st.st_mode))
			return 1;
	return 0;
}

int main(void)
{
	struct pollfd in = { 0, POLLIN, 0 };
	long forks = 0, bad = 0;
	int fds[NFDS], i, status;

	printf("ready\n");
	fflush(stdout);
	while (poll(&in, 1, 0) == 0) {
		pid_t pid;

		for (i = 0; i < NFDS; i++)
			fds[i] = open("/dev/null", O_RDONLY);
		pid = fork();
		if (pid == 0)
			_exit(child(fds));
		for (i = 0; i < NFDS; i++)
			if (fds[i] >= 0)
				close(fds[i]);
		if (pid < 0)
			continue;
		forks++;
		if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status) || WEXITSTATUS(status))
			bad++;
	}
	printf("forks %ld bad %ld\n", forks, bad);
	return 0;
}
