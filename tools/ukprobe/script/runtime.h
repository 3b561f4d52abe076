/* SPDX-License-Identifier: MIT */
/*
 * runtime.h - what every compiled `ukprobe run` script includes (ukprobe
 * writes it next to the generated C; doc/scripts.md): map tables,
 * aggregations, builtins, records.
 *
 * Contexts: rt_* functions run in a probe handler [hit] (async-signal-
 * safe, no allocation, no locks, no vector registers: the object is built
 * with -mgeneral-regs-only) unless they say [init] (BEGIN, END, dump).
 *
 * A map is an open-addressing table of entries [state, key words, value
 * words]. Aggregated maps (count(), hist(), ...) have one table per
 * thread, in the thread's block: plain adds, merged by ukprobe at print.
 * Assigned maps (@m[k] = expr) have one table for the process: an entry
 * is claimed with a compare-and-swap, values are word stores.
 */
#include <stdint.h>
#include <time.h>
#include <sched.h>
#include <unistd.h>
#include <sys/mman.h>
#include <sys/syscall.h>

#include <ukprobes.h>
#include "script_abi.h"

/* No zeroing or copying loop turned into a call of libc's memset or
 * memcpy: those use the vector registers (AArch64's, for any size), and
 * the hit path must not (GCC's; clang keeps such short loops inline). */
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC optimize("no-tree-loop-distribute-patterns")
#endif

#define RT_PROBES 128             /* the longest probe sequence of a look-up */
#define USTACK_WORDS 32           /* a ustack key's frames (ukprobe's USTACK_MAX) */
#define RT_EMPTY 0
#define RT_USED 1
#define RT_DELETED 2
#define RT_CLAIMING 3

/* a string value: 64 bytes, NUL-padded; copied as words (w) */
struct rt_str {
	union {
		char s[64];
		uint64_t w[8];
	};
};

struct rt_ctx {
	char *T;                  /* the thread's block */
	struct pt_regs *regs;     /* NULL in BEGIN and END */
	struct kprobe *kp;
	int ret;                  /* a uretprobe's */
	uint64_t retaddr;         /* a uretprobe's: where its function returns to */
	int init;                 /* BEGIN, END */
	uint32_t probe;           /* the script's probe index */
};

static int64_t rt_pid;
static int64_t rt_t0;
static volatile int rt_stopped;

/* [init] n bytes at p zeroed; whole pages given back (a map's table is
 * committed as it fills: zeroing it all would commit it all) */
static void __attribute__((unused)) rt_zero(void *p, uint64_t n)
{
	uint64_t ps = (uint64_t)sysconf(_SC_PAGESIZE);
	uint64_t a = (uint64_t)(uintptr_t)p, e = a + n, pa = (a + ps - 1) & ~(ps - 1), pe = e & ~(ps - 1);

	if (pe > pa && !madvise((void *)(uintptr_t)pa, pe - pa, MADV_DONTNEED)) {
		__builtin_memset(p, 0, pa - a);
		__builtin_memset((void *)(uintptr_t)pe, 0, e - pe);
	} else {
		__builtin_memset(p, 0, n);
	}
}

static inline uint64_t rt_hash(const uint64_t *k, uint32_t n)
{
	uint64_t h = 0x9e3779b97f4a7c15ULL;
	uint32_t i;

	for (i = 0; i < n; i++) {
		h ^= k[i];
		h *= 0xff51afd7ed558ccdULL;
		h ^= h >> 32;
	}
	return h;
}

/* The value words of key in the table (cap entries of esz words, keys of
 * kw words), or NULL; insert: claim an entry for a new key (NULL when the
 * table is full: *drops counts it). */
static inline uint64_t *rt_find(uint64_t *tab, uint32_t cap, uint32_t esz, const uint64_t *key,
				uint32_t kw, int insert, uint64_t *drops)
{
	uint64_t h = rt_hash(key, kw), *tomb = 0, *e;
	uint32_t i, j;

	for (i = 0; i < RT_PROBES && i < cap; i++) {
		uint64_t st;

		e = tab + (size_t)((h + i) & (cap - 1)) * esz;
		st = __atomic_load_n(&e[0], __ATOMIC_ACQUIRE);
		if (st == RT_EMPTY)
			break;
		if (st == RT_DELETED) {
			if (!tomb)
				tomb = e;
			continue;
		}
		if (st != RT_USED)
			continue;
		for (j = 0; j < kw && e[1 + j] == key[j]; j++)
			;
		if (j == kw)
			return e + 1 + kw;
	}
	if (!insert)
		return 0;
	if (!tomb && (i == RT_PROBES || i == cap)) {
		if (drops)
			(*drops)++;
		return 0;
	}
	e = tomb ? tomb : tab + (size_t)((h + i) & (cap - 1)) * esz;
	{
		uint64_t expected = tomb ? RT_DELETED : RT_EMPTY;

		if (!__atomic_compare_exchange_n(&e[0], &expected, RT_CLAIMING, 0, __ATOMIC_ACQUIRE,
						 __ATOMIC_RELAXED)) {
			if (drops)
				(*drops)++;
			return 0;
		}
	}
	for (j = 0; j < kw; j++)
		e[1 + j] = key[j];
	for (j = 1 + kw; j < esz; j++)
		e[j] = 0;
	__atomic_store_n(&e[0], RT_USED, __ATOMIC_RELEASE);
	return e + 1 + kw;
}

/* A map without keys (@x): its one entry is the table's first, found
 * without a hash or a search. */
static inline void rt_clear_words(uint64_t *w, uint32_t n)
{
	uint32_t i;

	for (i = 0; i < n; i++)
		w[i] = 0;
}

static inline uint64_t *rt_single(uint64_t *tab, uint32_t esz, int insert)
{
	uint64_t st = __atomic_load_n(&tab[0], __ATOMIC_ACQUIRE);
	uint32_t j;

	if (__builtin_expect(st == RT_USED, 1))
		return tab + 1;
	if (!insert || st == RT_CLAIMING ||
	    !__atomic_compare_exchange_n(&tab[0], &st, RT_CLAIMING, 0, __ATOMIC_ACQUIRE,
					 __ATOMIC_RELAXED))
		return 0;
	for (j = 1; j < esz; j++)
		tab[j] = 0;
	__atomic_store_n(&tab[0], RT_USED, __ATOMIC_RELEASE);
	return tab + 1;
}

static inline void rt_delete(uint64_t *tab, uint32_t cap, uint32_t esz, const uint64_t *key,
			     uint32_t kw)
{
	uint64_t *v = kw ? rt_find(tab, cap, esz, key, kw, 0, 0) : rt_single(tab, esz, 0);

	if (v)
		__atomic_store_n(v - 1 - kw, RT_DELETED, __ATOMIC_RELEASE);
}

static inline uint64_t *rt_drops(struct rt_ctx *c)
{
	return &((struct ukp_script_thread *)(void *)c->T)->drops;
}

/* hist(): bpftrace's buckets: < 0, 0, 1, then [2^k, 2^(k+1)) */
static inline uint32_t rt_hist_bucket(int64_t v)
{
	uint32_t b = 0;
	uint64_t u;

	if (v < 0)
		return 0;
	if (v == 0)
		return 1;
	for (u = (uint64_t)v; u > 1; u >>= 1)
		b++;
	return b + 2;
}

/* lhist(): below min, then (max - min) / step buckets, then max and over */
static inline uint32_t rt_lhist_bucket(int64_t v, int64_t min, int64_t max, int64_t step)
{
	if (v < min)
		return 0;
	if (v >= max)
		return (uint32_t)((max - min) / step) + 1;
	return (uint32_t)((v - min) / step) + 1;
}

static inline int64_t rt_div(int64_t a, int64_t b)
{
	return b ? a / b : 0;
}

static inline int64_t rt_mod(int64_t a, int64_t b)
{
	return b ? a % b : 0;
}

/* The handlers' system calls: the instruction itself, not the C
 * library's syscall(), which may be probed, and in a dynamic program
 * launched is the agent's own (agent/raw_fork.c), whose fork path the
 * vector-free proof would follow. The kernel's result (-errno). */
static inline long rt_sys(long n, long a, long b, long c)
{
#if defined(__x86_64__)
	long r;

	__asm__ volatile("syscall"
			 : "=a"(r)
			 : "a"(n), "D"(a), "S"(b), "d"(c)
			 : "rcx", "r11", "memory");
	return r;
#elif defined(__aarch64__)
	register long x8 __asm__("x8") = n;
	register long x0 __asm__("x0") = a;
	register long x1 __asm__("x1") = b;
	register long x2 __asm__("x2") = c;

	__asm__ volatile("svc #0" : "+r"(x0) : "r"(x8), "r"(x1), "r"(x2) : "memory");
	return x0;
#else
	return syscall(n, a, b, c);
#endif
}

/* nsecs: CLOCK_MONOTONIC, as bpftrace's; by the system call, not the
 * vDSO, whose call through a pointer the vector-free proof cannot
 * follow */
static inline int64_t rt_nsecs(void)
{
	struct timespec ts;

	rt_sys(SYS_clock_gettime, CLOCK_MONOTONIC, (long)&ts, 0);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static inline int64_t rt_cpu(void)
{
	unsigned int cpu = 0;

	rt_sys(SYS_getcpu, (long)&cpu, 0, 0);
	return cpu;
}

static inline void rt_zero_str(struct rt_str *s)
{
	int i;

	for (i = 0; i < 8; i++)
		s->w[i] = 0;
}

/* comm: the thread's name, read again every 256 hits (threads rename
 * themselves) */
static inline struct rt_str rt_comm(struct rt_ctx *c)
{
	struct ukp_script_thread *t = (struct ukp_script_thread *)(void *)c->T;
	struct rt_str s;
	int i;

	if (++t->age >= 256) {
		t->age = 0;
		rt_sys(SYS_prctl, 16 /* PR_GET_NAME */, (long)t->comm, 0);
	}
	rt_zero_str(&s);
	for (i = 0; i < 15 && t->comm[i]; i++)
		s.s[i] = t->comm[i];
	return s;
}

/* str(addr[, n]): at most n - 1 bytes (63 at most) of the string at
 * addr, read without faulting */
static inline struct rt_str rt_read_str(int64_t addr, int64_t n)
{
	struct rt_str s;
	int64_t i;

	rt_zero_str(&s);
	if (n > 64 || n <= 0)
		n = 64;
	for (i = 0; i < n - 1; i++) {
		char ch;

		if (copy_from_user_nofault(&ch, (const char *)(uintptr_t)addr + i, 1) || !ch)
			break;
		s.s[i] = ch;
	}
	return s;
}

/* buf(p, n): [n read, 8 words of bytes]; nothing read of an unreadable
 * range */
static inline void rt_read_buf(uint64_t *dst, int64_t addr, int64_t n)
{
	int i;

	for (i = 0; i < 9; i++)
		dst[i] = 0;
	if (!copy_from_user_nofault(dst + 1, (const void *)(uintptr_t)addr, (size_t)n))
		dst[0] = (uint64_t)n;
}

static inline int rt_str_eq(struct rt_str a, struct rt_str b)
{
	int i;

	for (i = 0; i < 64; i++) {
		if (a.s[i] != b.s[i])
			return 0;
		if (!a.s[i])
			return 1;
	}
	return 1;
}

static inline struct rt_str rt_lit(const char *p)
{
	struct rt_str s;
	int i;

	rt_zero_str(&s);
	for (i = 0; i < 63 && p[i]; i++)
		s.s[i] = p[i];
	return s;
}

#ifndef USTACK_REC
#define USTACK_REC 16             /* (gen.c defines it: script.h's) */
#endif

/* [hit] ustack in a record: [count, frames...], the frames past count
 * zeros (the agent's reader names every frame word) */
static inline void rt_rec_stack(const struct rt_ctx *c, uint64_t *dst, int max)
{
	int i;

	for (i = 0; i < USTACK_REC; i++)
		dst[1 + i] = 0;
	dst[0] = (uint64_t)ukpa_script_ustack(c->kp, c->ret, c->retaddr, c->regs, dst + 1, max);
}

static inline void rt_put_str(uint64_t *dst, struct rt_str s)
{
	int i;

	for (i = 0; i < 8; i++)
		dst[i] = s.w[i];
}

static inline struct rt_str rt_get_str(const uint64_t *src)
{
	struct rt_str s;
	int i;

	for (i = 0; i < 8; i++)
		s.w[i] = src ? src[i] : 0;
	return s;
}

/* A printf/print record: to the thread's ring in a hit, to ukprobe at
 * once in BEGIN and END. */
static inline void rt_out(struct rt_ctx *c, const uint64_t *rec, uint32_t len)
{
	if (c->init)
		ukpa_script_send(UKP_SCRIPT_OUT, 0, rec, len);
	else
		ukpa_script_emit(c->kp, c->ret, rec, len);
}

/* [init] Send the entries of one table: state words dropped. */
static void rt_dump_table(uint32_t map, const uint64_t *tab, uint32_t cap, uint32_t esz)
{
	/* a message is at most 4096 bytes (proto.h) */
	static uint64_t buf[(4096 - 64) / 8];
	uint32_t i, j, n = 0, per = (uint32_t)(sizeof(buf) / 8) / (esz - 1);

	for (i = 0; i < cap; i++) {
		const uint64_t *e = tab + (size_t)i * esz;

		if (e[0] != RT_USED)
			continue;
		for (j = 1; j < esz; j++)
			buf[n * (esz - 1) + j - 1] = e[j];
		if (++n == per) {
			ukpa_script_send(UKP_SCRIPT_MAP, map, buf, n * (esz - 1) * 8);
			n = 0;
		}
	}
	if (n)
		ukpa_script_send(UKP_SCRIPT_MAP, map, buf, n * (esz - 1) * 8);
}

/* [init] The frames of the ustack at word off of every entry: their
 * symbols to ukprobe (once each) */
static void rt_stack_syms(const uint64_t *tab, uint32_t cap, uint32_t esz, uint32_t off)
{
	uint32_t i;
	uint64_t j;

	for (i = 0; i < cap; i++) {
		const uint64_t *e = tab + (size_t)i * esz;

		if (e[0] != RT_USED)
			continue;
		for (j = 0; j < e[off] && j < USTACK_WORDS; j++)
			ukpa_script_sym(e[off + 1 + j]);
	}
}

/* [init] The addresses (usym()) at word off of every entry: their
 * symbols to ukprobe */
static void rt_addr_syms(const uint64_t *tab, uint32_t cap, uint32_t esz, uint32_t off)
{
	uint32_t i;

	for (i = 0; i < cap; i++)
		if (tab[(size_t)i * esz] == RT_USED)
			ukpa_script_sym(tab[(size_t)i * esz + off]);
}

/* [init] clear(), zero() */
static void rt_clear_table(uint64_t *tab, uint32_t cap, uint32_t esz, uint32_t kw, int zero)
{
	uint32_t i, j;

	for (i = 0; i < cap; i++) {
		uint64_t *e = tab + (size_t)i * esz;

		if (!zero) {
			e[0] = RT_EMPTY;
			continue;
		}
		if (e[0] == RT_USED)
			for (j = 1 + kw; j < esz; j++)
				e[j] = 0;
	}
}
