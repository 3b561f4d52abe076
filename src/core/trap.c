/* SPDX-License-Identifier: MIT */
/*
 * trap.c - the breakpoint hit path (the kernel's kprobe_int3_handler and
 * kprobe_fault_handler, for signals).
 *
 * Everything in this file is [trap]: it runs in the library's SIGTRAP or
 * fault-signal handler, is async-signal-safe, allocates nothing, takes no
 * lock and calls no libc function. Per-thread state is ukp_ctl
 * (the thread's block: base/tb_lib.h).
 *
 * A hit:
 *   int3 at addr -> SIGTRAP, ip = addr + 1
 *   pre_handlers (newest first; non-zero stops: resume at regs->ip)
 *   emulated instruction: emulate, post_handlers, done (one trap)
 *   boostable and no enabled child has a post_handler (read at hit time):
 *   ip = slot + 16, the boosted copy runs and jumps back to addr + len
 *   (one trap; nothing is counted, the signal mask is left alone)
 *   otherwise: ip = slot, the copy runs, its trailing int3 traps again:
 *   ip = addr + len, post_handlers (two traps)
 * Asynchronous signals stay blocked from the first trap to the second
 * (uc_sigmask is restored by the second), so a program handler cannot
 * run in the middle of a step, except for a system call copied out of
 * line, which may block for long and must stay interruptible.
 *
 * A trap converts the signal context to a struct pt_regs once, on entry
 * (breakpoint_trap, jprobe_fault), and back once, on the way out: every
 * branch in between works on that one pt_regs (the kernel's handlers get
 * theirs once from the entry code too).
 */
#include <errno.h>
#include <signal.h>
#include <ucontext.h>

#include "base/base.h"
#include "core/core.h"
#include "text/text.h"
#include "process/process.h"
#include "watch/watch.h"
#include "core/jprobes.h"
#include "base/sanitizer.h"
#include "watch/watch.h"

/* The fast paths (src/arch, through the offsets src/asm_offsets.c
 * generates) test these pairs of 32-bit words as one 64-bit word. */
_Static_assert(sizeof(((struct ukp_ctlblk *)0)->status) == 4 &&
	       sizeof(((struct ukp_ctlblk *)0)->depth) == 4 &&
	       sizeof(((struct ukp_ctlblk *)0)->in_handler) == 4 &&
	       sizeof(((struct ukp_ctlblk *)0)->defer_async) == 4, "idle words");

/* The overflow block's "not now" count (base/tb_lib.h) is the status. */
_Static_assert(offsetof(struct ukp_ctlblk, status) == 0 && UKP_TBL_CTL == 0, "not now");
_Atomic unsigned long ukp_handler_fault_count;

struct pending_fault {
	int sig;
	int code;
	uintptr_t addr;
};

static UKP_TRAP_TEXT uint64_t *uc_mask(ucontext_t *uc)
{
	return (uint64_t *)&uc->uc_sigmask;
}

static UKP_TRAP_TEXT void reset_current_kprobe(struct ukp_ctlblk *c)
{
	c->status = 0;
	c->cur_site = NULL;
}

/* [trap] The handler faulted and was abandoned (longjmp back to its
 * recovery point). A reentrant step that was under way inside it will
 * never trap back. */
static UKP_TRAP_TEXT void handler_abandoned(struct ukp_ctlblk *c, struct ukp_site *saved_site,
					    unsigned int saved_depth)
{
	if ((c->status & KPROBE_REENTER) && c->cur_site && c->cur_site != saved_site)
		atomic_fetch_sub(&c->cur_site->inflight, 1);
	c->depth = saved_depth;
	c->step_masked = false;
}

/* The handler a guarded call runs, by kind (no casts between function
 * types: each is called as what it is). */
enum guarded_kind { CALL_PRE, CALL_POST, CALL_RET, CALL_THUNK };
union guarded_fn {
	kprobe_pre_handler_t pre;               /* pre(kp, regs) */
	kprobe_post_handler_t post;             /* post(kp, regs, 0) */
	kretprobe_handler_t ret;                /* ret(arg, regs) */
	int (*thunk)(void *arg, struct pt_regs *regs); /* thunk(arg, regs) */
};

/*
 * [trap] [detour] The one guarded handler call: run one user handler for
 * probe kp with a recovery point. A fault inside it (see
 * ukp_sigfault_handler) comes back here, and the per-thread state is put
 * back as it was before the call; the call then returns fault_ret.
 * status, if not 0, is the probe status while the handler runs (a return
 * handler runs outside any trap); the current site and status are put
 * back after it (a return may come while a step of this thread is under
 * way). Calls may nest: the jump buffer is saved and restored then (at
 * the outer level nothing else uses it, and the copy is skipped). The
 * handler is called directly, not through a thunk (cheaper on an
 * optimized hit), unless kind is CALL_THUNK.
 */
static UKP_TRAP_TEXT __attribute__((noinline)) int guarded_call(struct kprobe *kp,
	enum guarded_kind kind, union guarded_fn fn, void *arg, struct pt_regs *regs,
	unsigned int status, int fault_ret)
{
	struct ukp_ctlblk *c = &ukp_ctl;
	int saved_in = c->in_handler;
	struct ukp_site *saved_site = c->cur_site;
	unsigned int saved_status = c->status, saved_depth = c->depth;
	/* What only a nested call (or a thunk's) keeps: at the outer level
	 * nothing else uses the jump buffer, cur_kp and fault_kp are NULL,
	 * and prev matters only while the status is KPROBE_REENTER, under
	 * which no handler runs and no return comes (a reentrant step is one
	 * instruction, neither a call nor a ret). Skipping it is most of
	 * what an optimized hit with a pre and a post handler pays here. */
	bool keep = saved_in || kind == CALL_THUNK;
	struct kprobe *saved_kp = NULL, *saved_fault_kp = NULL;
	struct ukp_site *saved_prev_site = NULL;
	unsigned int saved_prev_status = 0;
	void *saved_jb[5];
	int ret = 0, i;

	if (keep) {
		saved_kp = c->cur_kp;
		saved_fault_kp = c->fault_kp;
		saved_prev_site = c->prev.site;
		saved_prev_status = c->prev.status;
		if (saved_in)
			for (i = 0; i < 5; i++)
				saved_jb[i] = c->jb[i];
	}
	c->cur_kp = kp;
	c->fault_kp = kp;
	c->in_handler = saved_in + 1;
	if (status)
		c->status = status;
	if (__builtin_setjmp(c->jb) == 0) {
		/* branches, not a switch: a jump table's indirect jump would
		 * fail the hit path's vector-free proof (vecstate.c) */
		if (kind == CALL_PRE)
			ret = fn.pre(kp, regs);
		else if (kind == CALL_RET)
			ret = fn.ret(arg, regs);
		else if (kind == CALL_POST)
			fn.post(kp, regs, 0);
		else
			ret = fn.thunk(arg, regs);
		UKP_NO_TAIL_CALL(ret);
	} else {
		c = &ukp_ctl;
		handler_abandoned(c, saved_site, saved_depth);
		ret = fault_ret;
	}
	c->cur_site = saved_site;
	c->status = saved_status;
	c->in_handler = saved_in;
	c->cur_kp = saved_kp;
	c->fault_kp = saved_fault_kp;
	if (keep) {
		c->prev.site = saved_prev_site;
		c->prev.status = saved_prev_status;
		if (saved_in)
			for (i = 0; i < 5; i++)
				c->jb[i] = saved_jb[i];
	}
	return ret;
}

/* [trap] A thunk's call: fn(arg, regs). */
static UKP_TRAP_TEXT int call_handler(struct kprobe *kp,
	int (*fn)(void *arg, struct pt_regs *regs), void *arg, struct pt_regs *regs,
	unsigned int status, int fault_ret)
{
	union guarded_fn g = { .thunk = fn };

	return guarded_call(kp, CALL_THUNK, g, arg, regs, status, fault_ret);
}

/* The arguments of call_handler, for arch_vecsafe_call. */
struct handler_call {
	struct kprobe *kp;
	int (*fn)(void *arg, struct pt_regs *regs);
	void *arg;
	struct pt_regs *regs;
	unsigned int status;
	int fault_ret;
};

static UKP_TRAP_TEXT int handler_call_thunk(void *arg)
{
	struct handler_call *h = arg;

	return call_handler(h->kp, h->fn, h->arg, h->regs, h->status, h->fault_ret);
}

/*
 * [trap] [detour] The handler call above, with the vector state kept
 * around a handler that is not vector-free (vec_free: proven at
 * registration, vecstate.c) when the interrupted code's state is still
 * in the registers (c->vec_live: a detour or the return trampoline left
 * it there).
 */
UKP_TRAP_TEXT int ukp_call_handler(struct kprobe *kp, int (*fn)(void *arg, struct pt_regs *regs),
				   void *arg, struct pt_regs *regs, unsigned int status,
				   int fault_ret, bool vec_free)
{
	struct ukp_ctlblk *c = &ukp_ctl;
	struct handler_call h = { kp, fn, arg, regs, status, fault_ret };
	int ret;

	if (!c->vec_live || vec_free)
		return call_handler(kp, fn, arg, regs, status, fault_ret);
	c->vec_live = false;
	ret = arch_vecsafe_call(handler_call_thunk, &h);
	c = &ukp_ctl;
	c->vec_live = true;
	return ret;
}

/* One kprobe handler, its pointer read once. */
struct kprobe_call {
	struct kprobe *kp;
	kprobe_pre_handler_t pre;
	kprobe_post_handler_t post;
};

UKP_TRAP_TEXT int ukp_kprobe_thunk(void *arg, struct pt_regs *regs)
{
	struct kprobe_call *kc = arg;
	int ret = 0;

	if (kc->pre)
		ret = kc->pre(kc->kp, regs);
	else
		kc->post(kc->kp, regs, 0);
	UKP_NO_TAIL_CALL(ret);
	return ret;
}

/*
 * [trap] [detour] A probe handler that may run with the thread's vector
 * state as it is, called directly. The caller set c->cur_site and
 * c->status. A fault in it returns 0.
 */
static UKP_TRAP_TEXT int call_outer(struct kprobe *kp, kprobe_pre_handler_t pre,
				    kprobe_post_handler_t post, struct pt_regs *regs)
{
	union guarded_fn g;

	if (pre) {
		g.pre = pre;
		return guarded_call(kp, CALL_PRE, g, NULL, regs, 0, 0);
	}
	g.post = post;
	return guarded_call(kp, CALL_POST, g, NULL, regs, 0, 0);
}

/*
 * Every enabled child's pre_handler (post == false) or post_handler, newest
 * first. A pre_handler returning non-zero asked to change the execution
 * path: the rest of the chain is skipped and 1 returned.
 */
static UKP_TRAP_TEXT int run_handlers(struct ukp_ctlblk *c, struct ukp_site *s,
				      struct pt_regs *regs, bool post)
{
	struct ukp_child *ch;

	for (ch = atomic_load_explicit(&s->children, memory_order_acquire); ch;
	     ch = atomic_load_explicit(&ch->next, memory_order_acquire)) {
		struct kprobe_call kc = { ch->kp, NULL, NULL };
		bool vf;
		int ret;

		if (post) {
			kc.post = *(kprobe_post_handler_t volatile *)&kc.kp->post_handler;
			vf = ukp_vf_is(ch->vf_post, (const void *)kc.post);
		} else {
			kc.pre = *(kprobe_pre_handler_t volatile *)&kc.kp->pre_handler;
			vf = ukp_vf_is(ch->vf_pre, (const void *)kc.pre);
		}
		if ((!kc.pre && !kc.post) || kprobe_disabled(kc.kp))
			continue;
		if (!c->in_handler && (vf || !c->vec_live))
			ret = call_outer(kc.kp, kc.pre, kc.post, regs);
		else
			ret = ukp_call_handler(kc.kp, ukp_kprobe_thunk, &kc, regs, 0, 0, vf);
		if (ret && !post)
			return 1;
	}
	return 0;
}

/*
 * [detour] [ret] The fast paths of an optimized hit (optprobe_tramp.S,
 * s its site) and of a return (kretprobe_tramp.S, s NULL) come here when
 * their handler faulted and was abandoned: what call_outer does then.
 * They put the rest of the state back themselves.
 */
UKP_TRAP_TEXT void ukp_fast_abandoned(struct ukp_ctlblk *c, struct ukp_site *s)
{
	handler_abandoned(c, s, 1);
}

/* nmissed of every child, disabled ones too (the kernel's
 * kprobes_inc_nmissed_count on an aggregate). */
static UKP_TRAP_TEXT void inc_nmissed(struct ukp_site *s)
{
	struct ukp_child *ch;

	for (ch = atomic_load_explicit(&s->children, memory_order_acquire); ch;
	     ch = atomic_load_explicit(&ch->next, memory_order_acquire))
		__atomic_fetch_add(&ch->kp->nmissed, 1, __ATOMIC_RELAXED);
}

/*
 * [trap] Has an enabled child a post_handler now? Read at every hit that
 * could skip the trap back: a post_handler added later stops boosting
 * (and the detour redirect) at once; the kernel decides this at prepare
 * time and then misses that post_handler.
 */
static UKP_TRAP_TEXT bool post_now(struct ukp_site *s)
{
	struct ukp_child *ch;

	for (ch = atomic_load_explicit(&s->children, memory_order_acquire); ch;
	     ch = atomic_load_explicit(&ch->next, memory_order_acquire)) {
		if (!kprobe_disabled(ch->kp) &&
		    *(kprobe_post_handler_t volatile *)&ch->kp->post_handler)
			return true;
	}
	return false;
}

/*
 * [detour] The C half of an optimized probe (the kernel's
 * optimized_callback), called by the shared template with the
 * registers of the probed code in regs (ip is set here). It runs on the
 * thread, in whatever context the probed code ran. The pre_handlers run
 * as on a breakpoint hit (ip == addr + UKP_BREAKPOINT_IP_OFFSET); a change
 * of regs->ip is ignored, general registers and arithmetic flags are taken back.
 * [FTRACE] probes run their post_handlers too (ip == addr + len: the
 * region is NOPs). A hit while this thread runs a probe handler is
 * missed. The program's signal handlers are held back meanwhile (as in
 * the return-probe dispatcher): one that longjmp()s away must not leave
 * the per-thread state half set.
 */
UKP_TRAP_TEXT void ukp_optprobe_hit(struct pt_regs *regs, struct ukp_site *s, int lazy)
{
	struct ukp_ctlblk *c = &ukp_ctl;
	int saved_errno = ukp_errno;
	bool saved_live = c->vec_live;

	c->vec_live = lazy;
	c->defer_async++;
	atomic_signal_fence(memory_order_seq_cst);
	ukp_read_lock(c);
	if (c->status || c->in_handler) {
		inc_nmissed(s);
	} else {
		instruction_pointer_set(regs, s->addr + UKP_BREAKPOINT_IP_OFFSET);
		c->cur_site = s;
		c->status = KPROBE_HIT_ACTIVE;
		run_handlers(c, s, regs, false);
		if (s->opt.ftrace_len) {
			instruction_pointer_set(regs, s->addr + s->opt.len);
			c->status = KPROBE_HIT_SSDONE;
			run_handlers(c, s, regs, true);
		}
		reset_current_kprobe(c);
	}
	ukp_read_unlock(c);
	ukp_defer_async_end(c);
	c->vec_live = saved_live;
	ukp_errno = saved_errno;
}

/*
 * [trap] Send the thread to the boosted copy at slot + 16: it runs the
 * instruction and jumps back to addr + len, with no trap and no count.
 * The slot becomes dirty: once freed it waits in quarantine until a
 * thread scan shows nobody can resume in it (kprobes.c).
 */
static UKP_TRAP_TEXT void boost(struct ukp_site *s, struct pt_regs *regs)
{
	if (!atomic_load_explicit(&s->boosted, memory_order_relaxed))
		atomic_store_explicit(&s->boosted, true, memory_order_relaxed);
	ukp_tls_boosted_hits++;
	instruction_pointer_set(regs, s->slot + UKP_BOOST_OFFSET);
}

/*
 * Run the probed instruction: emulate it in place, or send the thread to
 * its out-of-line copy. reenter: a reentrant hit (no handlers, the
 * kernel's KPROBE_REENTER). regs go back into uc when the trap leaves;
 * only uc's signal mask is changed here.
 */
static UKP_TRAP_TEXT void setup_singlestep(struct ukp_ctlblk *c, struct ukp_site *s,
					   struct pt_regs *regs, ucontext_t *uc, bool reenter,
					   struct pending_fault *pf)
{
	bool ready, post;

	/* Where the thread may go without a trap back: the detour's copy of
	 * the region once it is ready (before an emulation too: a thread
	 * must not step into the middle of a region about to get its jump),
	 * or the boosted copy (a reentrant hit runs no post_handler, so it
	 * may boost regardless). */
	ready = atomic_load_explicit(&s->opt.state, memory_order_acquire) != UKP_OPT_NONE;
	post = (ready || (!reenter && s->ainsn.boostable)) && post_now(s);
	if (ready && !post) {
		/* The detour is ready: its copy of the region runs the
		 * instruction (and the rest of the region) and jumps back,
		 * with no single step (the kernel's setup_detour_execution). */
		if (!reenter)
			reset_current_kprobe(c);
		instruction_pointer_set(regs, atomic_load_explicit(&s->detour, memory_order_relaxed) +
					      UKP_OPT_COPY_OFFSET);
		return;
	}
	if (!s->ainsn.ool) {
		uintptr_t fault_addr;

		if (!reenter)
			c->status = KPROBE_HIT_SS;
		if (arch_emulate(&s->ainsn, s->addr, regs, &fault_addr)) {
			/* The instruction itself faults (e.g. a call with no
			 * stack left): the program sees that fault at addr. */
			instruction_pointer_set(regs, s->addr);
			if (!reenter)
				reset_current_kprobe(c);
			pf->sig = SIGSEGV;
			pf->code = SEGV_MAPERR;
			pf->addr = fault_addr;
			return;
		}
		if (!reenter) {
			c->status = KPROBE_HIT_SSDONE;
			run_handlers(c, s, regs, true);
			reset_current_kprobe(c);
		}
		return;
	}
	if (s->ainsn.boostable && (reenter || !post)) {
		/* A reentrant hit leaves the status alone (the kernel's
		 * setup_singlestep with reenter). */
		if (!reenter)
			reset_current_kprobe(c);
		boost(s, regs);
		return;
	}
	if (reenter) {
		c->prev.site = c->cur_site;
		c->prev.status = c->status;
		c->status = KPROBE_REENTER;
	} else {
		c->status = KPROBE_HIT_SS;
	}
	c->cur_site = s;
	atomic_fetch_add(&s->inflight, 1);
	instruction_pointer_set(regs, s->slot);
	if (!s->ainsn.blocking) {
		c->step_mask = *uc_mask(uc);
		c->step_masked = true;
		*uc_mask(uc) |= ukp_async_mask;
	}
}

/* The trailing int3 of an out-of-line copy. */
static UKP_TRAP_TEXT void resume_singlestep(struct ukp_ctlblk *c, struct ukp_site *s,
					    uintptr_t slot, struct pt_regs *regs, ucontext_t *uc)
{
	bool mine = (c->status & (KPROBE_HIT_SS | KPROBE_REENTER)) && c->cur_site == s;
	/*
	 * A step whose state a later hit dropped (see breakpoint_trap) and
	 * that came back after all: a signal handler interrupted a system
	 * call copied out of line, hit a probe and returned, and the system
	 * call finished (or was restarted) in the slot. Nothing else is
	 * under way on this thread, so the step finishes as its own and
	 * its post_handlers run. (Only blocking steps leave signals
	 * deliverable, and those are never reentrant: handlers run with
	 * asynchronous signals blocked.)
	 */
	bool orphan = !mine && c->status == 0;

	ukp_tls_ool_resumes++;
	arch_resume_ool(&s->ainsn, s->addr, slot, regs);
	if (mine && c->step_masked) {
		*uc_mask(uc) = c->step_mask;
		c->step_masked = false;
	}
	/* The site stays valid until we leave the read side. */
	atomic_fetch_sub(&s->inflight, 1);
	if (!mine && !orphan)
		return; /* a dropped step inside other probe work: no post_handler */
	if (mine && c->status == KPROBE_REENTER) {
		c->cur_site = c->prev.site;
		c->status = c->prev.status;
		return;
	}
	c->cur_site = s;
	c->status = KPROBE_HIT_SSDONE;
	run_handlers(c, s, regs, true);
	reset_current_kprobe(c);
}

static UKP_TRAP_TEXT void kprobe_hit(struct ukp_ctlblk *c, struct ukp_site *s,
				     struct pt_regs *regs, ucontext_t *uc, struct pending_fault *pf)
{
	c->cur_site = s;
	c->status = KPROBE_HIT_ACTIVE;
	ukp_jprobe_hit_start();
	if (run_handlers(c, s, regs, false)) {
		if (ukp_jprobe_prepared()) {
			/* a jprobe: the thread runs its handler next */
			if (ukp_jprobe_enter(c, s, regs, uc))
				return;
			setup_singlestep(c, s, regs, uc, false, pf);
			return;
		}
		/* The handler changed the execution path. */
		reset_current_kprobe(c);
		return;
	}
	setup_singlestep(c, s, regs, uc, false, pf);
}

/* A hit while this thread runs a handler: counted, stepped, no handler. */
static UKP_TRAP_TEXT void reenter_kprobe(struct ukp_ctlblk *c, struct ukp_site *s,
					 struct pt_regs *regs, ucontext_t *uc,
					 struct pending_fault *pf)
{
	inc_nmissed(s);
	setup_singlestep(c, s, regs, uc, true, pf);
}

_Atomic unsigned long ukp_dropped_steps;

/*
 * [trap] A jprobe handler of this thread ended (the kernel's
 * longjmp_break_handler and the single step after it): the hit's state
 * comes back and the probed instruction runs. False when no jprobe
 * handler runs on this thread. The caller holds the read side.
 */
static UKP_TRAP_TEXT bool jprobe_break(struct ukp_ctlblk *c, struct pt_regs *regs,
				       ucontext_t *uc, struct pending_fault *pf)
{
	struct ukp_site *s = ukp_jprobe_leave(c, regs, uc);

	if (!s)
		return false;
	c->cur_site = s;
	c->status = KPROBE_HIT_ACTIVE;
	setup_singlestep(c, s, regs, uc, false, pf);
	return true;
}

/*
 * [trap] A breakpoint trap of this thread: one of our probes, the
 * trailing int3 of an out-of-line copy, or a breakpoint we removed after
 * the thread hit it. Returns false when it is none of these (the
 * program's own int3): the caller passes the signal on.
 */
static UKP_TRAP_TEXT bool breakpoint_trap(ucontext_t *uc)
{
	struct ukp_ctlblk *c = &ukp_ctl;
	uintptr_t addr = arch_uc_ip(uc) - UKP_BREAKPOINT_IP_OFFSET;
	struct pending_fault pf = { 0, 0, 0 };
	struct pt_regs regs;
	struct ukp_site *s;
	const struct ukp_site *gl;
	uintptr_t slot;
	uint8_t b[UKP_BREAKPOINT_CHECK_LEN];

	/* Handlers must be able to fault even where the program blocked the
	 * fault signals; the kernel restores the mask on return. */
	if (*uc_mask(uc) & ukp_fault_mask) {
		uint64_t m = ukp_fault_mask;

		ukp_sys_sigprocmask(SIG_UNBLOCK, &m, NULL);
	}
	/* The one conversion in; the one out is at "out" (a trap that is
	 * not ours leaves uc as it is). */
	arch_regs_from_ucontext(&regs, uc);
	ukp_read_lock(c);

	if (addr == (uintptr_t)ukp_jprobe_return_bp || addr == (uintptr_t)ukp_jprobe_handler_ret) {
		if (jprobe_break(c, &regs, uc, &pf)) {
			if (addr == (uintptr_t)ukp_jprobe_handler_ret)
				atomic_fetch_add(&ukp_jprobe_missing, 1);
			goto out;
		}
		/* No jprobe handler runs on this thread: jprobe_return()
		 * returns; the stub is not reached that way (the program's). */
		if (addr == (uintptr_t)ukp_jprobe_return_bp) {
			/* past the breakpoint (where x86's int3 left it) */
			instruction_pointer_set(&regs, addr + UKP_BREAKPOINT_SIZE);
			goto out;
		}
		ukp_read_unlock(c);
		return false;
	}
	if (UKP_GO_TRAP && addr == UKP_GO_TRAP) {
		/* The Go template's fallback (optprobe_tramp.S): a hit of the
		 * site whose detour called it, as a breakpoint hit at the
		 * probe with the probed code's registers; the thread gets
		 * its stack for the next hits. */
		const struct ukp_site *gs =
			*(struct ukp_site *const *)(regs.sp + UKP_GO_TRAP_SITE);

		regs.sp += UKP_GO_TRAP_FRAME;
		addr = gs->addr;
		instruction_pointer_set(&regs, addr + UKP_BREAKPOINT_IP_OFFSET);
		ukp_go_stack_need();
	} else if ((gl = arch_go_leaf_trap(addr)) != NULL) {
		/* a Go leaf detour's fallbacks: a hit of its site, as a
		 * breakpoint hit at the probe with the probed code's
		 * registers; the thread gets its stack for the next hits */
		addr = gl->addr;
		instruction_pointer_set(&regs, addr + UKP_BREAKPOINT_IP_OFFSET);
		ukp_go_stack_need();
	}
	s = ukp_slot_owner(addr, &slot);
	if (s && s->ainsn.ool && slot == s->slot && addr == slot + s->ainsn.len) {
		resume_singlestep(c, s, slot, &regs, uc);
		goto out;
	}
	s = ukp_site_lookup(addr);
	if (s) {
		if (c->status & (KPROBE_HIT_ACTIVE | KPROBE_HIT_SSDONE)) {
			reenter_kprobe(c, s, &regs, uc, &pf);
			goto out;
		}
		if (c->status) {
			/* A step that never came back: a program signal
			 * handler interrupted a system call copied out of
			 * line and hit this probe, or jumped out of it. */
			atomic_fetch_add(&ukp_dropped_steps, 1);
			c->step_masked = false;
			reset_current_kprobe(c);
		}
		kprobe_hit(c, s, &regs, uc, &pf);
		goto out;
	}
	/* Our breakpoint was removed after this thread hit it: run the
	 * original instruction (the kernel does the same). The program's
	 * own breakpoint is not ours to skip. */
	if (arch_copy_nofault(b, (void *)(addr + UKP_BREAKPOINT_CHECK_OFF), sizeof(b)) == 0 &&
	    !arch_breakpoint_before(b)) {
		instruction_pointer_set(&regs, addr);
		goto out;
	}
	/* A probe registered here again after our lookup missed: its site
	 * was hashed before its int3 was written, so a second lookup finds
	 * it. Run the instruction again; it traps into the new probe. */
	if (ukp_site_lookup(addr)) {
		instruction_pointer_set(&regs, addr);
		goto out;
	}
	/* Not ours: the program's int3. */
	ukp_read_unlock(c);
	return false;
out:
	ukp_read_unlock(c);
	arch_regs_to_ucontext(uc, &regs);
	if (pf.sig)
		ukp_deliver_fault(pf.sig, pf.code, pf.addr, uc);
	return true;
}

/*
 * [trap] The SIGTRAP handler. Only a breakpoint instruction raises
 * SIGTRAP with UKP_BREAKPOINT_SI_CODE (x86's int3: SI_KERNEL, AArch64's
 * brk: TRAP_BRKPT); a SIGTRAP sent with kill()/raise()/sigqueue()
 * (si_code <= 0), a
 * single-step trap (TRAP_TRACE) or a hardware breakpoint (TRAP_HWBKPT)
 * says nothing about the byte before ip and is the program's.
 */
UKP_TRAP_TEXT void ukp_sigtrap_handler(int sig, siginfo_t *info, void *ucv)
{
	ucontext_t *uc = ucv;
	int saved_errno = ukp_errno;
	/* The kernel saved the vector state in the signal frame. */
	bool saved_live = ukp_ctl.vec_live;

	ukp_ctl.vec_live = false;
	if (info->si_code != UKP_BREAKPOINT_SI_CODE) {
		/* a data watchpoint's step or debug-register trap (watch.c) */
		if (!ukp_watch_sigtrap(info, uc))
			ukp_chain_signal(sig, info, uc);
	} else if (!breakpoint_trap(uc)) {
		ukp_chain_signal(sig, info, uc);
	}
	ukp_ctl.vec_live = saved_live;
	ukp_errno = saved_errno;
}

/* A fault_handler call through ukp_call_handler. */
struct fault_call {
	kprobe_fault_handler_t fh;
	int trapnr;
};

static UKP_TRAP_TEXT int fault_thunk(void *arg, struct pt_regs *regs)
{
	struct fault_call *fc = arg;
	int ret = fc->fh(ukp_ctl.cur_kp, regs, fc->trapnr);

	UKP_NO_TAIL_CALL(ret);
	return ret;
}

/*
 * [trap] A fault while this thread runs a jprobe handler, outside any
 * other handler: the program's signal handlers are held back meanwhile,
 * so a fault the kernel raised is the handler's (or of what it called).
 * As for any handler: the jprobe's fault_handler, nmissed, the fault
 * count; then the handler is abandoned and the probed function runs as
 * after jprobe_return(). False when the fault is not a handler's.
 */
static UKP_TRAP_TEXT bool jprobe_fault(siginfo_t *info, ucontext_t *uc)
{
	struct ukp_ctlblk *c = &ukp_ctl;
	struct jprobe *jp = ukp_jp_ctl.jp;
	struct pending_fault pf = { 0, 0, 0 };
	kprobe_fault_handler_t fh;
	struct pt_regs regs;

	if (!jp || c->in_handler || info->si_code <= 0 || c->status != KPROBE_HIT_ACTIVE)
		return false;
	atomic_fetch_add(&ukp_handler_fault_count, 1);
	__atomic_fetch_add(&jp->kp.nmissed, 1, __ATOMIC_RELAXED);
	fh = *(kprobe_fault_handler_t volatile *)&jp->kp.fault_handler;
	/* once in, once out, as in breakpoint_trap (the fault_handler's
	 * changes are dropped: the hit's registers come back) */
	arch_regs_from_ucontext(&regs, uc);
	if (fh) {
		struct fault_call fc = { fh, arch_uc_trapnr(uc) };

		/* the signal frame keeps the vector state */
		ukp_call_handler(&jp->kp, fault_thunk, &fc, &regs, 0, 0, true);
	}
	ukp_read_lock(c);
	jprobe_break(c, &regs, uc, &pf);
	ukp_read_unlock(c);
	arch_regs_to_ucontext(uc, &regs);
	if (pf.sig)
		ukp_deliver_fault(pf.sig, pf.code, pf.addr, uc);
	return true;
}

/* [trap] A fault that is not the library's: a jprobe handler's, or the
 * program's. */
static UKP_TRAP_TEXT void fault_to_program(int sig, siginfo_t *info, ucontext_t *uc)
{
	if (!jprobe_fault(info, uc))
		ukp_chain_signal(sig, info, uc);
}

/* [trap] A fault in an out-of-line copy belongs to the program: it must
 * see it at the original instruction, with the same signal and address. */
static UKP_TRAP_TEXT void ool_fault(struct ukp_ctlblk *c, struct ukp_site *s, uintptr_t slot,
				    int sig, siginfo_t *info, ucontext_t *uc)
{
	uintptr_t a = (uintptr_t)info->si_addr;

	arch_uc_set_ip(uc, s->addr);
	if ((c->status & (KPROBE_HIT_SS | KPROBE_REENTER)) && c->cur_site == s) {
		if (c->step_masked) {
			*uc_mask(uc) = c->step_mask;
			c->step_masked = false;
		}
		if (c->status == KPROBE_REENTER) {
			c->cur_site = c->prev.site;
			c->status = c->prev.status;
		} else {
			reset_current_kprobe(c);
		}
	}
	/* SIGILL/SIGFPE/SIGTRAP report the instruction's address. */
	if (a >= slot && a < slot + s->ainsn.len)
		info->si_addr = (void *)(s->addr + (a - slot));
	atomic_fetch_sub(&s->inflight, 1);
	fault_to_program(sig, info, uc);
}

/* [trap] A fault in a boosted copy (at slot + 16): the same as in the
 * normal copy, but no step is under way (nothing counted, no status). */
static UKP_TRAP_TEXT void boost_fault(struct ukp_site *s, uintptr_t slot, int sig,
				      siginfo_t *info, ucontext_t *uc)
{
	uintptr_t a = (uintptr_t)info->si_addr, b = slot + UKP_BOOST_OFFSET;

	arch_uc_set_ip(uc, s->addr);
	if (a >= b && a < b + s->ainsn.len)
		info->si_addr = (void *)(s->addr + (a - b));
	fault_to_program(sig, info, uc);
}

/* [trap] The SIGSEGV/SIGBUS/SIGFPE/SIGILL handler. */
UKP_TRAP_TEXT void ukp_sigfault_handler(int sig, siginfo_t *info, void *ucv)
{
	ucontext_t *uc = ucv;
	struct ukp_ctlblk *c = &ukp_ctl;
	uintptr_t ip = arch_uc_ip(uc), fix, slot;
	int saved_errno = ukp_errno;
	struct ukp_site *s;

	if (arch_watch_fixup(ip, sig, info->si_code, (uintptr_t)info->si_addr, &fix)) {
		arch_uc_set_ip(uc, fix);
		return;
	}
	/* An access to a page protected for a data watchpoint (watch.c):
	 * before the handler-fault check, since probe handlers may touch
	 * watched data too (the access is then counted as missed), and
	 * before the nofault fixup, so that copy_from_user_nofault() reads
	 * watched data as the program could. */
	if (ukp_watch_fault(sig, info, uc)) {
		ukp_errno = saved_errno;
		return;
	}
	if (arch_nofault_fixup(ip, &fix)) {
		arch_uc_set_ip(uc, fix);
		return;
	}
	if (c->in_handler > 0) {
		/* A probe handler faulted: tell its fault_handler, count it,
		 * and abandon the handler (back into call_handler). */
		struct kprobe *kp = c->fault_kp;

		atomic_fetch_add(&ukp_handler_fault_count, 1);
		if (kp) {
			kprobe_fault_handler_t fh =
				*(kprobe_fault_handler_t volatile *)&kp->fault_handler;

			__atomic_fetch_add(&kp->nmissed, 1, __ATOMIC_RELAXED);
			if (fh) {
				struct pt_regs regs;

				arch_regs_from_ucontext(&regs, uc);
				c->fault_kp = NULL; /* a fault in fh is not fh's */
				fh(kp, &regs, arch_uc_trapnr(uc));
			}
		}
		/* Leave with the mask of the context that faulted (longjmp
		 * keeps this handler's, which blocks the asynchronous signals:
		 * right inside a trap handler, wrong in the return-probe
		 * dispatcher, which runs in the thread's own context). */
		ukp_sys_sigprocmask(SIG_SETMASK, (uint64_t *)&uc->uc_sigmask, NULL);
#ifdef UKP_ASAN
		{
			/* the handler's frames, from below its red zone up to
			 * the frame of the jump buffer (__builtin_setjmp keeps
			 * the stack pointer in its third word) */
			struct pt_regs fr;

			arch_regs_from_ucontext(&fr, uc);
			ukp_asan_frames_left(fr.sp - 128, (uintptr_t)c->jb[2]);
		}
#endif
		__builtin_longjmp(c->jb, 1);
	}
	if (sig == SIGSEGV && info->si_code == SI_KERNEL &&
	    arch_uc_trapnr(uc) == UKP_TRAPNR_BREAKPOINT && breakpoint_trap(uc)) {
		/* The kernel could not write the SIGTRAP frame of one of our
		 * breakpoints (the stack pointer is in unusable memory, a
		 * stack overflow) and turned the trap into this SIGSEGV,
		 * which came on the alternate stack: the hit is handled
		 * here instead. A fault of the probed instruction then
		 * reaches the program as it would without the probe. */
		ukp_errno = saved_errno;
		return;
	}
	ukp_read_lock(c);
	s = ukp_slot_owner(ip, &slot);
	if (s && s->ainsn.ool && slot == s->slot && ip >= slot && ip < slot + s->ainsn.len) {
		/* s stays valid: this thread is counted in s->inflight. */
		ukp_read_unlock(c);
		ool_fault(c, s, slot, sig, info, uc);
		ukp_errno = saved_errno;
		return;
	}
	if (s && slot != s->slot) {
		uintptr_t copy = atomic_load(&s->detour) + UKP_OPT_COPY_OFFSET;
		unsigned int i = s->opt.rgn->ninsn;

		/* the copied instruction that holds ip (copies of jumps are
		 * longer than the originals) */
		while (i > 0 && ip < copy + s->opt.rgn->map_copy[i - 1])
			i--;
		if (i > 0 && ip >= copy) {
			/* A fault in the detour's copy of the region: the
			 * program sees it at the original instruction. */
			uintptr_t orig = s->addr + s->opt.rgn->map_orig[i - 1];
			uintptr_t ins = copy + s->opt.rgn->map_copy[i - 1];
			uintptr_t a = (uintptr_t)info->si_addr;

			ukp_read_unlock(c);
			arch_uc_set_ip(uc, orig);
			if (a == ins)
				info->si_addr = (void *)orig;
			fault_to_program(sig, info, uc);
			ukp_errno = saved_errno;
			return;
		}
	}
	if (s && slot == s->slot && s->ainsn.boostable && ip >= slot + UKP_BOOST_OFFSET &&
	    ip < slot + UKP_BOOST_OFFSET + s->ainsn.len) {
		/* s stays valid: its slot is quarantined until no thread
		 * can be in it, and this one is. */
		ukp_read_unlock(c);
		boost_fault(s, slot, sig, info, uc);
		ukp_errno = saved_errno;
		return;
	}
	ukp_read_unlock(c);
	fault_to_program(sig, info, uc);
	ukp_errno = saved_errno;
}

/* ------------------------------------------------------ public API */

/* [any] */
UKP_TRAP_TEXT struct kprobe *kprobe_running(void)
{
	return ukp_ctl.cur_kp;
}

/* [any] A copy for the public API. The fixup is done by the library's
 * SIGSEGV/SIGBUS handler, installed when the library is loaded; called
 * before that (from another object's constructor), it is installed now. */
static UKP_TRAP_TEXT long public_copy_nofault(void *dst, const void *src, size_t size)
{
	if (__builtin_expect(!ukp_signals_installed(), 0) && ukp_signals_install())
		return -EFAULT;
	return arch_copy_nofault(dst, src, size);
}

/* [any] */
UKP_TRAP_TEXT long copy_from_user_nofault(void *dst, const void *src, size_t size)
{
	if (!size)
		return 0;
	return public_copy_nofault(dst, src, size);
}

/* [any] One routine for the whole chain (no per-load call or check):
 * what a tracer's fetch of +OFF(+OFF(%reg)) costs per hit; the value in
 * and out in registers. */
UKP_TRAP_TEXT struct ukprobes_fetched ukprobes_fetch_nofault_value(uint64_t base, const long *off,
								  unsigned int n, unsigned int size)
{
	if (!n || (size != 1 && size != 2 && size != 4 && size != 8))
		return (struct ukprobes_fetched){ -EINVAL, 0 };
	if (__builtin_expect(!ukp_signals_installed(), 0) && ukp_signals_install())
		return (struct ukprobes_fetched){ -EFAULT, 0 };
	return arch_fetch_nofault(base, off, n, size);
}

/* [any] */
UKP_TRAP_TEXT long ukprobes_fetch_nofault(uint64_t *val, const long *off, unsigned int n,
					  unsigned int size)
{
	struct ukprobes_fetched r = ukprobes_fetch_nofault_value(*val, off, n, size);

	if (!r.err)
		*val = r.val;
	return r.err;
}

/* [any] */
UKP_TRAP_TEXT unsigned long regs_get_kernel_stack_nth(const struct pt_regs *regs, unsigned int n)
{
	unsigned long v;

	if (public_copy_nofault(&v, (const void *)(user_stack_pointer(regs) + (unsigned long)n * sizeof(long)),
				sizeof(v)))
		return 0;
	return v;
}

/* [any] */
bool ukp_in_probe_context(void)
{
	return ukp_ctl.in_handler > 0 || ukp_jprobe_running();
}

/*
 * [trap] A return handler that may run with the thread's vector state as
 * it is (proven vector-free, or the state is not live), called directly:
 * the probe status is KPROBE_HIT_ACTIVE while fn runs. A fault in fn
 * comes back as fault_ret.
 */
UKP_TRAP_TEXT int ukp_call_handler_outer(struct kprobe *kp, kretprobe_handler_t fn,
					 struct kretprobe_instance *ri, struct pt_regs *regs,
					 int fault_ret)
{
	union guarded_fn g = { .ret = fn };

	return guarded_call(kp, CALL_RET, g, ri, regs, KPROBE_HIT_ACTIVE, fault_ret);
}
