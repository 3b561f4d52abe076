/* SPDX-License-Identifier: MIT */
/*
 * jprobe_example.c - the user-space twin of the kernel's
 * samples/kprobes/jprobe_example.c, which dumped the arguments of
 * _do_fork(): this one dumps those of zlib's deflateInit2_(), which every
 * compress2() call makes (eight arguments: the last two, version and
 * stream_size, are passed on the stack).
 *
 *   jprobe_example [ROUNDS]
 *
 * Jprobes are deprecated (the kernel dropped them in 4.15): see the
 * README for what to use instead. The handler has the probed function's
 * prototype and must end with jprobe_return(). It runs on the probed
 * thread with the program's signal handlers held back and may be called
 * anywhere, so it prints with write(2) and a tiny formatter, not printf.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>

#include <ukprobes.h>

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

static void put_num(struct line *l, long v)
{
	char tmp[24];
	int i = 23;
	unsigned long u = v < 0 ? -(unsigned long)v : (unsigned long)v;

	tmp[i] = '\0';
	do {
		tmp[--i] = (char)('0' + u % 10);
		u /= 10;
	} while (u && i > 1);
	if (v < 0)
		tmp[--i] = '-';
	put_str(l, &tmp[i]);
}

static void emit(struct line *l)
{
	l->buf[l->n++] = '\n';
	if (write(STDOUT_FILENO, l->buf, l->n) < 0)
		_exit(1);
}

/* Proxy routine having the same arguments as the actual deflateInit2_() */
static int j_deflateInit2_(z_streamp strm, int level, int method, int windowBits, int memLevel,
			   int strategy, const char *version, int stream_size)
{
	struct line l = { .n = 0 };

	put_str(&l, "jprobe: level = ");
	put_num(&l, level);
	put_str(&l, ", method = ");
	put_num(&l, method);
	put_str(&l, ", windowBits = ");
	put_num(&l, windowBits);
	put_str(&l, ", memLevel = ");
	put_num(&l, memLevel);
	put_str(&l, ", strategy = ");
	put_num(&l, strategy);
	put_str(&l, ", version = ");
	put_str(&l, version ? version : "(null)");
	put_str(&l, ", stream_size = ");
	put_num(&l, stream_size);
	emit(&l);

	/* Always end with a call to jprobe_return(). */
	jprobe_return();
	return 0;
}

static struct jprobe my_jprobe = {
	.entry = JPROBE_ENTRY(j_deflateInit2_),
	.kp = {
		.symbol_name = "libz.so.1:deflateInit2_",
	},
};

static int workload(int rounds)
{
	static unsigned char src[16 * 1024], dst[20 * 1024];
	int i;

	for (i = 0; i < (int)sizeof(src); i++)
		src[i] = (unsigned char)("jprobes in user space "[i % 22] ^ (i >> 10));
	for (i = 0; i < rounds; i++) {
		uLongf dlen = sizeof(dst);

		if (compress2(dst, &dlen, src, sizeof(src), i % 10) != Z_OK)
			return -1;
		printf("workload: level %d compressed %zu bytes to %lu\n", i % 10, sizeof(src),
		       (unsigned long)dlen);
		fflush(stdout);
	}
	return 0;
}

int main(int argc, char **argv)
{
	int rounds = 2, ret;

	if (argc > 1)
		rounds = atoi(argv[1]);
	ret = register_jprobe(&my_jprobe);
	if (ret < 0) {
		fprintf(stderr, "register_jprobe failed, returned %d (%s)\n", ret, strerror(-ret));
		return 1;
	}
	printf("Planted jprobe at %p, handler addr %p\n", (void *)my_jprobe.kp.addr,
	       my_jprobe.entry);
	fflush(stdout);

	if (workload(rounds))
		fprintf(stderr, "workload failed\n");

	printf("kprobes list:\n");
	fflush(stdout);
	kprobes_show_list(stdout);

	unregister_jprobe(&my_jprobe);
	printf("jprobe at %p unregistered (nmissed %lu)\n", (void *)my_jprobe.kp.addr,
	       my_jprobe.kp.nmissed);
	return 0;
}
