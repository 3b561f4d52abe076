/* SPDX-License-Identifier: MIT */
/*
 * A dynamically linked program (it has a program interpreter) that uses
 * no C library: ukprobe -p finds no dlopen() to load the agent with.
 * It waits for its standard input to close.
 */
static long sys3(long n, long a, long b, long c)
{
	long ret;

	__asm__ volatile("syscall" : "=a"(ret) : "a"(n), "D"(a), "S"(b), "d"(c) : "rcx", "r11", "memory");
	return ret;
}

void _start(void)
{
	char c;

	sys3(1, 1, (long)"ready\n", 6);         /* write */
	while (sys3(0, 0, (long)&c, 1) > 0)     /* read */
		;
	sys3(60, 0, 0, 0);                      /* exit */
	for (;;)
		;
}
