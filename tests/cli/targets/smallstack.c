// SPDX-License-Identifier: MIT
/*
 * tgt_smallstack (case attach_small_stack): one thread, which runs on a
 * stack of 1 KB above a guard page once it has said "ready" (as a Go
 * goroutine or a coroutine does, with an alternate stack for signals as
 * Go gives every thread), calling tick() until SIGUSR1; then "done N".
 * An attach that ran the loader's calls on the thread's own stack
 * overran it into the guard page.
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

static volatile sig_atomic_t stop;
static volatile unsigned long ticks;

__attribute__((noinline)) void tick(void)
{
	ticks++;
	__asm__ volatile("" ::: "memory");
}

static void on_usr1(int sig)
{
	(void)sig;
	stop = 1;
}

/* until stop, on the small stack (x86-64) */
__attribute__((noinline, used)) static void spin(void)
{
	while (!stop)
		tick();
}

int main(void)
{
	char *small = mmap(NULL, 8192, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	size_t alt_len = 256 * 1024;
	stack_t ss = { .ss_sp = malloc(alt_len), .ss_size = alt_len };
	struct sigaction sa = { .sa_handler = on_usr1, .sa_flags = SA_ONSTACK };
	char *top;

	if (small == MAP_FAILED || !ss.ss_sp || mprotect(small + 4096, 4096, PROT_READ | PROT_WRITE) ||
	    sigaltstack(&ss, NULL) || sigaction(SIGUSR1, &sa, NULL))
		return 2;
	top = small + 4096 + 1024;
	printf("ready\n");
	fflush(stdout);
	__asm__ volatile("movq %%rsp, %%rbx\n\t"
			 "movq %0, %%rsp\n\t"
			 "call spin\n\t"
			 "movq %%rbx, %%rsp"
			 :
			 : "r"(top)
			 : "rbx", "rax", "rcx", "rdx", "rsi", "rdi", "r8", "r9", "r10", "r11", "memory",
			   "cc");
	printf("done %lu\n", ticks > 0 ? 1UL : 0UL);
	return 0;
}
