/* SPDX-License-Identifier: MIT */
/*
 * watch.c - data watchpoints: the kernel's hw_breakpoint API for this
 * process (register_user_hw_breakpoint, register_wide_hw_breakpoint,
 * modify_user_hw_breakpoint, unregister_*), with two mechanisms.
 *
 * Debug registers (UKP_HW_BREAKPOINT_DEBUGREG): perf_event_open() with
 * PERF_TYPE_BREAKPOINT, sigtrap and remove_on_exec; the kernel sends
 * SIGTRAP (TRAP_PERF, si_perf_data = the event) after the access. One
 * event per thread: a wide breakpoint opens one on every thread with
 * inherit_thread, so threads created later get it too. Used only where
 * the machine was seen to deliver such a trap (detect_mechanism) and the
 * breakpoint fits the hardware (length 1, 2, 4 or 8, aligned, W or RW,
 * at most 4); anything else takes page protection. Breakpoints with the
 * same thread set and the same address, length and type share one event
 * (hwid) and its trap calls every one of them: two events overflowing on
 * one access would send two SIGTRAPs at once, and the second, a legacy
 * signal still pending, would be lost. For the same reason a breakpoint
 * whose range overlaps another debug-register breakpoint's in any other
 * way (a thread both may fire on) takes page protection: the library
 * then runs every access to that page and reports it to both.
 *
 * Page protection (UKP_HW_BREAKPOINT_PAGE): every page holding watched
 * bytes is made PROT_NONE (a breakpoint on reads) or read-only (writes
 * only). Every access to such a page, by any thread, faults into the
 * library's SIGSEGV handler (ukp_watch_fault), which runs the faulting
 * instruction for the program without unprotecting the page
 * (arch_watch_step: on x86-64 the memory operand rewritten onto a
 * scratch copy, on AArch64 the load or store emulated; the bytes read
 * and written through /proc/self/mem), then calls the
 * handlers of the breakpoints whose range the access touched. Because
 * the page is never opened, no other thread's access can slip through
 * unseen; the steps are serialized by one lock (wlock), which also keeps
 * locked instructions atomic against every other access to the watched
 * pages, all of which trap. An instruction the arch code cannot run that
 * way is stepped in place instead (trap flag) with its pages open for
 * that one instruction: an access by another thread in that window is
 * not seen (ukp_watch_inplace_steps counts these steps). Where user
 * space has no single-step (ARCH_WATCH_STEP_IN_PLACE 0: AArch64), the
 * program gets the page's fault instead (ukp_watch_refused counts them).
 *
 * The program keeps its own view: its mprotect() calls on watched pages
 * are recorded and combined with ours (the mprotect interposer below),
 * and a fault the program's own protection would raise reaches its
 * handler unchanged (ukp_chain_signal). System calls that copy to or
 * from a protected page return EFAULT in the kernel: the common libc
 * wrappers that take user buffers are interposed (watch_syscalls.c).
 *
 * Contexts: the API functions are [reg] (registry mutex); ukp_watch_fault
 * and ukp_watch_sigtrap are [trap].
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <linux/hw_breakpoint.h>
#include <linux/perf_event.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "base/base.h"
#include "watch/watch.h"
#include "core/core.h"
#include "process/process.h"
#include "watch/watch.h"
#include "base/sys.h"

_Static_assert(ARCH_WATCH_R == HW_BREAKPOINT_R && ARCH_WATCH_W == HW_BREAKPOINT_W, "types");

#define MAX_PAGES 1024
#define MAX_BPS 256
#define MAX_FIRE 16
#define HW_SLOTS 4
#define DETECT_MAGIC 0x756b7077UL /* sig_data of the start-up check */
/* sig_data of a breakpoint's events: this tag and its id. A trap whose
 * tag is ours but whose id is no longer registered comes from an event
 * closed after its access (unregistration): dropped, never passed on. */
#define PERF_TAG 0x756b700000000000ULL
#define PERF_TAG_MASK 0xffffff0000000000ULL
#define TRAP_PERF_CODE 6          /* si_code of a perf sigtrap */

/* A page with watched bytes. prog_prot: what the program has asked for
 * (from /proc/self/maps when first watched, then its mprotect calls). */
struct wpage {
	uintptr_t page;
	int prog_prot;
	unsigned int nr, nw; /* page breakpoints on reads (any), on writes only */
	bool ex_open;        /* readable for a load-exclusive (ARCH_WATCH_EXCL_OPEN) */
};

/* Private part of a breakpoint. */
struct wpriv {
	struct perf_event **wide; /* the array register_wide returned */
	int *fds;                 /* debug registers: one event per thread */
	unsigned int nfds;
	bool armed;
	uint64_t id;              /* for sig_data */
	uint64_t hwid;            /* the sig_data id of the events this bp's traps come on */
};

/* Everything below is written under wlock (and the registry mutex on
 * the registration side), read on the trap path under wlock. */
static _Atomic uintptr_t wlock; /* the owner's &wt, or 0 */
static struct wpage pages[MAX_PAGES];    /* sorted by page */
static _Atomic unsigned int npages;
static struct perf_event *bps[MAX_BPS];
static unsigned int nbps;
static unsigned int hw_used;
static uintptr_t pgmask;
static int mechanism;                    /* UKP_HW_BREAKPOINT_*, 0 before the check */
static bool inited;

/* /proc/self/mem for the trap path: checked and reopened there. */
static int mem_fd = -1, mem_pid;
static dev_t mem_dev;
static ino_t mem_ino;

_Atomic unsigned long ukp_watch_inplace_steps;
_Atomic unsigned long ukp_watch_refused;
_Atomic bool ukp_watch_keep_segv;
_Atomic unsigned long ukp_watch_emulated;
static volatile int detect_hits;

/* Per thread: the in-place step under way, the fault queued for the
 * program, and the lock depth (a probe handler inside our own step may
 * touch a watched page: it owns the lock already). */
struct wthread {
	unsigned int lock_depth;
	bool stepping;
	unsigned int nstep_pages;
	uintptr_t step_pages[2 * ARCH_WATCH_MAX_ACCESS];
	struct arch_watch_access acc[ARCH_WATCH_MAX_ACCESS];
	unsigned int nacc;
	uintptr_t step_ip;
	uint64_t step_mask;
	uintptr_t fault_pending; /* si_addr of a fault queued for the program, or 0 */
	bool probing;            /* checking whether a faulting access works now */
};
UKP_TB_LIB_FITS(struct wthread, UKP_TBL_WATCH, UKP_TBL_WATCH_SIZE);
#define wt (*UKP_TB_LIB(struct wthread, UKP_TBL_WATCH)) /* the thread's (base/tb_lib.h) */

/* ------------------------------------------------------------ lock */

/*
 * [trap] [reg with the asynchronous signals blocked] The lock is
 * reentrant per thread, also against a fault at any instruction of
 * these two functions: code running on a watched stack page (the
 * registration side's own frames) faults on its pushes, and the fault's
 * step takes the lock again. The depth is counted first, changed with
 * single instructions, and a nested taker that finds the lock free takes
 * it for the outer one (which then sees itself as the owner).
 */
static UKP_TRAP_TEXT void wlock_take(void)
{
	uintptr_t self = (uintptr_t)&wt;
	unsigned int spins = 0;

	__atomic_add_fetch(&wt.lock_depth, 1, __ATOMIC_RELAXED);
	for (;;) {
		uintptr_t cur = atomic_load_explicit(&wlock, memory_order_acquire);

		if (cur == self)
			return;
		if (!cur && atomic_compare_exchange_weak_explicit(&wlock, &cur, self,
								  memory_order_acquire,
								  memory_order_relaxed))
			return;
		if (++spins < 64)
			arch_cpu_relax();
		else
			arch_syscall4(SYS_sched_yield, 0, 0, 0, 0);
	}
}

static UKP_TRAP_TEXT void wlock_drop(void)
{
	uintptr_t self = (uintptr_t)&wt;

	if (__atomic_sub_fetch(&wt.lock_depth, 1, __ATOMIC_RELAXED))
		return;
	/* only if still ours: a nested holder may have released it */
	atomic_compare_exchange_strong_explicit(&wlock, &self, 0, memory_order_release,
						memory_order_relaxed);
}

/* [reg] The lock with every signal but the synchronous ones blocked, so
 * that a program handler on this thread never waits for it. */
static void wlock_take_reg(uint64_t *old)
{
	ukp_sys_sigprocmask(SIG_BLOCK, &ukp_async_mask, old);
	wlock_take();
}

static void wlock_drop_reg(const uint64_t *old)
{
	wlock_drop();
	ukp_sys_sigprocmask(SIG_SETMASK, old, NULL);
}

/* ----------------------------------------------------- page table */

/* [trap] under wlock */
static UKP_TRAP_TEXT struct wpage *page_find(uintptr_t page)
{
	unsigned int lo = 0, hi = atomic_load_explicit(&npages, memory_order_relaxed);

	while (lo < hi) {
		unsigned int mid = (lo + hi) / 2;

		if (pages[mid].page == page)
			return &pages[mid];
		if (pages[mid].page < page)
			lo = mid + 1;
		else
			hi = mid;
	}
	return NULL;
}

static UKP_TRAP_TEXT int eff_prot(const struct wpage *p)
{
	if (p->nr && p->ex_open)
		return p->prog_prot & ~PROT_WRITE;
	if (p->nr)
		return PROT_NONE;
	if (p->nw)
		return p->prog_prot & ~PROT_WRITE;
	return p->prog_prot;
}

static UKP_TRAP_TEXT long sys_mprotect(uintptr_t a, size_t len, int prot)
{
	return arch_syscall4(SYS_mprotect, (long)a, (long)len, prot, 0);
}

/* ------------------------------------------------ /proc/self/mem */

static UKP_TRAP_TEXT bool mem_fd_ok(void)
{
	struct stat st;

	return mem_fd >= 0 && mem_pid == ukp_sys_getpid() &&
	       arch_syscall4(SYS_fstat, mem_fd, (long)&st, 0, 0) == 0 && st.st_dev == mem_dev &&
	       st.st_ino == mem_ino;
}

/* [trap] [reg] The descriptor, (re)opened when it is not ours any more
 * (forked child, closed by the program). */
static UKP_TRAP_TEXT int mem_get(void)
{
	struct stat st;
	long fd;
	static const char path[] = "/proc/self/mem";

	if (mem_fd_ok())
		return mem_fd;
	/* a forked child's copy of the parent's descriptor is still ours to
	 * close (one the program closed and reused for a file of its own
	 * is not: another file) */
	if (mem_fd >= 0 && arch_syscall4(SYS_fstat, mem_fd, (long)&st, 0, 0) == 0 &&
	    st.st_dev == mem_dev && st.st_ino == mem_ino)
		arch_syscall4(SYS_close, mem_fd, 0, 0, 0);
	mem_fd = -1;
	fd = arch_syscall4(SYS_openat, AT_FDCWD, (long)path, O_RDWR | O_CLOEXEC, 0);
	if (fd < 0)
		return -1;
	if (arch_syscall4(SYS_fstat, fd, (long)&st, 0, 0)) {
		arch_syscall4(SYS_close, fd, 0, 0, 0);
		return -1;
	}
	mem_dev = st.st_dev;
	mem_ino = st.st_ino;
	mem_pid = ukp_sys_getpid();
	mem_fd = (int)fd;
	return mem_fd;
}

static UKP_TRAP_TEXT long mem_rw(long nr, uintptr_t addr, void *buf, size_t n)
{
	int fd = mem_get();

	if (fd < 0)
		return -EFAULT;
	while (n) {
		long r = arch_syscall4(nr, fd, (long)buf, (long)n, (long)addr);

		if (r <= 0)
			return -EFAULT;
		n -= (size_t)r;
		addr += (uintptr_t)r;
		buf = (char *)buf + r;
	}
	return 0;
}

static UKP_TRAP_TEXT long mem_read(void *dst, uintptr_t src, size_t n)
{
	return mem_rw(SYS_pread64, src, dst, n);
}

static UKP_TRAP_TEXT long mem_write(uintptr_t dst, const void *src, size_t n)
{
	return mem_rw(SYS_pwrite64, dst, (void *)src, n);
}

/* [trap] under wlock: may the program access the range now? Watched
 * pages by what it asked for, others by trying (a one-byte read, an
 * atomic no-op write). */
static UKP_TRAP_TEXT int mem_check(uintptr_t a, size_t len, bool write, uintptr_t *fault)
{
	uintptr_t p, end = a + len;

	if (end < a)
		return -EFAULT;
	for (p = a & ~pgmask; p < end; p += pgmask + 1) {
		uintptr_t at = p < a ? a : p;
		struct wpage *w = page_find(p);
		bool ok;

		if (w) {
			ok = w->prog_prot & (write ? PROT_WRITE : PROT_READ);
		} else if (write) {
			ok = arch_watch_probe_write(at) == 0;
		} else {
			uint8_t b;

			ok = arch_copy_nofault(&b, (void *)at, 1) == 0;
		}
		if (!ok) {
			*fault = at;
			return -EFAULT;
		}
	}
	return 0;
}

static const struct arch_watch_mem wmem = { mem_check, mem_read, mem_write };

/* ------------------------------------------------------ the hit */

struct fire {
	struct perf_event *bp;
	struct perf_sample_data sd;
};

/* [trap] under wlock: the enabled breakpoints an access of this thread
 * touched. An access the library made for the program was never seen by the debug registers, so their breakpoints are
 * reported here too. So is one the CPU made in an in-place step: its
 * debug-register trap comes on the same #DB as the step's and is lost
 * with it (two SIGTRAPs at once), or dropped (perf_trap). */
static UKP_TRAP_TEXT unsigned int collect(const struct arch_watch_access *acc, unsigned int nacc,
					  uintptr_t ip, struct fire *out)
{
	unsigned int i, j, n = 0;
	int tid = 0;

	for (i = 0; i < nbps; i++) {
		struct perf_event *bp = bps[i];
		struct wpriv *pv = bp->priv;

		if (!pv->armed)
			continue;
		for (j = 0; j < nacc && n < MAX_FIRE; j++) {
			const struct arch_watch_access *a = &acc[j];

			if (!(a->type & bp->attr.bp_type) || a->addr >= bp->attr.bp_addr + bp->attr.bp_len ||
			    a->addr + a->len <= bp->attr.bp_addr)
				continue;
			if (bp->tid) {
				if (!tid)
					tid = ukp_sys_gettid();
				if (bp->tid != tid)
					break;
			}
			out[n].bp = bp;
			out[n].sd.addr = a->addr;
			out[n].sd.len = a->len;
			out[n].sd.type = a->type & bp->attr.bp_type;
			out[n].sd.ip = ip;
			n++;
			break;
		}
	}
	return n;
}

struct watch_call {
	struct perf_event *bp;
	perf_overflow_handler_t fn;
	struct perf_sample_data *sd;
};

static UKP_TRAP_TEXT int watch_thunk(void *arg, struct pt_regs *regs)
{
	struct watch_call *w = arg;

	w->fn(w->bp, w->sd, regs);
	return 0;
}

/* [trap] Call the handlers (the caller is inside the read side, so the
 * breakpoints stay alive). An access while a handler of this thread
 * runs is missed. */
static UKP_TRAP_TEXT void fire_all(struct ukp_ctlblk *c, struct fire *f, unsigned int n,
				   struct pt_regs *regs)
{
	unsigned int i;

	for (i = 0; i < n; i++) {
		struct watch_call w = { f[i].bp, f[i].bp->overflow_handler, &f[i].sd };

		if (c->in_handler > 0 || !w.fn) {
			if (w.fn)
				__atomic_fetch_add(&f[i].bp->nmissed, 1, __ATOMIC_RELAXED);
			continue;
		}
		ukp_call_handler(NULL, watch_thunk, &w, regs, KPROBE_HIT_ACTIVE, 0, true);
	}
}

/* [trap] Open the pages of an in-place step (wlock held). */
static UKP_TRAP_TEXT void step_in_place(ucontext_t *uc, uintptr_t fault_addr)
{
	unsigned int i, n = 0;
	uintptr_t cand[1 + 2 * ARCH_WATCH_MAX_ACCESS];

	cand[n++] = fault_addr & ~pgmask;
	for (i = 0; i < wt.nacc; i++) {
		cand[n++] = wt.acc[i].addr & ~pgmask;
		cand[n++] = (wt.acc[i].addr + wt.acc[i].len - 1) & ~pgmask;
	}
	wt.nstep_pages = 0;
	for (i = 0; i < n; i++) {
		struct wpage *w = page_find(cand[i]);
		unsigned int k;
		bool dup = false;

		for (k = 0; k < wt.nstep_pages; k++)
			dup |= wt.step_pages[k] == cand[i];
		if (!w || dup || wt.nstep_pages == sizeof(wt.step_pages) / sizeof(wt.step_pages[0]))
			continue;
		sys_mprotect(cand[i], pgmask + 1, w->prog_prot);
		wt.step_pages[wt.nstep_pages++] = cand[i];
	}
	wt.stepping = true;
	wt.step_ip = arch_uc_ip(uc);
	/* no program handler between the instruction and its trap */
	wt.step_mask = *(uint64_t *)&uc->uc_sigmask;
	*(uint64_t *)&uc->uc_sigmask |= ukp_async_mask;
	arch_uc_set_single_step(uc, true);
	atomic_fetch_add(&ukp_watch_inplace_steps, 1);
}

/* [trap] Close the pages of an in-place step again (wlock held). */
static UKP_TRAP_TEXT void step_close(void)
{
	unsigned int i;

	for (i = 0; i < wt.nstep_pages; i++) {
		struct wpage *w = page_find(wt.step_pages[i]);

		if (w)
			sys_mprotect(w->page, pgmask + 1, eff_prot(w));
	}
	wt.nstep_pages = 0;
	wt.stepping = false;
}

/*
 * [trap] A SIGSEGV/SIGBUS: is it an access to a watched page that the
 * program's own protection allows? Then run the instruction for the
 * program, call the handlers, and return true. False: the fault is the
 * program's (the caller passes it on).
 */
UKP_TRAP_TEXT bool ukp_watch_fault(int sig, siginfo_t *info, ucontext_t *uc)
{
	struct ukp_ctlblk *c = &ukp_ctl;
	uintptr_t addr = (uintptr_t)info->si_addr;
	struct arch_watch_access acc[ARCH_WATCH_MAX_ACCESS];
	struct arch_watch_fault flt = { 0, 0, 0 };
	struct fire fire[MAX_FIRE];
	unsigned int nacc = 0, nfire = 0;
	struct pt_regs regs;
	struct wpage *w;
	bool write;
	int ret;

	if (sig != SIGSEGV || !atomic_load_explicit(&npages, memory_order_relaxed))
		return false;
	if (wt.fault_pending && wt.fault_pending == addr) {
		/* the fault we queued for the program: its own */
		wt.fault_pending = 0;
		return false;
	}
	if (info->si_code != SEGV_ACCERR)
		return false;
	if (wt.stepping) {
		/* the in-place step faulted again (another thread closed the
		 * page meanwhile): start over */
		*(uint64_t *)&uc->uc_sigmask = wt.step_mask;
		arch_uc_set_single_step(uc, false);
		wlock_take();
		step_close();
		wlock_drop();
	}
	write = arch_uc_fault_write(uc);
	wlock_take();
	w = page_find(addr & ~pgmask);
	if (!w) {
		/* Not (or no longer) watched: if the access works now (the
		 * watchpoint went away after the fault), run it again. Not for
		 * a fault of the library's own nofault copies (they have their
		 * fixup), nor inside such a check. */
		uint8_t b;
		uintptr_t fix;
		bool works;

		wlock_drop();
		if (wt.probing || arch_nofault_fixup(arch_uc_ip(uc), &fix))
			return false;
		wt.probing = true;
		works = write ? arch_watch_probe_write(addr) == 0
			      : arch_copy_nofault(&b, (void *)addr, 1) == 0;
		wt.probing = false;
		return works;
	}
	if (!(w->prog_prot & (write ? PROT_WRITE : PROT_READ))) {
		wlock_drop();
		return false;
	}
	arch_regs_from_ucontext(&regs, uc);
	ret = arch_watch_step(&wmem, &regs, uc, acc, &nacc, &flt);
	if (ret == -EFAULT) {
		wlock_drop();
		wt.fault_pending = flt.addr;
		ukp_deliver_fault(flt.sig, flt.code, flt.addr, uc);
		return true;
	}
	if (ret == ARCH_WATCH_EXCL_OPEN) {
		/* a load-exclusive on a page closed to reads: reported now,
		 * then run by the CPU with the page readable (its monitor must
		 * be armed for the store-exclusive, which faults on the page
		 * left read-only and closes it again) */
		w->ex_open = true;
		sys_mprotect(w->page, pgmask + 1, eff_prot(w));
		nfire = collect(acc, nacc, arch_uc_ip(uc), fire);
		ukp_read_lock(c);
		wlock_drop();
		if (nfire) {
			fire_all(c, fire, nfire, &regs);
			arch_regs_to_ucontext(uc, &regs);
		}
		ukp_read_unlock(c);
		return true;
	}
	if (ret && !ARCH_WATCH_STEP_IN_PLACE) {
		/* no single-step on this architecture: the access cannot be
		 * made for the program, whose fault this one becomes (as it
		 * came: SIGSEGV, SEGV_ACCERR, the address) */
		wlock_drop();
		atomic_fetch_add_explicit(&ukp_watch_refused, 1, memory_order_relaxed);
		return false;
	}
	if (ret) {
		/* step it in place; the handlers run at the trap after it */
		wt.nacc = nacc;
		__builtin_memcpy(wt.acc, acc, sizeof(acc));
		step_in_place(uc, addr);
		wlock_drop();
		return true;
	}
	atomic_fetch_add_explicit(&ukp_watch_emulated, 1, memory_order_relaxed);
	if (w->ex_open) {
		w->ex_open = false;
		sys_mprotect(w->page, pgmask + 1, eff_prot(w));
	}
	nfire = collect(acc, nacc, arch_uc_ip(uc), fire);
	ukp_read_lock(c);
	wlock_drop();
	arch_regs_to_ucontext(uc, &regs);
	if (nfire) {
		fire_all(c, fire, nfire, &regs);
		arch_regs_to_ucontext(uc, &regs);
	}
	ukp_read_unlock(c);
	return true;
}

/* [trap] The trap after an in-place step. */
static UKP_TRAP_TEXT bool step_done(ucontext_t *uc)
{
	struct ukp_ctlblk *c = &ukp_ctl;
	struct fire fire[MAX_FIRE];
	struct pt_regs regs;
	unsigned int nfire;

	if (!wt.stepping)
		return false;
	arch_uc_set_single_step(uc, false);
	*(uint64_t *)&uc->uc_sigmask = wt.step_mask;
	wlock_take();
	step_close();
	nfire = collect(wt.acc, wt.nacc, wt.step_ip, fire);
	ukp_read_lock(c);
	wlock_drop();
	if (nfire) {
		arch_regs_from_ucontext(&regs, uc);
		fire_all(c, fire, nfire, &regs);
		arch_regs_to_ucontext(uc, &regs);
	}
	ukp_read_unlock(c);
	return true;
}

/* [trap] A debug-register breakpoint's trap (TRAP_PERF). */
static UKP_TRAP_TEXT bool perf_trap(siginfo_t *info, ucontext_t *uc)
{
	/* the kernel's si_perf_data and si_perf_type follow si_addr */
	uint64_t data = *(uint64_t *)((char *)info + 24);
	uint32_t type = *(uint32_t *)((char *)info + 32);
	struct ukp_ctlblk *c = &ukp_ctl;
	struct fire f[MAX_FIRE];
	struct pt_regs regs;
	unsigned int i, n = 0;

	if (type != PERF_TYPE_BREAKPOINT)
		return false;
	if (data == DETECT_MAGIC) {
		detect_hits++;
		return true;
	}
	if ((data & PERF_TAG_MASK) != PERF_TAG)
		return false; /* the program's own event */
	if (wt.stepping)
		return true; /* an in-place step's access: step_done reports it */
	ukp_read_lock(c);
	wlock_take();
	/* every breakpoint sharing the event (hw_share) */
	for (i = 0; i < nbps && n < MAX_FIRE; i++) {
		struct wpriv *pv = bps[i]->priv;

		if (!pv->armed || bps[i]->mechanism != UKP_HW_BREAKPOINT_DEBUGREG ||
		    pv->hwid != (data & ~PERF_TAG_MASK))
			continue;
		f[n].bp = bps[i];
		f[n].sd.addr = bps[i]->attr.bp_addr;
		f[n].sd.len = bps[i]->attr.bp_len;
		f[n].sd.type = bps[i]->attr.bp_type;
		f[n].sd.ip = 0;
		n++;
	}
	wlock_drop();
	if (n) {
		arch_regs_from_ucontext(&regs, uc);
		fire_all(c, f, n, &regs);
		arch_regs_to_ucontext(uc, &regs);
	}
	ukp_read_unlock(c);
	return true;
}

/* [trap] A SIGTRAP that is not a breakpoint's: ours if it ends an
 * in-place step or comes from one of our perf events. */
UKP_TRAP_TEXT bool ukp_watch_sigtrap(siginfo_t *info, ucontext_t *uc)
{
	if (info->si_code == TRAP_TRACE)
		return step_done(uc);
	if (info->si_code == TRAP_PERF_CODE)
		return perf_trap(info, uc);
	return false;
}

/* ------------------------------------------- system call copies */

/* [any] Does [a, a + len) touch a watched page? */
bool ukp_watch_overlaps(uintptr_t s, size_t len)
{
	uintptr_t p, e = s + len;
	uint64_t old;
	bool hit = false;

	if (!atomic_load_explicit(&npages, memory_order_relaxed) || !len)
		return false;
	wlock_take_reg(&old);
	for (p = s & ~pgmask; p < e && p >= (s & ~pgmask) && !hit; p += pgmask + 1)
		hit = page_find(p) != NULL;
	wlock_drop_reg(&old);
	return hit;
}

/* [any] May the program access [a, a + len) (0 or -EFAULT)? */
int ukp_watch_check_user(const void *a, size_t len, bool write)
{
	uintptr_t f;
	uint64_t old;
	int ret;

	wlock_take_reg(&old);
	ret = mem_check((uintptr_t)a, len, write, &f);
	wlock_drop_reg(&old);
	return ret;
}

/*
 * [any] A system call's copy to (write) or from the program's buffer at
 * user, done through the bounce buffer: the bytes move through
 * /proc/self/mem, then the breakpoints the copy touched fire, with regs
 * showing ip = the caller of the libc wrapper. 0 or -EFAULT.
 */
int ukp_watch_user_copy(void *user, void *bounce, size_t len, bool write, uintptr_t ip)
{
	struct ukp_ctlblk *c = &ukp_ctl;
	struct arch_watch_access a = { (uintptr_t)user, len, write ? ARCH_WATCH_W : ARCH_WATCH_R };
	struct fire fire[MAX_FIRE];
	struct pt_regs regs;
	unsigned int nfire;
	uintptr_t f;
	uint64_t old;
	long r;

	wlock_take_reg(&old);
	r = mem_check((uintptr_t)user, len, write, &f);
	if (!r)
		r = write ? mem_write((uintptr_t)user, bounce, len)
			  : mem_read(bounce, (uintptr_t)user, len);
	nfire = r ? 0 : collect(&a, 1, ip, fire);
	ukp_read_lock(c);
	wlock_drop_reg(&old);
	if (nfire) {
		memset(&regs, 0, sizeof(regs));
		instruction_pointer_set(&regs, ip);
		regs.sp = (uintptr_t)__builtin_frame_address(0); /* both archs name it sp */
		ukp_sys_sigprocmask(SIG_BLOCK, &ukp_async_mask, &old);
		fire_all(c, fire, nfire, &regs);
		ukp_sys_sigprocmask(SIG_SETMASK, &old, NULL);
	}
	ukp_read_unlock(c);
	return r ? -EFAULT : 0;
}

/* --------------------------------------------- the mprotect() call */

/*
 * [any] The program's mprotect(): pages with watched bytes record the
 * protection it asks for and get that minus ours; other pages get it
 * as asked, in as few calls as the watched pages allow.
 */
__attribute__((visibility("default"))) int mprotect(void *addr, size_t len, int prot)
{
	uintptr_t s = (uintptr_t)addr, e, p, run = 0;
	uint64_t old;
	long r = 0;

	if (!atomic_load_explicit(&npages, memory_order_acquire) || (s & pgmask) || !len) {
		r = sys_mprotect(s, len, prot);
		goto out;
	}
	e = (s + len + pgmask) & ~pgmask;
	if (e < s) {
		r = -ENOMEM;
		goto out;
	}
	wlock_take_reg(&old);
	for (p = s; p < e && !r; p += pgmask + 1) {
		struct wpage *w = page_find(p);

		if (!w) {
			if (!run)
				run = p;
			continue;
		}
		if (run) {
			r = sys_mprotect(run, p - run, prot);
			run = 0;
			if (r)
				break;
		}
		w->prog_prot = prot;
		r = sys_mprotect(p, pgmask + 1, eff_prot(w));
	}
	if (!r && run)
		r = sys_mprotect(run, e - run, prot);
	wlock_drop_reg(&old);
out:
	if (r < 0) {
		errno = (int)-r;
		return -1;
	}
	return 0;
}

/* ------------------------------------------------- registration */

/* [reg] The protection and kind of the mapping that holds addr: 0, or
 * -EFAULT (not mapped), -EOPNOTSUPP (shared). */
static int maps_prot(uintptr_t addr, int *prot)
{
	struct ukp_map_ent e;
	struct ukp_maps m;
	int ret = -EFAULT, got;

	if ((got = ukp_maps_open(&m)))
		return got;
	while ((got = ukp_maps_next(&m, &e)) > 0) {
		if (addr < e.start || addr >= e.end)
			continue;
		*prot = (e.perms[0] == 'r' ? PROT_READ : 0) | (e.perms[1] == 'w' ? PROT_WRITE : 0) |
			(e.perms[2] == 'x' ? PROT_EXEC : 0);
		ret = e.perms[3] == 'p' ? 0 : -EOPNOTSUPP;
		break;
	}
	ukp_maps_close(&m);
	return got < 0 ? got : ret;
}

/* [reg] wlock held: the slot for page (inserted if new, with its
 * protection now), or NULL when the table is full. */
static struct wpage *page_get(uintptr_t page, int prot)
{
	unsigned int n = atomic_load(&npages), i;
	struct wpage *w = page_find(page);

	if (w)
		return w;
	if (n == MAX_PAGES)
		return NULL;
	for (i = n; i > 0 && pages[i - 1].page > page; i--)
		pages[i] = pages[i - 1];
	pages[i].page = page;
	pages[i].prog_prot = prot;
	pages[i].nr = pages[i].nw = 0;
	pages[i].ex_open = false;
	atomic_store(&npages, n + 1);
	return &pages[i];
}

/* [reg] wlock held */
static void page_put(struct wpage *w)
{
	unsigned int n = atomic_load(&npages), i = (unsigned int)(w - pages);

	sys_mprotect(w->page, pgmask + 1, eff_prot(w));
	if (w->nr || w->nw)
		return;
	for (; i + 1 < n; i++)
		pages[i] = pages[i + 1];
	atomic_store(&npages, n - 1);
}

/* The alternate signal stacks the library gave threads (freed at their
 * exit). */
static pthread_key_t altstack_key;
static pthread_once_t altstack_once = PTHREAD_ONCE_INIT;
#define ALTSTACK_SIZE (64 * 1024)

static void altstack_free(void *p)
{
	stack_t ss = { .ss_flags = SS_DISABLE };

	ukp_sys_sigaltstack(&ss, NULL);
	ukp_sys_munmap(p, ALTSTACK_SIZE);
}

static void altstack_key_init(void)
{
	pthread_key_create(&altstack_key, altstack_free);
}

/*
 * [reg] A watched page on the calling thread's own stack: the kernel
 * cannot write a signal frame there, so the SIGSEGV of every access on
 * it must go to an alternate stack (the library's fault handlers ask for
 * one). The thread gets one if it has none. (Other threads' stacks are
 * the program's business: see doc/watchpoints.md.)
 */
static void altstack_for_own_stack(uintptr_t a, size_t len)
{
	pthread_attr_t at;
	void *lo;
	size_t size;
	stack_t ss;

#ifdef UKP_FREE
	/* (no pthread attributes: the program's threads are not the agent's
	 * C library's; a watch on a thread's own stack takes no alternate
	 * stack here) */
	(void)at;
	(void)lo;
	(void)size;
	(void)ss;
	(void)a;
	(void)len;
	return;
#endif
	if (pthread_getattr_np(pthread_self(), &at))
		return;
	if (pthread_attr_getstack(&at, &lo, &size) ||
	    a + len <= (uintptr_t)lo || a >= (uintptr_t)lo + size) {
		pthread_attr_destroy(&at);
		return;
	}
	pthread_attr_destroy(&at);
	if (ukp_sys_sigaltstack(NULL, &ss) || !(ss.ss_flags & SS_DISABLE))
		return;
	pthread_once(&altstack_once, altstack_key_init);
	if (ukp_sys_mmap(NULL, ALTSTACK_SIZE, PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK, -1, 0, &ss.ss_sp))
		return;
	ss.ss_size = ALTSTACK_SIZE;
	ss.ss_flags = 0;
	if (ukp_sys_sigaltstack(&ss, NULL)) {
		ukp_sys_munmap(ss.ss_sp, ALTSTACK_SIZE);
		return;
	}
	pthread_setspecific(altstack_key, ss.ss_sp);
}

/* [reg] Protect the pages of bp (page mechanism). */
static int page_arm(struct perf_event *bp)
{
	uintptr_t s = bp->attr.bp_addr & ~pgmask, e = (bp->attr.bp_addr + bp->attr.bp_len + pgmask) & ~pgmask;
	bool rd = bp->attr.bp_type & HW_BREAKPOINT_R;
	unsigned int want = 0, i, n;
	int prots[MAX_PAGES];
	uintptr_t p;
	uint64_t old;
	int ret;

	n = (unsigned int)((e - s) / (pgmask + 1));
	if (n > MAX_PAGES)
		return -ENOSPC;
	for (i = 0, p = s; i < n; i++, p += pgmask + 1) {
		struct wpage *w;

		wlock_take_reg(&old);
		w = page_find(p);
		if (w)
			prots[i] = w->prog_prot;
		else
			want++;
		wlock_drop_reg(&old);
		if (w)
			continue;
		ret = maps_prot(p, &prots[i]);
		if (ret)
			return ret;
		if (prots[i] & PROT_EXEC)
			return -EINVAL;
	}
	altstack_for_own_stack(bp->attr.bp_addr, bp->attr.bp_len);
	atomic_store(&ukp_watch_keep_segv, true);
	wlock_take_reg(&old);
	if (atomic_load(&npages) + want > MAX_PAGES) {
		wlock_drop_reg(&old);
		return -ENOSPC;
	}
	for (i = 0, p = s; i < n; i++, p += pgmask + 1) {
		struct wpage *w = page_get(p, prots[i]);

		if (rd)
			w->nr++;
		else
			w->nw++;
		sys_mprotect(p, pgmask + 1, eff_prot(w));
	}
	wlock_drop_reg(&old);
	return 0;
}

/* [reg] */
static void page_disarm(struct perf_event *bp)
{
	uintptr_t s = bp->attr.bp_addr & ~pgmask, e = (bp->attr.bp_addr + bp->attr.bp_len + pgmask) & ~pgmask;
	bool rd = bp->attr.bp_type & HW_BREAKPOINT_R;
	uint64_t old;
	uintptr_t p;

	wlock_take_reg(&old);
	for (p = s; p < e; p += pgmask + 1) {
		struct wpage *w = page_find(p);

		if (!w)
			continue;
		if (rd && w->nr)
			w->nr--;
		else if (!rd && w->nw)
			w->nw--;
		page_put(w);
	}
	wlock_drop_reg(&old);
}

static int perf_open(const struct perf_event_attr *attr, uint64_t data, int tid, bool inherit)
{
	struct perf_event_attr a = *attr;

	a.size = sizeof(a);
	a.disabled = 0;
	a.sigtrap = 1;
	a.remove_on_exec = 1;
	a.sig_data = data;
	a.inherit = inherit;
	a.inherit_thread = inherit;
	a.exclude_kernel = 1;
	a.exclude_hv = 1;
	return ukp_sys_perf_event_open(&a, tid, -1, -1, PERF_FLAG_FD_CLOEXEC); /* or -errno */
}

/* [reg] Does the machine deliver a debug-register trap? Arm one on a
 * variable of this thread, write it, see whether the trap came. */
static int detect_mechanism(void)
{
	static volatile int var;
	struct perf_event_attr a;
	const char *env = getenv("UKPROBES_WATCH");
	int fd;

	if (env && !strcmp(env, "page"))
		return UKP_HW_BREAKPOINT_PAGE;
	if (env && !strcmp(env, "debugreg"))
		return UKP_HW_BREAKPOINT_DEBUGREG;
	hw_breakpoint_init(&a);
	a.bp_addr = (uintptr_t)&var;
	a.bp_len = HW_BREAKPOINT_LEN_4;
	a.bp_type = HW_BREAKPOINT_W;
	fd = perf_open(&a, DETECT_MAGIC, 0, false);
	if (fd < 0)
		return UKP_HW_BREAKPOINT_PAGE;
	detect_hits = 0;
	var = var + 1;
	atomic_signal_fence(memory_order_seq_cst);
	ukp_sys_close(fd);
	return detect_hits ? UKP_HW_BREAKPOINT_DEBUGREG : UKP_HW_BREAKPOINT_PAGE;
}

/* [reg] An armed debug-register breakpoint other than bp whose event bp
 * can share: same thread set, address, length and type. */
static struct perf_event *hw_share(const struct perf_event *bp)
{
	unsigned int i;

	for (i = 0; i < nbps; i++) {
		const struct perf_event *o = bps[i];

		if (o != bp && ((struct wpriv *)o->priv)->armed &&
		    o->mechanism == UKP_HW_BREAKPOINT_DEBUGREG && o->tid == bp->tid &&
		    o->attr.bp_addr == bp->attr.bp_addr && o->attr.bp_len == bp->attr.bp_len &&
		    o->attr.bp_type == bp->attr.bp_type)
			return (struct perf_event *)o;
	}
	return NULL;
}

/* [reg] Does bp's range overlap an armed debug-register breakpoint's on a
 * thread both may fire on? Its own event would trap together with that
 * one's (see the top of this file). */
static bool hw_overlaps(const struct perf_event *bp)
{
	unsigned int i;

	for (i = 0; i < nbps; i++) {
		const struct perf_event *o = bps[i];

		if (o == bp || !((struct wpriv *)o->priv)->armed ||
		    o->mechanism != UKP_HW_BREAKPOINT_DEBUGREG ||
		    (o->tid && bp->tid && o->tid != bp->tid))
			continue;
		if (o->attr.bp_addr < bp->attr.bp_addr + bp->attr.bp_len &&
		    bp->attr.bp_addr < o->attr.bp_addr + o->attr.bp_len)
			return true;
	}
	return false;
}

/* [reg] A debug register on bp's thread, or on every thread; or the
 * event of an identical breakpoint (hw_share). */
static int hw_arm(struct perf_event *bp)
{
	struct wpriv *pv = bp->priv;
	struct perf_event *same = hw_share(bp);
	int *fds = NULL, n = 0, cap = 0, fd, ret = 0;

	if (same) {
		pv->hwid = ((struct wpriv *)same->priv)->hwid;
		pv->fds = NULL;
		pv->nfds = 0;
		return 0;
	}
	pv->hwid = pv->id;
	if (bp->tid) {
		fds = malloc(sizeof(*fds));
		if (!fds)
			return -ENOMEM;
		fd = perf_open(&bp->attr, PERF_TAG | pv->id, bp->tid, false);
		if (fd < 0) {
			free(fds);
			return fd;
		}
		fds[n++] = fd;
	} else {
		struct ukp_dir d;
		const char *name;

		if ((ret = ukp_dir_open(&d, "/proc/self/task")))
			return ret;
		while ((name = ukp_dir_next(&d))) {
			int tid = atoi(name);

			if (tid <= 0)
				continue;
			if (n == cap) {
				int *nf = realloc(fds, (size_t)(cap = cap ? 2 * cap : 8) * sizeof(*fds));

				if (!nf) {
					ret = -ENOMEM;
					break;
				}
				fds = nf;
			}
			fd = perf_open(&bp->attr, PERF_TAG | pv->id, tid, true);
			if (fd < 0 && fd != -ESRCH) {
				ret = fd;
				break;
			}
			if (fd >= 0)
				fds[n++] = fd;
		}
		ukp_dir_close(&d);
		if (ret) {
			while (n)
				ukp_sys_close(fds[--n]);
			free(fds);
			return ret;
		}
	}
	pv->fds = fds;
	pv->nfds = (unsigned int)n;
	hw_used++;
	return 0;
}

/* [reg] bp is disarmed already: its event goes, or passes to a breakpoint
 * that shares it. */
static void hw_disarm(struct perf_event *bp)
{
	struct wpriv *pv = bp->priv;
	unsigned int i;

	if (!pv->fds)
		return; /* a sharer: the owner keeps the event */
	for (i = 0; i < nbps; i++) {
		struct wpriv *o = bps[i]->priv;

		if (bps[i] != bp && o->armed && bps[i]->mechanism == UKP_HW_BREAKPOINT_DEBUGREG &&
		    o->hwid == pv->hwid) {
			o->fds = pv->fds;
			o->nfds = pv->nfds;
			pv->fds = NULL;
			pv->nfds = 0;
			return;
		}
	}
	while (pv->nfds)
		ukp_sys_close(pv->fds[--pv->nfds]);
	free(pv->fds);
	pv->fds = NULL;
	hw_used--;
}

/* [reg] May bp use a debug register of its own (hw_overlaps aside)? */
static bool hw_fits(const struct perf_event_attr *a)
{
	return mechanism == UKP_HW_BREAKPOINT_DEBUGREG && hw_used < HW_SLOTS &&
	       (a->bp_len == 1 || a->bp_len == 2 || a->bp_len == 4 || a->bp_len == 8) &&
	       !(a->bp_addr & (a->bp_len - 1)) &&
	       (a->bp_type == HW_BREAKPOINT_W || a->bp_type == HW_BREAKPOINT_RW);
}

/* [reg] */
static int arm(struct perf_event *bp)
{
	struct wpriv *pv = bp->priv;
	int ret;

	if (bp->attr.disabled)
		return 0;
	if (hw_share(bp) || (hw_fits(&bp->attr) && !hw_overlaps(bp))) {
		bp->mechanism = UKP_HW_BREAKPOINT_DEBUGREG;
		ret = hw_arm(bp);
	} else {
		bp->mechanism = UKP_HW_BREAKPOINT_PAGE;
		ret = page_arm(bp);
	}
	if (!ret)
		pv->armed = true;
	return ret;
}

/* [reg] */
static void disarm(struct perf_event *bp)
{
	struct wpriv *pv = bp->priv;
	uint64_t old;

	if (!pv->armed)
		return;
	wlock_take_reg(&old);
	pv->armed = false;
	wlock_drop_reg(&old);
	if (bp->mechanism == UKP_HW_BREAKPOINT_DEBUGREG)
		hw_disarm(bp);
	else
		page_disarm(bp);
}

static void after_fork_child(void)
{
	atomic_store(&wlock, 0);
	if (ukp_tb_mapped())
		wt.lock_depth = 0;
}

/* [reg] */
static int watch_init(void)
{
	int ret;

	if (inited)
		return 0;
	pgmask = (uintptr_t)sysconf(_SC_PAGESIZE) - 1;
	ret = arch_watch_init();
	if (ret)
		return ret;
	if (mem_get() < 0)
		return -EOPNOTSUPP;
	mechanism = detect_mechanism();
	pthread_atfork(NULL, NULL, after_fork_child);
	inited = true;
	return 0;
}

static int check_attr(const struct perf_event_attr *a)
{
	if (!a || a->type != PERF_TYPE_BREAKPOINT || !a->bp_len ||
	    (a->bp_type != HW_BREAKPOINT_R && a->bp_type != HW_BREAKPOINT_W &&
	     a->bp_type != HW_BREAKPOINT_RW) ||
	    a->bp_addr + a->bp_len < a->bp_addr)
		return -EINVAL;
	return 0;
}

static bool thread_exists(int tid)
{
	char path[64];

	snprintf(path, sizeof(path), "/proc/self/task/%d", tid);
	return ukp_sys_access(path, F_OK) == 0;
}

/* [reg] tid -1: every thread. */
static struct perf_event *do_register(struct perf_event_attr *attr,
				      perf_overflow_handler_t triggered, void *context, int tid)
{
	struct perf_event *bp;
	struct wpriv *pv;
	uint64_t old;
	int ret;

	if (ukp_in_probe_context())
		return ERR_PTR(-EBUSY);
	ret = check_attr(attr);
	if (ret)
		return ERR_PTR(ret);
	if (tid == 0)
		tid = ukp_sys_gettid();
	if (tid > 0 && !thread_exists(tid))
		return ERR_PTR(-ESRCH);
	if (ukp_lock_for_show())
		return ERR_PTR(-ENOMEM);
	ret = watch_init();
	if (ret)
		goto fail;
	if (nbps == MAX_BPS) {
		ret = -ENOSPC;
		goto fail;
	}
	bp = calloc(1, sizeof(*bp));
	pv = calloc(1, sizeof(*pv));
	if (!bp || !pv) {
		free(bp);
		free(pv);
		ret = -ENOMEM;
		goto fail;
	}
	bp->attr = *attr;
	bp->overflow_handler = triggered;
	bp->overflow_handler_context = context;
	bp->tid = tid > 0 ? tid : 0;
	bp->priv = pv;
	bp->mechanism = UKP_HW_BREAKPOINT_PAGE;
	{
		static uint64_t next_id;

		pv->id = ++next_id; /* registry mutex held */
	}
	wlock_take_reg(&old);
	bps[nbps++] = bp;
	wlock_drop_reg(&old);
	ret = arm(bp);
	if (ret) {
		unsigned int i;

		wlock_take_reg(&old);
		for (i = 0; i < nbps; i++)
			if (bps[i] == bp)
				bps[i] = bps[--nbps];
		wlock_drop_reg(&old);
		ukp_synchronize();
		free(pv);
		free(bp);
		goto fail;
	}
	ukp_unlock_for_show();
	return bp;
fail:
	ukp_unlock_for_show();
	return ERR_PTR(ret);
}

UKPROBES_API struct perf_event *register_user_hw_breakpoint(struct perf_event_attr *attr,
		perf_overflow_handler_t triggered, void *context, int tid)
{
	if (tid < 0)
		return ERR_PTR(-ESRCH);
	return do_register(attr, triggered, context, tid);
}

UKPROBES_API struct perf_event **register_wide_hw_breakpoint(struct perf_event_attr *attr,
		perf_overflow_handler_t triggered, void *context)
{
	struct perf_event **arr = calloc(2, sizeof(*arr));
	struct perf_event *bp;

	if (!arr)
		return ERR_PTR(-ENOMEM);
	bp = do_register(attr, triggered, context, -1);
	if (IS_ERR(bp)) {
		free(arr);
		return (struct perf_event **)bp;
	}
	arr[0] = bp;
	((struct wpriv *)bp->priv)->wide = arr;
	return arr;
}

/* [reg] registry mutex held: is bp one of ours? */
static bool registered(struct perf_event *bp)
{
	unsigned int i;

	for (i = 0; i < nbps; i++)
		if (bps[i] == bp)
			return true;
	return false;
}

UKPROBES_API int modify_user_hw_breakpoint(struct perf_event *bp, struct perf_event_attr *attr)
{
	struct perf_event_attr saved;
	int ret;

	if (ukp_in_probe_context())
		return -EBUSY;
	ret = check_attr(attr);
	if (ret)
		return ret;
	if (ukp_lock_for_show())
		return -ENOMEM;
	if (!registered(bp)) {
		ret = -EINVAL;
		goto out;
	}
	saved = bp->attr;
	disarm(bp);
	bp->attr.bp_addr = attr->bp_addr;
	bp->attr.bp_len = attr->bp_len;
	bp->attr.bp_type = attr->bp_type;
	bp->attr.disabled = attr->disabled;
	ret = arm(bp);
	if (ret) {
		bp->attr = saved;
		arm(bp);
	}
out:
	ukp_unlock_for_show();
	return ret;
}

UKPROBES_API void unregister_hw_breakpoint(struct perf_event *bp)
{
	struct wpriv *pv;
	uint64_t old;
	unsigned int i;

	if (!bp || IS_ERR(bp) || ukp_lock_for_show())
		return;
	if (!registered(bp)) {
		ukp_unlock_for_show();
		return;
	}
	disarm(bp);
	wlock_take_reg(&old);
	for (i = 0; i < nbps; i++)
		if (bps[i] == bp)
			bps[i] = bps[--nbps];
	wlock_drop_reg(&old);
	ukp_synchronize();
	ukp_unlock_for_show();
	pv = bp->priv;
	free(pv->wide);
	free(pv);
	free(bp);
}

UKPROBES_API void unregister_wide_hw_breakpoint(struct perf_event **cpu_events)
{
	if (!cpu_events || IS_ERR(cpu_events))
		return;
	unregister_hw_breakpoint(cpu_events[0]);
}

UKPROBES_API int ukprobes_watch_mechanism(void)
{
	int ret;

	if (ukp_lock_for_show())
		return -ENOMEM;
	ret = watch_init();
	if (!ret)
		ret = mechanism;
	ukp_unlock_for_show();
	return ret;
}

/* [reg] registry mutex held: the list's lines for watchpoints,
 *   ADDR  w  LEN  TYPE  [TID] [DISABLED]
 * e.g. "000055d1c3a4c010  w  8  rw  [PAGE]". */
void ukp_watch_show(FILE *out)
{
	static const char *const tname[] = { "", "r", "w", "rw" };
	unsigned int i;

	for (i = 0; i < nbps; i++) {
		struct perf_event *bp = bps[i];
		char tid[32] = "";

		if (bp->tid)
			snprintf(tid, sizeof(tid), " [TID %d]", bp->tid);
		fprintf(out, "%016" PRIx64 "  w  %" PRIu64 "  %s  %s%s%s\n", (uint64_t)bp->attr.bp_addr,
			(uint64_t)bp->attr.bp_len, tname[bp->attr.bp_type & 3],
			bp->mechanism == UKP_HW_BREAKPOINT_DEBUGREG ? "[DEBUGREG]" : "[PAGE]", tid,
			bp->attr.disabled ? " [DISABLED]" : "");
	}
}
