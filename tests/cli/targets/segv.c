/* SPDX-License-Identifier: MIT */
/*
 * A program with its own SIGSEGV handler: poke(NULL) faults, the handler
 * jumps back, three times.
 */
#include <setjmp.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>

static sigjmp_buf env;

__attribute__((noinline)) void on_segv(int sig)
{
	siglongjmp(env, sig);
}

__attribute__((noinline)) int poke(volatile int *p)
{
	return *p;
}

int main(void)
{
	struct sigaction sa;
	volatile int i, recovered = 0;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_segv;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGSEGV, &sa, NULL);
	for (i = 0; i < 3; i++)
		if (sigsetjmp(env, 1) == 0)
			poke(NULL);
		else
			recovered++;
	printf("recovered %d\n", recovered);
	return 0;
}
