/* SPDX-License-Identifier: MIT */
/*
 * optimizer.c - jump optimization (kprobes.rst, "How Does Jump
 * Optimization Work?"; the kernel's kernel/kprobes.c optimizer and
 * arch/x86/kernel/kprobes/opt.c).
 *
 * A probe is first a breakpoint. If it qualifies, it is queued; the
 * optimizer thread wakes up a little later (OPTIMIZE_DELAY_MS: probes
 * registered together are optimized together; at once when somebody
 * waits in ukprobes_wait_optimizer()) and, under the registry mutex:
 *   1. prepares the detour buffer (arch_opt_prepare: the region is the
 *      first whole instructions covering 5 bytes, each relocatable; a
 *      ret or jmp ends the copy, and the rest of the 5 bytes may then be
 *      the padding after the function; a call may end the region) and
 *      checks the control flow around the region (codeflow.c); when that
 *      is refused and the first instruction is shorter than the jump, a
 *      punned jump over it alone (pun(), below) is tried; the site
 *      becomes READY: a breakpoint hit now runs the handlers and goes to
 *      the detour's copy of the region, with no single step;
 *   2. waits for a grace period (no trap handler is still sending a
 *      thread to the old out-of-line copy), then asks every thread where
 *      it is (threads.c): a thread stopped inside the region, in the
 *      probe's out-of-line slot (which jumps back into the region), or
 *      in a signal frame that returns there, keeps that probe waiting
 *      for a later round (spec footnote [3]);
 *   3. writes the jump, breakpoint first: the breakpoint stays in its
 *      bytes while the rest of the jump goes after it (x86: the rel32
 *      after the int3), every thread is serialized (membarrier
 *      SYNC_CORE), then the jump's first bytes replace the breakpoint
 *      (x86: e9; AArch64: the whole b, as long as the brk).
 * Unoptimizing is the reverse: the breakpoint back over the jump's first
 * bytes, serialize, the original bytes after it back, serialize. A probe whose detour ever existed is
 * freed through the quarantine (kprobes.c) once no thread can be in the
 * detour or in the library's code on its way through it.
 *
 * A probe qualifies when no enabled child has a post_handler, some child
 * is enabled, no other probe lies inside its jump's bytes (a punned
 * jump's reach past its region: opt.span), the knob is on and
 * the analysis did not refuse it. A probe at a function entry that starts
 * with patchable NOPs (-fpatchable-function-entry, -mnop-mcount) is an
 * [FTRACE] probe: the NOPs are the region, nothing is copied or analysed,
 * post_handlers run in the detour too, and the knob does not apply.
 *
 * Every function here is [reg] (registry mutex held) unless said.
 */
#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "optimizer/optimizer.h"
#include "text/text.h"
#include "core/core.h"
#include "base/base.h"
#include "base/sys.h"
#include "process/process.h"
#include "symbols/symbols.h"
#include "core/kretprobes.h"
#include "core/jprobes.h"
#include "flow/codeflow.h"
#include "base/obj_pool.h"

#define OPTIMIZE_DELAY_MS 5
#define MAX_TRIES 200            /* rounds a thread may stay in the way */
#define OPT_BATCH (UKP_SCAN_MAX_RANGES / 2)

static bool opt_on = true;               /* the knob */
static bool opt_inited;
/* Sites to look at, taken newest first. A queued site has opt.queued
 * and its index in the array in opt.qidx (a site keeps 4 bytes for it
 * instead of two pointers, and the array lives only while sites wait);
 * one taken off leaves a NULL behind. While a round runs, the sites it
 * has not looked at yet are in todo (opt.queued Q_TODO). */
enum { Q_NO, Q_QUEUE, Q_TODO };
struct site_vec {
	struct ukp_site **v;
	uint32_t n, cap;
};
static struct site_vec queue, todo;
static unsigned int nqueued;             /* the non-NULL entries of queue */
static struct ukp_fcond queue_cond = UKP_FCOND_INIT;
static struct ukp_fcond idle_cond = UKP_FCOND_INIT;
static bool busy;                        /* the thread is working on a batch */
static pid_t thread_pid;                 /* process the thread runs in */
static struct ukprobes_kthread thread;  /* joinable: ukp_opt_stop() waits for its end */
static bool quit;                        /* ukp_opt_stop(): the thread returns */
static unsigned int waiters;             /* in ukprobes_wait_optimizer(): no delay */
unsigned long ukp_opt_rounds;            /* batches done (tests) */
/* Tests turn punned jumps off to see the verdicts on whole regions. */
bool ukp_opt_pun = true;
static struct ukp_pool rgn_pool = UKP_POOL_INIT(struct ukp_opt_region, 8);

/* ------------------------------------------------------- helpers */

/* Why a site is not optimized: every reason is a static text and there
 * are a few dozen of them, so a site keeps the index of its reason
 * among those met so far (one byte instead of a pointer). */
#define MAX_WHYS 255
static const char *whys[MAX_WHYS + 1] = { NULL, "(too many reasons to keep)" };
static unsigned int nwhys = 1;

static void set_why(struct ukp_site *s, const char *why)
{
	unsigned int i;

	if (!why) {
		s->opt.why = 0;
		return;
	}
	if (whys[s->opt.why] == why)
		return;
	/* the same text may come from another object file */
	for (i = 1; i <= nwhys; i++)
		if (whys[i] == why || !strcmp(whys[i], why))
			goto found;
	if (nwhys == MAX_WHYS) {
		i = 1;
		goto found;
	}
	i = ++nwhys;
	whys[i] = why;
found:
	s->opt.why = (uint8_t)i;
}

/* [reg] Why s has no jump (when it has none), or NULL. */
const char *ukp_opt_why(const struct ukp_site *s)
{
	return whys[s->opt.why];
}

/* Sites READY or JUMP: while there are none, nothing needs taking out of
 * a copy of the code (ukp_opt_unpatch) and no region can cover a new
 * probe (ukp_opt_neighbour), which saves a batch of thousands of probes
 * dozens of hash lookups per probe. */
static unsigned long nactive;

static void set_state(struct ukp_site *s, uint8_t st, memory_order mo)
{
	uint8_t old = atomic_load(&s->opt.state);

	nactive += (old == UKP_OPT_NONE) - (st == UKP_OPT_NONE);
	atomic_store_explicit(&s->opt.state, st, mo);
}

static bool has_post(const struct ukp_site *s)
{
	struct ukp_child *ch;

	for (ch = atomic_load(&s->children); ch; ch = atomic_load(&ch->next))
		if (!kprobe_disabled(ch->kp) && ch->kp->post_handler)
			return true;
	return false;
}

/* A jprobe redirects the thread to its handler: a breakpoint only (the
 * kernel refused to optimize a probe with a break_handler). */
static bool has_jprobe(const struct ukp_site *s)
{
	struct ukp_child *ch;

	for (ch = atomic_load(&s->children); ch; ch = atomic_load(&ch->next))
		if (!kprobe_disabled(ch->kp) && ukp_is_jprobe(ch->kp))
			return true;
	return false;
}

/* The children's OPTIMIZED/FTRACE flags follow the site. */
static void set_flags(struct ukp_site *s)
{
	bool jump = atomic_load(&s->opt.state) == UKP_OPT_JUMP;
	struct ukp_child *ch;

	for (ch = atomic_load(&s->children); ch; ch = atomic_load(&ch->next)) {
		ch->kp->flags &= ~(KPROBE_FLAG_OPTIMIZED | KPROBE_FLAG_FTRACE);
		if (s->opt.ftrace_len)
			ch->kp->flags |= KPROBE_FLAG_FTRACE;
		else if (jump)
			ch->kp->flags |= KPROBE_FLAG_OPTIMIZED;
	}
}

/* Another probe strictly inside (addr, addr + len)? */
static bool neighbour_inside(uintptr_t addr, size_t len)
{
	size_t k;

	for (k = 1; k < len; k++)
		if (ukp_site_lookup(addr + k))
			return true;
	return false;
}

/* May s use a jump now (leaving aside the analysis and the threads)? */
static bool wanted(const struct ukp_site *s, const char **why)
{
	if (s->gone || !s->hashed) {
		*why = "the probe is gone";
		return false;
	}
	if (s->opt.err) {
		*why = ukp_opt_why(s);
		return false;
	}
	if (!ukp_site_wants_armed(s) || !atomic_load(&s->armed)) {
		*why = "the probe is disabled";
		return false;
	}
	if (has_jprobe(s)) {
		*why = "a jprobe is registered";
		return false;
	}
	if (s->opt.ftrace_len)
		return true;
	if (!opt_on) {
		*why = "optimization is turned off";
		return false;
	}
	if (has_post(s)) {
		*why = "a post_handler is registered";
		return false;
	}
	return true;
}

/* ------------------------------------------------------ the queue */

static void queue_add(struct ukp_site *s)
{
	if (s->opt.queued)
		return;
	if (queue.n == queue.cap) {
		uint32_t cap = queue.cap ? queue.cap * 2 : 64;
		struct ukp_site **v = cap > queue.cap ? realloc(queue.v, cap * sizeof(*v)) : NULL;

		if (!v) {
			set_why(s, "no memory");
			return;
		}
		queue.v = v;
		queue.cap = cap;
	}
	s->opt.queued = Q_QUEUE;
	s->opt.qidx = queue.n;
	queue.v[queue.n++] = s;
	nqueued++;
}

/* O(1): a batch of thousands of probes unregistered while queued. */
static void queue_del(struct ukp_site *s)
{
	if (s->opt.queued == Q_QUEUE) {
		queue.v[s->opt.qidx] = NULL;
		if (--nqueued == 0) {
			free(queue.v);
			queue = (struct site_vec){ 0 };
		}
	} else if (s->opt.queued == Q_TODO) {
		todo.v[s->opt.qidx] = NULL;
	}
	s->opt.queued = Q_NO;
}

static void *optimizer_main(void *arg);
static bool kick_deferred, kick_wanted;

/* Start the optimizer thread in this process if it is not running. */
static void kick(void)
{
	struct ukprobes_kthread t;

	if (kick_deferred) {
		kick_wanted = true;
		return;
	}

	if (thread_pid != ukp_sys_getpid()) {
		/* All signals blocked but ours: the thread answers scans and
		 * handles breakpoints in the libc it calls, and nothing else. */
		quit = false;
		if (ukp_kthread_start(&t, optimizer_main, NULL, "ukprobes-opt") == 0) {
			thread = t;
			thread_pid = ukp_sys_getpid();
		} else {
			pr_warn("kprobes: cannot start the optimizer thread\n");
		}
	}
	ukp_fcond_signal(&queue_cond);
}

/* ---------------------------------------------------- preparation */

/*
 * [reg] A jump in Go code (doc/go_rust.md, "Jump-optimized Go probes").
 * The detour's first frame goes on the goroutine's stack, which is small
 * and has no room for handlers: only past the function's stack check,
 * where Go's stack guard (StackGuard, 928 bytes on amd64 since Go 1.17
 * or so: the runtime's stack.go) is free below the stack pointer (or at
 * an epilogue of the function, where StackLimit is: go_exit_ok), does
 * the arch's Go template take the little it needs before it moves to a
 * stack of the thread's own. At a leaf's first instruction (a function
 * without the check: no byte to spare), the arch's leaf template takes
 * none (arch_opt_go_leaf). And the runtime resumes a goroutine at any
 * instruction where it was preempted asynchronously (its saved PC is in
 * its g or on its own stack, where no thread scan sees it): the region
 * must be one instruction, so that no goroutine can be parked inside
 * it (a punned jump writes that instruction alone). The runtime's own
 * functions (runtime.*, runtime/..., internal/...: what the runtime
 * calls) are left out: they run on the signal stack too (Go's
 * handlers), and a hit there that moved to another stack would have
 * the kernel put a nested signal's frame over the running handler's.
 * Anything else stays a breakpoint. 0, 1 when the region is a return and
 * the padding after it (proven: the control-flow check is not needed),
 * or -errno with *why.
 */
/*
 * [reg] Is a the start of an epilogue of the Go function sym (whose first
 * n bytes are head) where its stack check proves room (a return's exit,
 * ukprobes_func_exits)? The epilogue runs straight into the return, so
 * the stack pointer at its start is the body's, the one the check
 * proved StackLimit bytes below (arch_go_exit_room): a frame of the
 * function's own, and no callee of it, lies below. The runtime keeps
 * that much free when it moves the stack: a copy to grow it keeps the
 * distance from the top, and the collector shrinks a stack only while
 * the room below the innermost frame stays StackLimit and more
 * (runtime/stack.go, shrinkstack), never at an asynchronous safe point.
 */
static bool go_exit_ok(const struct ukp_symres *sym, const uint8_t *head, size_t n, uintptr_t a)
{
	uint8_t code[64];
	size_t m;

	if (a <= sym->start || a >= sym->start + sym->size)
		return false;
	m = ukp_read_original(a, code, sizeof(code));
	return arch_go_exit_room(head, n, code, m);
}

/*
 * [reg] Is the region of ao at a the last instruction of the Go function
 * sym (a return: a leaf's bare ret), the rest of the jump's bytes the
 * padding after the function (breakpoints, in no function: nothing runs
 * there, nothing jumps there, no goroutine is parked there)?
 */
static bool go_ret_in_padding(const struct ukp_arch_opt *ao, const struct ukp_symres *sym,
			      uintptr_t a)
{
	uint8_t pad[UKP_OPT_MAX_REGION], fill[UKP_OPT_MAX_REGION];
	struct ukp_symres other;
	size_t n = (size_t)(ao->len - ao->code_len);

	if (ao->ninsn != 1 || !n || n > sizeof(pad) || a + ao->code_len != sym->start + sym->size)
		return false;
	if (ukp_read_original(a + ao->code_len, pad, n) != n)
		return false;
	ukp_fill_breakpoints(fill, n);
	return !memcmp(pad, fill, n) && ukp_sym_lookup_code(a + ao->len - 1, &other) != 0;
}

static int go_region_ok(struct ukp_arch_opt *ao, const struct ukp_symres *sym, uintptr_t a,
			const char **why)
{
	uint8_t head[32];
	size_t n, check;
	bool leaf, ret_pad;
	int ret;

	n = ukp_read_original(sym->start, head, sizeof(head));
	check = arch_go_stack_check_len(head, n);
	/* a function's first instruction without a check, or a return at
	 * its end: no flag is live, and the leaf template needs no room */
	ret_pad = go_ret_in_padding(ao, sym, a);
	leaf = ret_pad || (!check && a == sym->start);
	if (!leaf && (!check || (a != sym->start + check && !go_exit_ok(sym, head, n, a)))) {
		*why = "Go code: only a probe right after the stack check or at an epilogue of a "
		       "function with one is jump-optimized (the goroutine's stack has no room for "
		       "the detour's frame elsewhere)";
		return -EINVAL;
	}
	if (!sym->name || !strncmp(sym->name, "runtime.", 8) || !strncmp(sym->name, "runtime/", 8) ||
	    !strncmp(sym->name, "internal/", 9)) {
		*why = "Go code: the runtime's functions may run on the signal stack";
		return -EINVAL;
	}
	if (ao->ninsn != 1 || (ao->len != ao->code_len && !ret_pad)) {
		*why = "Go code: the jump would replace more than one instruction "
		       "(a preempted goroutine may resume inside it)";
		return -EINVAL;
	}
	if (!leaf)
		return arch_opt_go(ao, why);
	ret = arch_opt_go_leaf(ao, why);
	/* a return at the end: the padding after it is proven here */
	return ret ? ret : ret_pad;
}

/* The region at a and its detour image (for detour): relocation, then,
 * unless the region is [FTRACE] NOPs, the control flow around it
 * (sym: the function, looked up when NULL). 0 or -errno with *why. */
static int analyse(struct ukp_arch_opt *ao, const uint8_t *code, size_t n, uintptr_t a,
		   uintptr_t detour, const void *site, size_t ftrace_len,
		   const struct ukp_symres *sym, int pun_pad, const char **why)
{
	const struct ukp_symres *gsym;
	struct ukp_symres found;
	int ret = arch_opt_prepare(ao, code, n, a, detour, site, ftrace_len, pun_pad, why);

	if (ret)
		return ret;
	/* (before the [FTRACE] NOPs' shortcut: Go's compiler makes none,
	 * and its template is the C stack's) */
	gsym = sym ? sym : ukp_sym_lookup_code(a, &found) ? NULL : &found;
	if (ukp_sym_go_code(gsym, a)) {
		ret = go_region_ok(ao, gsym, a, why);
		if (ret > 0 && pun_pad < 0)
			return 0;
		if (ret < 0)
			return ret;
	}
	if (ftrace_len)
		return 0;
	/* A punned jump's last bytes are code it does not write: they must
	 * be the object's text, where nothing else writes. */
	if (pun_pad >= 0 && !ukp_addr_is_text(a, ao->span)) {
		*why = "the punned jump leaves the text";
		return -EINVAL;
	}
	/* One instruction of a fixed-length instruction set: nothing can
	 * jump into the region, nor point into it, past its first byte. */
	if (UKP_INSN_FIXED_LEN && ao->len == UKP_INSN_FIXED_LEN && ao->code_len == ao->len)
		return 0;
	if (!sym) {
		/* (ukp_sym_lookup_code: a probe without a symbol got past
		 * registration only as an SDT probe, bounded by its FDE) */
		if (ukp_sym_lookup_code(a, &found)) {
			*why = "no symbol covers the probe";
			return -ENOENT;
		}
		sym = &found;
	}
	return ukp_codeflow_check_exit(sym, a, ao->len, ao->code_len, why);
}

/*
 * Instruction punning (arch_opt_pun_window), when the region of a jump
 * over whole instructions was refused: the jump replaces the first
 * instruction alone, so jumps to the instructions after it stay valid,
 * and its detour goes where its unchanged last bytes make it land. The
 * control-flow check is the first instruction's. take: the detour is
 * allocated (site is the probe's), else only its place is looked for
 * (ukp_opt_would). Returns the detour with ao filled, or 0.
 */
static uintptr_t pun(struct ukp_arch_opt *ao, const uint8_t *code, size_t n, uintptr_t a,
		     const void *site, const struct ukp_symres *sym, bool take)
{
	uintptr_t lo, hi, detour;
	const char *why = NULL;
	unsigned int pad;

	if (!ukp_opt_pun)
		return 0;
	/* with no prefix first: the widest window */
	for (pad = 0; arch_opt_pun_window(code, n, a, pad, &lo, &hi); pad++) {
		if (hi < lo)
			continue;
		/* the analysis first: a chunk is mapped only for a jump we make */
		detour = ukp_slot_alloc_window(lo, hi, UKP_DETOUR_SIZE, false);
		if (!detour || analyse(ao, code, n, a, detour, site, 0, sym, (int)pad, &why))
			continue;
		if (!take)
			return detour;
		detour = ukp_slot_alloc_window(lo, hi, UKP_DETOUR_SIZE, true);
		if (!detour)
			continue;
		if (!analyse(ao, code, n, a, detour, site, 0, sym, (int)pad, &why))
			return detour;
		ukp_slot_free_range(detour, UKP_DETOUR_SIZE);
	}
	return 0;
}

/* The detour of s built into img, at a new detour (*detour; punned, at
 * a place its jump's bytes fix, when the plain jump was refused), and
 * s->opt filled but for the detour itself. 0, or -errno with
 * its why (a refusal is remembered: the code does not change). */
static int build(struct ukp_site *s, uint8_t img[UKP_DETOUR_SIZE], uintptr_t *detour)
{
	uint8_t code[UKP_OPT_MAX_REGION + UKP_MAX_INSN_SIZE];
	struct ukp_arch_opt ao;
	const char *why = NULL;
	size_t n;
	int ret;

	n = ukp_read_original(s->addr, code, sizeof(code));
	*detour = ukp_slot_alloc_n(s->addr, UKP_DETOUR_SIZE / UKP_SLOT_SIZE);
	if (!*detour) {
		set_why(s, "no executable memory within reach for a detour");
		return -ENOMEM; /* not remembered: memory may come back */
	}
	ret = analyse(&ao, code, n, s->addr, *detour, s, s->opt.ftrace_len, NULL, -1, &why);
	if (ret && !s->opt.ftrace_len) {
		uintptr_t punned;

		ukp_slot_free_n(*detour, UKP_DETOUR_SIZE / UKP_SLOT_SIZE);
		punned = pun(&ao, code, n, s->addr, s, NULL, true);
		if (!punned) {
			s->opt.err = (int16_t)ret;
			set_why(s, why);
			return ret;
		}
		*detour = punned;
		ret = 0;
	}
	if (ret) {
		ukp_slot_free_n(*detour, UKP_DETOUR_SIZE / UKP_SLOT_SIZE);
		s->opt.err = (int16_t)ret;
		set_why(s, why ? why : "cannot write the detour");
		return ret;
	}
	if (s->opt.entry && !ao.go)
		arch_opt_at_entry(&ao, atomic_load(&s->fast_kp) &&
					    (s->fast_pre == (const void *)ukp_kretprobe_pre_handler ||
					     ukp_site_fast_pair(s)));
	/* (kept when writing the detour failed: the next try reuses it) */
	if (!s->opt.rgn)
		s->opt.rgn = ukp_pool_zalloc(&rgn_pool);
	if (!s->opt.rgn) {
		ukp_slot_free_range(*detour, UKP_DETOUR_SIZE);
		set_why(s, "no memory");
		return -ENOMEM; /* not remembered */
	}
	memcpy(img, ao.image, sizeof(ao.image));
	memcpy(s->opt.rgn->orig, code, ao.len);
	memcpy(s->opt.rgn->jump, ao.jump, sizeof(s->opt.rgn->jump));
	s->opt.len = ao.len;
	s->opt.span = ao.span;
	s->opt.rgn->ninsn = ao.ninsn;
	memcpy(s->opt.rgn->map_orig, ao.map_orig, sizeof(s->opt.rgn->map_orig));
	memcpy(s->opt.rgn->map_copy, ao.map_copy, sizeof(s->opt.rgn->map_copy));
	return 0;
}

void ukp_opt_site_free(struct ukp_site *s)
{
	ukp_pool_free(&rgn_pool, s->opt.rgn);
	s->opt.rgn = NULL;
}

/* The detour, written at detour, is s's. */
static void detour_set(struct ukp_site *s, uintptr_t detour)
{
	ukp_slot_set_owner_range(detour, UKP_DETOUR_SIZE, s);
	atomic_store_explicit(&s->detour, detour, memory_order_release);
}

/* Build the detour of s (once). Returns 0, or -errno with its why. */
static int prepare(struct ukp_site *s)
{
	uint8_t img[UKP_DETOUR_SIZE];
	uintptr_t detour;
	int ret;

	if (s->detour)
		return 0;
	ret = build(s, img, &detour);
	if (ret)
		return ret;
	ret = ukp_text_poke(detour, img, sizeof(img));
	if (ret) {
		ukp_slot_free_range(detour, UKP_DETOUR_SIZE);
		s->opt.err = (int16_t)ret;
		set_why(s, "cannot write the detour");
		return ret;
	}
	detour_set(s, detour);
	return 0;
}

/*
 * The detours of a register_kprobes() batch's new sites, built before any
 * of their breakpoints is written (kprobes.c batch_commit): the analysis
 * runs libc code (the decoder's memset, malloc, ...) that the batch may
 * probe, which then runs at full speed instead of through breakpoints
 * once the batch is armed; and the detours are written together (one
 * write per page). Only the detours: the optimizer thread still checks
 * the neighbours and the threads and writes the jumps, as for any other
 * site; a site left without a detour here gets it there.
 */
void ukp_opt_batch_prepare(struct ukp_site **v, size_t n)
{
	struct ukp_poke *pk = ukp_batch_zalloc((n ? n : 1) * sizeof(*pk));
	uint8_t (*img)[UKP_DETOUR_SIZE] = ukp_batch_zalloc((n ? n : 1) * UKP_DETOUR_SIZE);
	struct ukp_site **built = ukp_batch_zalloc((n ? n : 1) * sizeof(*built));
	size_t i, k = 0;

	if (!pk || !img || !built)
		goto out;
	for (i = 0; i < n; i++) {
		struct ukp_site *s = v[i];
		uintptr_t detour;

		if (s->gone || s->detour || s->opt.err || !ukp_site_wants_armed(s) || has_jprobe(s) ||
		    (!s->opt.ftrace_len && (!opt_on || has_post(s))))
			continue;
		if (build(s, img[k], &detour))
			continue;
		pk[k] = (struct ukp_poke){ detour, img[k], UKP_DETOUR_SIZE };
		built[k++] = s;
	}
	/* (the pokes come back sorted: each one's image says whose it is) */
	if (k && ukp_text_poke_many(pk, k) == 0) {
		for (i = 0; i < k; i++)
			detour_set(built[((const uint8_t *)pk[i].buf - img[0]) / UKP_DETOUR_SIZE],
				   pk[i].addr);
	} else {
		for (i = 0; i < k; i++)
			ukp_slot_free_range(pk[i].addr, UKP_DETOUR_SIZE);
	}
out:
	ukp_batch_free(pk);
	ukp_batch_free(img);
	ukp_batch_free(built);
}

/* ---------------------------------------------------- (un)patching */

/* JUMP -> NONE for n sites, batched: int3 over every e9, serialize,
 * the original bytes back, serialize. */
static void unoptimize_batch(struct ukp_site **v, unsigned int n)
{
	unsigned int i;
	bool wrote = false;

	for (i = 0; i < n; i++) {
		if (atomic_load(&v[i]->opt.state) != UKP_OPT_JUMP || v[i]->gone)
			continue;
		ukp_text_poke(v[i]->addr, ukp_breakpoint_insn, UKP_BREAKPOINT_SIZE);
		wrote = true;
	}
	if (wrote)
		ukp_text_sync();
	wrote = false;
	for (i = 0; i < n; i++) {
		if (atomic_load(&v[i]->opt.state) != UKP_OPT_JUMP || v[i]->gone ||
		    v[i]->opt.len == UKP_BREAKPOINT_SIZE)
			continue;
		ukp_text_poke(v[i]->addr + UKP_BREAKPOINT_SIZE, v[i]->opt.rgn->orig + UKP_BREAKPOINT_SIZE,
			      v[i]->opt.len - UKP_BREAKPOINT_SIZE);
		wrote = true;
	}
	if (wrote)
		ukp_text_sync();
	for (i = 0; i < n; i++) {
		set_state(v[i], UKP_OPT_NONE, memory_order_seq_cst);
		set_flags(v[i]);
	}
}

/* Back to a plain breakpoint (also READY -> NONE). The breakpoint stays. */
void ukp_opt_unoptimize(struct ukp_site *s)
{
	if (atomic_load(&s->opt.state) == UKP_OPT_NONE)
		return;
	unoptimize_batch(&s, 1);
	/* no trap handler still sends threads to the detour's copy */
	ukp_synchronize();
}

/* n pokes, together; one by one if that fails (each write is checked on
 * its own then, as ukp_text_poke alone did). */
static void pokes(struct ukp_poke *pk, size_t n)
{
	size_t i;

	if (n && ukp_text_poke_many(pk, n))
		for (i = 0; i < n; i++)
			ukp_text_poke(pk[i].addr, pk[i].buf, pk[i].len);
}

/* Optimize up to OPT_BATCH READY sites; returns how many got the jump.
 * The busy ones go back to the queue. */
static unsigned int jump_batch(struct ukp_site **v, unsigned int n)
{
	struct ukp_poke pk[OPT_BATCH];
	struct ukp_range r[UKP_SCAN_MAX_RANGES];
	unsigned int i, k = 0, done = 0;
	uint64_t hit;
	bool ok[OPT_BATCH];

	ukp_synchronize(); /* trap handlers that chose the slot have left */
	for (i = 0; i < n; i++) {
		r[k].start = v[i]->addr + UKP_BREAKPOINT_SIZE;
		r[k++].end = v[i]->addr + v[i]->opt.len;
		r[k].start = v[i]->slot ? v[i]->slot : 1;
		r[k++].end = v[i]->slot ? v[i]->slot + UKP_SLOT_SIZE : 1;
	}
	hit = ukp_threads_scan(r, k);
	/* each step's writes together (one per page): the rest of every
	 * jump after its breakpoint, then every jump's first bytes */
	k = 0;
	for (i = 0; i < n; i++) {
		/* a punned jump writes its region only: the rest is there */
		size_t w = v[i]->opt.len < UKP_OPT_JUMP_SIZE ? v[i]->opt.len : UKP_OPT_JUMP_SIZE;

		ok[i] = !(hit & (3ULL << (2 * i)));
		if (ok[i] && w > UKP_BREAKPOINT_SIZE)
			pk[k++] = (struct ukp_poke){ v[i]->addr + UKP_BREAKPOINT_SIZE,
						     v[i]->opt.rgn->jump + UKP_BREAKPOINT_SIZE,
						     w - UKP_BREAKPOINT_SIZE };
	}
	pokes(pk, k);
	ukp_text_sync();
	k = 0;
	for (i = 0; i < n; i++)
		if (ok[i])
			pk[k++] = (struct ukp_poke){ v[i]->addr, v[i]->opt.rgn->jump, UKP_BREAKPOINT_SIZE };
	pokes(pk, k);
	ukp_text_sync();
	for (i = 0; i < n; i++) {
		if (ok[i]) {
			set_state(v[i], UKP_OPT_JUMP, memory_order_seq_cst);
			v[i]->opt.tries = 0;
			set_flags(v[i]);
			done++;
		} else if (++v[i]->opt.tries < MAX_TRIES) {
			queue_add(v[i]);
		} else {
			set_why(v[i], "a thread stays inside the region");
			v[i]->opt.tries = 0;
		}
	}
	return done;
}

/* One round of the optimizer over everything queued. */
static void optimize_round(void)
{
	struct ukp_site *batch[OPT_BATCH], *s;
	unsigned int n = 0;
	uint32_t i;

	/* the array is todo's now; the queue starts again, empty */
	todo = queue;
	queue = (struct site_vec){ 0 };
	nqueued = 0;
	for (i = 0; i < todo.n; i++)
		if (todo.v[i])
			todo.v[i]->opt.queued = Q_TODO;
	while (todo.n) {
		const char *why = NULL;

		s = todo.v[--todo.n];
		if (!s)
			continue;
		s->opt.queued = Q_NO;
		if (!wanted(s, &why)) {
			set_why(s, why);
			continue;
		}
		if (atomic_load(&s->opt.state) == UKP_OPT_JUMP)
			continue;
		if (prepare(s))
			continue;
		if (!s->opt.ftrace_len && neighbour_inside(s->addr, s->opt.span)) {
			set_why(s, "another probe lies inside the region");
			continue;
		}
		set_state(s, UKP_OPT_READY, memory_order_release);
		set_why(s, NULL);
		batch[n++] = s;
		if (n == OPT_BATCH) {
			jump_batch(batch, n);
			n = 0;
		}
	}
	if (n)
		jump_batch(batch, n);
	free(todo.v);
	todo = (struct site_vec){ 0 };
	ukp_codeflow_memo_forget();
	ukp_opt_rounds++;
}

/* [opt] With ukp_mutex held: give the registrations of a batch time to
 * arrive, unless somebody already waits for the result (the agent
 * waits before the program runs: the delay was only start-up time). */
static void delay_for_batch(void)
{
	struct timespec now;
	long end_ns, left;

	ukp_sys_clock_gettime(CLOCK_MONOTONIC, &now);
	end_ns = now.tv_sec * 1000000000L + now.tv_nsec + OPTIMIZE_DELAY_MS * 1000000L;
	while (!waiters && !quit) {
		struct timespec rel;

		ukp_sys_clock_gettime(CLOCK_MONOTONIC, &now);
		left = end_ns - (now.tv_sec * 1000000000L + now.tv_nsec);
		if (left <= 0)
			break;
		rel.tv_sec = left / 1000000000L;
		rel.tv_nsec = left % 1000000000L;
		if (!ukp_fcond_timedwait(&queue_cond, &ukp_mutex, &rel))
			break;
	}
}

static void *optimizer_main(void *arg)
{
	struct timespec delay = { 0, OPTIMIZE_DELAY_MS * 1000000L };

	(void)arg;
	/* (started with ours deliverable: ukprobes_kthread_create) */
	ukp_fmutex_lock(&ukp_mutex);
	for (;;) {
		while (!nqueued && !quit) {
			busy = false;
			ukp_fcond_broadcast(&idle_cond);
			ukp_fcond_wait(&queue_cond, &ukp_mutex);
		}
		if (quit && !nqueued)
			break;
		busy = true;
		delay_for_batch();
		ukp_fmutex_unlock(&ukp_mutex);
		if (ukp_lock_for_show()) {
			ukp_fmutex_lock(&ukp_mutex);
			continue;
		}
		optimize_round();
		/* A round that left work behind (threads in the way) waits
		 * a little before the next one. */
		if (nqueued) {
			ukp_fmutex_unlock(&ukp_mutex);
			ukp_sys_nanosleep(&delay);
			ukp_fmutex_lock(&ukp_mutex);
		}
	}
	busy = false;
	ukp_fcond_broadcast(&idle_cond);
	ukp_fmutex_unlock(&ukp_mutex);
	return NULL;
}

/* -------------------------------------------- hooks from the registry */

/* Once, at start-up (UKPROBES_OPTIMIZATION=0 turns the knob off). */
void ukp_opt_init(void)
{
	const char *e = getenv("UKPROBES_OPTIMIZATION");

	ukp_text_view_register(ukp_opt_unpatch);

	if (e && (!strcmp(e, "0") || !strcmp(e, "off") || !strcmp(e, "no")))
		opt_on = false;
}

static void lazy_init(void)
{
	if (!opt_inited) {
		arch_opt_init();
		opt_inited = true;
	}
}

void ukp_opt_defer_kick(bool on)
{
	/* The thread is started before a batch arms anything: glibc runs
	 * a new thread's first code with every signal blocked, and a batch
	 * may have probed it (a breakpoint then kills the process). */
	if (on && thread_pid != ukp_sys_getpid()) {
		kick();
		kick_wanted = true;
	}
	kick_deferred = on;
	if (!on && kick_wanted) {
		kick_wanted = false;
		kick();
	}
}

/* A new site: is it an [FTRACE] probe point? abi_entry: the entry of a
 * sized function symbol, where the calling convention holds. */
void ukp_opt_site_new(struct ukp_site *s, bool on_entry, bool abi_entry)
{
	uint8_t code[UKP_OPT_MAX_REGION];
	size_t n;

	if (!on_entry)
		return;
	s->opt.entry = abi_entry;
	n = ukp_read_original(s->addr, code, sizeof(code));
	s->opt.ftrace_len = (uint8_t)arch_patchable_nops(code, n);
}

void ukp_opt_site_sdt(struct ukp_site *s, const struct ukp_symres *sym)
{
	/* (a function larger than this is not decoded: the usual template) */
	const size_t max = 1u << 20;
	uint8_t *code;
	size_t n;

	if (!sym->size || sym->size > max)
		return;
	code = malloc(sym->size);
	if (!code)
		return;
	n = ukp_read_original(sym->start, code, sym->size);
	if (n == sym->size && arch_opt_entry_template_ok(code, n))
		s->opt.entry = true;
	free(code);
}

/* Something about s changed (a child came or went, enable/disable, the
 * breakpoint was armed): queue it, or take its jump away now. */
void ukp_opt_site_changed(struct ukp_site *s)
{
	const char *why = NULL;

	lazy_init();
	if (wanted(s, &why)) {
		set_flags(s);
		if (atomic_load(&s->opt.state) != UKP_OPT_JUMP) {
			queue_add(s);
			kick();
		}
		return;
	}
	set_why(s, why);
	queue_del(s);
	ukp_opt_unoptimize(s);
	set_flags(s);
}

/* The site is going away (unregistered or gone). */
void ukp_opt_site_dead(struct ukp_site *s)
{
	queue_del(s);
	if (s->gone)
		set_state(s, UKP_OPT_NONE, memory_order_seq_cst);
	else
		ukp_opt_unoptimize(s);
}

/* Sites going away together (an unregistration batch; NULL entries
 * skipped): off the queue, and their jumps taken away in one pass. */
void ukp_opt_sites_dead(struct ukp_site **v, size_t n)
{
	struct ukp_site **act = malloc((n ? n : 1) * sizeof(*act));
	size_t i, k = 0;

	for (i = 0; i < n; i++) {
		if (!v[i])
			continue;
		queue_del(v[i]);
		if (v[i]->gone)
			set_state(v[i], UKP_OPT_NONE, memory_order_seq_cst);
		else if (atomic_load(&v[i]->opt.state) == UKP_OPT_NONE)
			continue;
		else if (act)
			act[k++] = v[i];
		else
			ukp_opt_unoptimize(v[i]);
	}
	for (i = 0; i < k; i += OPT_BATCH * 64)
		unoptimize_batch(act + i, (unsigned int)(k - i < OPT_BATCH * 64 ? k - i : OPT_BATCH * 64));
	if (k)
		ukp_synchronize(); /* no trap handler still sends threads to a detour's copy */
	free(act);
}

/* A probe appears at addr (before its breakpoint is written) or goes
 * away: probes whose region covers addr are unoptimized, or queued
 * again. */
void ukp_opt_neighbour(uintptr_t addr, bool appears)
{
	size_t k;

	if (appears && !nactive)
		return;
	for (k = 1; k < UKP_OPT_MAX_REGION; k++) {
		struct ukp_site *s = ukp_site_lookup(addr - k);

		if (!s || s->opt.ftrace_len)
			continue;
		if (appears) {
			if (atomic_load(&s->opt.state) != UKP_OPT_NONE && k < s->opt.span) {
				set_why(s, "another probe lies inside the region");
				ukp_opt_unoptimize(s);
			}
		} else if (atomic_load(&s->opt.state) == UKP_OPT_NONE) {
			ukp_opt_site_changed(s);
		}
	}
}

/*
 * [reg] Put back the original bytes of optimized regions into a copy of
 * the code at addr (ukp_read_original): the first byte of a jump is e9.
 */
void ukp_opt_unpatch(uintptr_t addr, uint8_t *buf, size_t len)
{
	size_t i, k;

	if (!nactive)
		return;
	/* a region that starts before addr */
	for (k = 1; k < UKP_OPT_MAX_REGION; k++) {
		struct ukp_site *s = ukp_site_lookup(addr - k);

		if (s && atomic_load(&s->opt.state) == UKP_OPT_JUMP && k < s->opt.len) {
			size_t m = s->opt.len - k;

			memcpy(buf, s->opt.rgn->orig + k, m < len ? m : len);
			break;
		}
	}

	for (i = 0; i < len; i++) {
		struct ukp_site *s;

		if (!arch_is_opt_jump(buf + i))
			continue;
		s = ukp_site_lookup(addr + i);
		if (!s || atomic_load(&s->opt.state) != UKP_OPT_JUMP)
			continue;
		memcpy(buf + i, s->opt.rgn->orig, len - i < s->opt.len ? len - i : s->opt.len);
		i += s->opt.len - 1u;
	}
}

/* ------------------------------------------------------ public API */

/* The caller holds the registry mutex; wait until the optimizer has
 * nothing left to do (the mutex is released while waiting). */
static void wait_idle(void)
{
	waiters++;
	ukp_fcond_signal(&queue_cond); /* out of its delay */
	while (nqueued || busy) {
		if (thread_pid != ukp_sys_getpid())
			kick();
		ukp_fcond_wait(&idle_cond, &ukp_mutex);
	}
	waiters--;
}

UKPROBES_API int ukprobes_wait_optimizer(void)
{
	if (ukp_lock_for_show())
		return -EINVAL;
	lazy_init();
	wait_idle();
	ukp_unlock_for_show();
	return 0;
}

UKPROBES_API int kprobes_set_optimization(bool on)
{
	struct ukp_site *s, **v;
	unsigned int n = 0, i;

	if (ukp_in_probe_context())
		return -EBUSY;
	if (ukp_lock_for_show())
		return -EINVAL;
	lazy_init();
	if (on == opt_on) {
		ukp_unlock_for_show();
		return 0;
	}
	opt_on = on;
	if (on) {
		for (s = ukp_all_sites; s; s = s->all_next)
			ukp_opt_site_changed(s);
		pr_info("kprobes: jump optimization is enabled\n");
		ukp_unlock_for_show();
		return 0;
	}
	/* Off: every jump goes, in one batch, before we return. */
	for (s = ukp_all_sites; s; s = s->all_next)
		n++;
	v = calloc(n ? n : 1, sizeof(*v));
	if (!v) {
		opt_on = true;
		ukp_unlock_for_show();
		return -ENOMEM;
	}
	n = 0;
	for (s = ukp_all_sites; s; s = s->all_next) {
		if (s->opt.ftrace_len)
			continue;
		queue_del(s);
		set_why(s, "optimization is turned off");
		if (atomic_load(&s->opt.state) != UKP_OPT_NONE)
			v[n++] = s;
	}
	unoptimize_batch(v, n);
	ukp_synchronize();
	wait_idle();
	for (i = 0; i < n; i++)
		set_flags(v[i]);
	free(v);
	pr_info("kprobes: jump optimization is disabled\n");
	ukp_unlock_for_show();
	return 0;
}

UKPROBES_API bool kprobes_optimization(void)
{
	return __atomic_load_n(&opt_on, __ATOMIC_RELAXED);
}

/*
 * [reg] The registry mutex held, no probe registered (so the queue is
 * empty and no probe is in the thread's way): the optimizer thread
 * returns, and is gone (joined) when this returns. The mutex is released
 * while waiting. A later registration starts a new one.
 */
void ukp_opt_stop(void)
{
	if (thread_pid != ukp_sys_getpid())
		return;
	quit = true;
	ukp_fcond_broadcast(&queue_cond);
	ukp_fmutex_unlock(&ukp_mutex);
	ukprobes_kthread_join(&thread);
	ukp_fmutex_lock(&ukp_mutex);
	thread_pid = 0;
	quit = false;
}

/* [any] In a forked child: no optimizer thread, nothing in flight. */
void ukp_opt_after_fork(void)
{
	ukp_fcond_init(&queue_cond);
	ukp_fcond_init(&idle_cond);
	busy = false;
	waiters = 0;
}

/* [reg] ukprobes_optimizable() for a probe-able address a in sym. */
int ukp_opt_would(uintptr_t a, const struct ukp_symres *sym, bool on_entry, const char **why)
{
	uint8_t code[UKP_OPT_MAX_REGION + UKP_MAX_INSN_SIZE];
	struct ukp_arch_opt ao;
	size_t n;

	lazy_init();
	n = ukp_read_original(a, code, sizeof(code));
	if (on_entry && arch_patchable_nops(code, n))
		return UKPROBES_OPT_FTRACE;
	if (!opt_on) {
		*why = "optimization is turned off";
		return UKPROBES_OPT_NONE;
	}
	/* the real detour is within reach; the image built here is not used */
	if (analyse(&ao, code, n, a, a, NULL, 0, sym, -1, why) &&
	    !pun(&ao, code, n, a, NULL, sym, false))
		return UKPROBES_OPT_NONE;
	*why = NULL;
	if (neighbour_inside(a, ao.span)) {
		*why = "another probe lies inside the region";
		return UKPROBES_OPT_NONE;
	}
	return UKPROBES_OPT_JUMP;
}
