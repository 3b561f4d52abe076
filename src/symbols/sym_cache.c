// SPDX-License-Identifier: MIT
/*
 * sym_cache.c - debug files' symbols kept across runs (sym_cache.h).
 *
 * An entry: struct head (its first part, up to n, is the key, compared
 * byte for byte), n then dn struct rec, then the names, strbytes bytes
 * (each NUL-terminated) padded with zeros to a whole word. sum covers
 * the head (with sum 0), the records CHUNK_RECS at a time and the
 * padded names. Each record has its place in the joined table: how many
 * of the object's own symbols go before it (those the debug source
 * repeats are not kept); the head has a hash of the own tables they
 * were placed among, which must be the loading object's. A load reads
 * the records a chunk at a time, straight into the joined table, with
 * no comparison.
 *
 * [reg] everything here.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "symbols/sym_cache.h"
#include "base/sys.h"

enum ukp_sym_cache_use ukp_sym_cache_last;

#define MAGIC "UKPSYMS"
#define VERSION 2u
#define SEED 0x5f3c0a11
#define CHUNK_RECS 1638u /* (a chunk of records: 64 KiB, whole words) */

struct head {
	struct ukp_sym_cache_key key;
	/* the key ends here */
	uint64_t n, dn, strbytes;
	uint64_t nown, ndown, own;      /* the object's own tables they joined */
	uint64_t sum;
};

struct rec {
	uint64_t start, size, sec_end; /* start and sec_end: from the load bias */
	uint32_t name, keylen;         /* the name's offset among the names */
	uint32_t rank;                 /* how many of the object's own go before it */
	uint8_t bind, type, sized, pad;
};

#define KEY_LEN sizeof(struct ukp_sym_cache_key)
#define PAD8(x) (((x) + 7) & ~(uint64_t)7)

/* [reg] A hash of the object's own symbols among syms[n] (those not
 * from a debug source), all that their order depends on: the table an
 * entry's ranks place its records in. */
static uint64_t own_hash(uint64_t h, const struct ukp_sym *syms, size_t n, uintptr_t base)
{
	for (size_t i = 0; i < n; i++) {
		const struct ukp_sym *s = &syms[i];

		if (s->debug)
			continue;
		h = ukp_disk_cache_mix(h, s->start - base);
		/* (an unsized one's size is the table's: not its own) */
		h = ukp_disk_cache_mix(h, s->sized ? s->size : 0);
		h = ukp_disk_cache_mix(h, (uint64_t)s->keylen << 24 | (uint64_t)s->bind << 16 |
					  (uint64_t)s->type << 8 | s->sized);
		h = ukp_disk_cache_hash(h, s->name, strlen(s->name));
	}
	return h;
}

/* [reg] */
bool ukp_sym_cache_key(const struct ukp_elf *elf, const struct stat *st, const char *kind,
		       const struct stat *dst, struct ukp_sym_cache_key *k)
{
	memset(k, 0, sizeof(*k));
	memcpy(k->magic, MAGIC, sizeof(MAGIC));
	k->version = VERSION;
	if (!kind || !ukp_file_key_of(elf, st, &k->obj))
		return false;
	if (!strcmp(kind, "build-id"))
		k->kind = 1;
	else if (!strcmp(kind, "debuglink"))
		k->kind = 2;
	else if (!strcmp(kind, "gnu_debugdata"))
		k->kind = 3; /* (inside the object's file: its key says it) */
	else
		return false;
	if (dst)
		ukp_disk_cache_file_of(dst, &k->debug);
	return true;
}

/* Where a load's records go: the table of one kind, its object's own
 * symbols (own[nown]) and how far both are. */
struct fill {
	struct ukp_sym *out;
	size_t k;
	const struct ukp_sym *own;
	size_t nown, i;
};

/* [reg] Records rec[cnt] into f's table, each after the object's own
 * that go before it (its rank): false when one is not a record this
 * entry could hold (names in strings[strbytes], NUL-terminated). */
static bool decode(const struct rec *rec, size_t cnt, uintptr_t base, const char *strings,
		   uint64_t strbytes, struct fill *f)
{
	for (size_t j = 0; j < cnt; j++) {
		const struct rec *r = &rec[j];
		struct ukp_sym *s;

		if (r->name >= strbytes || r->keylen >= strbytes - r->name ||
		    (!r->sized && r->sec_end < r->start) || r->sized != !!r->size ||
		    r->rank < f->i || r->rank > f->nown)
			return false;
		while (f->i < r->rank)
			f->out[f->k++] = f->own[f->i++];
		s = &f->out[f->k++];
		s->start = base + (uintptr_t)r->start;
		s->size = (size_t)r->size;
		s->sec_end = base + (uintptr_t)r->sec_end;
		s->name = strings + r->name;
		s->keylen = r->keylen;
		s->bind = r->bind;
		s->type = r->type;
		s->sized = r->sized;
		s->debug = true;
	}
	return true;
}

/* In address order (what table order is first)? */
static bool ordered(const struct ukp_sym *s, size_t n)
{
	for (size_t i = 1; i < n; i++)
		if (s[i].start < s[i - 1].start)
			return false;
	return true;
}

/* [reg] */
int ukp_sym_cache_load(const struct ukp_sym_cache_key *k, uintptr_t base,
		       const struct ukp_sym *own, size_t nown, const struct ukp_sym *down,
		       size_t ndown, struct ukp_symread *rd)
{
	char path[4200];
	struct head h, z;
	struct rec *buf = NULL;
	struct fill f[2];
	uint64_t size, sum, nrec, off;
	int fd, ret = 0;

	memset(rd, 0, sizeof(*rd));
	ukp_sym_cache_last = UKP_SYM_CACHE_OFF;
	if (ukp_disk_cache_path("syms", k, KEY_LEN, path, sizeof(path)))
		return 0;
	ukp_sym_cache_last = UKP_SYM_CACHE_MISS;
	fd = ukp_disk_cache_open(path, &size);
	if (fd < 0)
		return 0;
	if (size < sizeof(h) || !ukp_disk_cache_read(fd, &h, sizeof(h), 0) ||
	    memcmp(&h.key, k, KEY_LEN) || h.n > size / sizeof(struct rec) ||
	    h.dn > size / sizeof(struct rec) || h.strbytes > size || !h.strbytes ||
	    sizeof(h) + (h.n + h.dn) * sizeof(struct rec) + PAD8(h.strbytes) != size ||
	    h.nown != nown || h.ndown != ndown ||
	    h.own != own_hash(own_hash(SEED, own, nown, base), down, ndown, base))
		goto out;
	nrec = h.n + h.dn;
	ret = -ENOMEM;
	rd->syms = malloc((nown + h.n ? nown + h.n : 1) * sizeof(*rd->syms));
	rd->dsyms = malloc((ndown + h.dn ? ndown + h.dn : 1) * sizeof(*rd->dsyms));
	rd->strings = malloc(PAD8(h.strbytes));
	buf = malloc(CHUNK_RECS * sizeof(*buf));
	if (!rd->syms || !rd->dsyms || !rd->strings || !buf)
		goto out;
	ret = 0;
	off = sizeof(h) + nrec * sizeof(struct rec);
	if (!ukp_disk_cache_read(fd, rd->strings, PAD8(h.strbytes), off) ||
	    rd->strings[h.strbytes - 1])
		goto out;
	f[0] = (struct fill){ .out = rd->syms, .own = own, .nown = nown };
	f[1] = (struct fill){ .out = rd->dsyms, .own = down, .nown = ndown };
	z = h;
	z.sum = 0;
	sum = ukp_disk_cache_hash(SEED, &z, sizeof(z));
	for (uint64_t i = 0; i < nrec; i += CHUNK_RECS) {
		size_t cnt = nrec - i < CHUNK_RECS ? (size_t)(nrec - i) : CHUNK_RECS;
		size_t first = i >= h.n ? 0 : h.n - i < cnt ? (size_t)(h.n - i) : cnt;

		if (!ukp_disk_cache_read(fd, buf, cnt * sizeof(*buf), sizeof(h) + i * sizeof(*buf)))
			goto out;
		sum = ukp_disk_cache_mix(sum, ukp_disk_cache_sum(SEED, buf, cnt * sizeof(*buf)));
		/* (a chunk may hold the last functions and the first data) */
		if (!decode(buf, first, base, rd->strings, h.strbytes, &f[0]) ||
		    !decode(buf + first, cnt - first, base, rd->strings, h.strbytes, &f[1]))
			goto out;
	}
	sum = ukp_disk_cache_mix(sum, ukp_disk_cache_sum(SEED, rd->strings, PAD8(h.strbytes)));
	if (sum != h.sum)
		goto out;
	for (int t = 0; t < 2; t++)
		while (f[t].i < f[t].nown)
			f[t].out[f[t].k++] = f[t].own[f[t].i++];
	if (!ordered(rd->syms, f[0].k) || !ordered(rd->dsyms, f[1].k))
		goto out;
	rd->n = f[0].k;
	rd->dn = f[1].k;
	rd->strbytes = h.strbytes;
	ret = 1;
	ukp_sym_cache_last = UKP_SYM_CACHE_HIT;
out:
	if (ret != 1) {
		free(rd->syms);
		free(rd->dsyms);
		free(rd->strings);
		memset(rd, 0, sizeof(*rd));
	}
	free(buf);
	ukp_sys_close(fd);
	return ret;
}

/* [reg] The debug symbols of the joined table syms[n] into out (how
 * many: the return), each with its rank among the object's own. */
static size_t encode(const struct ukp_sym *syms, size_t n, uintptr_t base, const char *strings,
		     struct rec *out)
{
	size_t m = 0, rank = 0;

	for (size_t i = 0; i < n; i++) {
		const struct ukp_sym *s = &syms[i];
		struct rec *r = &out[m];

		if (!s->debug) {
			rank++;
			continue;
		}
		memset(r, 0, sizeof(*r));
		r->start = s->start - base;
		r->size = s->sized ? s->size : 0;
		r->sec_end = s->sec_end - base;
		r->name = (uint32_t)(s->name - strings);
		r->keylen = (uint32_t)s->keylen;
		r->rank = (uint32_t)rank;
		r->bind = s->bind;
		r->type = s->type;
		r->sized = s->sized;
		m++;
	}
	return m;
}

/* [reg] */
bool ukp_sym_cache_store(const struct ukp_sym_cache_key *k, uintptr_t base,
			 const struct ukp_sym *syms, size_t n, const struct ukp_sym *dsyms,
			 size_t dn, const char *strings, size_t strbytes)
{
	char path[4200], *padded;
	struct head h, z;
	struct rec *recs;
	size_t fn, data;
	bool ok;

	if (!strbytes || strbytes > UINT32_MAX || n > UINT32_MAX || dn > UINT32_MAX ||
	    ukp_disk_cache_path("syms", k, KEY_LEN, path, sizeof(path)))
		return false;
	recs = malloc((n + dn ? n + dn : 1) * sizeof(*recs));
	if (!recs)
		return false;
	fn = encode(syms, n, base, strings, recs);
	data = encode(dsyms, dn, base, strings, recs + fn);
	memset(&h, 0, sizeof(h));
	h.key = *k;
	h.n = fn;
	h.dn = data;
	h.strbytes = strbytes;
	h.nown = n - fn;
	h.ndown = dn - data;
	h.own = own_hash(own_hash(SEED, syms, n, base), dsyms, dn, base);
	z = h;
	h.sum = ukp_disk_cache_hash(SEED, &z, sizeof(z));
	for (size_t i = 0; i < fn + data; i += CHUNK_RECS) {
		size_t cnt = fn + data - i < CHUNK_RECS ? fn + data - i : CHUNK_RECS;

		h.sum = ukp_disk_cache_mix(h.sum, ukp_disk_cache_sum(SEED, recs + i,
								     cnt * sizeof(*recs)));
	}
	/* the names as the entry holds them: padded with zeros */
	padded = calloc(PAD8(strbytes), 1);
	if (!padded) {
		free(recs);
		return false;
	}
	memcpy(padded, strings, strbytes);
	h.sum = ukp_disk_cache_mix(h.sum, ukp_disk_cache_sum(SEED, padded, PAD8(strbytes)));
	ok = ukp_disk_cache_write(path,
				  (const void *const[]){ &h, recs, padded },
				  (const size_t[]){ sizeof(h), (fn + data) * sizeof(*recs),
						    PAD8(strbytes) },
				  3);
	if (ok)
		ukp_sym_cache_last = UKP_SYM_CACHE_STORED;
	free(padded);
	free(recs);
	return ok;
}
