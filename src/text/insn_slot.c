/* SPDX-License-Identifier: MIT */
/*
 * insn_slot.c - executable slots for out-of-line copies of probed
 * instructions (the kernel's get_insn_slot()).
 *
 * A copy with a rip-relative operand only works if its slot lies within
 * reach of the original (UKP_SLOT_REACH: x86-64 +-2 GiB, AArch64 +-128
 * MiB), so slots come in 64 KiB chunks mapped into a
 * free gap of the address space near the probe (read from
 * /proc/self/maps). Chunks are r-x; their contents are written through
 * ukp_text_poke(). Unused slot bytes are int3, so a stray jump traps.
 * A chunk's pages are PROT_NONE (not resident) until a slot there is
 * first taken, then filled with int3 and r-x: a punned jump's window
 * holds a chunk for one detour or a few, and a stray jump into a page
 * not in use faults instead of trapping.
 *
 * The trap path maps an address back to its slot's site through a
 * lock-free open-addressing table of chunks. Chunks are never unmapped, so
 * the table only grows.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <unistd.h>
#include <stdatomic.h>

#include "base/base.h"
#include "text/text.h"
#include "base/sys.h"

#define CHUNK_SIZE (64 * 1024UL)
#define SLOTS_PER_CHUNK (CHUNK_SIZE / UKP_SLOT_SIZE)
#define OWNER_BLOCK 128
#define CHUNK_TABLE 4096 /* power of two; 256 GiB of slots at most */
/* Keep a margin so that addr +- displacement stays inside 32 bits. */
#define REACH UKP_SLOT_REACH /* arch_insn.h: a jump's or branch's reach, less a margin */

struct slot_chunk {
	uintptr_t base;
	unsigned int nused;
	unsigned int hint;      /* no free slot below: searches start here */
	uint64_t open;          /* pages filled with int3 and r-x (bit per page) */
	uint64_t used[SLOTS_PER_CHUNK / 64]; /* bit per slot */
	/* The owners, by blocks of OWNER_BLOCK slots allocated with their
	 * first slot taken (a punned jump's window uses one block). */
	struct ukp_site *_Atomic *_Atomic owner[SLOTS_PER_CHUNK / OWNER_BLOCK];
};

static bool used(const struct slot_chunk *c, size_t i)
{
	return c->used[i / 64] >> (i % 64) & 1;
}

static void set_used(struct slot_chunk *c, size_t i, bool on)
{
	if (on)
		c->used[i / 64] |= 1ULL << (i % 64);
	else
		c->used[i / 64] &= ~(1ULL << (i % 64));
}

static struct slot_chunk *_Atomic chunk_table[CHUNK_TABLE];
static struct slot_chunk *chunk_list[CHUNK_TABLE];
static unsigned int nchunks;

static UKP_TRAP_TEXT unsigned int chunk_hash(uintptr_t base)
{
	return (unsigned int)((base >> 16) * 0x9E3779B1u) & (CHUNK_TABLE - 1);
}

/* [trap] The chunk containing addr, or NULL. */
static UKP_TRAP_TEXT struct slot_chunk *chunk_of(uintptr_t addr)
{
	uintptr_t base = addr & ~(CHUNK_SIZE - 1);
	unsigned int h = chunk_hash(base), i;

	for (i = 0; i < CHUNK_TABLE; i++) {
		struct slot_chunk *c = atomic_load_explicit(&chunk_table[(h + i) & (CHUNK_TABLE - 1)],
							    memory_order_acquire);
		if (!c)
			return NULL;
		if (c->base == base)
			return c;
	}
	return NULL;
}

/* [trap] The site whose slot holds addr; *slot gets the slot's start. */
UKP_TRAP_TEXT struct ukp_site *ukp_slot_owner(uintptr_t addr, uintptr_t *slot)
{
	struct slot_chunk *c = chunk_of(addr);
	struct ukp_site *_Atomic *blk;
	size_t idx;

	if (!c)
		return NULL;
	idx = (addr - c->base) / UKP_SLOT_SIZE;
	*slot = c->base + idx * UKP_SLOT_SIZE;
	blk = atomic_load_explicit(&c->owner[idx / OWNER_BLOCK], memory_order_acquire);
	return blk ? atomic_load_explicit(&blk[idx % OWNER_BLOCK], memory_order_acquire) : NULL;
}

static bool in_reach(uintptr_t a, uintptr_t near)
{
	uintptr_t d = a > near ? a - near : near - a;

	return d < REACH;
}

/*
 * Places where mapping a chunk failed although /proc/self/maps shows
 * them free: qemu-user hides its own mappings from the guest's maps and
 * takes MAP_FIXED_NOREPLACE as a hint (as kernels before 4.17 do), so a
 * chunk lands elsewhere and is given back; another thread may have
 * mapped the place since; or it lies above the end of user space of a
 * kernel with fewer address bits than UKP_USER_TOP. Those places are not
 * tried again; a process has few of them.
 */
#define MAX_REFUSED 512 /* 32 MiB of chunks: qemu's own heap beside the libraries */
static uintptr_t refused[MAX_REFUSED];
static unsigned int nrefused;

static bool was_refused(uintptr_t base)
{
	for (unsigned int i = 0; i < nrefused; i++)
		if (refused[i] == base)
			return true;
	return false;
}

/* [reg] Map a new chunk in the free gap closest to near. */
static size_t page_size(void)
{
	static size_t pg;

	if (!pg)
		pg = (size_t)sysconf(_SC_PAGESIZE);
	return pg;
}

/* [reg] Make the pages under [a, a + len) of c usable (int3, r-x), with
 * room for their owners. */
static bool chunk_open(struct slot_chunk *c, uintptr_t a, size_t len)
{
	size_t pg = page_size() < CHUNK_SIZE ? page_size() : CHUNK_SIZE, b;
	uintptr_t p;

	for (b = (a - c->base) / UKP_SLOT_SIZE / OWNER_BLOCK;
	     b <= (a + len - 1 - c->base) / UKP_SLOT_SIZE / OWNER_BLOCK; b++) {
		struct ukp_site *_Atomic *blk;

		if (atomic_load_explicit(&c->owner[b], memory_order_relaxed))
			continue;
		blk = calloc(OWNER_BLOCK, sizeof(*blk));
		if (!blk)
			return false;
		atomic_store_explicit(&c->owner[b], blk, memory_order_release);
	}
	for (p = a & ~(uintptr_t)(pg - 1); p < a + len; p += pg) {
		uint64_t bit = 1ULL << ((p - c->base) / pg);

		if (c->open & bit)
			continue;
		if (ukp_sys_mprotect((void *)p, pg, PROT_READ | PROT_WRITE))
			return false;
		ukp_fill_breakpoints((void *)p, pg);
		if (ukp_sys_mprotect((void *)p, pg, PROT_READ | PROT_EXEC))
			return false;
		c->open |= bit;
	}
	return true;
}

/*
 * [reg] Room below the main thread's stack that stays free: the stack
 * grows down into it up to its limit, and the kernel keeps a guard gap
 * (stack_guard_gap, 1 MiB) between a growing stack and the mapping below;
 * a chunk there would stop the stack's growth (a SIGSEGV in a deep
 * recursion). With no limit the kernel puts mmaps bottom-up, far away.
 */
static uintptr_t stack_room(void)
{
	static uintptr_t room;
	struct rlimit rl;

	if (!room) {
		room = 8UL << 20;
		if (!ukp_sys_getrlimit(RLIMIT_STACK, &rl) && rl.rlim_cur != RLIM_INFINITY &&
		    rl.rlim_cur < (1UL << 30))
			room = rl.rlim_cur;
		room = ((room + CHUNK_SIZE - 1) & ~(CHUNK_SIZE - 1)) + (1UL << 20);
	}
	return room;
}

/* [reg] The start of a mapping as a place to avoid: the stack's with its
 * room below. */
static unsigned long maps_start(const struct ukp_map_ent *e)
{
	unsigned long start = e->start;

	if (strcmp(e->path, "[stack]"))
		return start;
	return start > stack_room() ? start - stack_room() : 0;
}

/* [reg] One try of chunk_new: NULL with *again when the place found was
 * refused (the next try looks elsewhere). */
static struct slot_chunk *chunk_try(uintptr_t near, bool *again)
{
	uintptr_t prev_end = 0x10000, best = 0, bestd = UINTPTR_MAX;
	uintptr_t lo = near > REACH ? near - REACH : 0x10000;
	uintptr_t hi = near + REACH < near ? UINTPTR_MAX : near + REACH;
	unsigned long start, end;
	struct ukp_map_ent e;
	struct ukp_maps m;
	struct slot_chunk *c;
	void *p = NULL;
	int err;

	if (hi > UKP_USER_TOP)
		hi = UKP_USER_TOP; /* stay in user space (arch_insn.h) */
	if (ukp_maps_open(&m))
		return NULL;
	for (;;) {
		int got = ukp_maps_next(&m, &e);
		bool last = got <= 0;

		if (got < 0) {
			ukp_maps_close(&m);
			return NULL;
		}
		if (last) {
			start = end = UKP_USER_TOP;
		} else {
			start = maps_start(&e);
			end = e.end;
		}
		/* gap [prev_end, start): candidates are chunk-aligned */
		if (start > prev_end) {
			uintptr_t g0 = (prev_end + CHUNK_SIZE - 1) & ~(CHUNK_SIZE - 1);
			uintptr_t g1 = (start & ~(CHUNK_SIZE - 1));

			/* leave one chunk of guard above and below */
			if (g1 >= g0 + 3 * CHUNK_SIZE) {
				uintptr_t cand;

				g0 += CHUNK_SIZE;
				g1 -= 2 * CHUNK_SIZE;
				cand = near < g0 ? g0 : near > g1 ? g1 : (near & ~(CHUNK_SIZE - 1));
				/* the next place of the gap, away from near first */
				for (unsigned int k = 0; was_refused(cand) && k <= nrefused; k++)
					cand = cand + CHUNK_SIZE <= g1 ? cand + CHUNK_SIZE
					       : cand - CHUNK_SIZE >= g0 ? cand - CHUNK_SIZE : cand;
				if (!was_refused(cand) && cand >= lo && cand + CHUNK_SIZE <= hi && in_reach(cand, near) &&
				    in_reach(cand + CHUNK_SIZE, near)) {
					uintptr_t d = cand > near ? cand - near : near - cand;

					if (d < bestd) {
						bestd = d;
						best = cand;
					}
				}
			}
		}
		if (end > prev_end)
			prev_end = end;
		if (last)
			break;
	}
	ukp_maps_close(&m);
	if (!best)
		return NULL;
	err = ukp_sys_mmap((void *)best, CHUNK_SIZE, PROT_NONE,
			   MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0, &p);
	if (err && err != -EEXIST && err != -ENOMEM)
		return NULL;
	/* EEXIST: something was mapped there since maps was read; ENOMEM:
	 * above the end of this kernel's user space */
	if (err || (uintptr_t)p != best) {
		if (!err)
			ukp_sys_munmap(p, CHUNK_SIZE);
		if (nrefused == MAX_REFUSED)
			return NULL;
		refused[nrefused++] = best;
		*again = true; /* once per refused place at most */
		return NULL;
	}
	c = calloc(1, sizeof(*c));
	if (!c) {
		ukp_sys_munmap(p, CHUNK_SIZE);
		return NULL;
	}
	c->base = best;
	return c;
}

/* [reg] Map a new chunk in the free gap closest to near (a loop, not a
 * recursion: each try has a maps reader's buffer on the stack). */
static struct slot_chunk *chunk_new(uintptr_t near)
{
	struct slot_chunk *c;
	bool again;

	do {
		again = false;
		c = chunk_try(near, &again);
	} while (!c && again);
	return c;
}

/* [reg] Publish a chunk to the trap path. */
static void chunk_publish(struct slot_chunk *c)
{
	unsigned int h = chunk_hash(c->base), i;

	for (i = 0; i < CHUNK_TABLE; i++) {
		unsigned int k = (h + i) & (CHUNK_TABLE - 1);

		if (!atomic_load(&chunk_table[k])) {
			atomic_store_explicit(&chunk_table[k], c, memory_order_release);
			break;
		}
	}
	chunk_list[nchunks++] = c;
}

/* n free slots in a row in c (aligned to n), or 0. */
static uintptr_t chunk_take_n(struct slot_chunk *c, unsigned int n)
{
	size_t i, k;

	if (c->nused + n > SLOTS_PER_CHUNK)
		return 0;
	/* from the hint: taking thousands of slots in a row stays linear */
	for (i = c->hint / n * n; i + n <= SLOTS_PER_CHUNK; i += n) {
		for (k = 0; k < n && !used(c, i + k); k++)
			;
		if (k < n)
			continue;
		if (!chunk_open(c, c->base + i * UKP_SLOT_SIZE, n * UKP_SLOT_SIZE))
			return 0;
		for (k = 0; k < n; k++)
			set_used(c, i + k, true);
		c->nused += n;
		if (n == 1 || c->hint == i)
			c->hint = (unsigned int)(i + n);
		return c->base + i * UKP_SLOT_SIZE;
	}
	return 0;
}

/* [reg] Is there a free slot within reach of near in a chunk we have? */
bool ukp_slot_have_free(uintptr_t near)
{
	unsigned int i;

	for (i = nchunks; i-- > 0;) {
		struct slot_chunk *c = chunk_list[i];

		if (c->nused < SLOTS_PER_CHUNK && in_reach(c->base, near) &&
		    in_reach(c->base + CHUNK_SIZE, near))
			return true;
	}
	return false;
}

/* [reg] n free slots in a row within reach of near, or 0. */
uintptr_t ukp_slot_alloc_n(uintptr_t near, unsigned int n)
{
	struct slot_chunk *c;
	unsigned int i;
	uintptr_t a;

	/* newest first: the older ones are full after a large batch */
	for (i = nchunks; i-- > 0;) {
		c = chunk_list[i];
		if (c->nused + n <= SLOTS_PER_CHUNK && in_reach(c->base, near) &&
		    in_reach(c->base + CHUNK_SIZE, near) && (a = chunk_take_n(c, n)))
			return a;
	}
	if (nchunks >= CHUNK_TABLE / 2)
		return 0;
	for (i = 0; i < 4; i++) {
		c = chunk_new(near);
		if (c) {
			chunk_publish(c);
			return chunk_take_n(c, n);
		}
	}
	return 0;
}

/*
 * Detours at a given place: a punned jump (optimizer.c) lands in a
 * window [lo, hi] fixed by the bytes after the probed instruction (one
 * address, 256 bytes, 64 KiB or 16 MiB wide). The detour is len bytes
 * starting anywhere in the window, on free slots of a chunk we have or
 * of a new chunk mapped there; it takes every slot it overlaps (4 when
 * it starts inside a slot).
 */
#define USER_LO 0x10000UL
#define USER_HI UKP_USER_TOP /* as chunk_new */

static bool range_free(const struct slot_chunk *c, uintptr_t a, size_t len)
{
	size_t i;

	if (a < c->base || a + len > c->base + CHUNK_SIZE)
		return false;
	for (i = (a - c->base) / UKP_SLOT_SIZE; i <= (a + len - 1 - c->base) / UKP_SLOT_SIZE; i++)
		if (used(c, i))
			return false;
	return true;
}

/* A start in [lo, hi] for len bytes in c (or in a new chunk at base
 * when c is NULL): slot starts first, then lo itself. 0 if none. */
static uintptr_t fit_in(const struct slot_chunk *c, uintptr_t base, uintptr_t lo, uintptr_t hi,
			size_t len)
{
	uintptr_t a = lo > base ? lo : base;

	for (a = (a + UKP_SLOT_SIZE - 1) & ~(uintptr_t)(UKP_SLOT_SIZE - 1);
	     a <= hi && a + len <= base + CHUNK_SIZE; a += UKP_SLOT_SIZE)
		if (!c || range_free(c, a, len))
			return a;
	if (lo >= base && lo <= hi && lo + len <= base + CHUNK_SIZE && (!c || range_free(c, lo, len)))
		return lo;
	return 0;
}

/* The mappings of the process, sorted ([start, end) pairs), or NULL. */
static unsigned long *read_maps(size_t *n)
{
	unsigned long *v = NULL, *nv;
	struct ukp_map_ent e;
	struct ukp_maps m;
	size_t cap = 0;
	int got;

	*n = 0;
	if (ukp_maps_open(&m))
		return NULL;
	while ((got = ukp_maps_next(&m, &e)) > 0) {
		if (*n + 2 > cap) {
			cap = cap ? 2 * cap : 512;
			nv = realloc(v, cap * sizeof(*v));
			if (!nv)
				break;
			v = nv;
		}
		v[(*n)++] = maps_start(&e);
		v[(*n)++] = e.end;
	}
	ukp_maps_close(&m);
	if (got) {
		free(v);
		return NULL;
	}
	return v;
}

/* Is [lo, hi) free of mappings? */
static bool unmapped(const unsigned long *maps, size_t n, uintptr_t lo, uintptr_t hi)
{
	size_t i;

	for (i = 0; i < n; i += 2)
		if (maps[i] < hi && maps[i + 1] > lo)
			return false;
	return true;
}

/* May a chunk go at base: free, with a chunk of guard on each side that
 * is free or one of our chunks (windows of nearby probes share them)? */
static bool chunk_place_ok(const unsigned long *maps, size_t n, uintptr_t base)
{
	return unmapped(maps, n, base, base + CHUNK_SIZE) &&
	       (chunk_of(base - CHUNK_SIZE) || unmapped(maps, n, base - CHUNK_SIZE, base)) &&
	       (chunk_of(base + CHUNK_SIZE) ||
		unmapped(maps, n, base + CHUNK_SIZE, base + 2 * CHUNK_SIZE));
}

/* [reg] A chunk mapped at base (MAP_FIXED_NOREPLACE: never over anything). */
static struct slot_chunk *chunk_map_at(uintptr_t base)
{
	struct slot_chunk *c;
	void *p;

	if (ukp_sys_mmap((void *)base, CHUNK_SIZE, PROT_NONE,
			 MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0, &p))
		return NULL;
	if ((uintptr_t)p != base) {
		ukp_sys_munmap(p, CHUNK_SIZE);
		return NULL;
	}
	c = calloc(1, sizeof(*c));
	if (!c) {
		ukp_sys_munmap(p, CHUNK_SIZE);
		return NULL;
	}
	c->base = base;
	chunk_publish(c);
	return c;
}

static void take_range(struct slot_chunk *c, uintptr_t a, size_t len)
{
	size_t i;

	for (i = (a - c->base) / UKP_SLOT_SIZE; i <= (a + len - 1 - c->base) / UKP_SLOT_SIZE; i++) {
		set_used(c, i, true);
		c->nused++;
	}
}

/*
 * [reg] len bytes of free slots starting in [lo, hi]: in a chunk we have,
 * else in a new chunk mapped in the window where the chunk and one chunk
 * of guard on each side are unmapped. take: claim them (mapping the
 * chunk); else only say where they would be. Returns the start, or 0.
 */
uintptr_t ukp_slot_alloc_window(uintptr_t lo, uintptr_t hi, size_t len, bool take)
{
	unsigned long *maps;
	uintptr_t a = 0, base;
	size_t nmaps;
	unsigned int i;

	if (lo < USER_LO + CHUNK_SIZE)
		lo = USER_LO + CHUNK_SIZE;
	if (hi > USER_HI - 2 * CHUNK_SIZE)
		hi = USER_HI - 2 * CHUNK_SIZE;
	if (lo > hi || !len || len > CHUNK_SIZE)
		return 0;
	for (i = nchunks; i-- > 0;) {
		struct slot_chunk *c = chunk_list[i];

		if (c->base + CHUNK_SIZE <= lo || c->base > hi || c->nused == SLOTS_PER_CHUNK)
			continue;
		a = fit_in(c, c->base, lo, hi, len);
		if (a) {
			if (take && !chunk_open(c, a, len))
				return 0;
			if (take)
				take_range(c, a, len);
			return a;
		}
	}
	if (nchunks >= CHUNK_TABLE / 2)
		return 0;
	maps = read_maps(&nmaps);
	if (!maps)
		return 0;
	for (base = lo & ~(CHUNK_SIZE - 1); base <= hi; base += CHUNK_SIZE) {
		struct slot_chunk *c;

		a = fit_in(NULL, base, lo, hi, len);
		if (!a || !chunk_place_ok(maps, nmaps, base))
			continue;
		if (!take)
			break;
		c = chunk_map_at(base);
		if (c && chunk_open(c, a, len)) {
			take_range(c, a, len);
			break;
		}
		a = 0;
	}
	free(maps);
	return base <= hi ? a : 0;
}

/* [reg] Give back the slots [a, a + len) overlaps (their bytes go back to
 * int3); no thread may be inside. */
void ukp_slot_free_range(uintptr_t a, size_t len)
{
	uintptr_t p;

	for (p = a & ~(uintptr_t)(UKP_SLOT_SIZE - 1); p < a + len; p += UKP_SLOT_SIZE)
		ukp_slot_free(p);
}

/* [reg] */
void ukp_slot_set_owner_range(uintptr_t a, size_t len, struct ukp_site *s)
{
	uintptr_t p;

	for (p = a & ~(uintptr_t)(UKP_SLOT_SIZE - 1); p < a + len; p += UKP_SLOT_SIZE)
		ukp_slot_set_owner(p, s);
}

/* [reg] A free slot within reach of near, or 0. */
uintptr_t ukp_slot_alloc(uintptr_t near)
{
	return ukp_slot_alloc_n(near, 1);
}

/* [reg] The site that owns a slot (NULL to clear). */
void ukp_slot_set_owner(uintptr_t slot, struct ukp_site *s)
{
	struct slot_chunk *c = chunk_of(slot);
	size_t idx = c ? (slot - c->base) / UKP_SLOT_SIZE : 0;
	struct ukp_site *_Atomic *blk =
		c ? atomic_load_explicit(&c->owner[idx / OWNER_BLOCK], memory_order_relaxed) : NULL;

	if (blk)
		atomic_store_explicit(&blk[idx % OWNER_BLOCK], s, memory_order_release);
}

/* [reg] Give a slot back. The caller has waited until no thread can be
 * inside it; its bytes go back to int3. */
void ukp_slot_free(uintptr_t slot)
{
	struct slot_chunk *c = chunk_of(slot);
	struct ukp_site *_Atomic *blk;
	uint8_t fill[UKP_SLOT_SIZE];
	size_t idx;

	if (!c)
		return;
	idx = (slot - c->base) / UKP_SLOT_SIZE;
	ukp_fill_breakpoints(fill, sizeof(fill));
	ukp_text_poke(slot, fill, sizeof(fill));
	blk = atomic_load_explicit(&c->owner[idx / OWNER_BLOCK], memory_order_relaxed);
	if (blk)
		atomic_store(&blk[idx % OWNER_BLOCK], NULL);
	if (used(c, idx)) {
		set_used(c, idx, false);
		c->nused--;
		if (idx < c->hint)
			c->hint = (unsigned int)idx;
	}
}

/* [reg] */
void ukp_slot_set_owner_n(uintptr_t slot, unsigned int n, struct ukp_site *s)
{
	unsigned int i;

	for (i = 0; i < n; i++)
		ukp_slot_set_owner(slot + i * UKP_SLOT_SIZE, s);
}

/* [reg] */
void ukp_slot_free_n(uintptr_t slot, unsigned int n)
{
	unsigned int i;

	for (i = 0; i < n; i++)
		ukp_slot_free(slot + i * UKP_SLOT_SIZE);
}
