/* SPDX-License-Identifier: MIT */
/*
 * threads.c - where are the threads? (for slots a thread may sit in with
 * no trap of ours on its stack: boosted copies, see trap.c)
 *
 * A thread can be "in" an address range in two ways: its instruction
 * pointer is there, or a signal interrupted it there and the handler's
 * frame will return into it. The second is made visible by wrapping the
 * program's signal handlers (signals.c): every handler of the program
 * runs between ukp_uc_push() and ukp_uc_pop(), which keep a per-thread
 * (initial-exec TLS) stack of the interrupted contexts.
 *
 * ukp_threads_scan() asks every other thread of the process with a
 * reserved real-time signal (UKP_SCAN_SIG, owned by the library like
 * SIGTRAP): its handler looks at its own interrupted ip and at every
 * context on its TLS stack, ORs the ranges it found into the request and
 * acknowledges. A thread that does not answer in time (it blocks the
 * signal through a raw system call, it is stopped, ...) counts as inside
 * every range. The calling thread checks its own TLS stack.
 *
 * Side effect, as for any signal: a thread blocked in a system call that
 * is never restarted (epoll_wait, select, pause, ...) returns EINTR.
 * Scans are rare (batched by the slot quarantine, kprobes.c).
 */
#include <dirent.h>
#include <errno.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "internal.h"

/* ------------------------------------------- interrupted contexts */

#define UC_STACK_DEPTH 16

struct uc_stack {
	unsigned int depth;              /* may exceed UC_STACK_DEPTH */
	ucontext_t *uc[UC_STACK_DEPTH];
};

static UKP_TLS struct uc_stack uc_stack;

/* [trap] Before a program's signal handler runs on top of uc. */
UKP_TRAP_TEXT void ukp_uc_push(ucontext_t *uc)
{
	unsigned int d = uc_stack.depth;

	if (d < UC_STACK_DEPTH)
		uc_stack.uc[d] = uc;
	/* the entry is written before it is counted: a scan signal that
	 * arrives in between sees only complete entries */
	atomic_signal_fence(memory_order_seq_cst);
	uc_stack.depth = d + 1;
	atomic_signal_fence(memory_order_seq_cst);
}

/* [trap] After it returned. A handler that leaves with longjmp never
 * pops: its entry stays, which only makes scans more careful. */
UKP_TRAP_TEXT void ukp_uc_pop(void)
{
	atomic_signal_fence(memory_order_seq_cst);
	if (uc_stack.depth)
		uc_stack.depth--;
	atomic_signal_fence(memory_order_seq_cst);
}

/* ------------------------------------------------------- the scan */

#define SCAN_MAX_THREADS 4096
#define SCAN_TIMEOUT_NS (200 * 1000000L)

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

/*
 * [trap] The ranges this thread may resume in, seen from here: every
 * context on its TLS stack (read without faulting: the frame of a
 * handler that left with longjmp may be gone), plus ip if not 0.
 */
static UKP_TRAP_TEXT uint64_t my_hits(const struct ukp_range *r, unsigned int n, uintptr_t ip)
{
	unsigned int d = uc_stack.depth, i;
	uint64_t bits = ip ? ranges_hit(r, n, ip) : 0;

	if (d > UC_STACK_DEPTH)
		return n >= 64 ? ~0ULL : (1ULL << n) - 1; /* lost track: everywhere */
	for (i = 0; i < d; i++) {
		ucontext_t copy;

		if (arch_copy_nofault(&copy.uc_mcontext, &uc_stack.uc[i]->uc_mcontext,
				      sizeof(copy.uc_mcontext)))
			continue;
		bits |= ranges_hit(r, n, arch_uc_ip(&copy));
	}
	return bits;
}

/* [trap] Answer a scan request in this thread; uc is the context the
 * scan signal interrupted. */
static UKP_TRAP_TEXT void scan_answer(ucontext_t *uc)
{
	unsigned long g = atomic_load_explicit(&req.gen, memory_order_acquire);
	int me = ukp_sys_gettid();
	unsigned int i, n;
	uint64_t bits, want;

	if (g & 1)
		return;
	n = req.nranges;
	if (n > UKP_SCAN_MAX_RANGES)
		return;
	bits = my_hits(req.ranges, n, arch_uc_ip(uc));
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

static long now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000L + ts.tv_nsec;
}

static bool tid_gone(int tid)
{
	return ukp_sys_tgkill(ukp_sys_getpid(), tid, 0) == -ESRCH;
}

/*
 * [reg] Which of the n (<= UKP_SCAN_MAX_RANGES) ranges may some thread of
 * the process resume in? Bit i of the result is set when one may (or
 * when we could not tell). Callers make sure no thread can enter the
 * ranges any more before asking.
 */
uint64_t ukp_threads_scan(const struct ukp_range *r, unsigned int n)
{
	uint64_t all = n >= 64 ? ~0ULL : (1ULL << n) - 1, hit;
	int pid = ukp_sys_getpid(), me = ukp_sys_gettid();
	unsigned long g;
	unsigned int i, nents = 0, left;
	bool overflow = false;
	struct dirent *de;
	DIR *d;
	long deadline;

	if (!n)
		return 0;
	if (n > UKP_SCAN_MAX_RANGES)
		return all;
	atomic_fetch_add(&ukp_scan_count, 1);
	d = opendir("/proc/self/task");
	if (!d)
		return all;
	/* publish the request: odd gen while rewriting */
	g = atomic_load(&req.gen) + 1;
	atomic_store(&req.gen, g);
	req.nranges = n;
	memcpy(req.ranges, r, n * sizeof(*r));
	atomic_store(&req.hit, 0);
	g++;
	while ((de = readdir(d))) {
		int tid = atoi(de->d_name);

		if (tid <= 0 || tid == me)
			continue;
		if (nents == SCAN_MAX_THREADS) {
			overflow = true;
			break;
		}
		atomic_store_explicit(&req.ent[nents++], (uint64_t)g << 32 | (uint32_t)tid,
				      memory_order_relaxed);
	}
	closedir(d);
	req.nents = nents;
	atomic_store_explicit(&req.gen, g, memory_order_release);

	for (i = 0; i < nents; i++) {
		siginfo_t si;
		int tid = (int)(uint32_t)atomic_load(&req.ent[i]);

		memset(&si, 0, sizeof(si));
		si.si_signo = UKP_SCAN_SIG;
		si.si_code = SI_QUEUE;
		si.si_pid = pid;
		si.si_uid = getuid();
		si.si_value.sival_ptr = &req;
		if (syscall(SYS_rt_tgsigqueueinfo, pid, tid, UKP_SCAN_SIG, &si) < 0 && errno == ESRCH)
			atomic_store(&req.ent[i], 0); /* exited: not inside */
	}
	/* wait for every answer; a thread that exited answers nothing */
	deadline = now_ns() + SCAN_TIMEOUT_NS;
	for (unsigned int round = 0;; round++) {
		left = 0;
		for (i = 0; i < nents; i++) {
			uint64_t e = atomic_load_explicit(&req.ent[i], memory_order_acquire);

			if (!e)
				continue;
			if (round % 16 == 15 && tid_gone((int)(uint32_t)e)) {
				atomic_store(&req.ent[i], 0);
				continue;
			}
			left++;
		}
		if (!left || now_ns() > deadline)
			break;
		if (round < 64) {
			sched_yield();
		} else {
			struct timespec ts = { 0, 50000 };

			nanosleep(&ts, NULL);
		}
	}
	hit = atomic_load_explicit(&req.hit, memory_order_acquire);
	/* the caller's own interrupted contexts (its ip is in the library) */
	hit |= my_hits(r, n, 0);
	if (left || overflow) {
		atomic_fetch_add(&ukp_scan_timeouts, 1);
		hit = all;
	}
	/* later answers to this request are ignored (gen moves on) */
	atomic_store(&req.gen, g + 2);
	if (hit)
		atomic_fetch_add(&ukp_scan_inside, (unsigned long)__builtin_popcountll(hit));
	return hit & all;
}
