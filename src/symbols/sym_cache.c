// SPDX-License-Identifier: MIT
/*
 * sym_cache.c - debug files' symbols kept across runs (sym_cache.h).
 *
 * An entry: struct head (its first part, up to n, is the key, compared
 * byte for byte), n then dn struct rec, then the names, strbytes bytes
 * (each NUL-terminated) padded with zeros to a whole word. sum covers
 * the head (with sum 0), the records CHUNK_RECS at a time and the
 * padded names (entry_sum); a load reads the records a chunk at a time,
 * straight into the table they join.
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
#define VERSION 1u
#define SEED 0x5f3c0a11
#define CHUNK_RECS 1638u /* (a chunk of records: 64 KiB, whole words) */

struct head {
	struct ukp_sym_cache_key key;
	/* the key ends here */
	uint64_t n, dn, strbytes;
	uint64_t sum;
};

struct rec {
	uint64_t start, size, sec_end; /* start and sec_end: from the load bias */
	uint32_t name, keylen;         /* the name's offset among the names */
	uint8_t bind, type, sized, pad[5];
};

#define KEY_LEN sizeof(struct ukp_sym_cache_key)
#define PAD8(x) (((x) + 7) & ~(uint64_t)7)

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

/* [reg] Records rec[cnt] into syms (their names in strings[strbytes],
 * NUL-terminated): false when one is not a record this file could hold. */
static bool decode(const struct rec *rec, size_t cnt, uintptr_t base, const char *strings,
		   uint64_t strbytes, struct ukp_sym *syms)
{
	for (size_t i = 0; i < cnt; i++) {
		const struct rec *r = &rec[i];
		struct ukp_sym *s = &syms[i];

		if (r->name >= strbytes || r->keylen >= strbytes - r->name ||
		    (!r->sized && r->sec_end < r->start) || r->sized != !!r->size)
			return false;
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
int ukp_sym_cache_load(const struct ukp_sym_cache_key *k, uintptr_t base, size_t room,
		       size_t droom, struct ukp_symread *rd)
{
	char path[4200];
	struct head h, z;
	struct rec *buf = NULL;
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
	    sizeof(h) + (h.n + h.dn) * sizeof(struct rec) + PAD8(h.strbytes) != size)
		goto out;
	nrec = h.n + h.dn;
	ret = -ENOMEM;
	rd->syms = malloc((room + h.n ? room + h.n : 1) * sizeof(*rd->syms));
	rd->dsyms = malloc((droom + h.dn ? droom + h.dn : 1) * sizeof(*rd->dsyms));
	rd->strings = malloc(PAD8(h.strbytes));
	buf = malloc(CHUNK_RECS * sizeof(*buf));
	if (!rd->syms || !rd->dsyms || !rd->strings || !buf)
		goto out;
	ret = 0;
	off = sizeof(h) + nrec * sizeof(struct rec);
	if (!ukp_disk_cache_read(fd, rd->strings, PAD8(h.strbytes), off) ||
	    rd->strings[h.strbytes - 1])
		goto out;
	z = h;
	z.sum = 0;
	sum = ukp_disk_cache_hash(SEED, &z, sizeof(z));
	for (uint64_t i = 0; i < nrec; i += CHUNK_RECS) {
		size_t cnt = nrec - i < CHUNK_RECS ? (size_t)(nrec - i) : CHUNK_RECS;
		struct ukp_sym *to = i < h.n ? rd->syms + room + i : rd->dsyms + droom + (i - h.n);
		size_t first = i < h.n && h.n - i < cnt ? (size_t)(h.n - i) : cnt;

		if (!ukp_disk_cache_read(fd, buf, cnt * sizeof(*buf), sizeof(h) + i * sizeof(*buf)))
			goto out;
		sum = ukp_disk_cache_mix(sum, ukp_disk_cache_sum(SEED, buf, cnt * sizeof(*buf)));
		/* (a chunk may hold the last functions and the first data) */
		if (!decode(buf, first, base, rd->strings, h.strbytes, to) ||
		    (first < cnt && !decode(buf + first, cnt - first, base, rd->strings, h.strbytes,
					    i < h.n ? rd->dsyms + droom : to + first)))
			goto out;
	}
	sum = ukp_disk_cache_mix(sum, ukp_disk_cache_sum(SEED, rd->strings, PAD8(h.strbytes)));
	if (sum != h.sum || !ordered(rd->syms + room, h.n) || !ordered(rd->dsyms + droom, h.dn))
		goto out;
	rd->n = h.n;
	rd->dn = h.dn;
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

static void encode(const struct ukp_sym *const *syms, size_t n, uintptr_t base,
		   const char *strings, struct rec *out)
{
	for (size_t i = 0; i < n; i++) {
		const struct ukp_sym *s = syms[i];

		memset(&out[i], 0, sizeof(out[i]));
		out[i].start = s->start - base;
		out[i].size = s->sized ? s->size : 0;
		out[i].sec_end = s->sec_end - base;
		out[i].name = (uint32_t)(s->name - strings);
		out[i].keylen = (uint32_t)s->keylen;
		out[i].bind = s->bind;
		out[i].type = s->type;
		out[i].sized = s->sized;
	}
}

/* [reg] */
bool ukp_sym_cache_store(const struct ukp_sym_cache_key *k, uintptr_t base,
			 const struct ukp_sym *const *fn, size_t n,
			 const struct ukp_sym *const *data, size_t dn, const char *strings,
			 size_t strbytes)
{
	char path[4200], *padded;
	struct head h, z;
	struct rec *recs;
	bool ok;

	if (!strbytes || strbytes > UINT32_MAX ||
	    ukp_disk_cache_path("syms", k, KEY_LEN, path, sizeof(path)))
		return false;
	recs = malloc((n + dn ? n + dn : 1) * sizeof(*recs));
	if (!recs)
		return false;
	encode(fn, n, base, strings, recs);
	encode(data, dn, base, strings, recs + n);
	memset(&h, 0, sizeof(h));
	h.key = *k;
	h.n = n;
	h.dn = dn;
	h.strbytes = strbytes;
	z = h;
	h.sum = ukp_disk_cache_hash(SEED, &z, sizeof(z));
	for (size_t i = 0; i < n + dn; i += CHUNK_RECS) {
		size_t cnt = n + dn - i < CHUNK_RECS ? n + dn - i : CHUNK_RECS;

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
				  (const size_t[]){ sizeof(h), (n + dn) * sizeof(*recs),
						    PAD8(strbytes) },
				  3);
	if (ok)
		ukp_sym_cache_last = UKP_SYM_CACHE_STORED;
	free(padded);
	free(recs);
	return ok;
}
