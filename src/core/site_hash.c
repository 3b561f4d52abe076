/* SPDX-License-Identifier: MIT */
/*
 * site_hash.c - the hit hash: probed address -> site, read by the trap
 * handler without locks, written under ukp_mutex.
 *
 * Chains go through the sites (->hnext); a writer publishes with release
 * stores, and a site it unlinks stays readable until ukp_synchronize()
 * (kprobes.c frees it after one). The table grows with the sites
 * (SITE_LOAD a bucket) instead of being sized for the most there may
 * ever be, as relativistic hash tables do (Triplett, McKenney and
 * Walpole, "Resizable, scalable, concurrent hash tables via relativistic
 * programming", 2011): the larger table's buckets first point into the
 * old chains ("zipped": a chain holds the sites of several new buckets,
 * which a reader, comparing addresses, walks past), the table is
 * published, and after a grace period the chains are cut apart one link
 * a chain per pass, a grace period between passes, so that a reader
 * never stands on a site whose link is cut from under it. A reader
 * never waits and never misses a site.
 */
#include <errno.h>
#include <sys/mman.h>

#include "base/base.h"
#include "base/sys.h"
#include "core/core.h"
#include "process/process.h"

#define SITE_MIN_BITS 8
#define SITE_LOAD 2 /* sites a bucket before the table grows */

struct site_tab {
	unsigned int bits;
	struct ukp_site *_Atomic *b;
};

static struct ukp_site *_Atomic tab0_b[1u << SITE_MIN_BITS];
static struct site_tab tab0 = { SITE_MIN_BITS, tab0_b };
static struct site_tab *_Atomic tab = &tab0;
static size_t nhashed;

/* [reg] Zeroed memory of its own for a table or the cursors: freed,
 * it leaves no holes in the heap (they stayed resident). */
static void *map_zeroed(size_t n)
{
	void *p;

	if (ukp_sys_mmap(NULL, n + 16, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0,
			 &p))
		return NULL;
	*(size_t *)p = n + 16;
	return (char *)p + 16;
}

static void unmap(void *p)
{
	if (p)
		ukp_sys_munmap((char *)p - 16, *(size_t *)((char *)p - 16));
}

static UKP_TRAP_TEXT size_t site_bucket(uintptr_t a, unsigned int bits)
{
	return (size_t)((a * 0x9E3779B97F4A7C15ULL) >> (64 - bits));
}

/* [trap] The site at addr, or NULL. */
UKP_TRAP_TEXT struct ukp_site *ukp_site_lookup(uintptr_t addr)
{
	struct site_tab *t = atomic_load_explicit(&tab, memory_order_acquire);
	struct ukp_site *s;

	for (s = atomic_load_explicit(&t->b[site_bucket(addr, t->bits)], memory_order_acquire); s;
	     s = atomic_load_explicit(&s->hnext, memory_order_acquire))
		if (s->addr == addr)
			return s;
	return NULL;
}

/* [reg] Cut the zipped chains of t apart (see above). cur[i]: where old
 * chain i is still as it was (its first site not yet handled). */
static void unzip(struct site_tab *t, struct ukp_site **cur, size_t nold)
{
	bool more = true;

	while (more) {
		more = false;
		for (size_t i = 0; i < nold; i++) {
			struct ukp_site *a = cur[i], *n, *next;
			size_t j;

			if (!a)
				continue;
			j = site_bucket(a->addr, t->bits);
			/* the end of a's run of sites of bucket j */
			while ((n = atomic_load_explicit(&a->hnext, memory_order_relaxed)) &&
			       site_bucket(n->addr, t->bits) == j)
				a = n;
			cur[i] = n;
			if (!n)
				continue;
			/* the next site of bucket j past the other buckets' run */
			for (next = n; next && site_bucket(next->addr, t->bits) != j;
			     next = atomic_load_explicit(&next->hnext, memory_order_relaxed))
				;
			atomic_store_explicit(&a->hnext, next, memory_order_release);
			more = true;
		}
		/* a reader of another bucket may stand on a site this pass
		 * relinked: none does after this */
		if (more)
			ukp_synchronize();
	}
}

/* [reg] A table of 2^bits buckets instead of the current one: 0, or
 * -ENOMEM (the current one stays). */
static int grow(unsigned int bits)
{
	struct site_tab *old = atomic_load_explicit(&tab, memory_order_relaxed), *t;
	size_t nold = (size_t)1 << old->bits;
	struct ukp_site **cur;

	cur = map_zeroed(nold * sizeof(*cur));
	t = map_zeroed(sizeof(*t) + (sizeof(*t->b) << bits));
	if (!cur || !t) {
		unmap(cur);
		unmap(t);
		return -ENOMEM;
	}
	t->bits = bits;
	t->b = (struct ukp_site *_Atomic *)(t + 1);
	/* Zipped: each new bucket starts at its first site in its old
	 * chain (a new bucket's sites all come from one old chain: its
	 * index's top bits). */
	for (size_t i = 0; i < nold; i++) {
		struct ukp_site *s = atomic_load_explicit(&old->b[i], memory_order_relaxed);

		cur[i] = s;
		for (; s; s = atomic_load_explicit(&s->hnext, memory_order_relaxed)) {
			size_t j = site_bucket(s->addr, bits);

			if (!atomic_load_explicit(&t->b[j], memory_order_relaxed))
				atomic_store_explicit(&t->b[j], s, memory_order_relaxed);
		}
	}
	atomic_store_explicit(&tab, t, memory_order_release);
	/* nobody reads the old table after this */
	ukp_synchronize();
	if (old != &tab0)
		unmap(old);
	unzip(t, cur, nold);
	unmap(cur);
	return 0;
}

/* [reg] Room for n more sites at the table's load (a table that cannot
 * grow takes longer chains). */
void ukp_site_hash_reserve(size_t n)
{
	struct site_tab *t = atomic_load_explicit(&tab, memory_order_relaxed);
	unsigned int bits = t->bits;

	while (nhashed + n > (size_t)SITE_LOAD << bits && bits < 40)
		bits++;
	if (bits != t->bits)
		grow(bits);
}

/* [reg] s becomes findable by its address. */
void ukp_site_hash_add(struct ukp_site *s)
{
	struct site_tab *t;
	struct ukp_site *_Atomic *head;

	ukp_site_hash_reserve(1);
	t = atomic_load_explicit(&tab, memory_order_relaxed);
	head = &t->b[site_bucket(s->addr, t->bits)];
	atomic_store_explicit(&s->hnext, atomic_load_explicit(head, memory_order_relaxed),
			      memory_order_relaxed);
	atomic_store_explicit(head, s, memory_order_release);
	s->hashed = true;
	nhashed++;
}

/* [reg] Unlink; readers already on s keep walking through s->hnext. */
void ukp_site_hash_del(struct ukp_site *s)
{
	struct site_tab *t = atomic_load_explicit(&tab, memory_order_relaxed);
	struct ukp_site *_Atomic *pp = &t->b[site_bucket(s->addr, t->bits)];
	struct ukp_site *cur;

	if (!s->hashed)
		return;
	while ((cur = atomic_load_explicit(pp, memory_order_relaxed))) {
		if (cur == s) {
			atomic_store_explicit(pp, atomic_load_explicit(&s->hnext, memory_order_relaxed),
					      memory_order_release);
			break;
		}
		pp = &cur->hnext;
	}
	s->hashed = false;
	nhashed--;
}
