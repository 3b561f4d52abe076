/* SPDX-License-Identifier: MIT */
/*
 * hist_hit.c - the hist trigger's table in the traced process
 * (common/hist.h): one per SPEC, an open-addressing hash table of
 * hist->size entries that the traced threads update in place, and its
 * transfer to ukprobe at the end (UKPM_HIST). The tables live in the
 * image's region (common/region.h) when it has room: an image that ends
 * without its END (a Go program's raw exit_group, a kill) leaves them
 * there for ukprobe (tools/ukprobe/region.c).
 *
 * [hit] ukpa_hist_hit() (the fields from the fetched record) and
 * ukpa_hist_hit_regs() (a hist whose fields are all registers as they
 * are, read straight from pt_regs: no record, no fetch): async-signal-safe,
 * allocation-free and lock-free: an empty entry is claimed with a compare-and-swap of its
 * state word (0 empty, 1 being filled, 2 in use), filled, then
 * published. The thread that made an entry counts in it with plain
 * stores (its own words: no other thread writes them, and a thread's
 * hits never nest), the others with atomic additions (a locked
 * instruction costs as much as the rest of the update): most keys are
 * hit by one thread, the thread that made them. A thread that meets an entry
 * another thread is filling waits a bounded time (spinning, then yielding
 * the CPU to it), then counts its hit as dropped (as a full table does)
 * rather than wait without end in a signal handler.
 * Vector-free, as every handler (handlers.c): byte loops with an empty
 * asm instead of memcpy/memcmp.
 */
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "agent.h"
#include "raw_syscall.h"
#include "cpu_relax.h"
#include "filter.h"
#include "hist.h"

#define ST_EMPTY 0
#define ST_FILLING 1
#define ST_USED 2
#define WAIT_SPINS 4096
#define WAIT_YIELDS 256

/*
 * A table entry: state, the maker (its thread's identity), the maker's
 * hits and the others', the maker's sums and the others', then what the
 * wire entry has after its counts (the comm, the key).
 */
#define E_OWNER 8
#define E_OWN_HITS 16
#define E_HITS 24
#define E_VALS 32

/*
 * A key or val that is a register as it is (a plain_reg fetch argument):
 * read straight from pt_regs by ukpa_hist_hit_regs(), cut to the
 * argument's bytes as the fetch does, and sign-extended as field_value()
 * does: v = ((w & keep) ^ sign) - sign; keys then get their modifier.
 */
struct reg_field {
	unsigned int reg;         /* the pt_regs word */
	enum ukp_hist_mod mod;    /* keys */
	uint64_t keep;            /* the argument's bytes */
	uint64_t sign;            /* a signed argument shorter than 8 bytes: its
				   * sign bit; else 0 */
	uint64_t buckets;         /* keys: .buckets=N */
};

/*
 * What a hit reads comes first, copied from the hist so that a hit
 * follows no pointer from here but to the entries.
 */
struct ukpa_hist_table {
	unsigned char *e;         /* size entries of esize bytes */
	unsigned int esize;
	unsigned int tail;        /* where the comm and key start in an entry */
	unsigned int koff;        /* where the key starts in an entry */
	unsigned int key_bytes;   /* h->key_bytes */
	unsigned int shift, mask; /* an entry's index: the hash's top bits */
	int nkeys, nvals;
	bool execname;
	struct reg_field kreg[UKP_HIST_MAX_KEYS], vreg[UKP_HIST_MAX_VALS]; /* regs_only */
	uint64_t id;              /* the table's number (never 0, never reused) */
	const struct ukp_hist *h;
	bool regs_only;           /* ukpa_hist_regs_only() */
	/* hits that found no entry (Totals: Hits is the entries' hits and
	 * these): the region's word, else own_dropped */
	_Atomic uint64_t *dropped;
	_Atomic uint64_t own_dropped;
	int slot;                 /* its entry in the region's list, or -1 */
	uint32_t spec;            /* its SPEC's index */
};

/* [init] The region's tables: entries of its list and bytes used (both
 * from 0 again when the last table is freed: a detach), tables alive. */
static unsigned int region_n;
static uint64_t region_used;
static unsigned int tables_alive;

static _Atomic uint64_t last_id;

/*
 * [hit] Each thread remembers the entry it counted in last, per table (a
 * few tables share a slot; the table's number says whose it is): a hit
 * with the same key, the common case, goes to it without the hash and
 * the probe sequence. Only the thread's own hits read and write its
 * slots (hits do not nest), and the entry is used only while it holds
 * the key: a reset table (fork) is empty, so its entries are looked up
 * again. The number, never reused, keeps a slot from leading into a
 * freed table.
 */
#define CACHE_SLOTS 4
struct last_entry {
	uint64_t id;
	unsigned char *e;
};
/* (in the thread's block: agent.h) */
#define my_last_entries ((struct last_entry *)(void *)ukpa_self()->hist_last)
_Static_assert(sizeof(struct last_entry) * CACHE_SLOTS <= sizeof(((struct ukpa_thread *)0)->hist_last),
	       "hist_last");

/* [init] f as a register as it is, if it is one. */
static bool reg_field_of(const struct ukp_hist_field *f, const struct ukp_spec *spec,
			 struct reg_field *r)
{
	const struct ukp_fetcharg *fa;

	if (f->arg < 0 || f->is_string || !spec->args[f->arg].plain_reg)
		return false;
	fa = &spec->args[f->arg];
	r->reg = (unsigned int)fa->param;
	r->keep = fa->size < 8 ? (1ULL << (fa->size * 8)) - 1 : ~0ULL;
	r->sign = f->is_signed && fa->size < 8 ? 1ULL << (fa->size * 8 - 1) : 0;
	r->mod = f->mod;
	r->buckets = f->buckets;
	return true;
}

/* [init] t's entry in the region's list (again in a new image's file,
 * which starts empty). */
static void region_publish(struct ukpa_hist_table *t)
{
	struct ukp_region_hist *d;

	if (t->slot < 0 || !ukpa_region)
		return;
	d = (struct ukp_region_hist *)(void *)((char *)ukpa_region + UKP_REGION_HISTS_OFF) +
	    t->slot;
	d->spec = t->spec;
	d->esize = t->esize;
	d->tail = t->tail;
	d->nvals = (uint32_t)t->nvals;
	d->wsize = ukp_hist_entry_size(t->h);
	d->off = (uint64_t)(t->e - (unsigned char *)ukpa_region);
	t->dropped = &d->dropped;
	atomic_store(t->dropped, 0);
	/* (size last: it says the entry is there) */
	atomic_thread_fence(memory_order_release);
	d->size = t->h->size;
}

/* [init] An empty table's entries into the region, when it has one
 * with room (else they stay the heap's): the SPECs are read before the
 * image's region is made, and no probe counts in a table before it is
 * placed (ukpa_probes_place_hists) or reset (a new image). */
void ukpa_hist_place(struct ukpa_hist_table *t)
{
	uint64_t bytes;

	if (!t || t->slot >= 0 || !ukpa_region)
		return;
	bytes = ((uint64_t)t->h->size * t->esize + 63) & ~(uint64_t)63;
	if (region_n >= UKP_REGION_HISTS || bytes > UKP_REGION_HIST_BYTES - region_used)
		return;
	free(t->e);
	/* (a fresh file's bytes: zeros) */
	t->e = (unsigned char *)ukpa_region + UKP_REGION_HIST_TABLES_OFF + region_used;
	t->slot = (int)region_n++;
	region_used += bytes;
	atomic_store(t->dropped, 0);
	region_publish(t);
}

/* [init] t's entries: the heap's until placed. */
static bool table_alloc(struct ukpa_hist_table *t)
{
	t->slot = -1;
	t->dropped = &t->own_dropped;
	t->e = calloc(t->h->size, t->esize);
	if (!t->e)
		return false;
	ukpa_hist_place(t);
	return true;
}

/* [init] */
struct ukpa_hist_table *ukpa_hist_new(const struct ukp_spec *spec, uint32_t index)
{
	const struct ukp_hist *h = spec->hist;
	struct ukpa_hist_table *t = calloc(1, sizeof(*t));
	unsigned int bits;
	int k;

	if (!t)
		return NULL;
	t->h = h;
	t->id = atomic_fetch_add(&last_id, 1) + 1;
	t->tail = E_VALS + 16 * (unsigned int)h->nvals;
	t->koff = t->tail + (h->execname ? 16 : 0);
	t->esize = t->tail + (ukp_hist_entry_size(h) - ukp_hist_comm_off(h));
	t->key_bytes = h->key_bytes;
	t->nkeys = h->nkeys;
	t->nvals = h->nvals;
	t->execname = h->execname;
	/* size is a power of two; a table of one entry takes bit 63 and
	 * masks it off */
	for (bits = 0; (1u << bits) < h->size; bits++)
		;
	t->shift = 64 - (bits ? bits : 1);
	t->mask = h->size - 1;
	/* no filter of its own, no comm, no thread id: every field a
	 * register (execname goes with common_pid) */
	t->regs_only = !h->filter && !h->uses_comm && !h->uses_pid;
	for (k = 0; k < h->nkeys; k++)
		t->regs_only = reg_field_of(&h->keys[k], spec, &t->kreg[k]) &&
			       h->keys[k].off == 8u * (unsigned int)k && t->regs_only;
	for (k = 0; k < h->nvals; k++)
		t->regs_only = reg_field_of(&h->vals[k], spec, &t->vreg[k]) && t->regs_only;
	t->spec = index;
	if (!table_alloc(t)) {
		free(t);
		return NULL;
	}
	tables_alive++;
	return t;
}

/* [init] */
bool ukpa_hist_regs_only(const struct ukpa_hist_table *t)
{
	return t->regs_only;
}

/* [init] */
void ukpa_hist_free(struct ukpa_hist_table *t)
{
	if (!t)
		return;
	if (t->slot < 0)
		free(t->e);
	free(t);
	if (!--tables_alive)
		region_n = 0, region_used = 0;
}

/* [init] A forked child starts with an empty table (its parent's hits
 * are the parent's). */
void ukpa_hist_reset(struct ukpa_hist_table *t)
{
	if (!t)
		return;
	memset(t->e, 0, (size_t)t->h->size * t->esize);
	atomic_store(t->dropped, 0);
	region_publish(t);
	ukpa_hist_place(t);
}

static inline void copy(unsigned char *d, const unsigned char *s, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++) {
		d[i] = s[i];
		__asm__ volatile("" ::: "memory");
	}
}

static inline bool same(const unsigned char *a, const unsigned char *b, size_t n)
{
	size_t i;

	for (i = 0; i < n; i += 8)
		if (*(const uint64_t *)(const void *)(a + i) != *(const uint64_t *)(const void *)(b + i))
			return false;
	return true;
}

static inline uint64_t *word(unsigned char *e, unsigned int off)
{
	return (uint64_t *)(void *)(e + off);
}

/* A string slot into a key: up to its NUL, zeros after (the bytes past
 * the NUL are whatever the fetch left there). */
static void key_string(unsigned char *d, const unsigned char *s, unsigned int n)
{
	unsigned int i;
	bool end = false;

	for (i = 0; i < n; i++) {
		if (!end && !s[i])
			end = true;
		d[i] = end ? 0 : s[i];
		__asm__ volatile("" ::: "memory");
	}
}

static const unsigned char key_zeros[UKP_SPEC_STR_SLOT];

/* The thread's identity: the address of its block (unique among live
 * threads that record) */

static inline void add_own(unsigned char *e, unsigned int off, uint64_t v)
{
	_Atomic uint64_t *w = (_Atomic uint64_t *)(void *)(e + off);

	/* one writer: a load and a store (atomic only so that the reader at
	 * the end sees whole words) */
	atomic_store_explicit(w, atomic_load_explicit(w, memory_order_relaxed) + v,
			      memory_order_relaxed);
}

static inline __attribute__((always_inline)) uint64_t
field_value(const struct ukp_hist_field *f, const struct ukp_spec *spec, const unsigned char *data,
	    uint32_t faults, int pid)
{
	const struct ukp_fetcharg *fa;
	uint64_t v;

	if (f->arg == UKP_HIST_PID)
		return (uint64_t)(uint32_t)pid;
	fa = &spec->args[f->arg];
	if (faults & (1u << f->arg))
		return 0;
	v = *(const uint64_t *)(const void *)(data + fa->off);
	/* signed arguments: extended to 64 bits, so that sums add up */
	if (f->is_signed && fa->size < 8 && (v >> (fa->size * 8 - 1)) & 1)
		v |= ~0ULL << (fa->size * 8);
	return v;
}

/* The hash of a key: word by word, multiplied (the index takes its top
 * bits, which depend on every bit of the key) */
#define HASH_MUL 0x9e3779b97f4a7c15ULL

static inline uint64_t hash_word(uint64_t hash, uint64_t w)
{
	return (hash ^ w) * HASH_MUL;
}

/* The entry's counts take the hit: in the maker's own words with plain
 * stores, or atomically. */
static inline __attribute__((always_inline)) void
count_in(struct ukpa_hist_table *t, unsigned char *e, uintptr_t self, const uint64_t *vals)
{
	int k;

	if (*(const uint64_t *)(const void *)(e + E_OWNER) == self) {
		add_own(e, E_OWN_HITS, 1);
		for (k = 0; k < t->nvals; k++)
			add_own(e, E_VALS + 8 * (unsigned int)k, vals[k]);
		return;
	}
	atomic_fetch_add_explicit((_Atomic uint64_t *)(void *)(e + E_HITS), 1,
				  memory_order_relaxed);
	for (k = 0; k < t->nvals; k++)
		atomic_fetch_add_explicit(
			(_Atomic uint64_t *)(void *)(e + E_VALS + 8 * (t->nvals + k)), vals[k],
			memory_order_relaxed);
}

/*
 * The hit into the entry of key (key_bytes bytes, 8-aligned), made if
 * there is none yet; vals: the values' numbers. comm: the thread's name,
 * for execname tables only. Both hit paths inline it.
 */
static inline __attribute__((always_inline)) void
add_hit(struct ukpa_hist_table *t, const unsigned char *key, const uint64_t *vals,
	const char *comm)
{
	struct last_entry *last = &my_last_entries[t->id & (CACHE_SLOTS - 1)];
	unsigned int koff = t->koff, mask = t->mask, i, n;
	uintptr_t self = (uintptr_t)ukpa_self();
	uint64_t hash = 0;

	if (last->id == t->id) {
		unsigned char *e = last->e;

		if (atomic_load_explicit((_Atomic uint64_t *)(void *)e, memory_order_acquire) ==
			    ST_USED &&
		    same(e + koff, key, t->key_bytes)) {
			count_in(t, e, self, vals);
			return;
		}
	}
	for (i = 0; i < t->key_bytes; i += 8)
		hash = hash_word(hash, *(const uint64_t *)(const void *)(key + i));
	for (n = 0, i = (unsigned int)(hash >> t->shift) & mask; n <= mask;
	     n++, i = (i + 1) & mask) {
		unsigned char *e = t->e + (size_t)i * t->esize;
		_Atomic uint64_t *state = (_Atomic uint64_t *)(void *)e;
		uint64_t st = atomic_load_explicit(state, memory_order_acquire);
		int spins;

		if (st == ST_EMPTY) {
			uint64_t expect = ST_EMPTY;

			if (atomic_compare_exchange_strong_explicit(state, &expect, ST_FILLING,
								    memory_order_acq_rel,
								    memory_order_acquire)) {
				copy(e + koff, key, t->key_bytes);
				*(uint64_t *)(void *)(e + E_OWNER) = self;
				if (t->execname)
					key_string(e + t->tail, (const unsigned char *)comm, 16);
				atomic_store_explicit(state, ST_USED, memory_order_release);
				st = ST_USED;
			} else {
				st = expect;
			}
		}
		for (spins = 0; st == ST_FILLING && spins < WAIT_SPINS + WAIT_YIELDS; spins++) {
			/* then yield: a filler preempted inside its few
			 * stores gets the CPU back (on few CPUs, or under an
			 * emulator, spinning alone can outlast its slice) */
			if (spins >= WAIT_SPINS)
				ukpa_sys0(SYS_sched_yield);
			else
				cpu_relax();
			st = atomic_load_explicit(state, memory_order_acquire);
		}
		if (st == ST_FILLING)
			break;
		if (!same(e + koff, key, t->key_bytes))
			continue;
		last->id = t->id;
		last->e = e;
		count_in(t, e, self, vals);
		return;
	}
	atomic_fetch_add_explicit(t->dropped, 1, memory_order_relaxed);
}

/* [hit] */
void ukpa_hist_hit(struct ukpa_hist_table *t, const struct ukp_spec *spec,
		   const unsigned char *data, uint32_t faults, const char *comm, int pid)
{
	const struct ukp_hist *h = t->h;
	unsigned char key[3 * UKP_SPEC_STR_SLOT] __attribute__((aligned(8)));
	uint64_t vals[UKP_HIST_MAX_VALS];
	int k;

	if (h->filter && !ukp_filter_run(h->filter, spec, data, faults, comm, pid))
		return;
	for (k = 0; k < h->nkeys; k++) {
		const struct ukp_hist_field *f = &h->keys[k];

		if (!f->is_string)
			*word(key, f->off) =
				ukp_hist_key_value(f, field_value(f, spec, data, faults, pid));
		else if (f->arg == UKP_HIST_COMM)
			key_string(key + f->off, (const unsigned char *)comm, 16);
		else /* a string that could not be read: "" */
			key_string(key + f->off,
				   faults & (1u << f->arg) ? key_zeros : data + spec->args[f->arg].off,
				   f->size);
	}
	for (k = 0; k < h->nvals; k++)
		vals[k] = field_value(&h->vals[k], spec, data, faults, pid);
	add_hit(t, key, vals, comm);
}

/* [hit] A regs_only table's hit: its fields straight from the
 * registers, nothing fetched into a record. */
void ukpa_hist_hit_regs(struct ukpa_hist_table *t, const struct pt_regs *regs)
{
	const uint64_t *w = (const uint64_t *)(const void *)regs;
	uint64_t key[UKP_HIST_MAX_KEYS], vals[UKP_HIST_MAX_VALS];
	int k;

	for (k = 0; k < t->nkeys; k++) {
		const struct reg_field *r = &t->kreg[k];

		/* numbers only: key word k is at offset 8k */
		key[k] = ukp_hist_mod_value(r->mod, r->buckets,
					    ((w[r->reg] & r->keep) ^ r->sign) - r->sign);
	}
	for (k = 0; k < t->nvals; k++) {
		const struct reg_field *r = &t->vreg[k];

		vals[k] = ((w[r->reg] & r->keep) ^ r->sign) - r->sign;
	}
	add_hit(t, (const unsigned char *)key, vals, NULL);
}

/*
 * [init] The table to ukprobe: UKPM_SYM for the addresses .sym keys
 * show, then UKPM_HIST messages of whole entries (the first with the
 * totals, one even when the table is empty). Runs when the threads may
 * still hit: an entry being filled is left out.
 */
static uint64_t word_of(const unsigned char *e, unsigned int off)
{
	return atomic_load((const _Atomic uint64_t *)(const void *)(e + off));
}

void ukpa_hist_send(const struct ukpa_hist_table *t, uint32_t spec)
{
	const struct ukp_hist *h = t->h;
	unsigned char buf[UKP_MSG_MAX] __attribute__((aligned(8)));
	struct ukp_msg_hist *m = (struct ukp_msg_hist *)(void *)buf;
	unsigned int wsize = ukp_hist_entry_size(h), i, koff = t->tail + (h->execname ? 16 : 0);
	size_t per = (sizeof(buf) - sizeof(*m)) / wsize;
	uint64_t hits = 0;
	bool first = true;
	int k;

	for (i = 0; i < h->size; i++) {
		const unsigned char *e = t->e + (size_t)i * t->esize;

		if (word_of(e, 0) != ST_USED)
			continue;
		hits += word_of(e, E_OWN_HITS) + word_of(e, E_HITS);
		for (k = 0; k < h->nkeys; k++)
			if (h->keys[k].mod == UKP_HM_SYM || h->keys[k].mod == UKP_HM_SYMOFF)
				ukpa_send_sym(*(const uint64_t *)(const void *)(e + koff +
										 h->keys[k].off));
	}
	memset(buf, 0, sizeof(*m));
	for (i = 0;; i++) {
		const unsigned char *e = i < h->size ? t->e + (size_t)i * t->esize : NULL;

		if (e && word_of(e, 0) == ST_USED) {
			/* the wire's entry: state, hits, sums, then comm and key */
			unsigned char *w = m->data + (size_t)m->n * wsize;
			uint64_t v = ST_USED;

			memcpy(w, &v, 8);
			v = word_of(e, E_OWN_HITS) + word_of(e, E_HITS);
			memcpy(w + 8, &v, 8);
			for (k = 0; k < h->nvals; k++) {
				v = word_of(e, E_VALS + 8 * (unsigned int)k) +
				    word_of(e, E_VALS + 8 * (unsigned int)(h->nvals + k));
				memcpy(w + 16 + 8 * k, &v, 8);
			}
			memcpy(w + ukp_hist_comm_off(h), e + t->tail, wsize - ukp_hist_comm_off(h));
			m->n++;
		}
		if (!e || m->n == per) {
			m->h.type = UKPM_HIST;
			m->h.len = (uint32_t)((sizeof(*m) + (size_t)m->n * wsize + 7) & ~(size_t)7);
			m->spec = spec;
			m->entry_size = wsize;
			m->first = first;
			m->hits = first ? hits + atomic_load(t->dropped) : 0;
			m->dropped = first ? atomic_load(t->dropped) : 0;
			if (!e || m->n)
				ukpa_send(m, m->h.len);
			first = false;
			m->n = 0;
		}
		if (!e)
			break;
	}
}
