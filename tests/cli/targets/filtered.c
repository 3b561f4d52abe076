/* SPDX-License-Identifier: MIT */
/*
 * The target of ukprobe's --filter tests: visit(n, flags, name) is called
 * for n = -50..149 by the main thread and by a thread named
 * "filt-worker"; flags = n * 2654435761 (32 bits, so that half have the
 * top bit set) and name cycles through a few words. The program prints,
 * for each filter the tests use, how many of its calls pass it (its own
 * ground truth): "truth KEY COUNT" (see FILTERS in clitest.py).
 *
 *   tgt_filtered            one round, then exit
 *   tgt_filtered --wait     prints "ready", then reads commands: "canary"
 *                           calls canary(), "go" runs a round (and says
 *                           "done"), "quit" exits (for ukprobe -p)
 */
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

static const char *const names[] = { "alpha", "beta", "gamma", "alpine", "delta", "[x]" };
static volatile long sink;

__attribute__((noinline)) long visit(int n, unsigned int flags, const char *name)
{
	sink += n + flags + name[0];
	return sink;
}

__attribute__((noinline)) void canary(void)
{
	sink++;
}

enum {
	K_EQ, K_NE, K_LT, K_LE, K_GT, K_GE, K_BAND, K_UNS, K_SEQ, K_SNE, K_GLOB, K_GLOBQ, K_GLOBC,
	K_AND, K_OR, K_PREC, K_NOT, K_PAREN, K_COMM, K_COMMGLOB, K_PID, NKEYS
};
static const char *const keys[NKEYS] = {
	"eq", "ne", "lt", "le", "gt", "ge", "band", "uns", "seq", "sne", "glob", "globq", "globc",
	"and", "or", "prec", "not", "paren", "comm", "commglob", "pid",
};
static long truth[NKEYS];
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;

static bool starts(const char *s, const char *p)
{
	return !strncmp(s, p, strlen(p));
}

/* The filters of clitest.py's FILTERS, in C. */
static void count(int n, unsigned int flags, const char *name, bool worker, bool main_thread)
{
	size_t len = strlen(name);
	bool k[NKEYS] = {
		[K_EQ] = n == 7,
		[K_NE] = n != 7,
		[K_LT] = n < -10,
		[K_LE] = n <= -10,
		[K_GT] = n > 100,
		[K_GE] = n >= 100,
		[K_BAND] = (flags & 0x5) != 0,
		[K_UNS] = flags >= 0x80000000u,
		[K_SEQ] = !strcmp(name, "beta"),
		[K_SNE] = strcmp(name, "beta") != 0,
		[K_GLOB] = starts(name, "al"),
		[K_GLOBQ] = len >= 2 && name[1] == 'e' && name[len - 1] == 'a',
		[K_GLOBC] = name[0] >= 'a' && name[0] <= 'c',
		[K_AND] = n > 0 && (flags & 2),
		[K_OR] = n < -40 || n > 140,
		[K_PREC] = n < -40 || (n > 140 && (flags & 1)), /* && binds tighter */
		[K_NOT] = !(n >= 0 && n < 100),
		[K_PAREN] = (n < 0 || !strcmp(name, "gamma")) && !(flags & 1),
		[K_COMM] = worker,
		[K_COMMGLOB] = true, /* both names start with "filt-" */
		[K_PID] = main_thread,
	};
	int i;

	pthread_mutex_lock(&lock);
	for (i = 0; i < NKEYS; i++)
		truth[i] += k[i];
	pthread_mutex_unlock(&lock);
}

static void calls(bool worker)
{
	int n;

	for (n = -50; n < 150; n++) {
		unsigned int flags = (unsigned int)n * 2654435761u;
		const char *name = names[(n + 50) % 6];

		visit(n, flags, name);
		count(n, flags, name, worker, !worker);
	}
}

static void *worker(void *arg)
{
	pthread_setname_np(pthread_self(), "filt-worker");
	calls(true);
	return arg;
}

static void round_(void)
{
	pthread_t t;
	int i;

	memset(truth, 0, sizeof(truth));
	pthread_create(&t, NULL, worker, NULL);
	pthread_join(t, NULL);
	calls(false);
	for (i = 0; i < NKEYS; i++)
		printf("truth %s %ld\n", keys[i], truth[i]);
	fflush(stdout);
}

int main(int argc, char **argv)
{
	char line[64];

	pthread_setname_np(pthread_self(), "filt-main");
	if (argc < 2 || strcmp(argv[1], "--wait")) {
		round_();
		return 0;
	}
	printf("ready\n");
	fflush(stdout);
	while (fgets(line, sizeof(line), stdin)) {
		if (starts(line, "canary")) {
			canary();
		} else if (starts(line, "go")) {
			round_();
			printf("done\n");
			fflush(stdout);
		} else if (starts(line, "quit")) {
			break;
		}
	}
	return 0;
}
