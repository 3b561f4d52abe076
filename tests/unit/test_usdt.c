// SPDX-License-Identifier: MIT
/*
 * test_usdt.c - SDT probes (<ukprobes.h>'s usdt_*): the notes found and
 * their argument specs decoded (usdt_targets.c: every form GCC writes),
 * probes on them by "%PROVIDER:NAME" hit with the values the specs
 * give, on the breakpoint path and optimized; semaphores raised while a
 * probe is registered (several on one, by name or address, in this
 * program and in a dlopen()ed object, across fork, under threads) and
 * put back; a probe in a function that no symbol names
 * (tests/progs/libukpsdt.so, stripped).
 */
#define _SDT_HAS_SEMAPHORES 1
#include <sys/sdt.h>

#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <criterion/criterion.h>

#include "ukprobes.h"
#include "usdt_targets.h"

__extension__ unsigned short ukt_sem_semaphore __attribute__((unused, section(".probes")));
static _Atomic unsigned long enabled_calls;

/* counts the calls that saw the semaphore raised */
__attribute__((noinline)) void ukt_sem_fire(int v)
{
	if (ukt_sem_semaphore)
		atomic_fetch_add(&enabled_calls, 1);
	STAP_PROBE1(ukt, sem, v);
}

TestSuite(usdt);

/* ----------------------------------------------- decoding the specs */

/* [hit] The value of a as the note says, from regs (the evaluator a
 * tool writes with the decoded form). */
static long arg_value(const struct usdt_arg *a, const struct pt_regs *regs, bool *ok)
{
	const unsigned long *w = (const unsigned long *)regs;
	unsigned long v = 0;

	switch (a->kind) {
	case USDT_ARG_REG:
		v = w[a->reg];
		break;
	case USDT_ARG_MEM:
		*ok = *ok && !copy_from_user_nofault(&v, (void *)(w[a->reg] + a->off), a->size);
		break;
	case USDT_ARG_CONST:
		v = (unsigned long)a->off;
		break;
	case USDT_ARG_ADDR:
		*ok = *ok && !copy_from_user_nofault(&v, (void *)a->addr, a->size);
		break;
	case USDT_ARG_INDEX: {
		unsigned long at = (a->reg == USDT_ARG_NOREG ? 0 : w[a->reg]) +
				   w[a->index] * a->scale + a->addr + (unsigned long)a->off;

		*ok = *ok && !copy_from_user_nofault(&v, (void *)at, a->size);
		break;
	}
	default:
		*ok = false;
	}
	if (a->size < 8) {
		unsigned int bits = 8 * a->size;

		v &= (1UL << bits) - 1;
		if (a->is_signed && (v >> (bits - 1)))
			v |= ~0UL << bits;
	}
	return (long)v;
}

static struct usdt_probe probe_args, probe_mem, probe_ptr;
static char buf_args[8192], buf_mem[8192], buf_ptr[8192];
static long got[USDT_ARG_MAX];
static _Atomic int got_hits;
static _Atomic bool got_ok;
static const struct usdt_probe *cur;

static int args_pre(struct kprobe *p, struct pt_regs *regs)
{
	bool ok = true;
	int i;

	for (i = 0; i < cur->nargs; i++)
		got[i] = arg_value(&cur->arg[i], regs, &ok);
	atomic_store(&got_ok, ok);
	atomic_fetch_add(&got_hits, 1);
	return 0;
}

/* x86-64's register names as the notes write them, by pt_regs slot */
static int reg_slot(const char *r, size_t n)
{
	static const struct { const char *names[4]; size_t off; } regs[] = {
		{ { "rax", "eax", "ax", "al" }, offsetof(struct pt_regs, ax) },
		{ { "rbx", "ebx", "bx", "bl" }, offsetof(struct pt_regs, bx) },
		{ { "rcx", "ecx", "cx", "cl" }, offsetof(struct pt_regs, cx) },
		{ { "rdx", "edx", "dx", "dl" }, offsetof(struct pt_regs, dx) },
		{ { "rsi", "esi", "si", "sil" }, offsetof(struct pt_regs, si) },
		{ { "rdi", "edi", "di", "dil" }, offsetof(struct pt_regs, di) },
		{ { "rbp", "ebp", "bp", "bpl" }, offsetof(struct pt_regs, bp) },
		{ { "rsp", "esp", "sp", "spl" }, offsetof(struct pt_regs, sp) },
		{ { "r8", "r8d", "r8w", "r8b" }, offsetof(struct pt_regs, r8) },
		{ { "r9", "r9d", "r9w", "r9b" }, offsetof(struct pt_regs, r9) },
		{ { "r10", "r10d", "r10w", "r10b" }, offsetof(struct pt_regs, r10) },
		{ { "r11", "r11d", "r11w", "r11b" }, offsetof(struct pt_regs, r11) },
		{ { "r12", "r12d", "r12w", "r12b" }, offsetof(struct pt_regs, r12) },
		{ { "r13", "r13d", "r13w", "r13b" }, offsetof(struct pt_regs, r13) },
		{ { "r14", "r14d", "r14w", "r14b" }, offsetof(struct pt_regs, r14) },
		{ { "r15", "r15d", "r15w", "r15b" }, offsetof(struct pt_regs, r15) },
	};
	size_t i, j;

	for (i = 0; i < sizeof(regs) / sizeof(regs[0]); i++)
		for (j = 0; j < 4; j++)
			if (strlen(regs[i].names[j]) == n && !strncmp(regs[i].names[j], r, n))
				return (int)(regs[i].off / 8);
	return -1;
}

/*
 * The decoded argument agrees with its text, whatever the compiler chose
 * to write ([-]SIZE@%REG, [-]SIZE@$IMM, [-]SIZE@OFF(%REG),
 * [-]SIZE@SYM(%rip)): GCC and clang, with or without a sanitizer, write
 * other registers and forms for the same source.
 */
static void check_decoded(const struct usdt_arg *a)
{
	char t[64], *at, *op;
	int size;

	cr_assert_lt(a->textlen, sizeof(t));
	memcpy(t, a->text, a->textlen);
	t[a->textlen] = '\0';
	at = strchr(t, '@');
	cr_assert(at, "%s", t);
	size = atoi(t);
	cr_assert_eq(a->size, size < 0 ? -size : size, "%s", t);
	cr_assert_eq(a->is_signed, size < 0, "%s", t);
	op = at + 1;
	if (op[0] == '%') {
		cr_assert_eq(a->kind, USDT_ARG_REG, "%s", t);
		cr_assert_eq((int)a->reg, reg_slot(op + 1, strlen(op + 1)), "%s", t);
	} else if (op[0] == '$') {
		cr_assert_eq(a->kind, USDT_ARG_CONST, "%s", t);
		cr_assert_eq(a->off, strtol(op + 1, NULL, 0), "%s", t);
	} else if (strstr(op, "(%rip)")) {
		cr_assert_eq(a->kind, USDT_ARG_ADDR, "%s", t);
	} else {
		char *paren = strchr(op, '(');

		cr_assert(paren && paren[1] == '%', "%s", t);
		cr_assert_eq(a->kind, USDT_ARG_MEM, "%s", t);
		cr_assert_eq(a->off, strtol(op, NULL, 0), "%s", t);
		cr_assert_eq((int)a->reg, reg_slot(paren + 2, strcspn(paren + 2, ")")), "%s", t);
	}
}

static void find(const char *name, struct usdt_probe *pr, char *buf, size_t len)
{
	pr->size = sizeof(*pr);
	cr_assert_eq(usdt_find(name, pr, buf, len), 0, "usdt_find(%s)", name);
}

Test(usdt, notes_decoded)
{
	find("%ukt:args", &probe_args, buf_args, sizeof(buf_args));
	cr_assert_str_eq(probe_args.provider, "ukt");
	cr_assert_str_eq(probe_args.name, "args");
	cr_assert_eq(probe_args.nargs, 8, "%s", probe_args.args);
	cr_assert_eq(probe_args.semaphore, 0);
	/* GCC -O2: -4@%edi -8@%rsi -1@%dl -2@%cx 4@%r8d 8@%r9 -4@sym(%rip) -4@$5;
	 * each decoded as its text says, whatever the compiler wrote */
	for (int i = 0; i < probe_args.nargs; i++)
		check_decoded(&probe_args.arg[i]);
	cr_assert(probe_args.arg[0].is_signed && probe_args.arg[0].size == 4);
	cr_assert_eq(probe_args.arg[2].size, 1);
	cr_assert(!probe_args.arg[4].is_signed);
	if (probe_args.arg[6].kind == USDT_ARG_ADDR)
		cr_assert_eq(probe_args.arg[6].addr, (unsigned long)&ukt_usdt_global);
	cr_assert_eq(probe_args.arg[7].kind, USDT_ARG_CONST);
	cr_assert_eq(probe_args.arg[7].off, 5);
	cr_assert_eq(probe_args.arg[7].textlen, strlen("-4@$5"));
	cr_assert(!strncmp(probe_args.arg[7].text, "-4@$5", 5));

	find("%ukt:mem", &probe_mem, buf_mem, sizeof(buf_mem));
	for (int i = 0; i < probe_mem.nargs; i++)
		check_decoded(&probe_mem.arg[i]);
	cr_assert_eq(probe_mem.arg[0].kind, USDT_ARG_MEM, "%s", probe_mem.args);
	cr_assert_lt(probe_mem.arg[0].off, 0);
	cr_assert_eq(probe_mem.arg[3].kind, USDT_ARG_CONST);
	cr_assert_eq(probe_mem.arg[3].off, -3);

	/* the program's own semaphore */
	{
		struct usdt_probe s = { .size = sizeof(s) };
		char buf[8192];

		cr_assert_eq(usdt_find("%ukt:sem", &s, buf, sizeof(buf)), 0);
		cr_assert_eq(s.semaphore, (unsigned long)&ukt_sem_semaphore);
	}
	probe_ptr.size = sizeof(probe_ptr);
	cr_assert_eq(usdt_find("%ukt:nosuch", &probe_ptr, buf_ptr, sizeof(buf_ptr)), -ENOENT);
	cr_assert_eq(usdt_find("libc.so.6:%ukt:args", &probe_ptr, buf_ptr, sizeof(buf_ptr)),
		     -ENOENT);
	cr_assert_eq(usdt_find("%ukt:args", &probe_ptr, buf_ptr, 8), -ERANGE);
}

/* A probe by name: the values the note's specs give, then optimized. */
static void check_hits(const char *name, struct usdt_probe *pr, char *buf, void (*call)(void),
		       const long *want, int n)
{
	struct kprobe kp = { .symbol_name = name, .pre_handler = args_pre };
	int round, i;

	find(name, pr, buf, 8192);
	cur = pr;
	cr_assert_eq(pr->nargs, n);
	cr_assert_eq(register_kprobe(&kp), 0, "register %s", name);
	cr_assert_eq((unsigned long)kp.addr, pr->addr);
	for (round = 0; round < 2; round++) {
		memset(got, 0, sizeof(got));
		atomic_store(&got_hits, 0);
		call();
		cr_assert_eq(atomic_load(&got_hits), 1, "%s round %d", name, round);
		cr_assert(atomic_load(&got_ok));
		for (i = 0; i < n; i++)
			cr_assert_eq(got[i], want[i], "%s round %d arg %d (%.*s): %ld, want %ld",
				     name, round, i + 1, (int)pr->arg[i].textlen, pr->arg[i].text,
				     got[i], want[i]);
		/* the nop is jump-optimized like any probe */
		cr_assert_eq(ukprobes_wait_optimizer(), 0);
		if (!round)
			cr_assert(kprobe_optimized(&kp), "%s is not optimized", name);
	}
	unregister_kprobe(&kp);
}

static const char *hello = "hello";

static void call_args(void)
{
	ukt_usdt_args(-7, -1234567890123L, -5, -300, 4000000000u, hello);
}

static void call_mem(void)
{
	ukt_usdt_mem(21, 10, hello);
}

static struct ukt_pair pair = { -99, -42 };

static void call_ptr(void)
{
	ukt_usdt_ptr(&pair);
}

Test(usdt, args_registers_symbol_constant)
{
	const long want[] = { -7, -1234567890123L, -5, -300, 4000000000L, (long)hello,
			      0x1234567, 5 };

	check_hits("%ukt:args", &probe_args, buf_args, call_args, want, 8);
}

Test(usdt, args_memory)
{
	const long want_mem[] = { 42, 9, (long)hello, -3 };
	const long want_ptr[] = { -99, -42 };

	check_hits("%ukt:mem", &probe_mem, buf_mem, call_mem, want_mem, 4);
	check_hits("%ukt:ptr", &probe_ptr, buf_ptr, call_ptr, want_ptr, 2);
}

void ukt_sdt_symoff(void);
extern long ukt_sdt_words[2];

/* OFF+SYM(%rip), as PostgreSQL's notes write a global struct's field
 * ("-4@40+CheckpointStats(%rip)"), and SYM+OFF(%rip) (usdt_asm.S) */
Test(usdt, args_symbol_offsets)
{
	static struct usdt_probe probe_symoff;
	static char buf_symoff[8192];
	const long want[] = { -5, 0x1122334455667788L };

	find("%ukt:symoff", &probe_symoff, buf_symoff, sizeof(buf_symoff));
	cr_assert_eq(probe_symoff.arg[0].kind, USDT_ARG_ADDR, "%s", probe_symoff.args);
	cr_assert_eq(probe_symoff.arg[0].addr, (unsigned long)&ukt_sdt_words + 4);
	cr_assert_eq(probe_symoff.arg[1].addr, (unsigned long)&ukt_sdt_words + 8);
	check_hits("%ukt:symoff", &probe_symoff, buf_symoff, ukt_sdt_symoff, want, 2);
}

long ukt_sdt_index(const int *a, long i, long zero);

static const int index_array[] = { -2, -20, 30, -40, 50 };

static void call_index(void)
{
	ukt_sdt_index(index_array, 1, 0);
}

/* x86-64's index forms (usdt_asm.S): decoded, and the values they give;
 * a thread-local variable's "%fs:" form is left undecoded (kind 0) */
Test(usdt, args_index_register)
{
	static struct usdt_probe pr;
	static char buf[8192];
	const long want[] = { 30, 0x1122334455667788L, -1, 0x55667788, -20 };

	find("%ukt:index", &pr, buf, sizeof(buf));
	cr_assert_eq(pr.nargs, 6, "%s", pr.args);
	cr_assert_eq(pr.arg[0].kind, USDT_ARG_INDEX);
	cr_assert_eq(pr.arg[0].off, 4);
	cr_assert_eq(pr.arg[0].scale, 4);
	cr_assert_eq(pr.arg[0].reg, (unsigned int)(offsetof(struct pt_regs, di) / 8));
	cr_assert_eq(pr.arg[0].index, offsetof(struct pt_regs, si) / 8);
	cr_assert_eq(pr.arg[0].addr, 0);
	cr_assert_eq(pr.arg[1].kind, USDT_ARG_INDEX);
	cr_assert_eq(pr.arg[1].reg, USDT_ARG_NOREG);
	cr_assert_eq(pr.arg[1].addr, (unsigned long)&ukt_sdt_words);
	cr_assert_eq(pr.arg[1].scale, 8);
	cr_assert_eq(pr.arg[2].scale, 1);
	cr_assert(pr.arg[2].is_signed && pr.arg[2].size == 1);
	cr_assert_eq(pr.arg[3].addr, (unsigned long)&ukt_sdt_words);
	cr_assert_eq(pr.arg[3].off, 4);
	cr_assert_eq(pr.arg[4].off, -4);
	cr_assert_eq(pr.arg[5].kind, 0);
	cr_assert_eq(pr.arg[5].textlen, strlen("-8@%fs:ukt_tls@tpoff"));
	pr.nargs = 5; /* (the evaluator's: the undecoded one is not read) */
	cur = &pr;
	{
		struct kprobe kp = { .symbol_name = "%ukt:index", .pre_handler = args_pre };
		int round, i;

		cr_assert_eq(register_kprobe(&kp), 0);
		for (round = 0; round < 2; round++) {
			atomic_store(&got_hits, 0);
			call_index();
			cr_assert_eq(atomic_load(&got_hits), 1);
			cr_assert(atomic_load(&got_ok));
			for (i = 0; i < 5; i++)
				cr_assert_eq(got[i], want[i], "arg %d (%.*s): %ld, want %ld", i + 1,
					     (int)pr.arg[i].textlen, pr.arg[i].text, got[i], want[i]);
			cr_assert_eq(ukprobes_wait_optimizer(), 0);
		}
		unregister_kprobe(&kp);
	}
}

/* ------------------------------------------------------ semaphores */

static _Atomic unsigned long hits;

static int count_pre(struct kprobe *p, struct pt_regs *regs)
{
	atomic_fetch_add(&hits, 1);
	return 0;
}

Test(usdt, semaphore_counts_probes)
{
	struct usdt_probe s = { .size = sizeof(s) };
	char buf[8192];
	struct kprobe a = { .symbol_name = "%ukt:sem", .pre_handler = count_pre };
	struct kprobe b = { .pre_handler = count_pre };

	cr_assert_eq(usdt_find("%ukt:sem", &s, buf, sizeof(buf)), 0);
	cr_assert_eq(ukt_sem_semaphore, 0);
	ukt_sem_fire(1);
	cr_assert_eq(atomic_load(&enabled_calls), 0);

	cr_assert_eq(register_kprobe(&a), 0);
	cr_assert_eq(ukt_sem_semaphore, 1);
	/* by address: the same note, counted too */
	b.addr = (kprobe_opcode_t *)s.addr;
	cr_assert_eq(register_kprobe(&b), 0);
	cr_assert_eq(ukt_sem_semaphore, 2);
	ukt_sem_fire(2);
	cr_assert_eq(atomic_load(&enabled_calls), 1);
	cr_assert_eq(atomic_load(&hits), 2);
	/* disabled: still registered, still counted */
	cr_assert_eq(disable_kprobe(&a), 0);
	cr_assert_eq(ukt_sem_semaphore, 2);
	unregister_kprobe(&a);
	cr_assert_eq(ukt_sem_semaphore, 1);
	unregister_kprobe(&a); /* twice: nothing more */
	cr_assert_eq(ukt_sem_semaphore, 1);
	unregister_kprobe(&b);
	cr_assert_eq(ukt_sem_semaphore, 0);
	ukt_sem_fire(3);
	cr_assert_eq(atomic_load(&enabled_calls), 1);
	cr_assert_eq(atomic_load(&hits), 2);
}

/* Semaphores where the program cannot write: in a RELRO page (read-only
 * once relocated, though its segment is writable) and in read-only data.
 * They are raised and lowered as the kernel does a uprobe's ref_ctr, by
 * a forced write; before, the first faulted (RELRO) or was refused. */
extern unsigned short ukt_relro_semaphore;          /* usdt_asm.S */
extern const volatile unsigned short ukt_rodata_semaphore;

__attribute__((noinline)) static int ukt_relro_fire(void)
{
	int on = *(volatile unsigned short *)&ukt_relro_semaphore != 0;

	STAP_PROBE(ukt, relro);
	return on;
}

__attribute__((noinline)) static int ukt_rodata_fire(void)
{
	int on = ukt_rodata_semaphore != 0;

	STAP_PROBE(ukt, rodata);
	return on;
}

/* [reg] the permissions of addr's page, from /proc/self/maps */
static void page_perms(const void *addr, char perms[5])
{
	FILE *f = fopen("/proc/self/maps", "r");
	unsigned long lo, hi;
	char line[512];

	cr_assert(f);
	strcpy(perms, "?");
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "%lx-%lx %4s", &lo, &hi, perms) == 3 &&
		    (unsigned long)addr >= lo && (unsigned long)addr < hi)
			break;
	fclose(f);
}

Test(usdt, semaphore_read_only)
{
	struct kprobe a = { .symbol_name = "%ukt:relro", .pre_handler = count_pre };
	struct kprobe b = { .symbol_name = "%ukt:relro", .pre_handler = count_pre };
	struct kprobe c = { .symbol_name = "%ukt:rodata", .pre_handler = count_pre };
	char perms[5];

	/* the pages are read-only indeed */
	page_perms(&ukt_relro_semaphore, perms);
	cr_assert_eq(perms[1], '-', "RELRO semaphore's page: %s", perms);
	page_perms((const void *)&ukt_rodata_semaphore, perms);
	cr_assert_eq(perms[1], '-', "read-only semaphore's page: %s", perms);

	cr_assert_eq(ukt_relro_fire(), 0);
	cr_assert_eq(register_kprobe(&a), 0);
	cr_assert_eq(register_kprobe(&b), 0);
	cr_assert_eq(*(volatile unsigned short *)&ukt_relro_semaphore, 2);
	cr_assert_eq(ukt_relro_fire(), 1);
	cr_assert_eq(atomic_load(&hits), 2);
	unregister_kprobe(&a);
	cr_assert_eq(*(volatile unsigned short *)&ukt_relro_semaphore, 1);
	unregister_kprobe(&b);
	cr_assert_eq(ukt_relro_fire(), 0);
	/* still read-only: the program's protection is kept */
	page_perms(&ukt_relro_semaphore, perms);
	cr_assert_eq(perms[1], '-', "%s", perms);

	cr_assert_eq(ukt_rodata_fire(), 0);
	cr_assert_eq(register_kprobe(&c), 0);
	cr_assert_eq(ukt_rodata_fire(), 1);
	unregister_kprobe(&c);
	cr_assert_eq(ukt_rodata_fire(), 0);
	cr_assert_eq(atomic_load(&hits), 3);
}

/* the semaphore of a batch's probes, and a failed batch's put back */
Test(usdt, semaphore_batch)
{
	struct kprobe a = { .symbol_name = "%ukt:sem", .pre_handler = count_pre };
	struct kprobe bad = { .symbol_name = "%ukt:nosuch", .pre_handler = count_pre };
	struct kprobe *kps[] = { &a, &bad };

	cr_assert_eq(register_kprobes(kps, 2), -ENOENT);
	cr_assert_eq(ukt_sem_semaphore, 0);
	a.addr = NULL; /* (the kernel's reuse idiom) */
	cr_assert_eq(register_kprobes(kps, 1), 0);
	cr_assert_eq(ukt_sem_semaphore, 1);
	unregister_kprobes(kps, 1);
	cr_assert_eq(ukt_sem_semaphore, 0);
}

Test(usdt, semaphore_across_fork)
{
	struct kprobe a = { .symbol_name = "%ukt:sem", .pre_handler = count_pre };
	int status;
	pid_t pid;

	cr_assert_eq(register_kprobe(&a), 0);
	cr_assert_eq(ukprobes_wait_optimizer(), 0);
	pid = fork();
	cr_assert_neq(pid, -1);
	if (pid == 0) {
		unsigned long h = atomic_load(&hits);
		int ok = ukt_sem_semaphore == 1;

		ukt_sem_fire(1);
		ok = ok && atomic_load(&hits) == h + 1 && atomic_load(&enabled_calls) == 1;
		unregister_kprobe(&a);
		ok = ok && ukt_sem_semaphore == 0;
		ukt_sem_fire(2);
		ok = ok && atomic_load(&hits) == h + 1 && atomic_load(&enabled_calls) == 1;
		_exit(ok ? 0 : 1);
	}
	cr_assert_eq(waitpid(pid, &status, 0), pid);
	cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0, "child: %#x", status);
	cr_assert_eq(ukt_sem_semaphore, 1);
	unregister_kprobe(&a);
	cr_assert_eq(ukt_sem_semaphore, 0);
}

#define NTHREADS 4
#define NCALLS 20000

static void *fire_thread(void *arg)
{
	int i;

	for (i = 0; i < NCALLS; i++)
		ukt_sem_fire(i);
	return arg;
}

Test(usdt, threads_counted_exactly)
{
	struct kprobe a = { .symbol_name = "%ukt:sem", .pre_handler = count_pre };
	pthread_t t[NTHREADS];
	int i;

	cr_assert_eq(register_kprobe(&a), 0);
	for (i = 0; i < NTHREADS; i++)
		cr_assert_eq(pthread_create(&t[i], NULL, fire_thread, NULL), 0);
	/* registered and unregistered again while they run */
	for (i = 0; i < 50; i++) {
		struct kprobe b = { .symbol_name = "%ukt:sem", .pre_handler = count_pre };

		cr_assert_eq(register_kprobe(&b), 0);
		cr_assert_eq(ukt_sem_semaphore, 2);
		unregister_kprobe(&b);
	}
	for (i = 0; i < NTHREADS; i++)
		pthread_join(t[i], NULL);
	cr_assert_geq(atomic_load(&hits), NTHREADS * NCALLS);
	cr_assert_eq(atomic_load(&enabled_calls), NTHREADS * NCALLS);
	unregister_kprobe(&a);
	cr_assert_eq(ukt_sem_semaphore, 0);
}

/* ------------------------------------------------ probes in assembly */

long ukt_sdt_flags(long a, long b);
long ukt_sdt_df(void);

static _Atomic int handler_df = -1;

/* [hit] counts, and notes whether DF was set in the handler */
static int df_pre(struct kprobe *p, struct pt_regs *regs)
{
	unsigned long fl;

	__asm__ volatile("pushfq; popq %0" : "=r"(fl));
	atomic_store(&handler_df, (int)((fl >> 10) & 1));
	atomic_fetch_add(&hits, 1);
	return 0;
}

/* The flags a program keeps live across its probe come back after an
 * optimized hit (the jump takes the template of function entries, which
 * restores the arithmetic flags without popf), and a function that sets
 * DF keeps the usual template: its handler runs with DF clear, and DF
 * is the program's again after. */
Test(usdt, asm_flags_and_df)
{
	struct kprobe a = { .symbol_name = "%ukt:flags", .pre_handler = count_pre };
	struct kprobe b = { .symbol_name = "%ukt:df", .pre_handler = df_pre };
	const long big = (long)(~0UL >> 1);
	int round;

	cr_assert_eq(register_kprobe(&a), 0);
	cr_assert_eq(register_kprobe(&b), 0);
	for (round = 0; round < 2; round++) {
		/* signed less: SF != OF, the overflowing cases included */
		cr_assert_eq(ukt_sdt_flags(1, 2), 1);
		cr_assert_eq(ukt_sdt_flags(2, 1), 0);
		cr_assert_eq(ukt_sdt_flags(-big - 1, 1), 1);
		cr_assert_eq(ukt_sdt_flags(big, -1), 0);
		cr_assert_eq(ukt_sdt_flags(3, 3), 0);
		cr_assert_eq(ukt_sdt_df(), 1);
		cr_assert_eq(atomic_load(&handler_df), 0, "round %d: DF set in the handler", round);
		cr_assert_eq(ukprobes_wait_optimizer(), 0);
		cr_assert(kprobe_optimized(&a) && kprobe_optimized(&b), "round %d", round);
	}
	cr_assert_eq(atomic_load(&hits), 12);
	unregister_kprobe(&a);
	unregister_kprobe(&b);
}

/* ------------------------------------- a dlopen()ed, stripped object */

static void *open_sdtlib(char *path, size_t len)
{
	const char *dir = getenv("UKP_TEST_PROGS");
	void *h;

	cr_assert(dir, "UKP_TEST_PROGS is not set");
	snprintf(path, len, "%s/libukpsdt.so", dir);
	h = dlopen(path, RTLD_NOW);
	cr_assert(h, "%s", dlerror());
	return h;
}

Test(usdt, dlopen_stripped_object)
{
	char path[4096], buf[8192], ibuf[KSYM_NAME_LEN + 4096];
	struct usdt_probe s = { .size = sizeof(s) };
	struct ksym_info info = { .size = sizeof(info) };
	struct kprobe a = { .symbol_name = "libukpsdt.so:%ukpsdt:fire", .pre_handler = count_pre };
	struct kprobe b = { .symbol_name = "%ukpsdt:fire", .pre_handler = count_pre };
	unsigned short *sem;
	int (*call)(int), (*enabled)(void);
	void *h;

	/* not loaded yet: no such probe */
	cr_assert_eq(register_kprobe(&a), -ENOENT);
	h = open_sdtlib(path, sizeof(path));
	sem = dlsym(h, "ukpsdt_fire_semaphore");
	call = (int (*)(int))dlsym(h, "ukpsdt_call");
	enabled = (int (*)(void))dlsym(h, "ukpsdt_enabled_calls");
	cr_assert(sem && call && enabled);
	cr_assert_eq(usdt_find("libukpsdt.so:%ukpsdt:fire", &s, buf, sizeof(buf)), 0);
	cr_assert_eq(s.semaphore, (unsigned long)sem);
	/* no function symbol holds the probe */
	cr_assert_eq(kallsyms_lookup_info(s.addr, &info, ibuf, sizeof(ibuf)), -ENOENT);

	cr_assert_eq(register_kprobe(&a), 0);
	cr_assert_eq(register_kprobe(&b), 0);
	cr_assert_eq(*sem, 2);
	cr_assert_eq(call(4), 13);
	cr_assert_eq(enabled(), 1);
	cr_assert_eq(atomic_load(&hits), 2);
	cr_assert_eq(ukprobes_wait_optimizer(), 0);
	cr_assert(kprobe_optimized(&a));
	cr_assert_eq(call(5), 16);
	cr_assert_eq(atomic_load(&hits), 4);
	unregister_kprobe(&b);
	cr_assert_eq(*sem, 1);
	unregister_kprobe(&a);
	cr_assert_eq(*sem, 0);
	cr_assert_eq(call(6), 19);
	cr_assert_eq(enabled(), 2);
	cr_assert_eq(atomic_load(&hits), 4);

	/* unloaded while registered: [GONE], and nothing written at
	 * unregistration */
	a.addr = NULL;
	cr_assert_eq(register_kprobe(&a), 0);
	cr_assert_eq(*sem, 1);
	dlclose(h);
	unregister_kprobe(&a);
}

/* A file, loaded or not: the same notes at the file's addresses. */
static int file_cb(void *data, const struct usdt_probe *p)
{
	struct usdt_probe *out = data;

	if (!strcmp(p->provider, "ukpsdt") && !strcmp(p->name, "fire"))
		*out = *p;
	return 0;
}

Test(usdt, module_file)
{
	char path[4096], buf[8192];
	struct usdt_probe f = { 0 }, s = { .size = sizeof(s) };
	void *h;

	snprintf(path, sizeof(path), "%s/libukpsdt.so", getenv("UKP_TEST_PROGS"));
	cr_assert_eq(module_file_usdt_on_each_probe(path, file_cb, &f), 0);
	cr_assert(f.addr, "no ukpsdt:fire in %s", path);
	cr_assert_eq(f.modbase, 0);
	cr_assert_eq(f.nargs, 1);
	h = open_sdtlib(path, sizeof(path));
	cr_assert_eq(usdt_find("%ukpsdt:fire", &s, buf, sizeof(buf)), 0);
	cr_assert_eq(s.addr, f.addr + s.modbase);
	cr_assert_eq(s.semaphore, f.semaphore + s.modbase);
	cr_assert_eq(module_file_usdt_on_each_probe("/nonexistent/x.so", file_cb, &f), -ENOENT);
	dlclose(h);
}
