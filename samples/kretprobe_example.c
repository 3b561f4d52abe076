/* SPDX-License-Identifier: MIT */
/*
 * kretprobe_example.c - the user-space twin of the kernel's
 * samples/kprobes/kretprobe_example.c.
 *
 * Plants a return probe on a function (default: zlib's deflate), runs a
 * real workload that calls it (compress2() on buffers, from one or more
 * threads), and reports each call's return value and how long it took,
 * then how many instances were missed (nmissed > 0 suggests that
 * maxactive was set too low).
 *
 *   kretprobe_example [FUNC] [ROUNDS] [THREADS]
 *   kretprobe_example libz.so.1:deflate 3 4
 *
 * The entry handler runs inside a signal handler and the return handler
 * at the function's return, possibly in any context of the program: both
 * print with write(2) and a tiny formatter instead of printf.
 */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <zlib.h>

#include <ukprobes.h>

static const char *func_name = "libz.so.1:deflate";

/* per-instance private data */
struct my_data {
	int64_t entry_stamp;
};

static int64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts); /* async-signal-safe */
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* async-signal-safe output */
struct line {
	char buf[256];
	size_t n;
};

static void put_str(struct line *l, const char *s)
{
	while (*s && l->n < sizeof(l->buf) - 1)
		l->buf[l->n++] = *s++;
}

static void put_dec(struct line *l, unsigned long long v)
{
	char tmp[21];
	int i = 20;

	tmp[i] = '\0';
	do {
		tmp[--i] = (char)('0' + v % 10);
		v /= 10;
	} while (v && i > 0);
	put_str(l, &tmp[i]);
}

static void emit(struct line *l)
{
	l->buf[l->n++] = '\n';
	if (write(STDOUT_FILENO, l->buf, l->n) < 0)
		_exit(1);
}

/* Here we use the entry_handler to timestamp function entry. (The
 * kernel sample skips kernel threads here; a process has none.) */
static int entry_handler(struct kretprobe_instance *ri, struct pt_regs *regs)
{
	struct my_data *data = (struct my_data *)ri->data;

	data->entry_stamp = now_ns();
	return 0;
}
NOKPROBE_SYMBOL(entry_handler);

/*
 * Return-probe handler: Log the return value and duration. Duration may
 * turn out to be zero consistently, depending upon the granularity of
 * time accounting on the platform.
 */
static int ret_handler(struct kretprobe_instance *ri, struct pt_regs *regs)
{
	unsigned long retval = regs_return_value(regs);
	struct my_data *data = (struct my_data *)ri->data;
	int64_t delta = now_ns() - data->entry_stamp;
	struct line l = { .n = 0 };

	put_str(&l, func_name);
	put_str(&l, " returned ");
	put_dec(&l, retval);
	put_str(&l, " and took ");
	put_dec(&l, (unsigned long long)delta);
	put_str(&l, " ns to execute");
	emit(&l);
	return 0;
}
NOKPROBE_SYMBOL(ret_handler);

static struct kretprobe my_kretprobe = {
	.handler = ret_handler,
	.entry_handler = entry_handler,
	.data_size = sizeof(struct my_data),
	/* Probe up to 20 instances concurrently. */
	.maxactive = 20,
};

static int rounds = 2;

static void *workload(void *arg)
{
	unsigned char *src = malloc(64 * 1024), *dst = malloc(80 * 1024);
	uintptr_t seed = (uintptr_t)arg;
	int i, bad = 0;

	if (!src || !dst) {
		free(src);
		free(dst);
		return (void *)1;
	}
	for (i = 0; i < 64 * 1024; i++)
		src[i] = (unsigned char)("return probes in user space "[i % 28] ^ ((i + seed) >> 10));
	for (i = 0; i < rounds; i++) {
		uLongf dlen = 80 * 1024;

		if (compress2(dst, &dlen, src, 64 * 1024, 6) != Z_OK)
			bad = 1;
	}
	free(src);
	free(dst);
	return (void *)(uintptr_t)bad;
}

int main(int argc, char **argv)
{
	int nthreads = 1, ret, i;
	pthread_t *th;

	if (argc > 1)
		func_name = argv[1];
	if (argc > 2)
		rounds = atoi(argv[2]);
	if (argc > 3)
		nthreads = atoi(argv[3]);
	if (nthreads < 1)
		nthreads = 1;
	my_kretprobe.kp.symbol_name = func_name;

	ret = register_kretprobe(&my_kretprobe);
	if (ret < 0) {
		fprintf(stderr, "kretprobe_init: register_kretprobe failed, returned %d (%s)\n",
			ret, strerror(-ret));
		return 1;
	}
	printf("kretprobe_init: Planted return probe at %s: %p\n", my_kretprobe.kp.symbol_name,
	       (void *)my_kretprobe.kp.addr);
	fflush(stdout);

	th = calloc((size_t)nthreads, sizeof(*th));
	if (!th)
		return 1;
	for (i = 0; i < nthreads; i++)
		pthread_create(&th[i], NULL, workload, (void *)(uintptr_t)i);
	for (i = 0; i < nthreads; i++) {
		void *bad;

		pthread_join(th[i], &bad);
		if (bad)
			fprintf(stderr, "workload failed\n");
	}
	free(th);

	printf("kprobes list:\n");
	fflush(stdout);
	kprobes_show_list(stdout);

	unregister_kretprobe(&my_kretprobe);
	printf("kretprobe_exit: kretprobe at %p unregistered\n", (void *)my_kretprobe.kp.addr);

	/* nmissed > 0 suggests that maxactive was set too low. */
	printf("kretprobe_exit: Missed probing %d instances of %s\n", my_kretprobe.nmissed,
	       my_kretprobe.kp.symbol_name);
	return 0;
}
