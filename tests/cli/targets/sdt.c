/* SPDX-License-Identifier: MIT */
/*
 * SDT probes (<sys/sdt.h>) for ukprobe's USDT cases, built at -O2 so
 * that GCC writes every argument form: registers of each width and sign,
 * a symbol (rip-relative), constants, memory at a register + offset (the
 * -O0 function, and a struct through a pointer).
 *
 *   tgt_sdt run N    N rounds in the main thread and in 2 threads, then
 *                    libukp_sdtplug.so dlopen()ed and N of its probes;
 *                    prints how many calls saw the semaphores raised
 *   tgt_sdt wait     prints "ready", then one round per line of input
 *                    ("N"), printing the semaphores and those counts
 *   tgt_sdt fork N   forks: the child, then the parent, run N rounds and
 *                    the plugin's N probes, each printing its counts and
 *                    semaphores
 */
#define _SDT_HAS_SEMAPHORES 1
#include <sys/sdt.h>

#include <dlfcn.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

__extension__ unsigned short tgt_args_semaphore __attribute__((unused, section(".probes")));
__extension__ unsigned short tgt_mem_semaphore __attribute__((unused, section(".probes")));
__extension__ unsigned short tgt_ptr_semaphore __attribute__((unused, section(".probes")));

struct pair {
	long a;
	int b;
};

int tgt_global = 0x1234567;
static _Atomic int enabled;
static const char *word = "hello";

__attribute__((noinline)) int probe_args(int a, long b, signed char c, short d, unsigned u,
					 const char *s)
{
	if (tgt_args_semaphore)
		enabled++;
	STAP_PROBE8(tgt, args, a, b, c, d, u, s, tgt_global, 5);
	return a + 1;
}

__attribute__((noinline, optimize("O0"))) long probe_mem(long x, int y, const char *s)
{
	long lx = x * 2;
	int ly = y - 1;

	if (tgt_mem_semaphore)
		enabled++;
	STAP_PROBE4(tgt, mem, lx, ly, s, -3);
	return lx + ly;
}

__attribute__((noinline)) int probe_ptr(const struct pair *p)
{
	if (tgt_ptr_semaphore)
		enabled++;
	STAP_PROBE2(tgt, ptr, p->a, p->b);
	return 0;
}

static void round_(int i)
{
	struct pair p = { -99 - i, -42 };

	probe_args(-7 - i, -1234567890123L, -5, -300, 4000000000u, word);
	probe_mem(21 + i, 10, word);
	probe_ptr(&p);
}

static void *thread_main(void *arg)
{
	long i, n = (long)arg;

	for (i = 0; i < n; i++)
		round_((int)i);
	return NULL;
}

static int plugin(int n, int *enabled_plug)
{
	void *h = dlopen("libukp_sdtplug.so", RTLD_NOW);
	int (*fire)(int), (*en)(void);
	int i, sum = 0;

	if (!h) {
		fprintf(stderr, "dlopen: %s\n", dlerror());
		exit(1);
	}
	fire = (int (*)(int))dlsym(h, "plug_fire");
	en = (int (*)(void))dlsym(h, "plug_enabled");
	for (i = 0; i < n; i++)
		sum += fire(i);
	*enabled_plug = en();
	return sum;
}

int main(int argc, char **argv)
{
	long n = argc > 2 ? atol(argv[2]) : 1;
	pthread_t t[2];
	int i, ep = 0;
	char line[64];

	if (argc > 1 && !strcmp(argv[1], "wait")) {
		unsigned short *ps;
		void *h = dlopen("libukp_sdtplug.so", RTLD_NOW);

		ps = h ? dlsym(h, "plug_fire_semaphore") : NULL;
		printf("ready\n");
		fflush(stdout);
		while (fgets(line, sizeof(line), stdin)) {
			n = atol(line);
			enabled = 0;
			for (i = 0; i < n; i++)
				round_(i);
			plugin((int)n, &ep);
			printf("sem=%d,%d,%d plug=%d enabled=%d\n", tgt_args_semaphore,
			       tgt_mem_semaphore, tgt_ptr_semaphore, ps ? *ps : -1, enabled);
			fflush(stdout);
		}
		return 0;
	}
	if (argc > 1 && !strcmp(argv[1], "fork")) {
		pid_t pid = fork();
		int status;

		if (pid < 0)
			return 1;
		if (pid > 0 && waitpid(pid, &status, 0) != pid)
			return 1;
		thread_main((void *)n);
		plugin((int)n, &ep);
		printf("%s enabled=%d plug=%d sem=%d,%d,%d\n", pid ? "parent" : "child", enabled, ep,
		       tgt_args_semaphore, tgt_mem_semaphore, tgt_ptr_semaphore);
		fflush(stdout);
		return pid ? (WIFEXITED(status) ? WEXITSTATUS(status) : 1) : 0;
	}
	for (i = 0; i < 2; i++)
		pthread_create(&t[i], NULL, thread_main, (void *)n);
	thread_main((void *)n);
	for (i = 0; i < 2; i++)
		pthread_join(t[i], NULL);
	plugin((int)n, &ep);
	printf("enabled=%d plug=%d\n", enabled, ep);
	return 0;
}
