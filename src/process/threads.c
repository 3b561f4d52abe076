/* SPDX-License-Identifier: MIT */
/*
 * threads.c - where are the threads? (for slots a thread may sit in with
 * no trap of ours on its stack: boosted copies, see trap.c; for detours;
 * and for the instructions a jump is about to replace, see optimizer.c)
 *
 * A thread can be "in" an address range in two ways: its instruction
 * pointer is there, or a signal interrupted it there and the handler's
 * frame will return into it. The second is made visible by wrapping the
 * program's signal handlers (signals.c): every handler of the program
 * runs between ukp_uc_push() and ukp_uc_pop(), which keep a per-thread
 * stack of the interrupted contexts. The stacks live in a static
 * registry (one record per thread, claimed on its first push: no
 * allocation on the hit path), so that other threads can read them.
 *
 * ukp_threads_scan() looks at every other thread of the process in one
 * of two ways:
 *
 *  - Blocked in the kernel (a system call, a page fault, a stop):
 *    /proc/self/task/TID/syscall gives the user pc it will resume at
 *    (and its sp); its record gives its saved contexts. Nothing is sent
 *    to it, so its system call goes on undisturbed (a signal would make
 *    nanosleep, epoll_wait, select, poll, pause, ... return EINTR).
 *  - Running, or its state could not be established: it is sent a
 *    reserved real-time signal (UKP_SCAN_SIG, owned by the library like
 *    SIGTRAP), whose handler looks at its own interrupted ip and saved
 *    contexts, ORs the ranges it found into the request and
 *    acknowledges. A thread that does not answer in time (it blocks the
 *    signal through a raw system call, ...) and that /proc does not
 *    show blocked meanwhile counts as inside every range.
 *
 * The calling thread checks its own saved contexts.
 *
 * Why one look at a thread is enough. Callers make sure that no thread
 * can enter the ranges any more before they scan (ranges start after a
 * breakpoint that diverts newcomers, or are slots nothing leads to). A
 * thread can then end up in a range only by resuming where it already
 * is: at its ip, or at a context saved by a handler it runs; a context
 * saved later is saved at an ip outside. So a thread seen outside (ip
 * and every saved context) at any one instant after the scan began
 * stays outside. What must hold is that everything we read about it
 * belongs to one instant, although it may wake up between our reads:
 *
 *  1. The /proc read is a snapshot: the kernel reads the registers of a
 *     task that is off the CPU and not runnable, and checks (two
 *     wait_task_inactive() calls, same switch count) that it did not
 *     run meanwhile; otherwise it says "running" (task_current_syscall).
 *     Call its instant t.
 *  2. A record is a seqlock written only by its thread (begun/done
 *     counters, so that a push in a handler that interrupted a push is
 *     still seen). We read `done' before t, and the contexts and
 *     `begun' after t: equal means no push or pop was under way or
 *     started in between, so the contexts we read are those at t.
 *  3. No record: a thread claims its record before its first push, and
 *     a claim bumps uc_claims. The records are indexed once per scan;
 *     when a thread has none, uc_claims is read again after t: unchanged
 *     means it had claimed none at t (a thread that had begun a claim
 *     and blocked in it is in the trap text, see 4): no saved context. A
 *     thread that found the registry full is known only to itself
 *     (uc_untracked): then threads without a record are signalled.
 *  4. A handler's frame exists from delivery until sigreturn, but is in
 *     the record only from the push to the pop. Before the push and
 *     after the pop the thread runs the library's trap text (the
 *     wrapper calls nothing outside it) or a signal restorer: a thread
 *     blocked at a pc in the trap text is signalled instead, and one at
 *     a restorer is about to return to the context at its sp, which is
 *     read. The signal itself is blocked in those stretches (the wrapper
 *     adds UKP_SCAN_SIG to the handler's mask and unblocks it only after
 *     the push, blocks it again before the pop; the library's own
 *     handlers block it throughout), so a signalled thread answers only
 *     when every frame it has is on its stack of contexts.
 *  5. A thread blocked in a system call the kernel restarts resumes at
 *     the system call instruction, UKP_SYSCALL_INSN_SIZE bytes before
 *     the pc /proc gives; both are tested.
 *  6. Anything else (running, a record changing, /proc unreadable) is
 *     looked at again (SCAN_MORE_LOOKS, for up to 0.3 ms) after the
 *     others, then signalled (a thread that ran only on its way into a
 *     sleep is usually seen asleep by then: a signal in its nanosleep
 *     would be an EINTR the program sees).
 *
 * Not seen either way: frames of handlers the library did not wrap
 * (installed by a raw rt_sigaction after the library installed its own,
 * the C library's internal ones, or one that was already running then),
 * except at their restorer. The frames of the library's own trap
 * handlers, while their read side is held, are covered by grace periods
 * (sync.c), which callers wait for: a thread blocked in a pre_handler is
 * judged by its pc and saved contexts only.
 *
 * A handler that leaves with longjmp never pops: its entry stays, which
 * only makes scans more careful.
 */
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "base/base.h"
#include "process/process.h"
#include "core/core.h"
#include "sort.h" /* common/: ukp_sort(), not libc qsort */
#include "base/sys.h"

/* ------------------------------------------- interrupted contexts */

#define UC_STACK_DEPTH 16
#define UC_MAX_THREADS 4096

/*
 * One thread's stack of interrupted contexts. Claimed by its thread on
 * its first push; only that thread writes depth and uc[], between
 * begun++ and done++ (a seqlock: readers in other threads check that
 * begun equals the done they read first). tid 0: free.
 */
struct uc_rec {
	_Atomic int tid;
	_Atomic unsigned int depth;            /* may exceed UC_STACK_DEPTH */
	_Atomic unsigned long begun, done;
	ucontext_t *_Atomic uc[UC_STACK_DEPTH];
} __attribute__((aligned(64)));

static struct uc_rec uc_recs[UC_MAX_THREADS];
static _Atomic unsigned int uc_recs_hi;        /* records [0, hi) were ever claimed */
static _Atomic unsigned long uc_claims;        /* claims completed */
static _Atomic unsigned int uc_untracked;      /* threads that found no free record */

/* The thread's own (in its block: base/tb_lib.h). */
struct uc_thread {
	struct uc_rec *mine;         /* NULL until the first push */
	bool norec;                  /* the registry was full */
	unsigned int norec_depth;    /* pushes of such a thread */
};
UKP_TB_LIB_FITS(struct uc_thread, UKP_TBL_UC, UKP_TBL_UC_SIZE);
#define uc_me UKP_TB_LIB(struct uc_thread, UKP_TBL_UC)
#define uc_mine (uc_me->mine)
#define uc_norec (uc_me->norec)
#define uc_norec_depth (uc_me->norec_depth)

static UKP_TRAP_TEXT void rec_write_begin(struct uc_rec *r)
{
	atomic_store_explicit(&r->begun, atomic_load_explicit(&r->begun, memory_order_relaxed) + 1,
			      memory_order_relaxed);
	atomic_thread_fence(memory_order_release);
}

static UKP_TRAP_TEXT void rec_write_end(struct uc_rec *r)
{
	atomic_store_explicit(&r->done, atomic_load_explicit(&r->done, memory_order_relaxed) + 1,
			      memory_order_release);
}

/* [trap] Empty r, for a thread that takes it over. */
static UKP_TRAP_TEXT void rec_reset(struct uc_rec *r)
{
	rec_write_begin(r);
	atomic_store_explicit(&r->depth, 0, memory_order_relaxed);
	rec_write_end(r);
}

static UKP_TRAP_TEXT bool tid_dead(int tid)
{
	return ukp_sys_tgkill(ukp_sys_getpid(), tid, 0) == -ESRCH;
}

/*
 * [trap] First push of this thread: find it a record. One that still
 * bears our tid belongs to a thread that died (tids are reused) and is
 * taken back first, so that no two records have the same tid; then a
 * free one; then the record of a thread that exited. NULL when full.
 */
static UKP_TRAP_TEXT struct uc_rec *uc_claim(void)
{
	unsigned int hi = atomic_load(&uc_recs_hi), i;
	int me = ukp_sys_gettid();
	struct uc_rec *r = NULL;

	for (i = 0; i < hi && !r; i++)
		if (atomic_load(&uc_recs[i].tid) == me)
			r = &uc_recs[i];
	for (i = 0; i < UC_MAX_THREADS && !r; i++) {
		int expect = 0;

		if (atomic_load_explicit(&uc_recs[i].tid, memory_order_relaxed))
			continue;
		if (atomic_compare_exchange_strong(&uc_recs[i].tid, &expect, me)) {
			r = &uc_recs[i];
			while (hi < i + 1 && !atomic_compare_exchange_weak(&uc_recs_hi, &hi, i + 1))
				;
		}
	}
	for (i = 0; i < hi && !r; i++) {
		int old = atomic_load(&uc_recs[i].tid);

		if (old && old != me && tid_dead(old) &&
		    atomic_compare_exchange_strong(&uc_recs[i].tid, &old, me))
			r = &uc_recs[i];
	}
	if (!r) {
		uc_norec = true;
		atomic_fetch_add(&uc_untracked, 1);
		return NULL;
	}
	rec_reset(r);
	uc_mine = r;
	atomic_fetch_add_explicit(&uc_claims, 1, memory_order_release);
	return r;
}

/* [trap] Before a program's signal handler runs on top of uc. */
UKP_TRAP_TEXT void ukp_uc_push(ucontext_t *uc)
{
	struct uc_rec *r = uc_mine;
	unsigned int d;

	if (!r && !uc_norec)
		r = uc_claim();
	if (!r) {
		atomic_signal_fence(memory_order_seq_cst);
		uc_norec_depth++;
		atomic_signal_fence(memory_order_seq_cst);
		return;
	}
	d = atomic_load_explicit(&r->depth, memory_order_relaxed);
	rec_write_begin(r);
	if (d < UC_STACK_DEPTH)
		atomic_store_explicit(&r->uc[d], uc, memory_order_relaxed);
	/* the entry is written before it is counted: a scan signal that
	 * arrives in between sees only complete entries */
	atomic_signal_fence(memory_order_seq_cst);
	atomic_store_explicit(&r->depth, d + 1, memory_order_relaxed);
	rec_write_end(r);
	atomic_signal_fence(memory_order_seq_cst);
}

/* [trap] After it returned. */
UKP_TRAP_TEXT void ukp_uc_pop(void)
{
	struct uc_rec *r = uc_mine;
	unsigned int d;

	atomic_signal_fence(memory_order_seq_cst);
	if (!r) {
		if (uc_norec_depth)
			uc_norec_depth--;
		atomic_signal_fence(memory_order_seq_cst);
		return;
	}
	d = atomic_load_explicit(&r->depth, memory_order_relaxed);
	if (!d)
		return;
	rec_write_begin(r);
	atomic_store_explicit(&r->depth, d - 1, memory_order_relaxed);
	rec_write_end(r);
	atomic_signal_fence(memory_order_seq_cst);
}

/*
 * [reg] In a forked child only the forking thread exists: every other
 * record is released, ours is re-owned under the child's tid.
 */
void ukp_threads_after_fork_child(void)
{
	unsigned int i, hi = atomic_load(&uc_recs_hi);
	bool blocks = ukp_tb_mapped();
	struct uc_rec *mine = blocks ? uc_mine : NULL;

	for (i = 0; i < hi; i++) {
		if (&uc_recs[i] == mine || !atomic_load(&uc_recs[i].tid))
			continue;
		rec_reset(&uc_recs[i]);
		atomic_store(&uc_recs[i].tid, 0);
	}
	if (mine)
		atomic_store(&mine->tid, ukp_sys_gettid());
	atomic_store(&uc_untracked, blocks && uc_norec ? 1 : 0);
	atomic_fetch_add(&uc_claims, 1);
}

/* ------------------------------------------------------- the scan */

#define SCAN_MAX_THREADS 4096
#define SCAN_TIMEOUT_NS (200 * 1000000L)
/* more looks at a thread not seen blocked, before the signal: the first
 * after a yield, the rest 50 us apart (a thread that runs briefly between
 * sleeps, preempted on a loaded machine, is then seen asleep; a signal
 * that reached it in nanosleep would have returned EINTR to it) */
#define SCAN_MORE_LOOKS 8
#define SCAN_YIELD_LOOKS 2

struct scan_req {
	_Atomic unsigned long gen;             /* odd while the caller rewrites */
	unsigned int nranges;
	struct ukp_range ranges[UKP_SCAN_MAX_RANGES];
	_Atomic uint64_t hit;                  /* bit i: someone is in range i */
	unsigned int nents;
	_Atomic uint64_t ent[SCAN_MAX_THREADS]; /* gen << 32 | tid, 0 once answered */
};

static struct scan_req req;
_Atomic unsigned long ukp_scan_count, ukp_scan_inside, ukp_scan_timeouts;
_Atomic unsigned long ukp_scan_signalled, ukp_scan_blocked;
bool ukp_scan_without_proc;

static UKP_TRAP_TEXT uint64_t all_ranges(unsigned int n)
{
	return n >= 64 ? ~0ULL : (1ULL << n) - 1;
}

/* [trap] The bits of the ranges that contain ip. */
static UKP_TRAP_TEXT uint64_t ranges_hit(const struct ukp_range *r, unsigned int n, uintptr_t ip)
{
	uint64_t bits = 0;
	unsigned int i;

	for (i = 0; i < n; i++)
		if (ip >= r[i].start && ip < r[i].end)
			bits |= 1ULL << i;
	return bits;
}

/* [trap] Is ip in a signal restorer (or just past its system call)? */
static UKP_TRAP_TEXT bool at_restorer(uintptr_t ip)
{
	uintptr_t ours = (uintptr_t)ukp_restore_rt, libc = ukp_libc_restorer();

	return (ip >= ours && ip <= ours + UKP_RESTORER_SIZE) ||
	       (libc && ip >= libc && ip <= libc + UKP_RESTORER_SIZE);
}

/*
 * [trap] The ranges a thread resumes in from ip, with stack pointer sp.
 * At a signal restorer, a handler has returned (and popped its entry, if
 * it was a wrapped one): the context it returns to is at sp.
 */
static UKP_TRAP_TEXT uint64_t ip_hits(const struct ukp_range *r, unsigned int n, uintptr_t ip,
				      uintptr_t sp)
{
	uint64_t bits = ranges_hit(r, n, ip);
	ucontext_t copy;

	if (!at_restorer(ip))
		return bits;
	if (arch_copy_nofault(&copy.uc_mcontext,
			      &((ucontext_t *)(sp + UKP_RESTORER_UC_OFFSET))->uc_mcontext,
			      sizeof(copy.uc_mcontext)))
		return all_ranges(n);
	return bits | ranges_hit(r, n, arch_uc_ip(&copy));
}

/*
 * [trap] The ranges the saved contexts of record rec may return into,
 * read without faulting (the frame of a handler that left with longjmp
 * may be gone). Any thread may call it; one other than rec's owner
 * checks the seqlock around it.
 */
static UKP_TRAP_TEXT uint64_t rec_hits(const struct uc_rec *rec, const struct ukp_range *r,
				       unsigned int n)
{
	unsigned int d = atomic_load_explicit(&rec->depth, memory_order_relaxed), i;
	uint64_t bits = 0;

	if (d > UC_STACK_DEPTH)
		return all_ranges(n); /* lost track: everywhere */
	for (i = 0; i < d; i++) {
		ucontext_t *uc = atomic_load_explicit(&rec->uc[i], memory_order_relaxed);
		ucontext_t copy;

		if (arch_copy_nofault(&copy.uc_mcontext, &uc->uc_mcontext, sizeof(copy.uc_mcontext)))
			continue;
		bits |= ranges_hit(r, n, arch_uc_ip(&copy));
	}
	return bits;
}

/* [trap] The ranges this thread may resume in, seen from here: its
 * saved contexts, plus ip (with stack pointer sp) if not 0. */
static UKP_TRAP_TEXT uint64_t my_hits(const struct ukp_range *r, unsigned int n, uintptr_t ip,
				      uintptr_t sp)
{
	uint64_t bits = ip ? ip_hits(r, n, ip, sp) : 0;

	if (uc_norec_depth)
		return all_ranges(n);
	if (uc_mine)
		bits |= rec_hits(uc_mine, r, n);
	return bits;
}

/* [trap] Answer a scan request in this thread; uc is the context the
 * scan signal interrupted. */
static UKP_TRAP_TEXT void scan_answer(ucontext_t *uc)
{
	unsigned long g = atomic_load_explicit(&req.gen, memory_order_acquire);
	int me = ukp_sys_gettid();
	struct pt_regs regs;
	unsigned int i, n;
	uint64_t bits, want;

	if (g & 1)
		return;
	n = req.nranges;
	if (n > UKP_SCAN_MAX_RANGES)
		return;
	arch_regs_from_ucontext(&regs, uc);
	bits = my_hits(req.ranges, n, instruction_pointer(&regs), user_stack_pointer(&regs));
	/* OR first, acknowledge after: a stale answer only adds bits */
	if (bits)
		atomic_fetch_or_explicit(&req.hit, bits, memory_order_release);
	if (atomic_load_explicit(&req.gen, memory_order_acquire) != g)
		return;
	want = (uint64_t)g << 32 | (uint32_t)me;
	for (i = 0; i < req.nents && i < SCAN_MAX_THREADS; i++) {
		uint64_t e = want;

		if (atomic_load_explicit(&req.ent[i], memory_order_relaxed) != want)
			continue;
		atomic_compare_exchange_strong_explicit(&req.ent[i], &e, 0, memory_order_acq_rel,
							memory_order_relaxed);
		break;
	}
}

/* [trap] The handler of UKP_SCAN_SIG: our request, or the program's
 * signal (chained to its handler). */
UKP_TRAP_TEXT void ukp_scan_handler(int sig, siginfo_t *info, void *ucv)
{
	int saved_errno = ukp_errno;

	if (info->si_code == SI_QUEUE && info->si_value.sival_ptr == (void *)&req &&
	    info->si_pid == ukp_sys_getpid())
		scan_answer(ucv);
	else
		ukp_chain_signal(sig, info, ucv);
	ukp_errno = saved_errno;
}

/* ------------------------------------------ threads blocked in the kernel */

/* The records by tid, indexed once per scan [reg]. */
struct rec_index_ent {
	int tid;
	unsigned int rec;
};
static struct rec_index_ent rec_index[UC_MAX_THREADS];
static unsigned int rec_index_n;
static unsigned long rec_index_claims; /* uc_claims when indexed */

static int cmp_index(const void *a, const void *b)
{
	const struct rec_index_ent *x = a, *y = b;

	return (x->tid > y->tid) - (x->tid < y->tid);
}

static void rec_index_build(void)
{
	unsigned int hi, i;

	rec_index_claims = atomic_load_explicit(&uc_claims, memory_order_acquire);
	hi = atomic_load_explicit(&uc_recs_hi, memory_order_acquire);
	rec_index_n = 0;
	for (i = 0; i < hi && i < UC_MAX_THREADS; i++) {
		int tid = atomic_load_explicit(&uc_recs[i].tid, memory_order_acquire);

		if (tid)
			rec_index[rec_index_n++] = (struct rec_index_ent){ tid, i };
	}
	ukp_sort(rec_index, rec_index_n, sizeof(rec_index[0]), cmp_index);
}

/* The record of tid in the index: 1 (found), 0 (none), -1 (two: a tid
 * taken over while we indexed; cannot tell). */
static int rec_index_find(int tid, struct uc_rec **rec)
{
	struct rec_index_ent key = { tid, 0 }, *e;

	e = bsearch(&key, rec_index, rec_index_n, sizeof(key), cmp_index);
	*rec = NULL;
	if (!e)
		return 0;
	if ((e > rec_index && e[-1].tid == tid) ||
	    (e + 1 < rec_index + rec_index_n && e[1].tid == tid))
		return -1;
	*rec = &uc_recs[e->rec];
	return 1;
}

/* The trap text: the library's signal handlers and wrappers. */
extern char __start_ukprobes_text[] __attribute__((visibility("hidden")));
extern char __stop_ukprobes_text[] __attribute__((visibility("hidden")));

/* What /proc/self/task/TID/syscall says about a thread that is off the
 * CPU: in system call nr (-1: not in one: a fault, a stop, no stack). */
struct blocked_state {
	long nr;
	unsigned long sp, pc;
};

enum { T_OUTSIDE_OR_HIT, T_UNKNOWN, T_GONE };

/*
 * Raw system calls and parsing for the thread's state: libc's (snprintf,
 * strtoul, openat...) may be probed, and the optimizer scans the threads
 * for every batch of jumps it writes, while the probes of the batch
 * before are breakpoints still (each call a hit).
 */

/* "TID/syscall" into path (at least 20 bytes). */
static void syscall_path(char *path, int tid)
{
	static const char tail[] = "/syscall";
	volatile char *d = path; /* (not turned into calls to libc) */
	char digits[12];
	unsigned int v = (unsigned int)tid, n = 0, i;

	do
		digits[n++] = (char)('0' + v % 10);
	while ((v /= 10) && n < sizeof(digits));
	while (n)
		*d++ = digits[--n];
	for (i = 0; i < sizeof(tail); i++)
		*d++ = tail[i];
}

/* A number at *p (spaces first; base 10 with a sign, or base 16 with an
 * optional 0x): true with *out and *p past it, false if there is none. */
static bool parse_num(const char **p, int base, unsigned long *out)
{
	const char *q = *p;
	unsigned long v = 0;
	bool neg = false, any = false;

	while (*q == ' ' || *q == '\t' || *q == '\n')
		q++;
	if (base == 10 && *q == '-') {
		neg = true;
		q++;
	}
	if (base == 16 && q[0] == '0' && (q[1] == 'x' || q[1] == 'X'))
		q += 2;
	for (;; q++) {
		unsigned int dgt;

		if (*q >= '0' && *q <= '9')
			dgt = (unsigned int)(*q - '0');
		else if (base == 16 && *q >= 'a' && *q <= 'f')
			dgt = (unsigned int)(*q - 'a' + 10);
		else if (base == 16 && *q >= 'A' && *q <= 'F')
			dgt = (unsigned int)(*q - 'A' + 10);
		else
			break;
		v = v * (unsigned int)base + dgt;
		any = true;
	}
	if (!any)
		return false;
	*out = neg ? -v : v;
	*p = q;
	return true;
}

/*
 * [reg] Read the state of thread tid (relative to the /proc/self/task
 * directory dfd): 1 if it is blocked (*st filled), 0 if it is running,
 * a negative errno if we cannot tell (it may be gone).
 */
static int read_blocked_state(int dfd, int tid, struct blocked_state *st)
{
	char path[32], buf[256];
	const char *p;
	unsigned long v[8], nr;
	unsigned int nv = 0;
	long len, fd;

	if (ukp_scan_without_proc)
		return -ENOENT;
	syscall_path(path, tid);
	fd = arch_syscall4(__NR_openat, dfd, (long)path, O_RDONLY | O_CLOEXEC, 0);
	if (fd < 0)
		return (int)fd;
	len = arch_syscall3(__NR_read, fd, (long)buf, sizeof(buf) - 1);
	arch_syscall3(__NR_close, fd, 0, 0);
	if (len < 0)
		return (int)len;
	buf[len] = 0;
	if (buf[0] == 'r' && buf[1] == 'u' && buf[2] == 'n' && buf[3] == 'n' && buf[4] == 'i' &&
	    buf[5] == 'n' && buf[6] == 'g')
		return 0;
	p = buf;
	if (!parse_num(&p, 10, &nr))
		return -EPROTO;
	st->nr = (long)nr;
	/* "nr sp pc" when nr < 0, "nr a0..a5 sp pc" otherwise */
	while (nv < 8 && parse_num(&p, 16, &v[nv]))
		nv++;
	if (nv != (st->nr < 0 ? 2u : 8u))
		return -EPROTO;
	st->sp = v[nv - 2];
	st->pc = v[nv - 1];
	return 1;
}

/* Set during ukp_threads_drain()'s scans [reg]. */
static bool scan_draining;

/*
 * [reg] Establish, without disturbing it, where thread tid may resume
 * (see the top of the file for why this is sound). T_OUTSIDE_OR_HIT:
 * *bits holds the ranges it may resume in (often none); T_UNKNOWN: it
 * must be asked; T_GONE: it exited.
 */
static int look_at_thread(int dfd, int tid, const struct ukp_range *r, unsigned int n,
			  uint64_t *bits)
{
	struct blocked_state st;
	struct uc_rec *rec;
	unsigned long done = 0;
	uint64_t b;
	int found, ret;

	found = rec_index_find(tid, &rec);
	if (found < 0)
		return T_UNKNOWN;
	if (rec) {
		done = atomic_load_explicit(&rec->done, memory_order_acquire);
		if (atomic_load_explicit(&rec->tid, memory_order_relaxed) != tid)
			return T_UNKNOWN;
	}
	/* ordered around the snapshot (a system call: a full barrier
	 * anyway; explicit for the reader) */
	atomic_thread_fence(memory_order_seq_cst);
	ret = read_blocked_state(dfd, tid, &st);
	atomic_thread_fence(memory_order_seq_cst);
	if (ret < 0 && tid_dead(tid))
		return T_GONE; /* not when only the file is missing */
	if (ret <= 0)
		return T_UNKNOWN;
	/* in the library's handlers, or in a wrapper before its push or
	 * after its pop: a context we cannot see may be on its stack (the
	 * scan signal waits there, and gets the answer right) */
	if (!at_restorer(st.pc) && st.pc >= (uintptr_t)__start_ukprobes_text &&
	    st.pc < (uintptr_t)__stop_ukprobes_text)
		return T_UNKNOWN;
	/* a drain asks every thread that is not inside a system call: one
	 * on its way back from a breakpoint's trap has a SIGTRAP pending */
	if (scan_draining && st.nr < 0)
		return T_UNKNOWN;
	b = ip_hits(r, n, st.pc, st.sp);
	if (st.nr >= 0 && st.pc >= UKP_SYSCALL_INSN_SIZE)
		b |= ranges_hit(r, n, st.pc - UKP_SYSCALL_INSN_SIZE); /* restarted */
	if (!rec) {
		/* no record at the snapshot, unless one was claimed since the
		 * index was built (then look again later) */
		if (atomic_load_explicit(&uc_claims, memory_order_acquire) != rec_index_claims ||
		    atomic_load(&uc_untracked))
			return T_UNKNOWN;
		*bits = b;
		return T_OUTSIDE_OR_HIT;
	}
	b |= rec_hits(rec, r, n);
	atomic_thread_fence(memory_order_acquire);
	if (atomic_load_explicit(&rec->begun, memory_order_relaxed) != done ||
	    atomic_load_explicit(&rec->tid, memory_order_relaxed) != tid)
		return T_UNKNOWN;
	*bits = b;
	return T_OUTSIDE_OR_HIT;
}

/* ---------------------------------------------------- the whole scan */

static long now_ns(void)
{
	struct timespec ts;

	ukp_sys_clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000L + ts.tv_nsec;
}

/* The threads a scan could not establish from /proc [reg]. */
static int unknown_tids[SCAN_MAX_THREADS];

/* [reg] Send the scan request to the threads in req.ent[0, nents). */
static void send_requests(int pid, unsigned int nents)
{
	unsigned int i;

	for (i = 0; i < nents; i++) {
		siginfo_t si;
		int tid = (int)(uint32_t)atomic_load(&req.ent[i]);

		memset(&si, 0, sizeof(si));
		si.si_signo = UKP_SCAN_SIG;
		si.si_code = SI_QUEUE;
		si.si_pid = pid;
		si.si_uid = getuid();
		si.si_value.sival_ptr = &req;
		atomic_fetch_add(&ukp_scan_signalled, 1);
		if (ukp_sys_rt_tgsigqueueinfo(pid, tid, UKP_SCAN_SIG, &si) == -ESRCH)
			atomic_store(&req.ent[i], 0); /* exited: not inside */
	}
}

/*
 * [reg] Wait for the answers to the request; returns how many threads
 * never answered. Every so often a silent thread is looked at through
 * /proc again (it may block the signal, be stopped, ...): a look that
 * establishes where it is counts as its answer. *hit collects those.
 */
static unsigned int wait_answers(int dfd, unsigned int nents, const struct ukp_range *r,
				 unsigned int n, uint64_t *hit)
{
	long deadline = now_ns() + SCAN_TIMEOUT_NS;
	unsigned int i, left;

	for (unsigned int round = 0;; round++) {
		left = 0;
		for (i = 0; i < nents; i++) {
			uint64_t e = atomic_load_explicit(&req.ent[i], memory_order_acquire), bits = 0;
			int tid = (int)(uint32_t)e;

			if (!e)
				continue;
			if (round % 16 == 15) {
				int st = dfd >= 0 ? look_at_thread(dfd, tid, r, n, &bits) : T_UNKNOWN;

				if (st == T_GONE || (st == T_UNKNOWN && tid_dead(tid))) {
					atomic_store(&req.ent[i], 0);
					continue;
				}
				if (st == T_OUTSIDE_OR_HIT) {
					*hit |= bits;
					atomic_store(&req.ent[i], 0);
					continue;
				}
			}
			left++;
		}
		if (!left || now_ns() > deadline)
			return left;
		if (round < 64) {
			ukp_sys_sched_yield();
		} else {
			struct timespec ts = { 0, 50000 };

			ukp_sys_nanosleep(&ts);
		}
	}
}

/*
 * [reg] Which of the n (<= UKP_SCAN_MAX_RANGES) ranges may some thread of
 * the process resume in? Bit i of the result is set when one may (or
 * when we could not tell). Callers make sure no thread can enter the
 * ranges any more before asking. Scans are serialized by the caller
 * (ukp_mutex): the request and the index are static.
 */
uint64_t ukp_threads_scan(const struct ukp_range *r, unsigned int n)
{
	uint64_t all = all_ranges(n), hit = 0;
	int pid = ukp_sys_getpid(), me = ukp_sys_gettid(), dfd;
	unsigned int i, ntids = 0, nunknown = 0, left;
	bool overflow = false;
	struct ukp_dir d;
	const char *name;
	unsigned long g;

	if (!n)
		return 0;
	if (n > UKP_SCAN_MAX_RANGES)
		return all;
	atomic_fetch_add(&ukp_scan_count, 1);
	if (ukp_dir_open(&d, "/proc/self/task"))
		return all;
	dfd = d.fd;
	rec_index_build();
	/* first look: every thread, through /proc */
	while ((name = ukp_dir_next(&d))) {
		int tid = atoi(name);
		uint64_t bits = 0;
		int st;

		if (tid <= 0 || tid == me)
			continue;
		if (ntids++ == SCAN_MAX_THREADS) {
			overflow = true;
			break;
		}
		st = look_at_thread(dfd, tid, r, n, &bits);
		if (st == T_OUTSIDE_OR_HIT) {
			hit |= bits;
			atomic_fetch_add(&ukp_scan_blocked, 1);
		} else if (st == T_UNKNOWN) {
			unknown_tids[nunknown++] = tid;
		}
	}
	/* more looks at the others, after the time the previous one took
	 * (a thread on its way into a sleep; a claim) */
	for (unsigned int look = 0; nunknown && look < SCAN_MORE_LOOKS; look++) {
		unsigned int k = 0;

		if (look < SCAN_YIELD_LOOKS) {
			ukp_sys_sched_yield();
		} else {
			struct timespec pause = { 0, 50000 };

			ukp_sys_nanosleep(&pause);
		}
		if (atomic_load(&uc_claims) != rec_index_claims)
			rec_index_build();
		for (i = 0; i < nunknown; i++) {
			uint64_t bits = 0;
			int st = look_at_thread(dfd, unknown_tids[i], r, n, &bits);

			if (st == T_OUTSIDE_OR_HIT) {
				hit |= bits;
				atomic_fetch_add(&ukp_scan_blocked, 1);
			} else if (st == T_UNKNOWN) {
				unknown_tids[k++] = unknown_tids[i];
			}
		}
		nunknown = k;
	}

	if ((hit & all) == all)
		nunknown = 0; /* nothing left to learn */

	/* ask the rest: publish the request (odd gen while rewriting) */
	g = atomic_load(&req.gen) + 1;
	atomic_store(&req.gen, g);
	req.nranges = n;
	memcpy(req.ranges, r, n * sizeof(*r));
	atomic_store(&req.hit, 0);
	g++;
	for (i = 0; i < nunknown; i++)
		atomic_store_explicit(&req.ent[i], (uint64_t)g << 32 | (uint32_t)unknown_tids[i],
				      memory_order_relaxed);
	req.nents = nunknown;
	atomic_store_explicit(&req.gen, g, memory_order_release);
	send_requests(pid, nunknown);
	left = wait_answers(dfd, nunknown, r, n, &hit);
	ukp_dir_close(&d);

	hit |= atomic_load_explicit(&req.hit, memory_order_acquire);
	/* the caller's own interrupted contexts (its ip is in the library) */
	hit |= my_hits(r, n, 0, 0);
	if (left || overflow) {
		atomic_fetch_add(&ukp_scan_timeouts, 1);
		hit = all;
	}
	/* later answers to this request are ignored (gen moves on) */
	atomic_store(&req.gen, g + 2);
	if (hit)
		atomic_fetch_add(&ukp_scan_inside, (unsigned long)__builtin_popcountll(hit & all));
	return hit & all;
}

/*
 * [reg] Every thread has taken the synchronous signals the kernel had
 * for it when this was called: a thread that hit one of our breakpoints
 * has its SIGTRAP pending until it is scheduled again, and the kernel
 * delivers it to whatever action SIGTRAP has then. Before the library
 * gives SIGTRAP back to the program (ukprobes_shutdown), each thread
 * that is not inside a system call is asked to answer a scan: the
 * kernel delivers its pending SIGTRAP (a synchronous signal, taken
 * first) to the library's handler before the scan signal. A thread in a
 * system call has none pending. False when some thread did not answer
 * in time (tries again up to about two seconds).
 */
bool ukp_threads_drain(void)
{
	/* a range no thread resumes in: only the answers matter */
	const struct ukp_range none = { 0, 1 };
	bool ok = false;

	scan_draining = true;
	for (int tries = 0; tries < 10 && !ok; tries++)
		ok = ukp_threads_scan(&none, 1) == 0;
	scan_draining = false;
	return ok;
}

