/* SPDX-License-Identifier: MIT */
/*
 * jprobes.h - jprobes (jprobes.c): what the registry, the hit path and
 * the list need to know about them.
 *
 * A jprobe is a kprobe on a function's entry whose pre_handler
 * (ukp_jprobe_pre_handler, the kernel's setjmp_pre_handler) keeps the
 * registers and the top of the stack and points the registers at the
 * user's handler. The breakpoint path (trap.c) then lets the thread run
 * the handler, outside the signal handler, with the probed function's
 * arguments, on a copy of the stack top; jprobe_return() (or the
 * handler's return) traps again and the kept state comes back before the
 * probed instruction runs.
 * Per-thread state lives in ukp_jp_ctl (the thread's block: base/tb_lib.h).
 */
#ifndef UKP_JPROBES_H
#define UKP_JPROBES_H

#include "core/core.h"
#include "base/base.h"
#include "process/process.h"
#include "symbols/symbols.h"

/* The per-thread state (the kernel's jprobe_saved_regs in
 * kprobe_ctlblk; the stack is not saved: the handler runs on a copy). */
struct ukp_jprobe_ctl {
	struct jprobe *prepared;   /* the pre_handler ran in this hit */
	struct jprobe *jp;         /* the handler of jp runs, or NULL */
	struct ukp_site *site;     /* its site */
	uint64_t mask;             /* the signal mask at the hit */
	struct pt_regs regs;       /* the registers at the hit (ip = addr + 1) */
	struct arch_jprobe_vec vec;
	struct arch_jprobe_start start;
};
UKP_TB_LIB_FITS(struct ukp_jprobe_ctl, UKP_TBL_JPROBE, UKP_TBL_JPROBE_SIZE);
#define ukp_jp_ctl (*UKP_TB_LIB(struct ukp_jprobe_ctl, UKP_TBL_JPROBE))

/* [trap] The jprobe pre_handler; the list shows its probes as "j". */
int ukp_jprobe_pre_handler(struct kprobe *p, struct pt_regs *regs);

static inline bool ukp_is_jprobe(const struct kprobe *p)
{
	return p->pre_handler == ukp_jprobe_pre_handler;
}

/* [trap] A breakpoint hit starts: no jprobe pre_handler ran yet. */
static inline void ukp_jprobe_hit_start(void)
{
	ukp_jp_ctl.prepared = NULL;
}

/* [trap] Did a jprobe's pre_handler run in this hit? */
static inline bool ukp_jprobe_prepared(void)
{
	return ukp_jp_ctl.prepared != NULL;
}

/* [any] Does a jprobe handler run on this thread? */
static inline bool ukp_jprobe_running(void)
{
	return ukp_jp_ctl.jp != NULL;
}

/*
 * [trap] After the pre_handlers of a hit at s, one of them a jprobe's:
 * send the thread to its handler (regs->ip): *regs become the registers
 * the handler starts with (the trap writes them into uc on its way out;
 * uc's vector registers and mask are saved here), with the probe state
 * left set (c->status, cur_site, kprobe_running()), the program's signal
 * handlers held back and the read side held until the handler ends.
 * Returns false when the handler cannot run (counted in nmissed): *regs
 * are then the hit's again.
 */
bool ukp_jprobe_enter(struct ukp_ctlblk *c, struct ukp_site *s, struct pt_regs *regs,
		      ucontext_t *uc);

/*
 * [trap] The handler ended (jprobe_return(), its return, or a fault):
 * put the hit's registers back into *regs (the trap writes them into uc
 * on its way out), its vector argument registers and signal mask back
 * into uc, and clear the state taken
 * by ukp_jprobe_enter (the caller holds the read side itself). Returns
 * the site, whose instruction must run next, or NULL when no jprobe
 * handler runs on this thread.
 */
struct ukp_site *ukp_jprobe_leave(struct ukp_ctlblk *c, struct pt_regs *regs, ucontext_t *uc);

/* Handlers that returned without calling jprobe_return(). */
extern _Atomic unsigned long ukp_jprobe_missing;

#endif /* UKP_JPROBES_H */
