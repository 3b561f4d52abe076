// SPDX-License-Identifier: MIT
/*
 * test_fastpath_ops.c - the conformance of the fast paths' primitives:
 * every assembler macro of src/arch/ARCH/fastpath_ops.h (wrapped as a C
 * function in fastpath_ops_ARCH.S) against its C twin in src/fastpath.h,
 * run on the same inputs (every case of each primitive's conditions),
 * comparing what each returns and what each writes. IDLE_OR, READ_* and
 * LEAVE_HELD against the conditions and effects fastpath.h states (C:
 * ukp_read_lock's inline case). POOL_PUSH is a call of the C primitive.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>

#include "base/base.h"
#include "core/core.h"
#include "core/fastpath.h"
#include "process/process.h"
#include "text/text.h"

bool ukt_asm_kprobe_ok(const struct kprobe *kp, const void *pre);
struct kretprobe_holder *ukt_asm_krp_holder(const struct kretprobe *rp);
bool ukt_asm_rstack_room(struct krp_thread *t, uintptr_t slot, unsigned int *d);
struct kretprobe_instance *ukt_asm_spare_take(struct krp_thread *t, struct kretprobe_holder *h);
struct kretprobe_instance *ukt_asm_pool_pop(struct kretprobe_holder *h);
void ukt_asm_inst_init(struct kretprobe_instance *ri, uintptr_t ret, struct kretprobe *rp,
		       const struct krp_thread *t);
void ukt_asm_rstack_push(struct krp_thread *t, unsigned int d, uintptr_t slot, uintptr_t ret,
			 struct kretprobe_instance *ri);
struct krp_entry *ukt_asm_rstack_top(struct krp_thread *t, uintptr_t slot, unsigned int *d);
struct kretprobe_instance *ukt_asm_rstack_top_ri(struct krp_entry *e);
kretprobe_handler_t ukt_asm_ret_handler(struct kretprobe_instance *ri, bool *proven);
uintptr_t ukt_asm_rstack_pop(struct krp_thread *t, unsigned int d, uintptr_t *slot);
bool ukt_asm_spare_put(struct krp_thread *t, struct kretprobe_instance *ri);
bool ukt_asm_idle_or(void);
void ukt_asm_read_enter(uint64_t *rec);
void ukt_asm_read_leave(uint64_t *rec);
void ukt_asm_leave_held(uint64_t *rec);

static int pre_a(struct kprobe *p, struct pt_regs *r) { (void)p; (void)r; return 0; }
static int pre_b(struct kprobe *p, struct pt_regs *r) { (void)p; (void)r; return 1; }
static void post_a(struct kprobe *p, struct pt_regs *r, unsigned long f) { (void)p; (void)r; (void)f; }
static int rh_a(struct kretprobe_instance *ri, struct pt_regs *r) { (void)ri; (void)r; return 0; }
static int rh_b(struct kretprobe_instance *ri, struct pt_regs *r) { (void)ri; (void)r; return 1; }

Test(fastpath_ops, kprobe_ok)
{
	kprobe_pre_handler_t pres[] = { NULL, pre_a, pre_b };
	kprobe_post_handler_t posts[] = { NULL, post_a };
	unsigned int flags[] = { 0, KPROBE_FLAG_GONE, KPROBE_FLAG_DISABLED,
				 KPROBE_FLAG_GONE | KPROBE_FLAG_DISABLED, KPROBE_FLAG_FTRACE };
	const void *asked[] = { NULL, (const void *)pre_a, (const void *)pre_b };
	size_t i, j, k, l, n = 0;

	for (i = 0; i < 3; i++)
		for (j = 0; j < 2; j++)
			for (k = 0; k < sizeof(flags) / sizeof(flags[0]); k++)
				for (l = 0; l < 3; l++) {
					struct kprobe kp = { .pre_handler = pres[i],
							     .post_handler = posts[j],
							     .flags = flags[k] };

					cr_assert_eq(ukt_asm_kprobe_ok(&kp, asked[l]),
						     ukp_fp_kprobe_ok(&kp, asked[l]),
						     "pre %zu post %zu flags %#x asked %zu", i, j,
						     flags[k], l);
					n += ukp_fp_kprobe_ok(&kp, asked[l]);
				}
	cr_assert_gt(n, 0, "some cases pass");
}

Test(fastpath_ops, krp_holder)
{
	struct kretprobe_holder h;
	struct kretprobe_holder *rphs[] = { NULL, &h };
	kretprobe_handler_t entries[] = { NULL, rh_a };
	size_t i, j;

	for (i = 0; i < 2; i++)
		for (j = 0; j < 2; j++) {
			struct kretprobe rp = { .entry_handler = entries[j] };

			rp.rph = rphs[i];
			cr_assert_eq(ukt_asm_krp_holder(&rp), ukp_fp_krp_holder(&rp), "rph %zu entry %zu",
				     i, j);
		}
}

static struct krp_thread ta, tc;

/* t with depth d, entry i's slot at slots[i] */
static void thread_set(struct krp_thread *t, bool shstk, unsigned int d, const uintptr_t *slots)
{
	unsigned int i;

	memset(t, 0, sizeof(*t));
	t->shstk = shstk;
	t->task = 0x7eadbeef;
	atomic_store(&t->depth, d);
	for (i = 0; i < d; i++) {
		t->e[i].slot = slots[i];
		t->e[i].ret = 0x1000 + i;
		atomic_store(&t->e[i].ri, (struct kretprobe_instance *)(uintptr_t)(0x8000 + 16 * i));
	}
}

Test(fastpath_ops, rstack_room_top)
{
	static uintptr_t slots[KRP_MAX_DEPTH];
	unsigned int depths[] = { 0, 1, 2, 5, KRP_MAX_DEPTH - 1, KRP_MAX_DEPTH };
	uintptr_t asked[] = { 0x100, 0x7ff8, 0x8000, 0x8008, 0x9000, 0x10000 };
	size_t i, j, k, chained;

	for (i = 0; i < KRP_MAX_DEPTH; i++)
		slots[i] = 0x10000 - 8 * i;     /* the stack grows down */
	for (chained = 0; chained < 2; chained++)
		for (k = 0; k < 2; k++)
			for (i = 0; i < sizeof(depths) / sizeof(depths[0]); i++)
				for (j = 0; j < sizeof(asked) / sizeof(asked[0]); j++) {
					unsigned int d = depths[i], da = 99, dc = 98;
					uintptr_t slot = asked[j];
					bool ra, rc;
					struct krp_entry *ea, *ec;

					if (chained && d > 1)
						slots[d - 2] = slots[d - 1];
					if (d)
						slot = j & 1 ? slots[d - 1] : slot;
					thread_set(&ta, k, d, slots);
					thread_set(&tc, k, d, slots);
					ra = ukt_asm_rstack_room(&ta, slot, &da);
					rc = ukp_fp_rstack_room(&tc, slot, &dc);
					cr_assert_eq(ra, rc, "room: depth %u slot %#lx shstk %zu", d,
						     (unsigned long)slot, k);
					if (rc)
						cr_assert_eq(da, dc);
					da = 99;
					dc = 98;
					ea = ukt_asm_rstack_top(&ta, slot, &da);
					ec = ukp_fp_rstack_top(&tc, slot, &dc);
					cr_assert_eq(ea ? ea - ta.e : -1, ec ? ec - tc.e : -1,
						     "top: depth %u slot %#lx chained %zu", d,
						     (unsigned long)slot, chained);
					cr_assert_eq(da, dc);
					if (ec)
						cr_assert_eq(ukt_asm_rstack_top_ri(ea),
							     atomic_load(&ec->ri));
					if (chained && d > 1)
						slots[d - 2] = 0x10000 - 8 * (d - 2);
				}
}

Test(fastpath_ops, rstack_top_ri_dropped)
{
	struct krp_entry e = { 0 };

	cr_assert_null(ukt_asm_rstack_top_ri(&e));
	atomic_store(&e.ri, (struct kretprobe_instance *)&e);
	cr_assert_eq(ukt_asm_rstack_top_ri(&e), (struct kretprobe_instance *)&e);
}

Test(fastpath_ops, rstack_push_pop)
{
	unsigned int d;

	for (d = 0; d < KRP_MAX_DEPTH; d += 7) {
		uintptr_t sa = 0, sc = 0, ra, rc;

		thread_set(&ta, false, d, (uintptr_t[KRP_MAX_DEPTH]){ 0 });
		thread_set(&tc, false, d, (uintptr_t[KRP_MAX_DEPTH]){ 0 });
		ukt_asm_rstack_push(&ta, d, 0x5000 + d, 0x6000 + d, (void *)(uintptr_t)(0x7000 + d));
		ukp_fp_rstack_push(&tc, d, 0x5000 + d, 0x6000 + d, (void *)(uintptr_t)(0x7000 + d));
		cr_assert_eq(memcmp(&ta, &tc, sizeof(ta)), 0, "push at depth %u", d);
		ra = ukt_asm_rstack_pop(&ta, d + 1, &sa);
		rc = ukp_fp_rstack_pop(&tc, d + 1, &sc);
		cr_assert_eq(ra, rc);
		cr_assert_eq(ra, 0x6000 + d);
		cr_assert_eq(sa, sc);
		cr_assert_eq(memcmp(&ta, &tc, sizeof(ta)), 0, "pop at depth %u", d + 1);
	}
}

/* A pool of n instances of stride bytes, all free, as kretprobes.c makes
 * them (free_next: a chain 1 -> 2 -> ... -> n). */
static void pool_make(struct kretprobe_holder *h, int n, size_t stride)
{
	int i;

	memset(h, 0, sizeof(*h));
	h->stride = stride;
	h->ninst = n;
	h->insts = calloc((size_t)n, stride);
	h->free_next = calloc((size_t)n, sizeof(*h->free_next));
	for (i = 0; i < n; i++) {
		struct krp_inst_hdr *hd = (struct krp_inst_hdr *)(h->insts + (size_t)i * stride);

		hd->rph = h;
		hd->idx = (uint32_t)i;
		atomic_store(&h->free_next[i], i + 1 < n ? (uint32_t)(i + 2) : 0);
	}
	atomic_store(&h->free_head, n ? (7ULL << 32) | 1 : 0);
}

Test(fastpath_ops, pool_pop)
{
	struct kretprobe_holder ha, hc;
	int n = 5, i;

	pool_make(&ha, n, 64);
	pool_make(&hc, n, 64);
	for (i = 0; i <= n; i++) {
		struct kretprobe_instance *ra = ukt_asm_pool_pop(&ha), *rc = ukp_fp_pool_pop(&hc);

		cr_assert_eq(ra ? (char *)ra - (char *)ha.insts : -1,
			     rc ? (char *)rc - (char *)hc.insts : -1, "pop %d", i);
		cr_assert_eq(atomic_load(&ha.free_head), atomic_load(&hc.free_head), "head after pop %d",
			     i);
		if (i == 1) {
			/* one back (the C primitive, POOL_PUSH's), then on */
			ukp_fp_pool_push(ra);
			ukp_fp_pool_push(rc);
		}
	}
	cr_assert_eq(atomic_load(&ha.free_head) & 0xffffffffu, 0, "empty at the end");
	free(ha.insts);
	free(ha.free_next);
	free(hc.insts);
	free(hc.free_next);
}

Test(fastpath_ops, spare_take_put_inst_init)
{
	struct kretprobe_holder h1, h2;
	struct kretprobe_instance *i1, *i2, *got_a, *got_c;
	struct kretprobe rp;
	int spare;

	pool_make(&h1, 2, 64);
	pool_make(&h2, 2, 64);
	i1 = ukp_fp_inst_at(&h1, 0);
	i2 = ukp_fp_inst_at(&h2, 1);
	for (spare = 0; spare < 3; spare++) {
		struct kretprobe_instance *s = spare == 0 ? NULL : spare == 1 ? i1 : i2;

		thread_set(&ta, false, 0, NULL);
		thread_set(&tc, false, 0, NULL);
		atomic_store(&ta.spare, s);
		atomic_store(&tc.spare, s);
		got_a = ukt_asm_spare_take(&ta, &h1);
		got_c = ukp_fp_spare_take(&tc, &h1);
		cr_assert_eq(got_a, got_c, "take with spare %d", spare);
		cr_assert_eq(atomic_load(&ta.spare), atomic_load(&tc.spare), "left with spare %d", spare);
		cr_assert_eq(ukt_asm_spare_put(&ta, i2), ukp_fp_spare_put(&tc, i2), "put, spare %d",
			     spare);
		cr_assert_eq(atomic_load(&ta.spare), atomic_load(&tc.spare), "kept, spare %d", spare);
	}
	memset(i1, 0x5a, sizeof(*i1));
	memset(i2, 0x5a, sizeof(*i2));
	ukt_asm_inst_init(i1, 0x4242, &rp, &ta);
	ukp_fp_inst_init(i2, 0x4242, &rp, &tc);
	cr_assert_eq(memcmp(i1, i2, sizeof(*i1)), 0);
	cr_assert_eq((uintptr_t)i1->ret_addr, 0x4242);
	free(h1.insts);
	free(h1.free_next);
	free(h2.insts);
	free(h2.free_next);
}

Test(fastpath_ops, ret_handler)
{
	kretprobe_handler_t handlers[] = { NULL, rh_a, rh_b };
	const void *vfs[] = { NULL, (const void *)rh_a };
	struct kretprobe_holder h;
	struct kretprobe rp;
	size_t gone, i, j;

	pool_make(&h, 1, 64);
	for (gone = 0; gone < 2; gone++)
		for (i = 0; i < 3; i++)
			for (j = 0; j < 2; j++) {
				struct kretprobe_instance *ri = ukp_fp_inst_at(&h, 0);
				bool pa = false, pc = true;

				memset(&rp, 0, sizeof(rp));
				rp.handler = handlers[i];
				atomic_store(&h.rp, gone ? NULL : &rp);
				h.vf_handler = vfs[j];
				cr_assert_eq(ukt_asm_ret_handler(ri, &pa), ukp_fp_ret_handler(ri, &pc),
					     "gone %zu handler %zu vf %zu", gone, i, j);
				cr_assert_eq(pa, pc, "proven: gone %zu handler %zu vf %zu", gone, i, j);
			}
	free(h.insts);
	free(h.free_next);
}

/* IDLE_OR: status, depth, in_handler, defer_async all 0, a record that
 * is not the overflow one, and no reader fence asked (fastpath.h). */
Test(fastpath_ops, idle_or_read_leave_held)
{
	struct ukp_ctlblk *c = &ukp_ctl;
	struct ukp_fp_thread saved = c->fp;
	struct ukp_thread_rec rec = { 0 };
	int v, fence;

	for (fence = 0; fence < 2; fence++)
		for (v = 0; v < 7; v++) {
			bool want;

			c->fp = saved;
			c->status = v == 1;
			c->depth = v == 2;
			c->in_handler = v == 3;
			c->defer_async = v == 4;
			c->rec = v == 5 ? NULL : v == 6 ? &ukp_overflow_rec : &rec;
			atomic_store(&ukp_reader_fence, fence);
			want = v == 0 && !fence;
			cr_assert_eq(ukt_asm_idle_or(), want, "case %d fence %d", v, fence);
		}
	atomic_store(&ukp_reader_fence, false);
	{
		uint64_t seq = 40;

		ukt_asm_read_enter(&seq);
		cr_assert_eq(seq, 41, "odd: inside");
		ukt_asm_read_leave(&seq);
		cr_assert_eq(seq, 42, "even: outside");
		c->status = KPROBE_HIT_ACTIVE;
		c->depth = 1;
		c->in_handler = 1;
		c->defer_async = 1;
		c->deferred_mask = 0;
		seq = 43;
		ukt_asm_leave_held(&seq);
		cr_assert_eq(seq, 44, "the read side left");
		cr_assert(!c->status && !c->depth && !c->in_handler && !c->defer_async);
	}
	c->fp = saved;
}
