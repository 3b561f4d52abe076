/* SPDX-License-Identifier: MIT */
/*
 * signals.c - the library's signal handlers come first, the program's
 * come after them (the kernel's notifier chain, for a process).
 *
 * The library owns SIGTRAP (breakpoints) and the fault signals SIGSEGV,
 * SIGBUS, SIGFPE and SIGILL (faults inside probe handlers, faults of
 * instructions executed out of line, and copy_from_user_nofault). Once
 * installed, the kernel only ever sees the library's handlers for them;
 * what the program asks for through sigaction()/signal() is recorded here
 * and called by ukp_chain_signal() for every signal that is not ours, with
 * the flags and mask the program asked for.
 *
 * The library's signals also stay deliverable: a blocked SIGTRAP at an
 * int3 makes the kernel reset it to SIG_DFL and kill the process, and a
 * blocked SIGSEGV does the same to copy_from_user_nofault() or a
 * faulting probe handler. The kernel never gets them in a mask from the
 * program (sa_mask here, sigprocmask and the others in sigmask.c); the
 * program's blocking of them is kept per thread and shown back to it
 * (sigmask.c): the program's handlers run between ukp_vmask_enter() and
 * ukp_vmask_leave(), and an owned signal the program sent while it
 * blocks it is held until it unblocks it (ukp_chain_signal).
 *
 * The handlers are installed when the library is loaded (a constructor),
 * so that copy_from_user_nofault() and the masks work before anything
 * else is called, on every thread.
 *
 * Every other handler the program installs through sigaction()/signal()
 * is wrapped: the kernel gets prog_wrapper (same flags plus SA_SIGINFO,
 * same mask less the owned signals, plus UKP_SCAN_SIG until the context
 * is recorded), which
 * keeps the interrupted context on a per-thread stack while the
 * program's handler runs (ukp_uc_push, threads.c), so that a thread scan
 * sees a thread whose signal frame returns into a slot.
 * Reading the action back gives the program's handler, not the wrapper.
 * Handlers already in the kernel when the library installs its own are
 * wrapped then, and again when the registry starts (wrap_installed_handler).
 * UKP_SCAN_SIG (SIGRTMAX) is owned like SIGTRAP: the scan uses it, the
 * program's actions for it are recorded and chained, and the program
 * blocks it in its view only.
 *
 * Not covered: code that calls the rt_sigaction/rt_sigprocmask system
 * calls directly, and the old System V sigset()/sighold() family.
 */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <string.h>
#include <time.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "base/base.h"
#include "base/sys.h"
#include "process/process.h"
#include "core/core.h"
#include "watch/watch.h"

#ifndef SA_RESTORER
#define SA_RESTORER 0x04000000
#endif
#ifndef SA_UNSUPPORTED
#define SA_UNSUPPORTED 0x00000400
#endif
#ifndef SA_EXPOSE_TAGBITS
#define SA_EXPOSE_TAGBITS 0x00000800
#endif
/* The flags the kernel keeps (UAPI_SA_FLAGS); since Linux 5.11 it clears
 * every other bit, so that SA_UNSUPPORTED can detect that. */
#define KERNEL_SA_FLAGS (SA_NOCLDSTOP | SA_NOCLDWAIT | SA_SIGINFO | SA_ONSTACK | SA_RESTART | \
			 SA_NODEFER | SA_RESETHAND | SA_EXPOSE_TAGBITS | SA_RESTORER)

#define SIGBIT(sig) (1ULL << ((sig) - 1))

const uint64_t ukp_fault_mask = SIGBIT(SIGSEGV) | SIGBIT(SIGBUS) | SIGBIT(SIGFPE) |
				SIGBIT(SIGILL) | SIGBIT(SIGTRAP);
const uint64_t ukp_async_mask = ~(SIGBIT(SIGSEGV) | SIGBIT(SIGBUS) | SIGBIT(SIGFPE) |
				  SIGBIT(SIGILL) | SIGBIT(SIGTRAP) | SIGBIT(SIGKILL) |
				  SIGBIT(SIGSTOP));

/* The kernel's struct sigaction for rt_sigaction on x86-64. */
struct ksigaction {
	void *handler;
	unsigned long flags;
	void *restorer;
	uint64_t mask;
};

static UKP_TRAP_TEXT long sys_rt_sigaction(int sig, const struct ksigaction *act,
					   struct ksigaction *old)
{
	return arch_syscall4(__NR_rt_sigaction, sig, (long)act, (long)old, 8);
}

static UKP_TRAP_TEXT long sys_tgsigqueueinfo(int pid, int tid, int sig, siginfo_t *info)
{
	return arch_syscall4(__NR_rt_tgsigqueueinfo, pid, tid, sig, (long)info);
}

/* ------------------------------------------- the program's actions */

static const int owned_sigs[] = { SIGTRAP, SIGSEGV, SIGBUS, SIGFPE, SIGILL, UKP_SCAN_SIG };
#define NOWNED (sizeof(owned_sigs) / sizeof(owned_sigs[0]))

/* Seqlock-protected copy of what the program asked for. */
struct prog_action {
	_Atomic unsigned int seq;
	struct sigaction sa;
};
static struct prog_action prog_actions[NOWNED];
/* The program's handlers of the signals we do not own, behind prog_wrapper. */
static struct prog_action wrapped_actions[65];
/* read by ukp_signals_installed() (process.h), inline on the fetch path */
_Atomic bool ukp_signals_on;
static atomic_flag act_lock = ATOMIC_FLAG_INIT;
static uintptr_t libc_restorer;
static unsigned long kernel_sa_flags = ~0UL; /* KERNEL_SA_FLAGS on >= 5.11 */
static uintptr_t page_mask = 4095; /* set at install time */

static int (*real_sigaction)(int, const struct sigaction *, struct sigaction *);
static int (*real_dlclose)(void *);

#ifdef UKP_FREE
/* The freestanding agent's sigaction(): the kernel's, with a signal
 * return of its own (arch_sigreturn: x86-64 needs one, SA_RESTORER) where
 * the action gives none; no C library's in between. 0, or -1 and errno. */
void arch_sigreturn(void);

static int free_sigaction(int sig, const struct sigaction *act, struct sigaction *old)
{
	struct ksigaction k, ko;
	long r;

	if (act) {
		k.handler = (void *)act->sa_handler;
		k.flags = (unsigned long)act->sa_flags;
		k.restorer = (void *)act->sa_restorer;
		k.mask = *(const uint64_t *)&act->sa_mask;
#ifdef SA_RESTORER
		if (!(k.flags & SA_RESTORER) || !k.restorer) {
			k.flags |= SA_RESTORER;
			k.restorer = (void *)arch_sigreturn;
		}
#endif
	}
	r = sys_rt_sigaction(sig, act ? &k : NULL, old ? &ko : NULL);
	if (r) {
		errno = (int)-r;
		return -1;
	}
	if (old) {
		memset(old, 0, sizeof(*old));
		old->sa_handler = (void (*)(int))ko.handler;
		old->sa_flags = (int)ko.flags;
		old->sa_restorer = (void (*)(void))ko.restorer;
		*(uint64_t *)&old->sa_mask = ko.mask;
	}
	return 0;
}
#endif

/* Is r the freestanding agent's own signal return (free_sigaction's)? */
static bool own_restorer(const void *r)
{
#ifdef UKP_FREE
	return r == (const void *)arch_sigreturn;
#else
	(void)r;
	return false;
#endif
}

/* Resolve the next definitions once, before main (dlsym is not
 * async-signal-safe, and sigaction() may be called from a handler). */
__attribute__((constructor)) static void resolve_reals(void)
{
#ifdef UKP_FREE
	/* (no C library of the agent's: the kernel's own) */
	real_sigaction = free_sigaction;
#else
	real_sigaction = (int (*)(int, const struct sigaction *, struct sigaction *))
		dlsym(RTLD_NEXT, "sigaction");
	real_dlclose = (int (*)(void *))dlsym(RTLD_NEXT, "dlclose");
#endif
}

static UKP_TRAP_TEXT int owned_index(int sig)
{
	unsigned int i;

	for (i = 0; i < NOWNED; i++)
		if (owned_sigs[i] == sig)
			return (int)i;
	return -1;
}

/* [trap] Word-by-word copy: no memcpy call on the trap path. */
static UKP_TRAP_TEXT void copy_words(void *dst, const void *src, size_t bytes)
{
	volatile unsigned long *d = dst;
	const volatile unsigned long *s = src;
	size_t i;

	for (i = 0; i < bytes / sizeof(long); i++)
		d[i] = s[i];
}

/* [any] Serialize writers of prog_actions, with every signal blocked so
 * that a handler on this thread cannot spin on the lock we hold; all but
 * SIGTRAP: libc's sigaction, called under the lock, may be probed (a
 * blocked SIGTRAP from a breakpoint is fatal), and our breakpoint path
 * never takes this lock for a breakpoint of ours. */
static UKP_TRAP_TEXT void act_lock_acquire_blocking(uint64_t *old, uint64_t all)
{
	ukp_sys_sigprocmask(SIG_BLOCK, &all, old);
	while (atomic_flag_test_and_set_explicit(&act_lock, memory_order_acquire))
		arch_cpu_relax();
}

static UKP_TRAP_TEXT void act_lock_acquire(uint64_t *old)
{
	act_lock_acquire_blocking(old, ~(1ULL << (SIGTRAP - 1)));
}

static UKP_TRAP_TEXT void act_lock_release(const uint64_t *old)
{
	atomic_flag_clear_explicit(&act_lock, memory_order_release);
	ukp_sys_sigprocmask(SIG_SETMASK, old, NULL);
}

static UKP_TRAP_TEXT void pa_write(struct prog_action *pa, const struct sigaction *sa)
{
	atomic_fetch_add_explicit(&pa->seq, 1, memory_order_acq_rel);
	copy_words(&pa->sa, sa, sizeof(*sa));
	atomic_fetch_add_explicit(&pa->seq, 1, memory_order_release);
}

static UKP_TRAP_TEXT void pa_read(struct prog_action *pa, struct sigaction *sa)
{
	unsigned int s;

	do {
		while ((s = atomic_load_explicit(&pa->seq, memory_order_acquire)) & 1)
			arch_cpu_relax();
		copy_words(sa, &pa->sa, sizeof(*sa));
		atomic_thread_fence(memory_order_acquire);
	} while (atomic_load_explicit(&pa->seq, memory_order_relaxed) != s);
}

static UKP_TRAP_TEXT void prog_action_write(int idx, const struct sigaction *sa)
{
	pa_write(&prog_actions[idx], sa);
}

static UKP_TRAP_TEXT void prog_action_read(int idx, struct sigaction *sa)
{
	pa_read(&prog_actions[idx], sa);
}

static UKP_TRAP_TEXT bool is_function(const struct sigaction *sa)
{
	return sa->sa_handler != SIG_DFL && sa->sa_handler != SIG_IGN &&
	       sa->sa_handler != SIG_ERR;
}

/*
 * [trap] What the kernel calls for a program's handler of a signal we do
 * not own: the program's handler, as it asked for it (SA_SIGINFO or
 * not), with the interrupted context on this thread's stack of
 * contexts. The flags were given to the kernel unchanged, the mask plus
 * UKP_SCAN_SIG: a thread scan's signal waits while the context is not
 * on the stack (from delivery to the push, from the pop to sigreturn),
 * so that the thread never answers without it (threads.c). Nothing in
 * here calls outside the trap text.
 */
static UKP_TRAP_TEXT void prog_wrapper(int sig, siginfo_t *info, void *uc)
{
	const uint64_t scan_bit = SIGBIT(UKP_SCAN_SIG);
	struct ukp_vmask_frame vf;
	struct sigaction sa;

	if (sig <= 0 || sig > 64)
		return;
	pa_read(&wrapped_actions[sig], &sa);
	if (!is_function(&sa))
		return; /* changed to SIG_DFL/SIG_IGN while this one was on its way */
	if (ukp_ctl.defer_async && !(sa.sa_flags & SA_RESETHAND)) {
		/* The thread is inside the return-probe dispatcher: hold the
		 * signal back until it leaves, as a kernel holds interrupts.
		 * It is queued again with the same siginfo and stays pending,
		 * blocked in the context we return to; ukp_defer_async_end()
		 * unblocks it. (A one-shot handler was already reset by the
		 * kernel, so it cannot wait: it runs now.) */
		*(uint64_t *)&((ucontext_t *)uc)->uc_sigmask |= SIGBIT(sig);
		ukp_ctl.deferred_mask |= SIGBIT(sig);
		sys_tgsigqueueinfo(ukp_sys_getpid(), ukp_sys_gettid(), sig, info);
		return;
	}
	ukp_uc_push(uc);
	/* the owned signals of its sa_mask are blocked in its view only */
	ukp_vmask_enter(uc, *(const uint64_t *)&sa.sa_mask, &vf);
	ukp_sys_sigprocmask(SIG_UNBLOCK, &scan_bit, NULL);
	if (sa.sa_flags & SA_SIGINFO)
		sa.sa_sigaction(sig, info, uc);
	else
		sa.sa_handler(sig);
	ukp_sys_sigprocmask(SIG_BLOCK, &scan_bit, NULL);
	ukp_uc_pop();
	ukp_vmask_leave(uc, &vf);
}

/* [any] The action the kernel gets for the program's action act. */
static void wrapper_action(struct sigaction *k, const struct sigaction *act)
{
	*k = *act;
	k->sa_sigaction = prog_wrapper;
	k->sa_flags |= SA_SIGINFO;
	*(uint64_t *)&k->sa_mask &= ~UKP_OWNED_MASK;
	sigaddset(&k->sa_mask, UKP_SCAN_SIG);
}

/* [any] The program's own signals of sa_mask (the kernel was given it
 * without them), from its recorded action. */
static void restore_owned_mask(struct sigaction *sa, const struct sigaction *prev)
{
	*(uint64_t *)&sa->sa_mask = (*(uint64_t *)&sa->sa_mask & ~UKP_OWNED_MASK) |
				    (*(const uint64_t *)&prev->sa_mask & UKP_OWNED_MASK);
}

/* [any] An action read back from the kernel: the program's handler where
 * the kernel holds our wrapper (prev: the program's recorded action). */
static void unwrap_action(struct sigaction *sa, const struct sigaction *prev)
{
	if (sa->sa_handler == SIG_DFL && is_function(prev) && (prev->sa_flags & SA_RESETHAND) &&
	    (sa->sa_flags & SA_RESETHAND)) {
		/* the kernel reset our wrapper to SIG_DFL (SA_RESETHAND) and
		 * kept its flags: the program never asked for SA_SIGINFO */
		sa->sa_flags = (sa->sa_flags & ~SA_SIGINFO) | (prev->sa_flags & SA_SIGINFO);
		restore_owned_mask(sa, prev);
		return;
	}
	if (sa->sa_sigaction != prog_wrapper) {
		/* SIG_DFL/SIG_IGN set through sigaction(): its mask as given */
		if (sa->sa_handler == prev->sa_handler && !is_function(prev))
			restore_owned_mask(sa, prev);
		return;
	}
	sa->sa_sigaction = prev->sa_sigaction;
	sa->sa_flags = (sa->sa_flags & ~SA_SIGINFO) | (prev->sa_flags & SA_SIGINFO);
	restore_owned_mask(sa, prev);
}

/* ---------------------------------------------------- installation */

static int call_real_sigaction(int sig, const struct sigaction *act, struct sigaction *old)
{
	if (real_sigaction)
		return real_sigaction(sig, act, old);
	errno = ENOSYS;
	return -1;
}

/* The library's own calls (not the program's through the interposers):
 * 0 or -errno, with the program's errno as it was (glibc's sigaction
 * refuses its own signals, 32 and 33, with EINVAL). */
static int own_sigaction(int sig, const struct sigaction *act, struct sigaction *old)
{
	int saved = errno, ret = call_real_sigaction(sig, act, old) ? -errno : 0;

	errno = saved;
	return ret;
}

/*
 * [reg] act_lock held. A handler of a signal we do not own that reached
 * the kernel without our sigaction() (set before the library was
 * loaded, or by a raw system call) is wrapped now, as if it had been set
 * through it: its frames become visible to thread scans. A thread that
 * runs it at this moment is not seen until it returns.
 */
static void wrap_installed_handler(int sig)
{
	struct sigaction cur, k, prev;

	if (sig == SIGKILL || sig == SIGSTOP || owned_index(sig) >= 0)
		return;
	/* the C library's internal signals fail here (EINVAL) */
	if (own_sigaction(sig, NULL, &cur) || !is_function(&cur) ||
	    cur.sa_sigaction == prog_wrapper)
		return;
	pa_read(&wrapped_actions[sig], &prev);
	pa_write(&wrapped_actions[sig], &cur);
	wrapper_action(&k, &cur);
	if (own_sigaction(sig, &k, NULL))
		pa_write(&wrapped_actions[sig], &prev);
}

/*
 * [reg] Install the library's handlers, once. What the program had
 * installed becomes the first entry behind ours.
 */
int ukp_signals_install(void)
{
	uint64_t old;
	unsigned int i;
	int ret = 0;

	if (atomic_load(&ukp_signals_on))
		return 0;
	/* Every signal blocked, SIGTRAP too: no probe exists before this,
	 * and a handler of the program that interrupted us here could call
	 * copy_from_user_nofault(), which installs (and spins on the lock). */
	act_lock_acquire_blocking(&old, ~0ULL);
	if (atomic_load(&ukp_signals_on))
		goto out;
	page_mask = (uintptr_t)sysconf(_SC_PAGESIZE) - 1;
	for (i = 0; i < NOWNED; i++) {
		struct sigaction cur;
		struct ksigaction k;

		memset(&cur, 0, sizeof(cur));
		ret = own_sigaction(owned_sigs[i], NULL, &cur);
		if (ret)
			goto out;
		if (owned_sigs[i] < 65) {
			struct sigaction prev;

			pa_read(&wrapped_actions[owned_sigs[i]], &prev);
			unwrap_action(&cur, &prev);
		}
		prog_action_write((int)i, &cur);
		if (owned_sigs[i] == SIGTRAP) {
			/* Re-installing through libc reveals libc's signal
			 * return trampoline, which the blacklist needs, and
			 * whether the kernel drops unknown flags (it keeps
			 * SA_UNSUPPORTED only if it does not). What the
			 * program records later is read back the same way. */
			struct sigaction probe = cur;
			struct ksigaction kk;

			probe.sa_flags |= SA_UNSUPPORTED;
			if (own_sigaction(SIGTRAP, &probe, NULL) == 0 &&
			    sys_rt_sigaction(SIGTRAP, NULL, &kk) == 0) {
				/* (the freestanding agent's own sigaction() gives
				 * its own return, which is no C library's: then
				 * the program's calls keep the restorer they give) */
				if ((kk.flags & SA_RESTORER) && !own_restorer(kk.restorer))
					libc_restorer = (uintptr_t)kk.restorer;
				if (!(kk.flags & SA_UNSUPPORTED))
					kernel_sa_flags = KERNEL_SA_FLAGS;
			}
		}
		k.handler = owned_sigs[i] == SIGTRAP	  ? (void *)ukp_sigtrap_handler
			    : owned_sigs[i] == UKP_SCAN_SIG ? (void *)ukp_scan_handler
							    : (void *)ukp_sigfault_handler;
		/* SA_NODEFER: a probe hit inside a handler traps again (it is
		 * counted as missed). The fault signals run on the program's
		 * alternate stack if it has one, so a stack overflow still
		 * reaches the program's own handler; so does SIGTRAP: a
		 * breakpoint's signal frame (with the vector state, kilobytes)
		 * does not fit on a Go goroutine's small stack, and Go gives
		 * every thread an alternate stack. So does a thread scan's
		 * signal: on the goroutine's stack its frame overran into the
		 * next goroutine's (attach and detach cycles on a Go program;
		 * test scan::asks_a_thread_on_its_alternate_stack). Asynchronous
		 * signals wait while the library's handlers run. */
		k.flags = SA_SIGINFO | SA_NODEFER | SA_RESTART | SA_RESTORER | SA_ONSTACK;
		k.restorer = (void *)ukp_restore_rt;
		k.mask = ukp_async_mask;
		if (sys_rt_sigaction(owned_sigs[i], &k, NULL) < 0) {
			ret = -EINVAL;
			goto out;
		}
	}
	for (int sig = 1; sig < 65; sig++)
		wrap_installed_handler(sig);
	/* What this thread blocked of ours before (an exec'd image keeps
	 * the mask) becomes its program's view, and deliverable for real. */
	ukp_vmask_set(ukp_vmask_get() | (old & UKP_OWNED_MASK));
	old &= ~UKP_OWNED_MASK;
	atomic_store(&ukp_signals_on, true);
out:
	act_lock_release(&old);
	return ret;
}

/* [reg] Wrap the handlers that reached the kernel behind the library's
 * back since it was loaded (raw rt_sigaction): done again when the
 * registry starts, so that their frames are seen by thread scans. */
void ukp_signals_rewrap(void)
{
	uint64_t old;

	if (!atomic_load(&ukp_signals_on))
		return;
	act_lock_acquire(&old);
	for (int sig = 1; sig < 65; sig++)
		wrap_installed_handler(sig);
	act_lock_release(&old);
}

/* At load time: copy_from_user_nofault() and the program's view of its
 * masks must work before any other call into the library. */
__attribute__((constructor(65535))) static void install_at_load(void)
{
	if (!real_sigaction)
		resolve_reals();
	ukp_signals_install();
}

/* [reg] glibc's __restore_rt, found at install time (0 if unknown). */
uintptr_t ukp_libc_restorer(void)
{
	return libc_restorer;
}

/* ------------------------------------------------------- chaining */

/*
 * [trap] Let the signal have the effect it would have without the
 * library: the program's handler runs, or the default action happens
 * with the registers in uc (a core dump shows them). The caller has
 * released every per-thread probe state first: the program's handler may
 * longjmp away.
 */
UKP_TRAP_TEXT void ukp_chain_signal(int sig, siginfo_t *info, ucontext_t *uc)
{
	uint64_t *ucmask = (uint64_t *)&uc->uc_sigmask;
	int idx = owned_index(sig);
	struct sigaction sa;
	bool forced;
	void *h;

	if (idx < 0)
		return;
	/* Blocked in the program's view: a sent signal waits there; a
	 * fault cannot wait and kills (the kernel's force_sig). */
	if (ukp_vmask_hold(sig, info, &forced))
		return;
	prog_action_read(idx, &sa);
	h = (void *)sa.sa_handler;
	if (forced)
		h = (void *)SIG_DFL;
	if (h == (void *)SIG_IGN) {
		/* An ignored fault raised by the CPU kills the process, as
		 * the kernel does (force_sig resets it to SIG_DFL). */
		if (info->si_code <= 0)
			return;
		h = (void *)SIG_DFL;
	}
	if (h == (void *)SIG_DFL) {
		struct ksigaction dfl = { (void *)SIG_DFL, 0, NULL, 0 };

		/* Queue the same signal with the same siginfo; the kernel
		 * delivers it as soon as our handler returns, with the
		 * registers of uc, and takes the default action. It stays
		 * blocked until then: our fault handlers run with their own
		 * signal unblocked (SA_NODEFER), and a delivery right here
		 * would dump the registers of this handler. */
		uint64_t bit = SIGBIT(sig);

		sys_rt_sigaction(sig, &dfl, NULL);
		*ucmask &= ~bit;
		ukp_sys_sigprocmask(SIG_BLOCK, &bit, NULL);
		sys_tgsigqueueinfo(ukp_sys_getpid(), ukp_sys_gettid(), sig, info);
		return;
	}
	{
		/* The kernel's mask for the handler: the interrupted one (less
		 * the library's SIGTRAP and scan signal) plus sa_mask, without
		 * the owned signals; those, and sig itself, are blocked in the
		 * program's view (ukp_vmask_enter). */
		uint64_t add = *(const uint64_t *)&sa.sa_mask;
		uint64_t m = (*ucmask & ~(SIGBIT(SIGTRAP) | SIGBIT(UKP_SCAN_SIG))) |
			     (add & ~UKP_OWNED_MASK);
		struct ukp_vmask_frame vf;

		if (!(sa.sa_flags & SA_NODEFER))
			add |= SIGBIT(sig);
		if (sa.sa_flags & SA_RESETHAND) {
			/* One-shot: as the kernel, reset the handler only; the
			 * flags and mask stay and are read back. */
			struct sigaction dfl_sa;
			uint64_t old;

			act_lock_acquire(&old);
			prog_action_read(idx, &dfl_sa);
			dfl_sa.sa_handler = SIG_DFL;
			prog_action_write(idx, &dfl_sa);
			act_lock_release(&old);
		}
		/* the scan signal (blocked in our handlers) is let in only
		 * while uc is on the stack of contexts (see prog_wrapper) */
		ukp_uc_push(uc);
		ukp_vmask_enter(uc, add, &vf);
		ukp_sys_sigprocmask(SIG_SETMASK, &m, NULL);
		if (sa.sa_flags & SA_SIGINFO)
			sa.sa_sigaction(sig, info, uc);
		else
			sa.sa_handler(sig);
		m = SIGBIT(UKP_SCAN_SIG);
		ukp_sys_sigprocmask(SIG_BLOCK, &m, NULL);
		ukp_uc_pop();
		ukp_vmask_leave(uc, &vf);
	}
}

/* [trap] The si_code of a SIGSEGV at addr, as the CPU's page fault gives
 * it: SEGV_MAPERR where nothing is mapped, SEGV_ACCERR where a mapping
 * forbids the access. mincore() fails with ENOMEM only on unmapped
 * memory. */
static UKP_TRAP_TEXT int segv_code(uintptr_t addr)
{
	unsigned char vec;

	if (arch_syscall3(__NR_mincore, (long)(addr & ~page_mask), 1, (long)&vec) == -ENOMEM)
		return SEGV_MAPERR;
	return SEGV_ACCERR;
}

/*
 * [trap] Deliver a fault that the probed instruction raised while we ran
 * it for the program (emulation), as the CPU would have raised it. uc is
 * the context the breakpoint's handler returns to, already at the
 * faulting instruction.
 *
 * The fault is queued to this thread (blocked until our handler returns)
 * rather than handed to the program's handler from here, so that the
 * kernel delivers it exactly as a fault of that instruction: on the
 * alternate stack, with the registers of uc, and only after the handler
 * of the breakpoint has gone. It then reaches ukp_sigfault_handler, which
 * chains it like any other fault. As with a fault the CPU raises (the
 * kernel's force_sig), a fault signal the program blocked is not held
 * back: it kills.
 */
UKP_TRAP_TEXT void ukp_deliver_fault(int sig, int code, uintptr_t fault_addr, ucontext_t *uc)
{
	uint64_t *ucmask = (uint64_t *)&uc->uc_sigmask;
	uint64_t bit = SIGBIT(sig);
	siginfo_t si;
	size_t i;

	for (i = 0; i < sizeof(si) / sizeof(long); i++)
		((volatile unsigned long *)&si)[i] = 0;
	si.si_signo = sig;
	si.si_code = sig == SIGSEGV ? segv_code(fault_addr) : code;
	si.si_addr = (void *)fault_addr;
	if (*ucmask & bit) {
		struct ksigaction dfl = { (void *)SIG_DFL, 0, NULL, 0 };

		sys_rt_sigaction(sig, &dfl, NULL);
		*ucmask &= ~bit;
	}
	ukp_sys_sigprocmask(SIG_BLOCK, &bit, NULL);
	sys_tgsigqueueinfo(ukp_sys_getpid(), ukp_sys_gettid(), sig, &si);
}

/* ---------------------------------------------------- interposers */

/* The process the records above belong to (0: none written yet). */
static _Atomic int records_pid;

/*
 * [any] True in a child that shares this memory with the process that
 * owns the records without sharing its signal actions: a vfork() child
 * (or clone(CLONE_VM)) until it execs or exits. Python's subprocess
 * resets every handler in such a child before exec; written into the
 * records, that would take the parent's handlers away. A fork() child
 * has its own copy of the records: it takes them over. kcmp() tells the
 * two apart (where it is missing, a child is taken for a fork child).
 */
static bool borrowed_memory(void)
{
	int pid = ukp_sys_getpid();
	int owner = atomic_load(&records_pid);

	if (owner == pid)
		return false;
	if (owner && arch_syscall6(SYS_kcmp, pid, owner, 1 /* KCMP_VM */, 0, 0, 0) == 0)
		return true;
	atomic_store(&records_pid, pid);
	return false;
}

/*
 * [any] sigaction() in a vfork() child (borrowed_memory): the child's own
 * actions, in the kernel; the records stay the parent's. The library's
 * signals keep its handlers (the child runs the same, probed, text until
 * it execs): a new action for one of them is not kept, reading one gives
 * the parent's.
 */
static int child_sigaction(int sig, int idx, const struct sigaction *act, struct sigaction *oact)
{
	struct sigaction prev, copy;
	int ret;

	if (idx >= 0 && atomic_load(&ukp_signals_on)) {
		if (oact)
			prog_action_read(idx, oact);
		return 0;
	}
	pa_read(&wrapped_actions[sig], &prev);
	if (act && (*(const uint64_t *)&act->sa_mask & UKP_OWNED_MASK)) {
		/* the library's signals stay deliverable in the kernel */
		copy = *act;
		*(uint64_t *)&copy.sa_mask &= ~UKP_OWNED_MASK;
		act = &copy;
	}
	ret = call_real_sigaction(sig, act, oact);
	if (ret == 0 && oact)
		unwrap_action(oact, &prev);
	return ret;
}

/*
 * [any] The program's sigaction(): for a signal the library owns, only
 * recorded (and reported back); otherwise passed on. The record is what
 * the kernel would have stored through libc, so that reading it back
 * gives what it would give without the library: SIGKILL and SIGSTOP
 * leave the mask, unknown flags go, and libc's SA_RESTORER and restorer
 * come in.
 */
__attribute__((visibility("default"))) int sigaction(int sig, const struct sigaction *act,
						     struct sigaction *oact)
{
	int idx = owned_index(sig);
	struct sigaction copy;

	if (sig > 0 && sig < 65 && borrowed_memory())
		return child_sigaction(sig, idx, act, oact);
	/* The owned signals of sa_mask are recorded as given and blocked
	 * in the program's view only while its handler runs. */
	if (idx >= 0 && atomic_load(&ukp_signals_on)) {
		uint64_t old;

		if (act) {
			copy = *act;
			sigdelset(&copy.sa_mask, SIGKILL);
			sigdelset(&copy.sa_mask, SIGSTOP);
			copy.sa_flags &= (int)kernel_sa_flags;
			if (libc_restorer) {
				copy.sa_flags |= SA_RESTORER;
				copy.sa_restorer = (void (*)(void))libc_restorer;
			}
			act = &copy;
		}
		act_lock_acquire(&old);
		if (oact)
			prog_action_read(idx, oact);
		if (act)
			prog_action_write(idx, act);
		act_lock_release(&old);
		return 0;
	}
	if (sig > 0 && sig < 65 && sig != SIGKILL && sig != SIGSTOP) {
		/* Not ours: the program's handler goes behind prog_wrapper. */
		struct sigaction prev, k;
		uint64_t old;
		int ret;

		act_lock_acquire(&old);
		pa_read(&wrapped_actions[sig], &prev);
		if (act && !is_function(act) &&
		    (*(const uint64_t *)&act->sa_mask & UKP_OWNED_MASK)) {
			/* SIG_DFL/SIG_IGN: recorded as given, the kernel
			 * gets its mask without the owned signals */
			pa_write(&wrapped_actions[sig], act);
			copy = *act;
			*(uint64_t *)&copy.sa_mask &= ~UKP_OWNED_MASK;
			ret = call_real_sigaction(sig, &copy, oact);
			if (ret)
				pa_write(&wrapped_actions[sig], &prev);
		} else if (act && is_function(act)) {
			wrapper_action(&k, act);
			pa_write(&wrapped_actions[sig], act);
			ret = call_real_sigaction(sig, &k, oact);
			if (ret)
				pa_write(&wrapped_actions[sig], &prev);
		} else {
			if (act)
				pa_write(&wrapped_actions[sig], act);
			ret = call_real_sigaction(sig, act, oact);
			if (ret && act)
				pa_write(&wrapped_actions[sig], &prev);
		}
		if (ret == 0 && oact)
			unwrap_action(oact, &prev);
		act_lock_release(&old);
		return ret;
	}
	return call_real_sigaction(sig, act, oact);
}

/* [any] BSD semantics, as glibc's signal(). */
__attribute__((visibility("default"))) sighandler_t signal(int sig, sighandler_t handler)
{
	struct sigaction sa, old;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = handler;
	sigemptyset(&sa.sa_mask);
	if (sig > 0 && sig < NSIG)
		sigaddset(&sa.sa_mask, sig);
	sa.sa_flags = SA_RESTART;
	if (sigaction(sig, &sa, &old) < 0)
		return SIG_ERR;
	return old.sa_handler;
}

__attribute__((visibility("default"))) sighandler_t bsd_signal(int sig, sighandler_t handler)
{
	return signal(sig, handler);
}

/* [any] System V semantics: one-shot, not blocked while it runs. */
__attribute__((visibility("default"))) sighandler_t sysv_signal(int sig, sighandler_t handler)
{
	struct sigaction sa, old;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = handler;
	sigemptyset(&sa.sa_mask);
	sa.sa_flags = SA_RESETHAND | SA_NODEFER;
	if (sigaction(sig, &sa, &old) < 0)
		return SIG_ERR;
	return old.sa_handler;
}

__attribute__((visibility("default"))) sighandler_t __sysv_signal(int sig, sighandler_t handler)
{
	return sysv_signal(sig, handler);
}

void ukp_after_dlclose(void);

/* [reg-free] After an object is unloaded, probes in it become [GONE]. */
__attribute__((visibility("default"))) int dlclose(void *handle)
{
	int ret;

	if (!real_dlclose) {
		errno = ENOSYS;
		return -1;
	}
	ret = real_dlclose(handle);
	ukp_after_dlclose();
	return ret;
}

/* [trap] The end of the outermost section in which the program's signal
 * handlers were held back (see prog_wrapper and ukp_defer_async_end):
 * deliver what waited, by unblocking it. */
UKP_TRAP_TEXT void ukp_defer_async_flush(struct ukp_ctlblk *c)
{
	uint64_t m;

	m = c->deferred_mask;
	if (!m)
		return;
	c->deferred_mask = 0;
	ukp_sys_sigprocmask(SIG_UNBLOCK, &m, NULL);
}

/*
 * [reg] Give the kernel back the program's actions (ukprobes_shutdown):
 * every owned signal whose kernel action is still the library's gets
 * the action the program last asked for, every handler behind
 * prog_wrapper its own action again. An action the program changed
 * behind the library's back (a raw system call, or a sigaction() that
 * did not go through the interposer, as in a process the library was
 * injected into) is left as the program set it. No probe may be
 * registered: a breakpoint hit after this would be the program's
 * SIGTRAP.
 */
/* [reg] Give sig the action sa exactly: as read back (a restorer, or
 * none for SIG_DFL/SIG_IGN: libc's sigaction() would add its own), or
 * through libc when the program left the restorer to it. */
static void restore_action(int sig, const struct sigaction *sa)
{
	struct ksigaction k;

	if (!(sa->sa_flags & SA_RESTORER) && is_function(sa)) {
		own_sigaction(sig, sa, NULL);
		return;
	}
	k.handler = (void *)sa->sa_handler;
	k.flags = (unsigned long)sa->sa_flags;
	k.restorer = (void *)sa->sa_restorer;
	memcpy(&k.mask, &sa->sa_mask, sizeof(k.mask));
	sys_rt_sigaction(sig, &k, NULL);
}

/* [reg] The pending-signal mask "FIELD:\tHEX" in a status text, or 0. */
static uint64_t pending_field(const char *text, const char *field)
{
	const char *p = strstr(text, field);
	uint64_t v = 0;

	if (!p)
		return 0;
	for (p += strlen(field); *p == '\t' || *p == ' '; p++)
		;
	for (; (*p >= '0' && *p <= '9') || (*p >= 'a' && *p <= 'f'); p++)
		v = v << 4 | (uint64_t)(*p <= '9' ? *p - '0' : *p - 'a' + 10);
	return v;
}

/*
 * [reg] Has some thread of the process a signal of mask pending (a
 * SIGTRAP of a breakpoint it ran into before the breakpoint went, a scan
 * request it has not taken yet)? Under the program's actions they
 * would be its own (SIG_DFL: the end of the process). Read from
 * /proc/self/task/TID/status with system calls only (no allocation:
 * the program's allocator would start threads for ours).
 */
static bool signals_pending(uint64_t mask)
{
	char buf[4096] __attribute__((aligned(8))), text[2048];
	int dfd = ukp_sys_open("/proc/self/task", O_RDONLY | O_DIRECTORY);
	bool found = false;
	long n;

	if (dfd < 0)
		return false;
	while (!found && (n = ukp_sys_getdents64(dfd, buf, sizeof(buf))) > 0) {
		for (long off = 0; off < n && !found;) {
			struct {
				uint64_t ino;
				int64_t off;
				unsigned short reclen;
				unsigned char type;
				char name[];
			} *de = (void *)(buf + off);
			char path[48];
			int fd;
			long k;

			off += de->reclen;
			if (de->name[0] < '1' || de->name[0] > '9' || strlen(de->name) > 12)
				continue;
			strcpy(path, de->name);
			strcat(path, "/status");
			fd = ukp_sys_openat(dfd, path, O_RDONLY | O_CLOEXEC, 0);
			if (fd < 0)
				continue;
			k = ukp_sys_read(fd, text, sizeof(text) - 1);
			ukp_sys_close(fd);
			if (k <= 0)
				continue;
			text[k] = '\0';
			found = ((pending_field(text, "\nSigPnd:") | pending_field(text, "\nShdPnd:")) &
				 mask) != 0;
		}
	}
	ukp_sys_close(dfd);
	return found;
}

bool ukp_signals_uninstall(void)
{
	const uint64_t mask = 1ULL << (SIGTRAP - 1) | 1ULL << (UKP_SCAN_SIG - 1);
	uint64_t old;
	unsigned int i;

	/* what is pending has its chance to be taken (a thread preempted
	 * for a while on a loaded machine); if it never is, the library's
	 * actions stay, rather than end the process */
	for (i = 0; signals_pending(mask); i++) {
		struct timespec ts = { 0, 1000000 };

		if (i == 5000)
			return false;
		ukp_sys_nanosleep(&ts);
	}
	act_lock_acquire(&old);
	if (!atomic_load(&ukp_signals_on))
		goto out;
	for (i = 0; i < NOWNED; i++) {
		struct ksigaction cur;
		struct sigaction sa;

		if (sys_rt_sigaction(owned_sigs[i], NULL, &cur) ||
		    (cur.handler != (void *)ukp_sigtrap_handler &&
		     cur.handler != (void *)ukp_scan_handler &&
		     cur.handler != (void *)ukp_sigfault_handler))
			continue;
		prog_action_read((int)i, &sa);
		restore_action(owned_sigs[i], &sa);
	}
	for (int sig = 1; sig < 65; sig++) {
		struct ksigaction cur;
		struct sigaction sa;

		if (owned_index(sig) >= 0 || sys_rt_sigaction(sig, NULL, &cur) ||
		    cur.handler != (void *)prog_wrapper)
			continue;
		pa_read(&wrapped_actions[sig], &sa);
		restore_action(sig, &sa);
	}
	atomic_store(&ukp_signals_on, false);
out:
	act_lock_release(&old);
	return true;
}
