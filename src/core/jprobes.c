/* SPDX-License-Identifier: MIT */
/*
 * jprobes.c - jprobes, the kernel's deprecated probes on a function's
 * entry whose handler has the function's prototype (2.6's
 * kernel/kprobes.c register_jprobe and arch/x86's setjmp_pre_handler /
 * longjmp_break_handler, for a process).
 *
 * A hit (trap.c, breakpoint path only: a jprobe's site is never
 * optimized, optimizer.c):
 *   int3 -> the other pre_handlers at the site (newest first; the jprobe
 *   is always the last child, as in the kernel) -> ukp_jprobe_pre_handler
 *   keeps the registers, sets regs->ip to the handler and returns 1 ->
 *   ukp_jprobe_enter keeps xmm0-7 and the signal mask, and the trap
 *   returns into the handler (through the arch's start stub, which
 *   copies the top of the stack, return address and stack arguments,
 *   right below it and puts the library's ukp_jprobe_handler_ret in the
 *   copy's return-address slot), on the thread, with the probed
 *   function's registers and a copy of its stack arguments: the handler
 *   may write over them, the function's own stack is never written (the
 *   kernel copied the stack away and back instead, which also undid
 *   writes of other threads and of the library to the caller's frame).
 *   The handler ends with jprobe_return() (an int3) or returns (into the
 *   stub's int3): ukp_jprobe_leave puts back the registers, the vector
 *   argument registers and the signal mask, and the probed instruction
 *   runs as after any hit (emulated, boosted or out of line:
 *   post_handlers run).
 *
 * While the handler runs, the thread keeps the probe state of a hit
 * (kprobe_running() is the jprobe's kprobe; a probe hit on the thread is
 * missed and counted in nmissed, like a hit inside any handler), the
 * program's signal handlers are held back (as the kernel ran jprobe
 * handlers with interrupts off), and the thread stays on the read side
 * of the registry, so unregistering waits for running handlers (as the
 * kernel's synchronize_sched did with preemption off).
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>

#include "core/jprobes.h"
#include "base/sanitizer.h"


_Atomic unsigned long ukp_jprobe_missing;

#define jp_container_of(ptr, type, member) \
	((type *)((char *)(ptr) - offsetof(type, member)))

/* [trap] Word copies the compiler cannot turn into a memcpy call. */
static UKP_TRAP_TEXT void copy_words(volatile unsigned long *d, const volatile unsigned long *s,
				     size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		d[i] = s[i];
}

/*
 * [trap] The kernel's setjmp_pre_handler: keep the registers and point
 * them at the handler. trap.c commits it (ukp_jprobe_enter) when the hit
 * is a breakpoint hit; on any other path nothing else happens.
 */
UKP_TRAP_TEXT int ukp_jprobe_pre_handler(struct kprobe *p, struct pt_regs *regs)
{
	struct jprobe *jp = jp_container_of(p, struct jprobe, kp);
	struct ukp_jprobe_ctl *j = &ukp_jp_ctl;

	if (j->jp)
		return 0; /* a hit inside a handler runs no handler: cannot happen */
	copy_words((unsigned long *)&j->regs, (const unsigned long *)regs,
		   sizeof(*regs) / sizeof(long));
	j->prepared = jp;
	instruction_pointer_set(regs, (unsigned long)*(void *volatile *)&jp->entry);
	return 1;
}

/* [trap] See jprobes.h. */
UKP_TRAP_TEXT bool ukp_jprobe_enter(struct ukp_ctlblk *c, struct ukp_site *s,
				    struct pt_regs *regs, ucontext_t *uc)
{
	struct ukp_jprobe_ctl *j = &ukp_jp_ctl;
	struct jprobe *jp = j->prepared;
	uint64_t *mask = (uint64_t *)&uc->uc_sigmask;
	uintptr_t entry = instruction_pointer(regs);

	j->prepared = NULL;
	/* The handler runs on a copy of the stack top, whose return address
	 * is the library's: the probed function's stack is never written,
	 * and a handler that forgets jprobe_return() is caught. */
	copy_words((unsigned long *)regs, (const unsigned long *)&j->regs,
		   sizeof(*regs) / sizeof(long));
	if (arch_jprobe_start(regs, &j->start, entry)) {
		__atomic_fetch_add(&jp->kp.nmissed, 1, __ATOMIC_RELAXED);
		copy_words((unsigned long *)regs, (const unsigned long *)&j->regs,
			   sizeof(*regs) / sizeof(long));
		return false;
	}
	arch_jprobe_save_vec(&j->vec, uc);
	j->mask = *mask;
	j->site = s;
	j->jp = jp;
	/* the handler may fault even where the probed code blocked the
	 * fault signals (its mask comes back at the end) */
	*mask &= ~ukp_fault_mask;
	c->status = KPROBE_HIT_ACTIVE;
	c->cur_site = s;
	c->cur_kp = &jp->kp;
	c->defer_async++;
	c->depth++; /* the read side, until ukp_jprobe_leave */
	return true;
}

/* [trap] See jprobes.h. */
UKP_TRAP_TEXT struct ukp_site *ukp_jprobe_leave(struct ukp_ctlblk *c, struct pt_regs *regs,
					       ucontext_t *uc)
{
	struct ukp_jprobe_ctl *j = &ukp_jp_ctl;
	struct ukp_site *s = j->site;
	uintptr_t handler_sp = regs->sp;

	if (!j->jp)
		return NULL;
	copy_words((unsigned long *)regs, (const unsigned long *)&j->regs,
		   sizeof(*regs) / sizeof(long));
	/* (ASan) the handler's frames on the stack copy are left here when
	 * it faulted (jprobe_return cleared them itself) */
	ukp_asan_frames_left(handler_sp - 128, regs->sp);
	arch_jprobe_restore_vec(uc, &j->vec);
	/* The hit's mask. Signals held back meanwhile are pending, blocked
	 * only in the context being left: this mask lets them in (after
	 * the probed instruction, whose step blocks them). */
	*(uint64_t *)&uc->uc_sigmask = j->mask;
	if (--c->defer_async == 0)
		c->deferred_mask = 0;
	c->depth--;
	c->status = 0;
	c->cur_site = NULL;
	c->cur_kp = NULL;
	j->jp = NULL;
	j->site = NULL;
	return s;
}

/* [any] The end of a jprobe handler (ukprobes.h). */
UKPROBES_API UKP_TRAP_TEXT void jprobe_return(void)
{
	if (ukp_jp_ctl.jp) {
		/* The handler's frames are left without returning: a build
		 * with AddressSanitizer unpoisons them, as longjmp does. */
		UKP_ASAN_NO_RETURN();
		arch_jprobe_return_trap();
	}
}

/* ---------------------------------------------------- registration */

static pthread_once_t jp_once = PTHREAD_ONCE_INIT;

static int jp_init_ret;

static void jp_init(void)
{
	jp_init_ret = arch_jprobe_init();
}

/* [reg] The handler must be a function's first instruction (the
 * kernel's kallsyms_lookup_size_offset check on jp->entry). */
static int check_entry(const void *entry)
{
	struct ukp_symres sym;
	int ret;

	if (!entry) {
		pr_warn("jprobes: no handler (entry is NULL)\n");
		return -EINVAL;
	}
	ret = ukp_lock_for_show();
	if (ret)
		return -EINVAL;
	ret = ukp_sym_lookup_addr((uintptr_t)entry, &sym);
	if (!ret && sym.start != (uintptr_t)entry)
		ret = -EINVAL;
	ukp_unlock_for_show();
	if (ret) {
		pr_warn("jprobes: the handler at %p is not the start of a function\n", entry);
		return -EINVAL;
	}
	return 0;
}

UKPROBES_API int register_jprobe(struct jprobe *jp)
{
	kprobe_opcode_t *saved_addr;
	unsigned int saved_flags;
	struct kprobe *kp;
	bool disabled;
	int ret;

	if (!jp)
		return -EINVAL;
	if (ukp_in_probe_context())
		return -EBUSY;
	ret = check_entry(jp->entry);
	if (ret)
		return ret;
	pthread_once(&jp_once, jp_init);
	if (jp_init_ret)
		return jp_init_ret;
	kp = &jp->kp;
	saved_addr = kp->addr;
	saved_flags = kp->flags;
	disabled = kp->flags & KPROBE_FLAG_DISABLED;
	/* As the kernel: the pre_handler is ours (post and fault handlers
	 * stay the user's). The probe stays disabled until it is known to
	 * be on a function's entry. */
	kp->pre_handler = ukp_jprobe_pre_handler;
	kp->flags |= KPROBE_FLAG_DISABLED;
	ret = register_kprobe(kp);
	if (ret) {
		kp->flags = saved_flags;
		return ret;
	}
	if (!(kp->flags & KPROBE_FLAG_ON_FUNC_ENTRY)) {
		pr_warn("jprobes: %p is not a function's entry\n", (void *)kp->addr);
		ret = -EINVAL;
	} else if (!disabled) {
		ret = enable_kprobe(kp);
	}
	if (ret) {
		unregister_kprobe(kp);
		kp->addr = saved_addr;
		kp->flags = saved_flags;
	}
	return ret;
}

UKPROBES_API void unregister_jprobes(struct jprobe **jps, int num)
{
	struct kprobe **kps;
	int i;

	if (num <= 0 || !jps)
		return;
	kps = calloc((size_t)num, sizeof(*kps));
	if (!kps)
		return;
	for (i = 0; i < num; i++)
		kps[i] = jps[i] ? &jps[i]->kp : NULL;
	/* Its grace period also waits for handlers still running: they
	 * hold the read side. */
	unregister_kprobes(kps, num);
	free(kps);
}

UKPROBES_API void unregister_jprobe(struct jprobe *jp)
{
	unregister_jprobes(&jp, 1);
}

UKPROBES_API int register_jprobes(struct jprobe **jps, int num)
{
	int i, ret = 0;

	if (num <= 0 || !jps)
		return -EINVAL;
	for (i = 0; i < num; i++) {
		ret = register_jprobe(jps[i]);
		if (ret < 0) {
			if (i > 0)
				unregister_jprobes(jps, i);
			break;
		}
	}
	return ret;
}

UKPROBES_API unsigned long jprobes_missing_returns(void)
{
	return atomic_load(&ukp_jprobe_missing);
}
