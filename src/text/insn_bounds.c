/* SPDX-License-Identifier: MIT */
/*
 * insn_bounds.c - instruction boundaries of functions, decoded once per
 * function while a register_kprobes() batch lasts.
 *
 * A probe inside a function must sit on an instruction boundary, which
 * only decoding from the function's start tells (arch_check_boundary).
 * A batch with many probes inside the same functions would decode each
 * function again for every probe (quadratic in its size); here a
 * function is decoded once into a bitmap of instruction starts. The
 * cache lives for one batch (ukp_bounds_forget at its end): between two
 * calls an object may be unloaded and other code mapped at its address.
 *
 * Every function here is [reg].
 */
#include <errno.h>
#include <stdlib.h>

#include "text/text.h"
#include "base/base.h"
#include "base/obj_pool.h"

#define NFUNCS 4096              /* power of two */
#define MAX_FUNC (1024 * 1024UL) /* larger ones take the slow path */

struct func_bounds {
	uintptr_t start;
	size_t walked;   /* the next instruction to decode starts here */
	bool stuck;      /* it does not decode: nothing past it is a boundary */
	uint64_t *bits;  /* bit k: an instruction starts at start + k */
};

/* NFUNCS entries while a batch lasts, else NULL: a mapping of its own
 * (ukp_batch_zalloc), not resident between batches. */
static struct func_bounds *cache;

static unsigned int func_hash(uintptr_t start)
{
	return (unsigned int)((start * 0x9E3779B97F4A7C15ULL) >> 52) & (NFUNCS - 1);
}

/* Decode e's function on through off (its original code, without our
 * patches): the instructions starting at or before off. */
static void decode_to(struct func_bounds *e, const struct ukp_symres *sym, size_t off)
{
	uint8_t code[4096 + UKP_MAX_INSN_SIZE];

	while (!e->stuck && e->walked <= off) {
		size_t want = off + 1 - e->walked, n, pos = 0, len;

		if (want > 4096)
			want = 4096;
		/* whole instructions: up to 15 bytes past the last start */
		n = want + UKP_MAX_INSN_SIZE;
		if (e->walked + n > sym->size)
			n = sym->size - e->walked;
		n = ukp_read_original(sym->start + e->walked, code, n);
		while (pos < want && pos < n) {
			e->bits[(e->walked + pos) / 64] |= 1ULL << ((e->walked + pos) % 64);
			len = arch_insn_length(code + pos, n - pos);
			if (!len) {
				e->stuck = true;
				break;
			}
			pos += len;
		}
		if (!pos)
			break; /* unreadable: not known here */
		e->walked += pos;
	}
}

/*
 * Is off an instruction boundary of sym's function? 0 (yes), -EILSEQ
 * (no, as arch_check_boundary would say), or 1: not known here (an
 * unsized or very large function, no memory): the caller decodes as
 * without the cache.
 */
int ukp_bounds_check(const struct ukp_symres *sym, size_t off)
{
	struct func_bounds *e;

	if (!sym->size || sym->size > MAX_FUNC || off >= sym->size)
		return 1;
	if (!cache && !(cache = ukp_batch_zalloc(NFUNCS * sizeof(*cache))))
		return 1;
	e = &cache[func_hash(sym->start)];
	if (!e->bits || e->start != sym->start) {
		free(e->bits);
		e->bits = calloc(sym->size / 64 + 1, sizeof(uint64_t));
		if (!e->bits)
			return 1;
		e->start = sym->start;
		e->walked = 0;
		e->stuck = false;
	}
	decode_to(e, sym, off);
	if (e->bits[off / 64] & (1ULL << (off % 64)))
		return 0;
	return off < e->walked || e->stuck ? -EILSEQ : 1;
}

/* At the end of a batch. */
void ukp_bounds_forget(void)
{
	/* (free only what there is: each call enters libc's free, which
	 * the batch may have probed) */
	if (!cache)
		return;
	for (unsigned int i = 0; i < NFUNCS; i++) {
		if (!cache[i].bits)
			continue;
		free(cache[i].bits);
		cache[i].bits = NULL;
	}
	ukp_batch_free(cache);
	cache = NULL;
}
