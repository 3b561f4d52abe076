/* SPDX-License-Identifier: MIT */
/*
 * kprobes.c - the probe registry: registration, aggregate probes,
 * enable/disable, [GONE] (the kernel's kernel/kprobes.c).
 *
 * Sites (probed addresses) live in a hash that the trap path reads without
 * locks; writers hold ukp_mutex, publish with release stores, and free
 * only after ukp_synchronize() and once no thread is inside the site's
 * out-of-line slot (->inflight). A site whose slot ran a boosted copy
 * (->boosted) is not freed then but quarantined, slot, owner and all:
 * a thread may still sit in that copy with nothing counted (preempted,
 * or under a signal handler that runs on top of it). Quarantined sites
 * are freed in batches once a thread scan (threads.c) shows that no
 * thread can resume in their slots. The user's struct kprobe carries no
 * private state: a separate index maps a struct kprobe to its child
 * record, which is how "already registered" is decided.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/core.h"
#include "text/text.h"
#include "base/base.h"
#include "base/sys.h"
#include "optimizer/optimizer.h"
#include "process/process.h"
#include "symbols/symbols.h"
#include "symbols/maps_objects.h"
#include "flow/codeflow.h"
#include "flow/func_entry.h"
#include "core/jprobes.h"
#include "core/kretprobes.h"
#include "base/obj_pool.h"
#include "symbols/usdt.h"

#define KP_INDEX_MIN_BITS 8
#define KP_INDEX_LOAD 4 /* children per bucket before the index grows */

struct ukp_fmutex ukp_mutex = UKP_FMUTEX_INIT;
bool ukp_all_disarmed;
struct ukp_site *ukp_all_sites;

/* Grown with the children (KP_INDEX_LOAD): not sized for the most
 * probes there may ever be. */
static struct ukp_child **kp_index;
static unsigned int kp_index_bits;
static size_t kp_index_count;
/* Sites at multiples of 32 bytes: the fast path's block (the first 32)
 * never straddles a cache line. */
static struct ukp_pool site_pool = UKP_POOL_INIT(struct ukp_site, 32);
/* At most five such blocks: memory per probe (issue 14). */
_Static_assert(sizeof(struct ukp_site) <= 160, "struct ukp_site grew past 160 bytes");
static struct ukp_pool child_pool = UKP_POOL_INIT(struct ukp_child, 8);
static struct ukp_site *zombies; /* unhashed, a thread may still be in the slot */
static struct ukp_site *quarantine; /* boosted slots waiting for a scan */
static unsigned int nquarantine;
/* Sites a reclaim had to keep: the next reclaim waits for limit more,
 * so that slots a thread never leaves (or whose thread cannot be
 * examined) do not make every registration scan. */
static unsigned int quarantine_floor;
unsigned int ukp_quarantine_limit = 64;

/* [reg] Time for a batch scan of the quarantine? */
static bool quarantine_due(void)
{
	return nquarantine && nquarantine >= quarantine_floor + ukp_quarantine_limit;
}

static pthread_once_t init_once = PTHREAD_ONCE_INIT;
static int init_err;
static pid_t owner_pid;

static size_t kp_hash_bits(const struct kprobe *p, unsigned int bits)
{
	return (size_t)(((uintptr_t)p * 0x9E3779B97F4A7C15ULL) >> (64 - bits));
}

static size_t kp_hash(const struct kprobe *p)
{
	return kp_hash_bits(p, kp_index_bits);
}

/* [reg] The child record of a registered struct kprobe. */
static struct ukp_child *child_find(const struct kprobe *p)
{
	struct ukp_child *ch;

	if (!kp_index)
		return NULL;
	for (ch = kp_index[kp_hash(p)]; ch; ch = ch->idx_next)
		if (ch->kp == p)
			return ch;
	return NULL;
}

/* [reg] Room in the index for one more child: 0, or -ENOMEM when there
 * is no index at all (a full one that cannot grow takes longer chains). */
static int child_index_reserve(void)
{
	unsigned int bits = kp_index_bits ? kp_index_bits + 1 : KP_INDEX_MIN_BITS;
	struct ukp_child **t;

	if (kp_index && kp_index_count < (size_t)KP_INDEX_LOAD << kp_index_bits)
		return 0;
	/* (a mapping of its own from 64 KiB on: no heap pinned under it) */
	t = ukp_batch_zalloc(sizeof(*t) << bits);
	if (!t)
		return kp_index ? 0 : -ENOMEM;
	for (size_t i = 0; kp_index && i < (size_t)1 << kp_index_bits; i++) {
		struct ukp_child *ch, *next;

		for (ch = kp_index[i]; ch; ch = next) {
			size_t h = kp_hash_bits(ch->kp, bits);

			next = ch->idx_next;
			ch->idx_next = t[h];
			t[h] = ch;
		}
	}
	ukp_batch_free(kp_index);
	kp_index = t;
	kp_index_bits = bits;
	return 0;
}

static void child_index_add(struct ukp_child *ch)
{
	size_t h = kp_hash(ch->kp);

	ch->idx_next = kp_index[h];
	kp_index[h] = ch;
	kp_index_count++;
}

static void child_index_del(struct ukp_child *ch)
{
	struct ukp_child **pp = &kp_index[kp_hash(ch->kp)];

	for (; *pp; pp = &(*pp)->idx_next) {
		if (*pp == ch) {
			*pp = ch->idx_next;
			kp_index_count--;
			return;
		}
	}
}

/* [reg] The list of every site: O(1) both ways (batches of thousands). */
static void site_list_add(struct ukp_site *s)
{
	s->all_next = ukp_all_sites;
	if (ukp_all_sites)
		ukp_all_sites->all_pprev = &s->all_next;
	ukp_all_sites = s;
	s->all_pprev = &ukp_all_sites;
}

static void site_list_del(struct ukp_site *s)
{
	if (!s->all_pprev)
		return;
	*s->all_pprev = s->all_next;
	if (s->all_next)
		s->all_next->all_pprev = s->all_pprev;
	s->all_next = NULL;
	s->all_pprev = NULL;
}

/* ------------------------------------------------------------ arming */

/* [reg] Should the breakpoint be in place? */
bool ukp_site_wants_armed(const struct ukp_site *s)
{
	struct ukp_child *ch;

	if (s->gone || ukp_all_disarmed)
		return false;
	for (ch = atomic_load(&s->children); ch; ch = atomic_load(&ch->next))
		if (!kprobe_disabled(ch->kp))
			return true;
	return false;
}

/* [reg] Write the breakpoint. */
int ukp_site_arm(struct ukp_site *s)
{
	int ret;

	if (atomic_load(&s->armed) || s->gone)
		return 0;
	ret = ukp_text_poke(s->addr, ukp_breakpoint_insn, UKP_BREAKPOINT_SIZE);
	if (ret)
		return ret;
	ukp_text_sync();
	atomic_store(&s->armed, true);
	return 0;
}

/* [reg] Put the original byte back (after the jump, if the probe was
 * optimized). A thread that already trapped on the breakpoint still
 * finds the site, or finds the original byte and runs it. */
int ukp_site_disarm(struct ukp_site *s)
{
	int ret;

	if (!atomic_load(&s->armed))
		return 0;
	if (!s->gone)
		ukp_opt_unoptimize(s);
	if (!s->gone) {
		ret = ukp_text_poke(s->addr, s->opcode, UKP_BREAKPOINT_SIZE);
		if (ret)
			return ret;
		ukp_text_sync();
	}
	atomic_store(&s->armed, false);
	return 0;
}

/* [reg] Make the breakpoint (and the jump) match the probes' state. */
static int site_update(struct ukp_site *s)
{
	int ret;

	if (ukp_site_wants_armed(s))
		ret = ukp_site_arm(s);
	else
		ret = ukp_site_disarm(s);
	if (!ret)
		ukp_opt_site_changed(s);
	return ret;
}

/*
 * [reg] After the site's children changed: the optimized hit's fast path
 * (optprobe_tramp.S) serves a site whose only child has a pre_handler
 * proven vector-free, or whose children are such a kprobe and a newer
 * kretprobe without entry_handler (fast_rp); it checks the probes'
 * handlers and flags at each hit. The handler (and fast_rp) are
 * published before the probe, so that a hit that sees the probe sees
 * them (or, across a change, a handler that does not match and takes
 * the C path). fast_rp is left as it was when fast_kp is NULL: a hit
 * reads it only after fast_kp.
 */
static void site_fast_update(struct ukp_site *s)
{
	struct ukp_child *ch = atomic_load(&s->children);
	struct ukp_child *next = ch ? atomic_load(&ch->next) : NULL;
	struct kretprobe *rp = NULL;

	atomic_store_explicit(&s->fast_kp, NULL, memory_order_relaxed);
	if (next && ARCH_FAST_KRP_PAIR && ukp_is_kretprobe(ch->kp) &&
	    !ukp_kretprobe_of(ch->kp)->entry_handler &&
	    !atomic_load(&next->next) && !ukp_is_kretprobe(next->kp)) {
		/* a kretprobe without entry_handler, newer than a kprobe: the
		 * pair (fastpath.h's fast_rp); the kprobe is the fast one */
		rp = ukp_kretprobe_of(ch->kp);
		ch = next;
	} else if (next) {
		return;
	}
	if (!ch || !ch->vf_pre)
		return;
	s->fast_pre = ukp_vf_fn(ch->vf_pre);
#if ARCH_FAST_KRP_PAIR
	s->fast_rp = rp;
#else
	(void)rp;
#endif
	atomic_store_explicit(&s->fast_kp, ch->kp, memory_order_release);
}

static void site_free(struct ukp_site *s)
{
	uintptr_t detour = atomic_load(&s->detour);

	if (s->slot)
		ukp_slot_free(s->slot);
	if (detour)
		ukp_slot_free_range(detour, UKP_DETOUR_SIZE); /* a punned one may start mid-slot */
	ukp_opt_site_free(s);
	if (s->symname_own)
		free((char *)s->symname);
	ukp_pool_free(&site_pool, s);
}

/* [reg] A site no thread is stepping in any more (inflight == 0, after a
 * grace period): freed, or quarantined if its boosted copy ever ran. */
static void site_retire(struct ukp_site *s)
{
	if ((s->slot && atomic_load(&s->boosted)) || atomic_load(&s->detour)) {
		s->all_next = quarantine;
		quarantine = s;
		nquarantine++;
		return;
	}
	site_free(s);
}

/* The library's own code: a thread on its way through a detour (before
 * its read-side mark, or after it) runs there. */
extern char __start_ukprobes_text[], __stop_ukprobes_text[];

/* [reg] The ranges a thread may resume in for quarantined site s: its
 * slot and its detour. Returns how many were added. */
static unsigned int site_ranges(const struct ukp_site *s, struct ukp_range *r)
{
	uintptr_t detour = atomic_load(&s->detour);
	unsigned int n = 0;

	if (s->slot) {
		r[n].start = s->slot;
		r[n++].end = s->slot + UKP_SLOT_SIZE;
	}
	if (detour) {
		r[n].start = detour;
		r[n++].end = detour + UKP_DETOUR_SIZE;
	}
	return n;
}

/*
 * [reg] Free every quarantined site no thread can resume in: a thread
 * scan, a grace period, and a second scan (a thread between a detour's
 * entry and its read-side mark is seen by the first; one inside the
 * handlers then is waited for, and seen by the second if it is still
 * on its way out). Returns how many were freed.
 */
unsigned int ukp_quarantine_reclaim(void)
{
	enum { PER = 2, BATCH = (UKP_SCAN_MAX_RANGES - 1) / PER };
	struct ukp_site *batch[BATCH], *keep = NULL, *s;
	struct ukp_range r[UKP_SCAN_MAX_RANGES];
	unsigned int first[BATCH], cnt[BATCH];
	unsigned int freed = 0, n, i, k, rounds = nquarantine / BATCH + 1;

	while (quarantine && rounds--) {
		uint64_t hit, lib;
		bool detours = false;

		k = 0;
		for (n = 0; quarantine && n < BATCH; n++) {
			s = quarantine;
			quarantine = s->all_next;
			batch[n] = s;
			first[n] = k;
			cnt[n] = site_ranges(s, &r[k]);
			k += cnt[n];
			detours |= atomic_load(&s->detour) != 0;
		}
		/* the library's code, when a detour may lead there */
		r[k].start = detours ? (uintptr_t)__start_ukprobes_text : 1;
		r[k].end = detours ? (uintptr_t)__stop_ukprobes_text : 1;
		lib = 1ULL << k;
		k++;
		hit = ukp_threads_scan(r, k);
		ukp_synchronize();
		hit |= ukp_threads_scan(r, k);
		for (i = 0; i < n; i++) {
			uint64_t mine = cnt[i] ? ((1ULL << cnt[i]) - 1) << first[i] : 0;

			if (atomic_load(&batch[i]->detour))
				mine |= lib;
			if (hit & mine) {
				batch[i]->all_next = keep;
				keep = batch[i];
			} else {
				site_free(batch[i]);
				nquarantine--;
				freed++;
			}
		}
	}
	while ((s = keep)) {
		keep = s->all_next;
		s->all_next = quarantine;
		quarantine = s;
	}
	quarantine_floor = nquarantine;
	return freed;
}

unsigned int ukp_quarantine_count(void)
{
	return nquarantine;
}

/* ---------------------------------------------------------- locking */

static void atfork_prepare(void)
{
	ukp_fmutex_lock(&ukp_mutex);
}

static void atfork_parent(void)
{
	ukp_fmutex_unlock(&ukp_mutex);
}

static void atfork_child(void)
{
	/* Only this thread exists now: the mutex its prepare handler
	 * took is free again. */
	ukp_fmutex_init(&ukp_mutex);
	ukp_text_after_fork();
	ukp_sync_after_fork_child();
	ukp_threads_after_fork_child();
	ukp_opt_after_fork();
	owner_pid = ukp_sys_getpid();
}

/* [reg] The symbol names of obj (NULL: of every object) are about to be
 * freed (symbols.c): the listed sites there copy theirs. Unlisted ones
 * (zombies, the quarantine) are never shown again. */
static void site_names_keep(const struct ukp_object *obj)
{
	struct ukp_site *s;

	for (s = ukp_all_sites; s; s = s->all_next) {
		char *copy;

		if (s->symname_own || (obj && s->obj != obj))
			continue;
		copy = strdup(s->symname);
		s->symname = copy ? copy : "";
		s->symname_own = copy != NULL;
	}
}

static void unpatch_breakpoints(uintptr_t addr, uint8_t *buf, size_t n);

static void do_init(void)
{
	int ret;

	owner_pid = ukp_sys_getpid();
	ukp_symbols_set_names_hook(site_names_keep);
	ukp_errno_init();
	ukp_text_init();
	/* the breakpoints first, then the jumps (a jump's saved bytes are
	 * the code's own, with no breakpoint in them) */
	ukp_text_view_register(unpatch_breakpoints);
	ukp_opt_init();
	ret = ukp_signals_install();
	if (ret) {
		init_err = ret;
		return;
	}
	ukp_signals_rewrap();
	pthread_atfork(atfork_prepare, atfork_parent, atfork_child);
}

/* [reg] Take the registry mutex, initialising the library the first time
 * and catching up with forks and dlclose()s. */
static bool vecstate_done;

static int ukp_lock(void)
{
	pthread_once(&init_once, do_init);
	if (init_err)
		return init_err;
	ukp_fmutex_lock(&ukp_mutex);
	/* again after ukprobes_shutdown() gave the program its handlers back */
	if (ukp_signals_install()) {
		ukp_fmutex_unlock(&ukp_mutex);
		return -EINVAL;
	}
	if (owner_pid != ukp_sys_getpid()) {
		/* forked without pthread_atfork (raw clone) */
		ukp_text_after_fork();
		ukp_sync_after_fork_child();
		ukp_threads_after_fork_child();
		owner_pid = ukp_sys_getpid();
	}
	if (ukp_objects_refresh())
		ukp_gone_sweep();
	ukp_blacklist_init();
	if (!vecstate_done) {
		/* before the first probe: the templates read ukp_vec_lazy */
		ukp_vecstate_init();
		vecstate_done = true;
	}
	return 0;
}

static void ukp_unlock(void)
{
	ukp_fmutex_unlock(&ukp_mutex);
}

int ukp_init(void)
{
	return ukp_lock() ? -1 : (ukp_unlock(), 0);
}

/* ------------------------------------------------------------- GONE */

/* [reg] Probes whose object was unloaded: never touch their memory again. */
void ukp_gone_sweep(void)
{
	struct ukp_site *s;

	for (s = ukp_all_sites; s; s = s->all_next) {
		struct ukp_child *ch;

		if (s->gone || ukp_object_alive(s->obj))
			continue;
		s->gone = true;
		atomic_store(&s->armed, false);
		ukp_opt_site_dead(s);
		ukp_site_hash_del(s);
		for (ch = atomic_load(&s->children); ch; ch = atomic_load(&ch->next))
			ch->kp->flags |= KPROBE_FLAG_GONE;
	}
	ukp_blacklist_refresh();
	ukp_codeflow_forget_dead();
}

/* Called by the dlclose() interposer. */
void ukp_after_dlclose(void)
{
	ukp_objects_changed(); /* (the agent's build: read the objects again) */
	if (!owner_pid)
		return; /* the library was never used */
	ukp_fmutex_lock(&ukp_mutex);
	if (ukp_objects_refresh())
		ukp_gone_sweep();
	ukp_fmutex_unlock(&ukp_mutex);
}

/* ------------------------------------------------------ registration */

/* [reg] The text view's undoing of the breakpoints in a copy of the code
 * (text/text_view.c): each breakpoint of a site gives back the site's
 * original bytes. */
static void unpatch_breakpoints(uintptr_t addr, uint8_t *buf, size_t n)
{
	uint8_t *p = buf, *end = buf + n;

	/* megabytes at a time (the flow check's): the first byte found by
	 * memchr, not compared at every offset */
	while (end - p >= UKP_BREAKPOINT_SIZE &&
	       (p = memchr(p, ukp_breakpoint_insn[0], (size_t)(end - p) - UKP_BREAKPOINT_SIZE + 1))) {
		if (!memcmp(p, ukp_breakpoint_insn, UKP_BREAKPOINT_SIZE)) {
			struct ukp_site *s = ukp_site_lookup(addr + (uintptr_t)(p - buf));

			if (s)
				memcpy(p, s->opcode, UKP_BREAKPOINT_SIZE);
		}
		p++;
	}
}

/* [reg] The bytes a probe on the function entry at addr goes past
 * (arch_entry_skip: x86's endbr64), or 0. */
static size_t entry_skip(uintptr_t addr)
{
	uint8_t b[UKP_MAX_INSN_SIZE];
	size_t n = ukp_read_original(addr, b, sizeof(b));

	return arch_entry_skip(b, n);
}

/*
 * [reg] Where the probe goes (the kernel's _kprobe_addr and
 * arch_adjust_kprobe_addr): symbol + offset, or addr + offset, inside a
 * known function; a probe on a function entry that starts with endbr64
 * moves past it.
 */
static int kprobe_addr(struct kprobe *p, uintptr_t *out, bool *on_entry, struct ukp_symres *sym)
{
	uintptr_t addr;
	unsigned long off;
	size_t skip;
	int ret;

	if ((p->symbol_name && p->addr) || (!p->symbol_name && !p->addr))
		return -EINVAL;
	if (p->symbol_name) {
		ret = ukp_usdt_is_name(p->symbol_name) ? ukp_usdt_lookup(p->symbol_name, &addr)
						       : ukp_sym_lookup_name(p->symbol_name, &addr);
		if (ret)
			return ret;
	} else {
		addr = (uintptr_t)p->addr;
	}
	addr += p->offset;
	if (!ukp_addr_is_text(addr, 1))
		return -EINVAL;
	/* an SDT probe's nop may be in a function no symbol names (a
	 * stripped program's static function): the function the unwind
	 * tables give bounds it, and the boundary check decodes from its
	 * start as from a symbol's */
	if (ukp_sym_lookup_addr(addr, sym) &&
	    (!ukp_usdt_note_at(addr, NULL) || ukp_sym_lookup_code(addr, sym)))
		return -ENOENT;
	off = addr - sym->start;
	skip = entry_skip(sym->start);
	*on_entry = off == 0 || (skip && off == skip);
	if (*on_entry)
		off = skip;
	*out = sym->start + off;
	return 0;
}

/* [reg] May a return probe go at addr, where kprobe_addr put p (the
 * kernel's kprobe_on_func_entry, and an entry calls reach: func_entry.h)?
 * 0, or -EINVAL with *why, or -ENOMEM. */
static int kretprobe_point(uintptr_t addr, bool on_entry, const struct ukp_symres *sym,
			   const char **why)
{
	*why = NULL;
	if (!on_entry) {
		*why = "not on a function entry";
		return -EINVAL;
	}
	return ukp_func_entry_called(sym, addr, why);
}

/* [reg] The out-of-line slot's bytes: [insn][int3] at 0, [insn'][jmp] at
 * UKP_BOOST_OFFSET, breakpoints elsewhere. */
static void slot_bytes(const struct ukp_arch_insn *ai, const struct ukp_slot_img *im,
		       uint8_t img[UKP_SLOT_SIZE])
{
	ukp_fill_breakpoints(img, UKP_SLOT_SIZE);
	memcpy(img, im->slot_image, im->slot_len);
	if (ai->boostable)
		memcpy(img + UKP_BOOST_OFFSET, im->boost_image, im->boost_len);
}

/* [reg] A new site at addr: check the instruction, copy it to a slot
 * (batch_img: in a batch, where the slot's bytes wait until batch_commit
 * writes them with the batch's breakpoints; NULL: written now). The
 * site does not keep them. */
static int site_prepare(uintptr_t addr, const struct ukp_symres *sym, bool on_entry,
			struct ukp_site **out, uint8_t *batch_img)
{
	bool in_batch = batch_img != NULL;
	struct ukp_slot_img im;
	size_t off = addr - sym->start, avail, need, at;
	uintptr_t start;
	struct ukp_site *s;
	uint8_t *code;
	int ret;

	/* addr must be an instruction boundary (the kernel's can_probe):
	 * known from the batch's cache, or decoded from the function's
	 * start; code then holds the function from there, else from addr */
	ret = in_batch && off ? ukp_bounds_check(sym, off) : 1;
	if (ret < 0)
		return ret;
	start = ret ? sym->start : addr;
	need = addr - start + UKP_MAX_INSN_SIZE;
	code = malloc(need);
	if (!code)
		return -ENOMEM;
	avail = ukp_read_original(start, code, need);
	if (avail <= addr - start) {
		ret = -EINVAL;
		goto out;
	}
	if (ret)
		ret = arch_check_boundary(code, off, avail);
	if (ret)
		goto out;
	at = addr - start;
	s = ukp_pool_zalloc(&site_pool);
	if (!s) {
		ret = -ENOMEM;
		goto out;
	}
	s->addr = addr;
	/* Quarantined slots come back lazily: when this one would need a
	 * new chunk, or when too many wait. */
	if (quarantine_due() || (nquarantine && !ukp_slot_have_free(addr)))
		ukp_quarantine_reclaim();
	s->slot = ukp_slot_alloc(addr);
	if (!s->slot) {
		pr_warn("kprobes: no executable memory within reach of %#lx\n",
			(unsigned long)addr);
		ukp_pool_free(&site_pool, s);
		ret = -ENOMEM;
		goto out;
	}
	ret = arch_prepare_insn(&s->ainsn, &im, code + at, avail - at, addr, s->slot);
	if (ret) {
		if (arch_insn_why(&s->ainsn))
			pr_warn("kprobes: cannot probe %s+%#zx: %s\n", sym->name, off,
				arch_insn_why(&s->ainsn));
		ukp_slot_free(s->slot);
		ukp_pool_free(&site_pool, s);
		goto out;
	}
	if (s->ainsn.ool) {
		uint8_t img[UKP_SLOT_SIZE];

		slot_bytes(&s->ainsn, &im, in_batch ? batch_img : img);
		ret = in_batch ? 0 : ukp_text_poke(s->slot, img, sizeof(img));
		if (ret) {
			ukp_slot_free(s->slot);
			ukp_pool_free(&site_pool, s);
			goto out;
		}
		ukp_slot_set_owner(s->slot, s);
	} else {
		ukp_slot_free(s->slot);
		s->slot = 0;
	}
	memcpy(s->opcode, code + at, UKP_BREAKPOINT_SIZE);
	s->obj = sym->obj;
	/* (the cache's own name, no copy per site: site_names_keep) */
	s->symname = sym->name ? sym->name : "";
	s->symoff = (uint32_t)off; /* (a function is less than 4 GiB) */
	ukp_opt_site_new(s, on_entry, on_entry && sym->func);
	/* an SDT probe's nop: the compiler keeps no flag live across it */
	if (!on_entry && ukp_usdt_note_at(addr, NULL))
		ukp_opt_site_sdt(s, sym);
	*out = s;
out:
	free(code);
	return ret;
}

/* [reg] Has s a jprobe already? (one per site: the kernel's -EEXIST) */
static bool site_has_jprobe(const struct ukp_site *s)
{
	struct ukp_child *ch;

	for (ch = atomic_load(&s->children); ch; ch = atomic_load(&ch->next))
		if (ukp_is_jprobe(ch->kp))
			return true;
	return false;
}

/* [reg] Put ch on s's list: at the head (newest first), or at the tail
 * for a jprobe, whose pre_handler ends the chain (the kernel's
 * list_add_tail_rcu for a break_handler). */
static void child_link(struct ukp_site *s, struct ukp_child *ch)
{
	struct ukp_child *_Atomic *pp = &s->children;
	struct ukp_child *cur;

	if (ukp_is_jprobe(ch->kp)) {
		while ((cur = atomic_load(pp)))
			pp = &cur->next;
		atomic_store_explicit(&ch->next, NULL, memory_order_relaxed);
		atomic_store_explicit(pp, ch, memory_order_release);
		return;
	}
	atomic_store_explicit(&ch->next, atomic_load(&s->children), memory_order_relaxed);
	atomic_store_explicit(&s->children, ch, memory_order_release);
}

/* [reg] Take ch off s's list; readers already on it walk on. */
static void child_unlink(struct ukp_site *s, struct ukp_child *ch)
{
	struct ukp_child *_Atomic *pp;
	struct ukp_child *cur;

	for (pp = &s->children; (cur = atomic_load(pp)); pp = &cur->next) {
		if (cur == ch) {
			atomic_store_explicit(pp, atomic_load(&ch->next), memory_order_release);
			return;
		}
	}
}

/*
 * [reg] The new sites of a register_kprobes() batch: prepared, but
 * neither their slots nor their breakpoints written (nor the sites
 * hashed) until batch_commit does it for all of them at once (one write
 * per page, one thread synchronization). Until then no probe of the batch can be hit,
 * so the library's own calls into functions the batch probes (malloc,
 * memset, locks, ...) run at full speed.
 */
struct reg_batch {
	struct ukp_site **v;
	uint8_t (*img)[UKP_SLOT_SIZE]; /* their slots' bytes, in v's order */
	size_t n;
	/* The new sites by address until batch_commit hashes them (after
	 * their slots are written: a thread trapping on a stale breakpoint
	 * at the same address must not find a site whose slot is empty). */
	struct ukp_site **tab;
	size_t mask;
	/* the last handler proven (or not) vector-free: a batch's probes
	 * mostly share their handlers, and the proof walks code */
	const void *vf_fn;
	bool vf_ok;
};

static struct ukp_site **batch_slot(struct reg_batch *b, uintptr_t addr)
{
	size_t h = (size_t)((addr * 0x9E3779B97F4A7C15ULL) >> 20) & b->mask;

	while (b->tab[h] && b->tab[h]->addr != addr)
		h = (h + 1) & b->mask;
	return &b->tab[h];
}

/* [reg] ukp_vec_free, remembered for the batch's last handler. */
static bool vec_free(struct reg_batch *b, const void *fn)
{
	if (!b)
		return ukp_vec_free(fn);
	if (b->vf_fn != fn) {
		b->vf_ok = ukp_vec_free(fn);
		b->vf_fn = fn;
	}
	return b->vf_ok;
}

/* [reg] The kernel's register_kprobe, under ukp_mutex; b: in a batch. */
static int __register_kprobe(struct kprobe *p, struct reg_batch *b)
{
	struct ukp_symres sym;
	struct ukp_child *ch;
	struct ukp_site *s;
	bool on_entry = false, new_site = false;
	uintptr_t addr;
	int ret;

	ret = kprobe_addr(p, &addr, &on_entry, &sym);
	if (ret)
		return ret;
	/* a kretprobe's, as register_kretprobe checks it first: refused,
	 * the struct is left as it was */
	if (ukp_is_kretprobe(p)) {
		const char *why;

		ret = kretprobe_point(addr, on_entry, &sym, &why);
		if (ret && why && p->symbol_name)
			pr_warn("kretprobes: cannot probe %s+%#x: %s\n", p->symbol_name, p->offset,
				why);
		else if (ret && why)
			pr_warn("kretprobes: cannot probe %p: %s\n",
				(void *)((uintptr_t)p->addr + p->offset), why);
		if (ret)
			return ret;
	}
	p->addr = (kprobe_opcode_t *)addr; /* written even if a check fails */
	if (child_find(p)) {
		pr_warn("kprobes: the same probe is registered twice\n");
		return -EINVAL;
	}
	p->flags &= KPROBE_FLAG_DISABLED;
	if (on_entry)
		p->flags |= KPROBE_FLAG_ON_FUNC_ENTRY;
	p->nmissed = 0;
	if (ukp_blacklisted(addr))
		return -EINVAL;
	ret = child_index_reserve();
	if (ret)
		return ret;
	ch = ukp_pool_zalloc(&child_pool);
	if (!ch)
		return -ENOMEM;
	s = ukp_site_lookup(addr);
	if (!s && b)
		s = *batch_slot(b, addr);
	if (s && ukp_is_jprobe(p) && site_has_jprobe(s)) {
		pr_warn("jprobes: there is a jprobe at %#lx already\n", (unsigned long)addr);
		ukp_pool_free(&child_pool, ch);
		return -EEXIST;
	}
	if (!s) {
		/* optimized probes whose region covers addr take their
		 * jumps away first */
		ukp_opt_neighbour(addr, true);
		ret = site_prepare(addr, &sym, on_entry, &s, b ? b->img[b->n] : NULL);
		if (ret) {
			ukp_pool_free(&child_pool, ch);
			return ret;
		}
		new_site = true;
	}
	memcpy(&p->opcode, s->opcode, sizeof(p->opcode));
	ch->kp = p;
	ch->site = s;
	/* (a jprobe's pre_handler must not be called by the optimized
	 * hit's fast path: its site stays a breakpoint) */
	if (p->pre_handler && !ukp_is_jprobe(p) && vec_free(b, (const void *)p->pre_handler))
		ch->vf_pre = ukp_vf_rel((const void *)p->pre_handler);
	if (p->post_handler && vec_free(b, (const void *)p->post_handler))
		ch->vf_post = ukp_vf_rel((const void *)p->post_handler);
	/* newest first: handlers run most recently registered first */
	child_link(s, ch);
	site_fast_update(s);
	child_index_add(ch);
	if (b && new_site) {
		/* (the caller made room for every probe of the batch) */
		site_list_add(s);
		s->batch_pending = true;
		b->v[b->n++] = s;
		*batch_slot(b, addr) = s;
		ukp_usdt_probe_added(p, addr);
		return 0;
	}
	if (new_site) {
		ukp_site_hash_add(s);
		site_list_add(s);
	}
	/* a site of this batch, not written yet: its turn comes */
	ret = s->batch_pending ? 0 : site_update(s);
	if (ret) {
		/* could not write the breakpoint: undo */
		child_unlink(s, ch);
		site_fast_update(s);
		child_index_del(ch);
		if (new_site) {
			ukp_site_hash_del(s);
			site_list_del(s);
		}
		ukp_synchronize();
		ukp_pool_free(&child_pool, ch);
		if (new_site)
			site_free(s);
	} else {
		ukp_usdt_probe_added(p, addr);
	}
	return ret;
}

UKPROBES_API int ukprobes_optimizable(void *addr, const char **why)
{
	struct kprobe tmp = { .addr = addr };
	struct ukp_arch_insn ai;
	struct ukp_symres sym;
	const char *w = NULL;
	bool on_entry = false;
	uint8_t *code = NULL;
	uintptr_t a;
	size_t off, avail;
	int ret;

	if (ukp_lock())
		return -EINVAL;
	ret = kprobe_addr(&tmp, &a, &on_entry, &sym);
	if (!ret && ukp_blacklisted(a))
		ret = -EINVAL;
	if (!ret) {
		/* the instruction itself, as register_kprobe checks it */
		off = a - sym.start;
		code = malloc(off + UKP_MAX_INSN_SIZE);
		if (!code)
			ret = -ENOMEM;
	}
	if (!ret) {
		avail = ukp_read_original(sym.start, code, off + UKP_MAX_INSN_SIZE);
		ret = avail > off ? arch_check_boundary(code, off, avail) : -EINVAL;
		if (!ret)
			ret = arch_prepare_insn(&ai, NULL, code + off, avail - off, a, a);
	}
	if (!ret)
		ret = ukp_opt_would(a, &sym, on_entry, &w);
	free(code);
	ukp_unlock();
	if (why)
		*why = w;
	return ret;
}

UKPROBES_API int ukprobes_probe_addr(const struct kprobe *p, void **addr, bool *on_entry)
{
	struct kprobe tmp;
	struct ukp_symres sym;
	bool entry = false;
	uintptr_t a;
	int ret;

	if (!p || !addr)
		return -EINVAL;
	tmp = (struct kprobe){ .addr = p->addr, .symbol_name = p->symbol_name,
			       .offset = p->offset };
	ret = ukp_lock();
	if (ret)
		return ret;
	ret = kprobe_addr(&tmp, &a, &entry, &sym);
	ukp_unlock();
	if (ret)
		return ret;
	*addr = (void *)a;
	if (on_entry)
		*on_entry = entry;
	return 0;
}

UKPROBES_API int ukprobes_kretprobe_check(const struct kprobe *p, const char **why)
{
	struct kprobe tmp;
	struct ukp_symres sym;
	bool on_entry = false;
	const char *w = NULL;
	uintptr_t a;
	int ret;

	if (!p)
		return -EINVAL;
	tmp = (struct kprobe){ .addr = p->addr, .symbol_name = p->symbol_name,
			       .offset = p->offset };
	ret = ukp_lock();
	if (ret)
		return ret;
	ret = kprobe_addr(&tmp, &a, &on_entry, &sym);
	if (!ret)
		ret = kretprobe_point(a, on_entry, &sym, &w);
	if (!ret && ukp_blacklisted(a))
		ret = -EINVAL;
	ukp_unlock();
	if (why)
		*why = w;
	return ret;
}

UKPROBES_API int register_kprobe(struct kprobe *p)
{
	int ret;

	if (!p)
		return -EINVAL;
	if (ukp_in_probe_context())
		return -EBUSY;
	ret = ukp_lock();
	if (ret)
		return ret;
	ret = __register_kprobe(p, NULL);
	ukp_unlock();
	return ret;
}

/*
 * [reg] First half of unregistration: the probe stops firing and is
 * unlinked. Returns the child to free after a grace period, or NULL if p
 * is not registered.
 */
static struct ukp_child *unregister_top(struct kprobe *p, struct ukp_site **dead)
{
	struct ukp_child *ch = child_find(p), *cur;
	struct ukp_child *_Atomic *pp;
	struct ukp_site *s;

	*dead = NULL;
	if (!ch)
		return NULL;
	s = ch->site;
	p->flags |= KPROBE_FLAG_DISABLED;
	ukp_usdt_probe_removed(p);
	child_index_del(ch);
	for (pp = &s->children; (cur = atomic_load(pp)); pp = &cur->next) {
		if (cur == ch) {
			atomic_store_explicit(pp, atomic_load(&ch->next), memory_order_release);
			break;
		}
	}
	site_fast_update(s);
	if (!atomic_load(&s->children))
		*dead = s; /* its text goes in dead_sites_unpatch */
	else
		site_update(s);
	return ch;
}

/*
 * [reg] The sites of an unregistration that lost their last probe: their
 * jumps go together (one unoptimization pass), then their breakpoints
 * (one write per page, one ukp_text_sync), then they leave the hash.
 * NULL entries are skipped.
 */
static void dead_sites_unpatch(struct ukp_site **dead, size_t num)
{
	struct ukp_poke *pk = malloc((num ? num : 1) * sizeof(*pk));
	size_t i, k = 0;

	ukp_opt_sites_dead(dead, num);
	for (i = 0; i < num; i++) {
		struct ukp_site *s = dead[i];

		if (!s || !atomic_load(&s->armed))
			continue;
		if (pk && !s->gone)
			pk[k++] = (struct ukp_poke){ s->addr, s->opcode, UKP_BREAKPOINT_SIZE };
		else
			ukp_site_disarm(s);
	}
	if (k && ukp_text_poke_many(pk, k) == 0) {
		ukp_text_sync();
		for (i = 0; i < num; i++)
			if (dead[i] && !dead[i]->gone)
				atomic_store(&dead[i]->armed, false);
	} else {
		/* one by one (each reports its own failure) */
		for (i = 0; i < num; i++)
			if (dead[i])
				ukp_site_disarm(dead[i]);
	}
	free(pk);
	for (i = 0; i < num; i++) {
		if (!dead[i])
			continue;
		ukp_site_hash_del(dead[i]);
		site_list_del(dead[i]);
		ukp_opt_neighbour(dead[i]->addr, false);
	}
}

/* [reg] unregister_kprobes() under ukp_mutex. */
static void unregister_locked(struct kprobe **kps, int num)
{
	struct ukp_child **chs;
	struct ukp_site **dead, *z, **zp, *reap = NULL;
	int i;

	chs = ukp_batch_zalloc((size_t)num * sizeof(*chs));
	dead = ukp_batch_zalloc((size_t)num * sizeof(*dead));
	if (!chs || !dead) {
		ukp_batch_free(chs);
		ukp_batch_free(dead);
		return;
	}
	for (i = 0; i < num; i++) {
		if (!kps[i])
			continue;
		chs[i] = unregister_top(kps[i], &dead[i]);
		if (!chs[i])
			kps[i]->addr = NULL;
	}
	dead_sites_unpatch(dead, (size_t)num);
	/* Zombies whose last stepping thread has left can go after this
	 * grace period too. */
	for (zp = &zombies; (z = *zp);) {
		if (atomic_load(&z->inflight) == 0) {
			*zp = z->all_next;
			z->all_next = reap;
			reap = z;
		} else {
			zp = &z->all_next;
		}
	}
	ukp_synchronize();
	for (i = 0; i < num; i++) {
		ukp_pool_free(&child_pool, chs[i]);
		if (!dead[i])
			continue;
		if (atomic_load(&dead[i]->inflight) == 0) {
			site_retire(dead[i]);
		} else {
			dead[i]->all_next = zombies;
			zombies = dead[i];
		}
	}
	while ((z = reap)) {
		reap = z->all_next;
		site_retire(z);
	}
	if (quarantine_due())
		ukp_quarantine_reclaim();
	ukp_batch_free(chs);
	ukp_batch_free(dead);
}

UKPROBES_API void unregister_kprobes(struct kprobe **kps, int num)
{
	if (num <= 0 || !kps)
		return;
	if (ukp_in_probe_context() || ukp_lock())
		return;
	unregister_locked(kps, num);
	ukp_unlock();
}

UKPROBES_API void unregister_kprobe(struct kprobe *p)
{
	unregister_kprobes(&p, 1);
}

/*
 * [reg] Write the slots, then the breakpoints, of a batch's new sites,
 * and make every thread see them (one ukp_text_sync). A site whose
 * object was unloaded meanwhile is [GONE] and left alone. On an error
 * the breakpoints written go back to the original bytes and nothing is
 * armed.
 */
static int batch_commit(struct reg_batch *b)
{
	struct ukp_poke *pk = ukp_batch_zalloc((b->n ? b->n : 1) * sizeof(*pk));
	size_t i, k = 0;
	int ret = -ENOMEM;

	if (!pk)
		goto out;
	ukp_opt_defer_kick(true);
	/* a dlclose() in another thread since ukp_lock */
	if (ukp_objects_refresh())
		ukp_gone_sweep();
	/* while nothing of the batch is armed */
	ukp_opt_batch_prepare(b->v, b->n);
	for (i = 0; i < b->n; i++) {
		struct ukp_site *s = b->v[i];

		if (s->gone || !s->slot)
			continue;
		pk[k++] = (struct ukp_poke){ s->slot, b->img[i], UKP_SLOT_SIZE };
	}
	/* the slots first: a thread that hits a breakpoint goes there */
	ret = ukp_text_poke_many(pk, k);
	if (ret)
		goto out;
	ukp_site_hash_reserve(b->n); /* (one growth for the batch) */
	for (i = 0; i < b->n; i++)
		if (!b->v[i]->gone)
			ukp_site_hash_add(b->v[i]);
	k = 0;
	for (i = 0; i < b->n; i++)
		if (ukp_site_wants_armed(b->v[i]))
			pk[k++] = (struct ukp_poke){ b->v[i]->addr, ukp_breakpoint_insn,
						     UKP_BREAKPOINT_SIZE };
	ret = ukp_text_poke_many(pk, k);
	if (ret) {
		k = 0;
		for (i = 0; i < b->n; i++)
			if (ukp_site_wants_armed(b->v[i]))
				pk[k++] = (struct ukp_poke){ b->v[i]->addr, b->v[i]->opcode,
							     UKP_BREAKPOINT_SIZE };
		ukp_text_poke_many(pk, k);
		ukp_text_sync();
		goto out;
	}
	ukp_text_sync();
	for (i = 0; i < b->n; i++) {
		struct ukp_site *s = b->v[i];

		s->batch_pending = false;
		if (ukp_site_wants_armed(s))
			atomic_store(&s->armed, true);
		if (!s->gone)
			ukp_opt_site_changed(s);
	}
out:
	ukp_opt_defer_kick(false);
	ukp_batch_free(pk);
	return ret;
}

/*
 * The kernel's register_kprobes: all or nothing. Every probe is
 * prepared first with no breakpoint written; then the batch's
 * breakpoints go in together (batch_commit). On a failure the probes
 * registered so far are unregistered, and the error returned.
 */
UKPROBES_API int register_kprobes(struct kprobe **kps, int num)
{
	struct reg_batch b = { 0 };
	int i, ret = 0;

	if (num <= 0 || !kps)
		return -EINVAL;
	if (ukp_in_probe_context())
		return -EBUSY;
	for (b.mask = 15; b.mask < 2 * (size_t)num; b.mask = 2 * b.mask + 1)
		;
	b.v = ukp_batch_zalloc((size_t)num * sizeof(*b.v));
	b.img = ukp_batch_zalloc((size_t)num * sizeof(*b.img));
	b.tab = ukp_batch_zalloc((b.mask + 1) * sizeof(*b.tab));
	if (!b.v || !b.img || !b.tab) {
		ukp_batch_free(b.v);
		ukp_batch_free(b.img);
		ukp_batch_free(b.tab);
		return -ENOMEM;
	}
	ret = ukp_lock();
	if (ret) {
		ukp_batch_free(b.v);
		ukp_batch_free(b.img);
		ukp_batch_free(b.tab);
		return ret;
	}
	for (i = 0; i < num; i++) {
		ret = kps[i] ? __register_kprobe(kps[i], &b) : -EINVAL;
		if (ret < 0)
			break;
	}
	/* the boundaries served the preparation; freed before the batch
	 * arms anything (free may be one of its probes) */
	ukp_bounds_forget();
	if (!ret)
		ret = batch_commit(&b);
	if (ret) {
		/* nothing of the batch is armed: the sites go as they came */
		for (size_t k = 0; k < b.n; k++)
			b.v[k]->batch_pending = false;
		if (i > 0)
			unregister_locked(kps, i);
	}
	ukp_codeflow_memo_forget();
	ukp_unlock();
	ukp_batch_free(b.v);
	ukp_batch_free(b.img);
	ukp_batch_free(b.tab);
	return ret;
}

UKPROBES_API int disable_kprobe(struct kprobe *kp)
{
	struct ukp_child *ch;
	int ret = 0;

	if (!kp || ukp_lock())
		return -EINVAL;
	ch = child_find(kp);
	if (!ch) {
		ret = -EINVAL;
		goto out;
	}
	if (kprobe_disabled(kp))
		goto out;
	kp->flags |= KPROBE_FLAG_DISABLED;
	ret = site_update(ch->site);
	if (ret)
		kp->flags &= ~KPROBE_FLAG_DISABLED;
out:
	ukp_unlock();
	return ret;
}

UKPROBES_API int enable_kprobe(struct kprobe *kp)
{
	struct ukp_child *ch;
	int ret = 0;

	if (!kp || ukp_lock())
		return -EINVAL;
	ch = child_find(kp);
	if (!ch || kprobe_gone(kp)) {
		ret = -EINVAL;
		goto out;
	}
	if (kp->flags & KPROBE_FLAG_DISABLED) {
		kp->flags &= ~KPROBE_FLAG_DISABLED;
		ret = site_update(ch->site);
		if (ret)
			kp->flags |= KPROBE_FLAG_DISABLED;
	}
out:
	ukp_unlock();
	return ret;
}

/* --------------------------------------------------------- the knob */

UKPROBES_API int kprobes_set_enabled(bool enable)
{
	struct ukp_site *s;
	int ret = 0, err;

	if (ukp_lock())
		return -EINVAL;
	if (enable == !ukp_all_disarmed)
		goto out;
	ukp_all_disarmed = !enable;
	for (s = ukp_all_sites; s; s = s->all_next) {
		err = site_update(s);
		if (err)
			ret = err;
	}
	if (ret)
		pr_warn("kprobes: failed to %s some probes\n", enable ? "arm" : "disarm");
	else
		pr_info("Kprobes globally %s\n", enable ? "enabled" : "disabled");
out:
	ukp_unlock();
	return ret;
}

UKPROBES_API bool kprobes_enabled(void)
{
	return !__atomic_load_n(&ukp_all_disarmed, __ATOMIC_RELAXED);
}

/* Used by knobs.c to print under the lock. */
int ukp_lock_for_show(void)
{
	return ukp_lock();
}

void ukp_unlock_for_show(void)
{
	ukp_unlock();
}
