/* SPDX-License-Identifier: MIT */
/*
 * tgt_syscalls MODE: the system-call sequences that the cases run
 * Debian's python3 for on x86-64 (clitest.py: SLEEPER, ONOFF_PY), for
 * an architecture whose python3 is not installed (AArch64 under
 * qemu-user), made through the same libc functions:
 *   sleeper  clock_nanosleep five times 2 ms, then twice 120 ms;
 *   onoff    to fd 50 (/dev/null): write "a" 3 times, getppid, "b" 4
 *            times, getuid, "c" 5 times, getppid, "d" twice, getuid.
 */
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
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

int main(int argc, char **argv)
{
	int i, fd;

	if (argc > 1 && !strcmp(argv[1], "sleeper")) {
		for (i = 0; i < 5; i++)
			nap(2000000);
		for (i = 0; i < 2; i++)
			nap(120000000);
		return 0;
	}
	if (argc > 1 && !strcmp(argv[1], "onoff")) {
		fd = open("/dev/null", O_WRONLY);
		if (fd < 0 || dup2(fd, 50) != 50)
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
	fprintf(stderr, "usage: tgt_syscalls sleeper|onoff\n");
	return 2;
}
