/* SPDX-License-Identifier: MIT */
/*
 * The target of `ukprobe run`'s tests: functions called a fixed number of
 * times with fixed arguments, so that counts, sums, histograms and
 * printed lines are known in advance. Prints nothing (the script's
 * output is the test's).
 *
 *   tgt_script [ROUNDS [LINGER_MS]]   (pause_us runs only when ROUNDS <= 10:
 *                          benchmarks pass more; LINGER_MS: a sleep at the
 *                          end, for bpftrace, which names the addresses of
 *                          a printed ustack once the process is gone)
 *
 * An SDT marker (tgt:tagged, in main's loop) for usdt probes, and a
 * global string for uaddr().
 */
#include <errno.h>
#include <stdlib.h>
#include <sys/sdt.h>
#include <time.h>
#include <unistd.h>

/* uaddr("greeting"): the address of this text */
char greeting[] = "hello"; /* in .data: the names' bytes in .rodata stay as they were */

__attribute__((noinline)) long work(long n)
{
	return n * 2;
}

__attribute__((noinline)) int tag(const char *name, long v)
{
	return (int)(v + name[0]);
}

__attribute__((noinline)) long pause_us(long us)
{
	usleep((useconds_t)us);
	return us;
}

static volatile char sink;

/* registered with atexit(): usym()'s test names it */
__attribute__((noinline)) void at_end(void)
{
	sink = 0;
}

int main(int argc, char **argv)
{
	static const char *const names[] = { "alpha", "beta", "beta", "gamma", "gamma", "gamma" };
	long rounds = argc > 1 ? atol(argv[1]) : 1, r, i;

	atexit(at_end);
	/* the names' page is in memory before the first call: bpftrace's
	 * str() cannot fault a page in (its tests compare with ukprobe's) */
	for (i = 0; i < 6; i++)
		sink += names[i][0];
	for (r = 0; r < rounds; r++) {
		for (i = 0; i < 100; i++)
			work(i);
		for (i = 0; i < 6; i++) {
			tag(names[i], i);
			DTRACE_PROBE3(tgt, tagged, names[i], i, -i);
		}
		if (rounds <= 10)
			pause_us(1000);
	}
	if (argc > 2) {
		/* the whole time, as sleep(1) does: a signal whose handler
		 * returns (the agent's, for SIGINT and SIGTERM) does not
		 * end it early */
		long ms = atol(argv[2]);
		struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };

		while (nanosleep(&ts, &ts) && errno == EINTR)
			;
	}
	return 0;
}
