/* SPDX-License-Identifier: MIT */
/*
 * kprobe_example.c - the user-space twin of the kernel's
 * samples/kprobes/kprobe_example.c.
 *
 * Plants a kprobe on a named symbol (default: zlib's deflate), runs a real
 * workload that calls it (compress2() on a buffer), and prints what the
 * pre and post handlers see, then the probe list.
 *
 *   kprobe_example [SYMBOL] [ROUNDS]
 *   kprobe_example libz.so.1:deflate 3
 *
 * Handlers run inside a signal handler, so they print with write(2) and a
 * tiny formatter instead of printf.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>

#include <ukprobes.h>

static const char *symbol = "libz.so.1:deflate";
static struct kprobe kp;

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

static void put_hex(struct line *l, unsigned long v)
{
	char tmp[17];
	int i = 16;

	tmp[i] = '\0';
	do {
		tmp[--i] = "0123456789abcdef"[v & 15];
		v >>= 4;
	} while (v && i > 0);
	put_str(l, &tmp[i]);
}

static void emit(struct line *l)
{
	l->buf[l->n++] = '\n';
	if (write(STDOUT_FILENO, l->buf, l->n) < 0)
		_exit(1);
}

/* kprobe pre_handler: called just before the probed instruction runs */
static int handler_pre(struct kprobe *p, struct pt_regs *regs)
{
	struct line l = { .n = 0 };

	put_str(&l, "handler_pre: <");
	put_str(&l, p->symbol_name);
	put_str(&l, "> p->addr = 0x");
	put_hex(&l, (unsigned long)p->addr);
#if defined(__x86_64__)
	put_str(&l, ", ip = ");
	put_hex(&l, regs->ip);
	put_str(&l, ", flags = 0x");
	put_hex(&l, regs->flags);
#elif defined(__aarch64__)
	put_str(&l, ", pc = ");
	put_hex(&l, regs->pc);
	put_str(&l, ", pstate = 0x");
	put_hex(&l, regs->pstate);
#endif
	put_str(&l, ", arg0 = 0x");
	put_hex(&l, regs_get_kernel_argument(regs, 0));
	emit(&l);
	/* A dump_stack() here would be the kernel sample's next line. */
	return 0;
}

/* kprobe post_handler: called after the probed instruction ran */
static void handler_post(struct kprobe *p, struct pt_regs *regs, unsigned long flags)
{
	struct line l = { .n = 0 };

	put_str(&l, "handler_post: <");
	put_str(&l, p->symbol_name);
	put_str(&l, "> p->addr = 0x");
	put_hex(&l, (unsigned long)p->addr);
#if defined(__x86_64__)
	put_str(&l, ", flags = 0x");
	put_hex(&l, regs->flags);
#elif defined(__aarch64__)
	put_str(&l, ", pstate = 0x");
	put_hex(&l, regs->pstate);
#endif
	emit(&l);
}

static int workload(int rounds)
{
	static unsigned char src[64 * 1024], dst[80 * 1024];
	int i;

	for (i = 0; i < (int)sizeof(src); i++)
		src[i] = (unsigned char)("kprobes in user space "[i % 22] ^ (i >> 10));
	for (i = 0; i < rounds; i++) {
		uLongf dlen = sizeof(dst);

		if (compress2(dst, &dlen, src, sizeof(src), 6) != Z_OK)
			return -1;
		printf("workload: compressed %zu bytes to %lu\n", sizeof(src), (unsigned long)dlen);
		fflush(stdout);
	}
	return 0;
}

int main(int argc, char **argv)
{
	int rounds = 2, ret;

	if (argc > 1)
		symbol = argv[1];
	if (argc > 2)
		rounds = atoi(argv[2]);
	kp.symbol_name = symbol;
	kp.pre_handler = handler_pre;
	kp.post_handler = handler_post;

	ret = register_kprobe(&kp);
	if (ret < 0) {
		fprintf(stderr, "kprobe_init: register_kprobe failed, returned %d (%s)\n", ret,
			strerror(-ret));
		return 1;
	}
	printf("kprobe_init: Planted kprobe at %p\n", (void *)kp.addr);
	fflush(stdout);

	if (workload(rounds))
		fprintf(stderr, "workload failed\n");

	printf("kprobes list:\n");
	fflush(stdout);
	kprobes_show_list(stdout);

	unregister_kprobe(&kp);
	printf("kprobe_exit: kprobe at %p unregistered (nmissed %lu)\n", (void *)kp.addr,
	       kp.nmissed);
	return 0;
}
