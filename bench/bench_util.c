// SPDX-License-Identifier: MIT
/*
 * bench_util.c - timing, statistics, JSON, the bare int3 round trip, the
 * bare detour's patching, and the kernel's uprobes through tracefs, for
 * the benchmark programs (bench.h).
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <ucontext.h>
#include <unistd.h>

#include "ukprobes.h"
#include "bench.h"

uint64_t bench_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* ------------------------------------------------------- statistics */

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

struct bench_stat bench_stats(const double *v, int n)
{
	struct bench_stat s = { 0, 0, 0, n };
	double *c;

	if (n <= 0)
		return s;
	c = malloc((size_t)n * sizeof(*c));
	if (!c)
		abort();
	memcpy(c, v, (size_t)n * sizeof(*c));
	qsort(c, (size_t)n, sizeof(*c), cmp_double);
	s.min = c[0];
	s.max = c[n - 1];
	s.med = n % 2 ? c[n / 2] : (c[n / 2 - 1] + c[n / 2]) / 2;
	free(c);
	return s;
}

/* ------------------------------------------------------------- JSON */

void json_str(FILE *f, const char *s)
{
	fputc('"', f);
	for (; s && *s; s++) {
		unsigned char ch = (unsigned char)*s;

		if (ch == '"' || ch == '\\')
			fprintf(f, "\\%c", ch);
		else if (ch == '\n')
			fputs("\\n", f);
		else if (ch < 0x20)
			fprintf(f, "\\u%04x", ch);
		else
			fputc(ch, f);
	}
	fputc('"', f);
}

void json_stat_fields(FILE *f, struct bench_stat s)
{
	fprintf(f, "\"median\": %.4g, \"min\": %.4g, \"max\": %.4g, \"n\": %d", s.med, s.min, s.max,
		s.n);
}

/* ------------------------------------------------------------ calls */

double bench_call_loop(bench_fn fn, unsigned long iters)
{
	bench_fn volatile vfn = fn;
	uint64_t t0;
	unsigned int acc = 0;

	t0 = bench_now_ns();
	for (unsigned long i = 0; i < iters; i++)
		acc += (unsigned int)vfn((int)i, 2);
	t0 = bench_now_ns() - t0;
	/* the result is used, so the calls stay */
	__asm__ volatile("" ::"r"(acc));
	return (double)t0 / (double)iters;
}

/* ------------------------------------------------------- bare detour */

unsigned long bench_detour_hits;

/* Called from bench_detour_stub with the registers it saved. */
void bench_detour_handler(struct pt_regs *regs);
void bench_detour_handler(struct pt_regs *regs)
{
	(void)regs;
	bench_detour_hits++;
}

/* Write len bytes over code through /proc/self/mem (the page keeps its
 * permissions; the same way the library patches). */
static int poke_text(void *addr, const void *bytes, size_t len)
{
#if defined(__aarch64__)
	/* a store through a writable mapping, which emulators notice, then
	 * the cache maintenance the architecture needs */
	long pg = sysconf(_SC_PAGESIZE);
	uintptr_t start = (uintptr_t)addr & ~(uintptr_t)(pg - 1);
	uintptr_t end = ((uintptr_t)addr + len + (uintptr_t)pg - 1) & ~(uintptr_t)(pg - 1);

	if (mprotect((void *)start, end - start, PROT_READ | PROT_WRITE | PROT_EXEC))
		return -errno;
	memcpy(addr, bytes, len);
	__builtin___clear_cache((char *)addr, (char *)addr + len);
	mprotect((void *)start, end - start, PROT_READ | PROT_EXEC);
	return 0;
#else
	int fd = open("/proc/self/mem", O_RDWR | O_CLOEXEC);
	ssize_t n;

	if (fd < 0)
		return -errno;
	n = pwrite(fd, bytes, len, (off_t)(uintptr_t)addr);
	close(fd);
	if (n != (ssize_t)len)
		return n < 0 ? -errno : -EIO;
	return 0;
#endif
}

int bench_detour_set(bool on)
{
	extern char bench_detour_stub[];
	unsigned char *site = (unsigned char *)(uintptr_t)bench_target;
	unsigned char jmp[BENCH_DETOUR_LEN];
	int32_t rel;

	if (!on)
		return poke_text(site, bench_detour_copy, BENCH_DETOUR_LEN);
	/* the stub's copy must be what it displaces */
	if (memcmp(site, bench_detour_copy, BENCH_DETOUR_LEN))
		return -EILSEQ;
#if defined(__x86_64__)
	rel = (int32_t)((intptr_t)bench_detour_stub - (intptr_t)(site + 5));
	jmp[0] = 0xe9;
	memcpy(jmp + 1, &rel, 4);
#elif defined(__aarch64__)
	{
		uint32_t b;

		rel = (int32_t)((intptr_t)bench_detour_stub - (intptr_t)site);
		b = 0x14000000u | ((uint32_t)(rel >> 2) & 0x3ffffffu);
		memcpy(jmp, &b, 4);
	}
#endif
	return poke_text(site, jmp, sizeof(jmp));
}

/* ------------------------------------- bare int3 -> SIGTRAP round trip */

/* The kernel's struct sigaction for rt_sigaction (x86-64). */
struct ksigaction {
	void *handler;
	unsigned long flags;
	void *restorer;
	uint64_t mask;
};

typedef int (*sigaction_fn)(int, const struct sigaction *, struct sigaction *);
static sigaction_fn libc_sigaction;
static struct ksigaction bare_saved;

static void bare_handler(int sig, siginfo_t *si, void *uc)
{
	(void)sig;
	(void)si;
#if defined(__aarch64__)
	/* brk leaves pc at itself (x86's int3 leaves ip past it) */
	((ucontext_t *)uc)->uc_mcontext.pc += 4;
#else
	(void)uc;
#endif
}

void bench_bare_init(void)
{
	void *libc = dlopen("libc.so.6", RTLD_NOW | RTLD_NOLOAD);

	/* libc's own sigaction: once the library owns SIGTRAP, the
	 * interposed one only records what the program asks for */
	if (libc)
		libc_sigaction = (sigaction_fn)dlsym(libc, "sigaction");
	if (!libc_sigaction) {
		fprintf(stderr, "bench: cannot find libc's sigaction\n");
		exit(2);
	}
}

void bench_bare_begin(void)
{
	struct sigaction sa;

	if (syscall(SYS_rt_sigaction, SIGTRAP, NULL, &bare_saved, 8)) {
		perror("rt_sigaction");
		exit(2);
	}
	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = bare_handler;
	sa.sa_flags = SA_SIGINFO;
	sigemptyset(&sa.sa_mask);
	if (libc_sigaction(SIGTRAP, &sa, NULL)) {
		perror("sigaction");
		exit(2);
	}
}

void bench_bare_end(void)
{
	if (syscall(SYS_rt_sigaction, SIGTRAP, &bare_saved, NULL, 8)) {
		perror("rt_sigaction restore");
		exit(2);
	}
}

double bench_int3_loop(unsigned long iters, int n_int3)
{
	uint64_t t0 = bench_now_ns();

#if defined(__x86_64__)
#define BENCH_TRAP "int3"
#elif defined(__aarch64__)
#define BENCH_TRAP "brk #0x100"
#endif
	if (n_int3 == 1) {
		for (unsigned long i = 0; i < iters; i++)
			__asm__ volatile(BENCH_TRAP ::: "memory");
	} else {
		for (unsigned long i = 0; i < iters; i++)
			__asm__ volatile(BENCH_TRAP "\n\t" BENCH_TRAP ::: "memory");
	}
	return (double)(bench_now_ns() - t0) / (double)iters;
}

/* ------------------------------------------ the kernel's uprobes (tracefs) */

static struct tfs *tfs_registered[4];
static int tfs_nregistered;

/* Async-signal-safe: open, write, close. */
static int write_file(const char *path, const char *s, bool append)
{
	int fd = open(path, O_WRONLY | O_CLOEXEC | (append ? O_APPEND : O_TRUNC));
	ssize_t n;
	int err;

	if (fd < 0)
		return -errno;
	n = write(fd, s, strlen(s));
	err = n < 0 ? -errno : 0;
	close(fd);
	return err;
}

static void tfs_cleanup_all(void)
{
	for (int i = 0; i < tfs_nregistered; i++)
		tfs_close(tfs_registered[i]);
}

static void tfs_on_signal(int sig)
{
	tfs_cleanup_all();
	signal(sig, SIG_DFL);
	raise(sig);
}

bool tfs_open(struct tfs *t, const char *group, char *why, size_t whylen)
{
	static const char *const roots[] = { "/sys/kernel/tracing", "/sys/kernel/debug/tracing" };
	char path[300];
	unsigned int i;

	memset(t, 0, sizeof(*t));
	if (geteuid() != 0) {
		snprintf(why, whylen, "not root (tracefs uprobe_events needs root)");
		return false;
	}
	for (i = 0; i < 2; i++) {
		snprintf(path, sizeof(path), "%s/uprobe_events", roots[i]);
		if (access(path, W_OK) == 0)
			break;
	}
	if (i == 2) {
		snprintf(why, whylen,
			 "tracefs not mounted or no uprobe events (mount -t tracefs nodev "
			 "/sys/kernel/tracing; CONFIG_UPROBE_EVENTS)");
		return false;
	}
	snprintf(t->root, sizeof(t->root), "%s", roots[i]);
	if (group)
		snprintf(t->group, sizeof(t->group), "%s", group);
	else
		snprintf(t->group, sizeof(t->group), "ukpbench_%d", (int)getpid());
	snprintf(t->inst, sizeof(t->inst), "%s/instances/%s", t->root, t->group);
	if (mkdir(t->inst, 0700) && errno != EEXIST) {
		snprintf(why, whylen, "cannot create trace instance %s: %s", t->inst,
			 strerror(errno));
		return false;
	}
	t->ok = true;
	if (tfs_nregistered < 4) {
		tfs_registered[tfs_nregistered++] = t;
		if (tfs_nregistered == 1) {
			atexit(tfs_cleanup_all);
			signal(SIGINT, tfs_on_signal);
			signal(SIGTERM, tfs_on_signal);
			signal(SIGHUP, tfs_on_signal);
		}
	}
	return true;
}

/* The file and file offset of addr, from /proc/self/maps. */
static int file_offset_of(const void *addr, char *file, size_t filelen, unsigned long *off)
{
	FILE *f = fopen("/proc/self/maps", "re");
	char line[1024];
	uintptr_t a = (uintptr_t)addr;
	int ret = -ENOENT;

	if (!f)
		return -errno;
	while (fgets(line, sizeof(line), f)) {
		unsigned long lo, hi, foff;
		char perms[8], name[800];
		int n = sscanf(line, "%lx-%lx %7s %lx %*s %*s %799s", &lo, &hi, perms, &foff, name);

		if (n == 5 && a >= lo && a < hi && name[0] == '/') {
			snprintf(file, filelen, "%s", name);
			*off = a - lo + foff;
			ret = 0;
			break;
		}
	}
	fclose(f);
	return ret;
}

int tfs_add(struct tfs *t, const char *name, bool ret, const void *addr, char *why,
	    size_t whylen)
{
	char file[800], def[1024], path[400];
	unsigned long off = 0;
	int err, i;

	if (!t->ok || t->nev == TFS_MAX_EVENTS) {
		snprintf(why, whylen, "tracefs not open");
		return -1;
	}
	err = file_offset_of(addr, file, sizeof(file), &off);
	if (err) {
		snprintf(why, whylen, "%p is in no file mapping", addr);
		return -1;
	}
	i = t->nev;
	snprintf(t->ev[i], sizeof(t->ev[i]), "%s_%d", name, (int)getpid());
	snprintf(def, sizeof(def), "%c:%s/%s %s:0x%lx\n", ret ? 'r' : 'p', t->group, t->ev[i], file,
		 off);
	snprintf(path, sizeof(path), "%s/uprobe_events", t->root);
	err = write_file(path, def, true);
	if (err) {
		snprintf(why, whylen, "uprobe_events refused \"%.*s\": %s", (int)strlen(def) - 1, def,
			 strerror(-err));
		return -1;
	}
	snprintf(path, sizeof(path), "%s/events/%s/%s/enable", t->inst, t->group, t->ev[i]);
	memcpy(t->enable[i], path, sizeof(t->enable[i]) < sizeof(path) ? sizeof(t->enable[i])
									 : sizeof(path));
	t->enable[i][sizeof(t->enable[i]) - 1] = 0;
	t->nev++;
	if (access(t->enable[i], W_OK)) {
		snprintf(why, whylen, "no %s", t->enable[i]);
		return -1;
	}
	return i;
}

int tfs_enable(struct tfs *t, int idx, bool on)
{
	int err;

	if (idx < 0 || idx >= t->nev)
		return -EINVAL;
	err = write_file(t->enable[idx], on ? "1\n" : "0\n", false);
	if (!err)
		t->on[idx] = on;
	return err;
}

long tfs_hits(struct tfs *t, int idx)
{
	char path[300], line[1024];
	long hits = -1;
	FILE *f;

	if (idx < 0 || idx >= t->nev)
		return -1;
	snprintf(path, sizeof(path), "%s/uprobe_profile", t->root);
	f = fopen(path, "re");
	if (!f)
		return -1;
	/* "  FILE EVENT HITS" (the event name without its group) */
	while (fgets(line, sizeof(line), f)) {
		char file[800], ev[128];
		long n;

		if (sscanf(line, "%799s %127s %ld", file, ev, &n) == 3 && !strcmp(ev, t->ev[idx])) {
			hits = n;
			break;
		}
	}
	fclose(f);
	return hits;
}

void tfs_close(struct tfs *t)
{
	char path[300], def[200];

	if (!t->ok)
		return;
	for (int i = 0; i < t->nev; i++)
		write_file(t->enable[i], "0\n", false);
	rmdir(t->inst);
	snprintf(path, sizeof(path), "%s/uprobe_events", t->root);
	for (int i = 0; i < t->nev; i++) {
		snprintf(def, sizeof(def), "-:%s/%s\n", t->group, t->ev[i]);
		write_file(path, def, true);
	}
	t->nev = 0;
	t->ok = false;
}

/* ---------------------------------------------------------- misc */

size_t bench_rss(void)
{
	FILE *f = fopen("/proc/self/statm", "re");
	unsigned long size = 0, res = 0;

	if (!f)
		return 0;
	if (fscanf(f, "%lu %lu", &size, &res) != 2)
		res = 0;
	fclose(f);
	return (size_t)res * (size_t)sysconf(_SC_PAGESIZE);
}

size_t bench_rss_anon(void)
{
	FILE *f = fopen("/proc/self/status", "re");
	char line[256];
	unsigned long kb = 0;

	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "RssAnon: %lu kB", &kb) == 1)
			break;
	fclose(f);
	return (size_t)kb * 1024;
}

int bench_ncpus(void)
{
	cpu_set_t set;

	if (sched_getaffinity(0, sizeof(set), &set))
		return 1;
	return CPU_COUNT(&set);
}

int bench_pin(int n)
{
	cpu_set_t set, one;
	int count, k = 0;

	if (sched_getaffinity(0, sizeof(set), &set))
		return -1;
	count = CPU_COUNT(&set);
	if (count < 1)
		return -1;
	n %= count;
	for (int cpu = 0; cpu < CPU_SETSIZE; cpu++) {
		if (!CPU_ISSET(cpu, &set))
			continue;
		if (k++ == n) {
			CPU_ZERO(&one);
			CPU_SET(cpu, &one);
			if (sched_setaffinity(0, sizeof(one), &one))
				return -1;
			return cpu;
		}
	}
	return -1;
}
