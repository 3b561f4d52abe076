/* SPDX-License-Identifier: MIT */
/*
 * bench.h - what the benchmark programs share (bench_util.c, targets.S):
 * timing, statistics, JSON output, the probed target functions, the bare
 * int3 -> SIGTRAP round trip, and the kernel's uprobes through tracefs.
 */
#ifndef UKP_BENCH_H
#define UKP_BENCH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* ------------------------------------------------------------ timing */

uint64_t bench_now_ns(void);

/* ------------------------------------------------------- statistics */

struct bench_stat {
	double med, min, max;
	int n;
};

/* Median, min and max of v[0..n) (v is left untouched). */
struct bench_stat bench_stats(const double *v, int n);

/* ------------------------------------------------------------- JSON */

/* A JSON string literal, escaped. */
void json_str(FILE *f, const char *s);
/* "median": m, "min": a, "max": b, "n": n (no braces). */
void json_stat_fields(FILE *f, struct bench_stat s);

/* ----------------------------------------------------------- targets */

/*
 * targets.S and targets_nop5.S. Every target computes x + 1 + y and
 * returns; all of them start with the same two instructions (lea, add:
 * 5 bytes, relocatable, no branch) so that a breakpoint, a detour jump or
 * a trampoline call can go on the entry.
 *
 *   bench_target       the probed function of every measure
 *   bench_target2      an identical copy (a second, different probe for
 *                      the scaling measure; an unpatched baseline)
 *   bench_target_nop5  (targets_nop5.S) the same behind a 5-byte NOP at
 *                      the entry (nopl 0x0(%rax,%rax,1)): what
 *                      -mnop-mcount emits, where kernel 6.18 optimizes
 *                      uprobes
 */
typedef int (*bench_fn)(int x, int y);
int bench_target(int x, int y);
int bench_target2(int x, int y);
int bench_target_nop5(int x, int y);
/* bench_target with an SDT probe, "%ukpbench:hit", before its ret
 * (sdt_target.c; where <sys/sdt.h> is: BENCH_HAVE_SDT) */
int bench_target_sdt(int x, int y);

/*
 * The bare detour (targets.S): bench_detour_set(true) writes a jmp rel32
 * over the first 5 bytes of bench_target to bench_detour_stub, which
 * steps over the red zone, saves every general register and the flags as a
 * struct pt_regs, calls bench_detour_handler(regs) (an empty C function
 * that counts), restores, runs its copy of the 5 displaced bytes and
 * jumps back to bench_target + 5. bench_detour_copy holds those bytes.
 */
extern const unsigned char bench_detour_copy[];
extern unsigned long bench_detour_hits;
#if defined(__x86_64__)
#define BENCH_DETOUR_LEN 5   /* jmp rel32 */
#elif defined(__aarch64__)
#define BENCH_DETOUR_LEN 4   /* b */
#endif
/* The bytes of bench_target and bench_target_nop5 that must come back
 * unchanged after each measurement (targets.S). */
#if defined(__x86_64__)
#define BENCH_TARGET_LEN 6
#define BENCH_TARGET_NOP5_LEN 11
#elif defined(__aarch64__)
#define BENCH_TARGET_LEN 12
#define BENCH_TARGET_NOP5_LEN 20
#endif
/* Patch (on) or restore (off) bench_target's entry. 0 or -errno. */
int bench_detour_set(bool on);

/* ns per call of fn over iters calls (through a volatile pointer). */
double bench_call_loop(bench_fn fn, unsigned long iters);

/* ------------------------------------- bare int3 -> SIGTRAP round trip */

/* Once, before the others: find libc's own sigaction (the library
 * interposes sigaction()). Exits on failure. */
void bench_bare_init(void);
/* Put a do-nothing SA_SIGINFO SIGTRAP handler directly into the kernel's
 * table; bench_bare_end() puts back exactly what was there. */
void bench_bare_begin(void);
void bench_bare_end(void);
/* ns per iteration of a loop of n_int3 (1 or 2) inline int3. */
double bench_int3_loop(unsigned long iters, int n_int3);

/* ------------------------------------------ the kernel's uprobes (tracefs) */

#define TFS_MAX_EVENTS 8

struct tfs {
	bool ok;
	char root[128];        /* /sys/kernel/tracing */
	char group[64];        /* event group, unique per run */
	char inst[256];        /* our trace instance */
	int nev;
	char ev[TFS_MAX_EVENTS][48];
	char enable[TFS_MAX_EVENTS][400];
	bool on[TFS_MAX_EVENTS];
};

/*
 * Open tracefs for uprobes: root, uprobe_events, a private trace
 * instance. group: the event group to use (NULL: ukpbench_<pid>).
 * Returns true, or false with the reason in why. Cleanup is registered
 * with atexit and for SIGINT/SIGTERM/SIGHUP.
 */
bool tfs_open(struct tfs *t, const char *group, char *why, size_t whylen);
/* Add a uprobe (ret false) or uretprobe (ret true) event on the function
 * at addr (of a file-backed mapping of this process). Returns the event
 * index, or -1 with why. */
int tfs_add(struct tfs *t, const char *name, bool ret, const void *addr, char *why,
	    size_t whylen);
/* Enable or disable the event (installs/removes the breakpoints). */
int tfs_enable(struct tfs *t, int idx, bool on);
/* The event's hit count (uprobe_profile), or -1. */
long tfs_hits(struct tfs *t, int idx);
/* Disable and remove every event, remove the instance. Idempotent. */
void tfs_close(struct tfs *t);

/* ---------------------------------------------------------- misc */

/* Resident set size in bytes (/proc/self/statm). */
size_t bench_rss(void);
/* Resident anonymous memory in bytes (RssAnon of /proc/self/status): the
 * private copies of patched text pages count here, not in bench_rss()
 * (a copy replaces the resident page-cache page in the mapping). */
size_t bench_rss_anon(void);
/* Pin the calling thread to the n-th CPU it may run on (mod count).
 * Returns the CPU or -1. */
int bench_pin(int n);
/* Number of CPUs the process may run on. */
int bench_ncpus(void);

#endif /* UKP_BENCH_H */
