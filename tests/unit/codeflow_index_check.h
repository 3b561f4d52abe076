/* SPDX-License-Identifier: MIT */
/*
 * codeflow_index_check.h - the flow check's index of an object built in
 * one pass (the ranges decoded with an executable's literals, as the
 * check does) and in two (each range on its own): the same jump targets,
 * the same code references, the same error. For test_codeflow_nopie and
 * the CPython run of codeflow_index_preload.c.
 */
#ifndef UKT_CODEFLOW_INDEX_CHECK_H
#define UKT_CODEFLOW_INDEX_CHECK_H

#include <errno.h>
#include <link.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/sysmacros.h>
#include <sys/stat.h>
#include <unistd.h>

#include "flow/scan_share.h"
#include "flow/codeflow.h"
#include "flow/flow_cache.h"
#include "base/base.h"
#include "core/core.h"
#include "process/process.h"
#include "text/text.h"
#include "optimizer/optimizer.h"

/* The first index where a and b differ, or the shorter length. */
static size_t ukt_first_diff(const uintptr_t *a, size_t na, const uintptr_t *b, size_t nb)
{
	size_t i;

	for (i = 0; i < na && i < nb && a[i] == b[i]; i++)
		;
	return i;
}

/*
 * Build both and compare; 0 when the same, else -1 with the difference
 * in msg. *one gets the one-pass build's counts (its arrays freed).
 */
/* The same targets and references in a and b? Else why, in msg. */
static bool ukt_index_equal(const struct ukp_codeflow_index *a,
			    const struct ukp_codeflow_index *b, const char *what, char *msg,
			    size_t msglen)
{
	size_t d;

	if (a->refs_err != b->refs_err) {
		snprintf(msg, msglen, "refs error %d (one pass) vs %d (%s)", a->refs_err,
			 b->refs_err, what);
		return false;
	}
	if (a->nfdes != b->nfdes || a->fdes_hash != b->fdes_hash || a->eh_err != b->eh_err ||
	    a->nranges != b->nranges) {
		snprintf(msg, msglen, "%zu vs %zu FDEs (hashes %#llx, %#llx; %d vs %d), %zu vs %zu "
			 "ranges (%s)", a->nfdes, b->nfdes, (unsigned long long)a->fdes_hash,
			 (unsigned long long)b->fdes_hash, a->eh_err, b->eh_err, a->nranges,
			 b->nranges, what);
		return false;
	}
	d = ukt_first_diff(a->targets, a->ntargets, b->targets, b->ntargets);
	if (d < a->ntargets || d < b->ntargets) {
		snprintf(msg, msglen, "%zu vs %zu jump targets (%s), first difference at %zu (%#lx)",
			 a->ntargets, b->ntargets, what, d,
			 (unsigned long)(d < a->ntargets ? a->targets[d] : b->targets[d]));
		return false;
	}
	d = ukt_first_diff(a->refs, a->nrefs, b->refs, b->nrefs);
	if (d < a->nrefs || d < b->nrefs) {
		snprintf(msg, msglen,
			 "%zu vs %zu code references (%s), first difference at %zu (%#lx)",
			 a->nrefs, b->nrefs, what, d,
			 (unsigned long)(d < a->nrefs ? a->refs[d] : b->refs[d]));
		return false;
	}
	return true;
}

/*
 * The index of obj built in one pass (the literal scan serves the ranges)
 * the same as in two, and as in one pass with a large literal scan in
 * one piece (scan_share.c); its ranges and references into *one, and
 * a line in msg ("... the same" and how many scans were split).
 */
static int ukt_index_same(const struct ukp_object *obj, struct ukp_codeflow_index *one,
			  char *msg, size_t msglen)
{
	struct ukp_codeflow_index two = { 0 }, whole = { 0 };
	size_t split_min = ukp_share_min, splits;
	int ret = -1, err;

	memset(one, 0, sizeof(*one));
	if (ukp_lock_for_show() != 0) {
		snprintf(msg, msglen, "no registry lock");
		return -1;
	}
	/* the helper takes its chunks whatever the machine's load */
	splits = ukp_shared_scans;
	ukp_share_wait = true;
	err = ukp_codeflow_index(obj, true, one) || ukp_codeflow_index(obj, false, &two);
	ukp_share_wait = false;
	if (err) {
		snprintf(msg, msglen, "build failed");
		goto out;
	}
	splits = ukp_shared_scans - splits;
	ukp_share_min = SIZE_MAX;
	err = ukp_codeflow_index(obj, true, &whole);
	ukp_share_min = split_min;
	if (err) {
		snprintf(msg, msglen, "build failed (in one piece)");
		goto out;
	}
	if (!ukt_index_equal(one, &two, "two passes", msg, msglen) ||
	    !ukt_index_equal(one, &whole, "in one piece", msg, msglen))
		goto out;
	if (two.nalone != two.nranges) {
		snprintf(msg, msglen, "two passes decoded %zu of %zu ranges alone", two.nalone,
			 two.nranges);
		goto out;
	}
	snprintf(msg, msglen, "%zu ranges (%zu decoded alone in one pass), %zu jump targets, "
		 "%zu code references (%d), %zu scans split: the same", one->nranges, one->nalone,
		 one->ntargets, one->nrefs, one->refs_err, splits);
	ret = 0;
out:
	ukp_unlock_for_show();
	free(one->targets);
	free(one->refs);
	free(two.targets);
	free(two.refs);
	free(whole.targets);
	free(whole.refs);
	one->targets = one->refs = NULL;
	return ret;
}

/* ---- the cache (flow_cache.h) ---- */

/* Build obj's index through the cache in dir: 0 and what the cache did
 * in *use, the arrays into *x (the caller frees them). */
static inline int ukt_index_cached(const struct ukp_object *obj, const char *dir,
			    struct ukp_codeflow_index *x, int *use)
{
	int err;

	memset(x, 0, sizeof(*x));
	x->cached = true;
	ukp_disk_cache_dir_override = dir;
	err = ukp_codeflow_index(obj, true, x);
	ukp_disk_cache_dir_override = NULL;
	*use = x->cache_use;
	return err;
}

/* The one entry in dir (its path in out), or false. */
static inline bool ukt_cache_entry(const char *dir, char *out, size_t len)
{
	char cmd[600];
	FILE *f;
	bool ok;

	snprintf(cmd, sizeof(cmd), "ls %s/flow-* 2>/dev/null", dir);
	f = popen(cmd, "r");
	if (!f)
		return false;
	ok = fgets(out, (int)len, f) != NULL;
	pclose(f);
	if (ok)
		out[strcspn(out, "\n")] = 0;
	return ok;
}

/* Do to the entry what `how` says: "flip" a byte of its values, "last"
 * add one to its last value, "key" change a byte of its key, "truncate"
 * it to half, "chmod" it group-writable. */
static inline bool ukt_cache_spoil(const char *path, const char *how)
{
	FILE *f = fopen(path, "r+b");
	long size;
	int c;

	if (!f)
		return false;
	fseek(f, 0, SEEK_END);
	size = ftell(f);
	if (!strcmp(how, "truncate")) {
		fclose(f);
		return truncate(path, size / 2) == 0;
	}
	if (!strcmp(how, "chmod")) {
		fclose(f);
		return chmod(path, 0660) == 0;
	}
	if (!strcmp(how, "last")) {
		uint64_t v;

		/* the largest target one more: still in order, only the
		 * checksum tells */
		fseek(f, size - 8, SEEK_SET);
		if (fread(&v, 8, 1, f) != 1) {
			fclose(f);
			return false;
		}
		v++;
		fseek(f, size - 8, SEEK_SET);
		fwrite(&v, 8, 1, f);
		return fclose(f) == 0;
	}
	fseek(f, !strcmp(how, "key") ? 40 : size - 8 * 3 + 2, SEEK_SET);
	c = fgetc(f);
	fseek(f, -1, SEEK_CUR);
	fputc(c ^ 0x10, f);
	return fclose(f) == 0;
}

/* Are the mappings over addr of obj's file (its device and inode, as
 * /proc/self/maps shows them and stat() its path)? Where they are not (a
 * file under overlayfs shows another device there), the cache compares
 * every page. */
static inline bool ukt_maps_of_file(const struct ukp_object *obj, uintptr_t addr)
{
	unsigned long lo, hi, ino, maj, min;
	char line[4096];
	struct stat st;
	bool ok = false;
	FILE *f;

	if (stat(obj->path, &st) || !(f = fopen("/proc/self/maps", "r")))
		return false;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "%lx-%lx %*s %*x %lx:%lx %lu", &lo, &hi, &maj, &min, &ino) == 5 &&
		    addr >= lo && addr < hi)
			ok = ino == st.st_ino && maj == major(st.st_dev) && min == minor(st.st_dev);
	fclose(f);
	return ok;
}

struct ukt_hdr_find {
	uintptr_t base, hdr;
};

static inline int ukt_hdr_cb(struct dl_phdr_info *info, size_t size, void *arg)
{
	struct ukt_hdr_find *f = arg;

	(void)size;
	if (info->dlpi_addr != f->base)
		return 0;
	for (size_t i = 0; i < info->dlpi_phnum; i++)
		if (info->dlpi_phdr[i].p_type == PT_GNU_EH_FRAME)
			f->hdr = info->dlpi_addr + info->dlpi_phdr[i].p_vaddr;
	return 1;
}

/* Flip a bit of the byte at b (the page made writable first); put it back
 * with the same call. */
static inline bool ukt_flip(uint8_t *b, int prot_after)
{
	uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE);
	void *pg = (void *)((uintptr_t)b & ~(page - 1));

	if (mprotect(pg, page, PROT_READ | PROT_WRITE | (prot_after & PROT_EXEC)))
		return false;
	*b ^= 0x40;
	__builtin___clear_cache((char *)b, (char *)b + 1);
	return mprotect(pg, page, prot_after) == 0;
}

/*
 * The entry in dir read back while the code of obj at fn (a function
 * not running) is not the file's: a byte of it written (the page becomes
 * anonymous: its pagemap entry no longer shows the file's page), the
 * cache must be neither read nor written; the byte put back, the page
 * (still anonymous) is compared and the entry read. And, untouched, most
 * pages are not read at all; with every page compared (as where the
 * page table cannot be read), the entry is read too. 0, or -1 and why in
 * msg.
 */
static inline int ukt_index_cache_text(const struct ukp_object *obj, const void *fn,
				       const struct ukp_codeflow_index *want, const char *dir,
				       char *msg, size_t msglen)
{
	uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE), at = (uintptr_t)fn + 1;
	void *pg = (void *)(at & ~(page - 1));
	struct ukp_codeflow_index x;
	size_t clean_read, clean_pages, back_read;
	int use, use_bad, use_back;
	uint8_t *b = (uint8_t *)at;

	if (ukt_index_cached(obj, dir, &x, &use))
		goto failed;
	free(x.targets);
	free(x.refs);
	clean_read = ukp_flow_cache_pages_read;
	clean_pages = ukp_flow_cache_pages;
	if (use != UKP_FLOW_CACHE_HIT || !clean_pages ||
	    (ukt_maps_of_file(obj, at) && clean_read * 2 > clean_pages)) {
		snprintf(msg, msglen, "untouched: the cache did %d, %zu of %zu pages compared", use,
			 clean_read, clean_pages);
		return -1;
	}
	if (mprotect(pg, page, PROT_READ | PROT_WRITE | PROT_EXEC)) {
		snprintf(msg, msglen, "mprotect: %s", strerror(errno));
		return -1;
	}
	*b ^= 0x40;
	__builtin___clear_cache((char *)b, (char *)b + 1);
	if (ukt_index_cached(obj, dir, &x, &use_bad)) {
		*b ^= 0x40;
		goto failed;
	}
	free(x.targets);
	free(x.refs);
	*b ^= 0x40;
	__builtin___clear_cache((char *)b, (char *)b + 1);
	mprotect(pg, page, PROT_READ | PROT_EXEC);
	if (use_bad != UKP_FLOW_CACHE_OFF) {
		snprintf(msg, msglen, "a text byte written: the cache did %d, not %d", use_bad,
			 UKP_FLOW_CACHE_OFF);
		return -1;
	}
	if (ukt_index_cached(obj, dir, &x, &use_back))
		goto failed;
	if (!ukt_index_equal(want, &x, "the text put back, through the cache", msg, msglen)) {
		free(x.targets);
		free(x.refs);
		return -1;
	}
	free(x.targets);
	free(x.refs);
	if (use_back != UKP_FLOW_CACHE_HIT || !ukp_flow_cache_pages_read) {
		snprintf(msg, msglen, "the text put back: the cache did %d (%zu pages compared)",
			 use_back, ukp_flow_cache_pages_read);
		return -1;
	}
	/* the unwind tables (whose FDEs the entry keeps) written: not used */
	struct ukt_hdr_find hf = { .base = obj->base };

	dl_iterate_phdr(ukt_hdr_cb, &hf);
	if (hf.hdr) {
		uint8_t *h = (uint8_t *)hf.hdr + 6;	/* (eh_frame_ptr's second byte) */

		if (!ukt_flip(h, PROT_READ)) {
			snprintf(msg, msglen, "mprotect of .eh_frame_hdr: %s", strerror(errno));
			return -1;
		}
		use_bad = -1;
		if (!ukt_index_cached(obj, dir, &x, &use_bad)) {
			free(x.targets);
			free(x.refs);
		}
		ukt_flip(h, PROT_READ);
		if (use_bad != UKP_FLOW_CACHE_OFF) {
			snprintf(msg, msglen, ".eh_frame_hdr written: the cache did %d, not %d",
				 use_bad, UKP_FLOW_CACHE_OFF);
			return -1;
		}
	}
	back_read = ukp_flow_cache_pages_read;
	/* where the page table cannot be read: every page compared, the same */
	ukp_flow_cache_compare_all = true;
	use = -1;
	if (!ukt_index_cached(obj, dir, &x, &use) &&
	    !ukt_index_equal(want, &x, "every page compared, through the cache", msg, msglen)) {
		ukp_flow_cache_compare_all = false;
		free(x.targets);
		free(x.refs);
		return -1;
	}
	ukp_flow_cache_compare_all = false;
	free(x.targets);
	free(x.refs);
	if (use != UKP_FLOW_CACHE_HIT || ukp_flow_cache_pages_read != ukp_flow_cache_pages) {
		snprintf(msg, msglen, "every page compared: the cache did %d, %zu of %zu pages", use,
			 ukp_flow_cache_pages_read, ukp_flow_cache_pages);
		return -1;
	}
	snprintf(msg, msglen, "; untouched %zu of %zu pages compared; a text byte written: "
		 "not used; put back: read (%zu compared); all compared: read%s", clean_read,
		 clean_pages, back_read, hf.hdr ? "; unwind tables written: not used" : "");
	return 0;
failed:
	snprintf(msg, msglen, "cached build failed");
	return -1;
}

/*
 * obj's index through the cache in dir (made fresh): stored, then read
 * back, and read back the same as the build without it after its
 * entry is damaged in each way ukt_cache_spoil knows (each time built
 * again and stored anew). 0, or -1 and why in msg.
 */
static inline int ukt_index_cache_same(const struct ukp_object *obj, const void *fn,
					const char *dir, char *msg, size_t msglen)
{
	static const char *const spoil[] = { "flip", "last", "key", "truncate", "chmod" };
	struct ukp_codeflow_index x, ref = { 0 }, *want = &ref;
	char entry[600];
	size_t k;
	int use, ret = -1;

	if (ukp_lock_for_show() != 0) {
		snprintf(msg, msglen, "no registry lock");
		return -1;
	}
	if (ukp_codeflow_index(obj, true, &ref)) {
		snprintf(msg, msglen, "build failed");
		goto out;
	}
	for (k = 0; k <= 2 * (sizeof(spoil) / sizeof(spoil[0])); k++) {
		/* even steps: built (the first, or after a spoil); odd: read back */
		int expect = k % 2 ? UKP_FLOW_CACHE_HIT : UKP_FLOW_CACHE_STORED;

		if (ukt_index_cached(obj, dir, &x, &use)) {
			snprintf(msg, msglen, "cached build failed (step %zu)", k);
			goto out;
		}
		if (!ukt_index_equal(want, &x, "through the cache", msg, msglen)) {
			free(x.targets);
			free(x.refs);
			goto out;
		}
		free(x.targets);
		free(x.refs);
		if (use != expect) {
			snprintf(msg, msglen, "step %zu (%s): the cache did %d, not %d", k,
				 k ? spoil[(k - 1) / 2] : "first", use, expect);
			goto out;
		}
		if (k % 2 == 0)
			continue;
		if (!ukt_cache_entry(dir, entry, sizeof(entry)) ||
		    !ukt_cache_spoil(entry, spoil[k / 2])) {
			snprintf(msg, msglen, "no entry to spoil in %s", dir);
			goto out;
		}
	}
	if (fn) {
		char more[180];

		if (ukt_index_cache_text(obj, fn, want, dir, more, sizeof(more))) {
			snprintf(msg, msglen, "%s", more);
			goto out;
		}
		snprintf(msg, msglen, "stored, read back, rebuilt after each of %zu damages: the same%s",
			 sizeof(spoil) / sizeof(spoil[0]), more);
	} else {
		snprintf(msg, msglen, "stored, read back, rebuilt after each of %zu damages: the same",
			 sizeof(spoil) / sizeof(spoil[0]));
	}
	ret = 0;
out:
	ukp_unlock_for_show();
	free(ref.targets);
	free(ref.refs);
	return ret;
}

/* How many entries dir holds. */
static inline size_t ukt_cache_count(const char *dir)
{
	char cmd[600], line[600];
	size_t n = 0;
	FILE *f;

	snprintf(cmd, sizeof(cmd), "ls %s/flow-* 2>/dev/null", dir);
	f = popen(cmd, "r");
	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f))
		n++;
	pclose(f);
	return n;
}

/*
 * The n objects' indexes stored in one directory (made fresh) that keeps
 * two entries: each stored, two entries left, the last one read back.
 * 0, or -1 and why in msg.
 */
static inline int ukt_cache_bounded(const struct ukp_object *const *objs, size_t n,
				    const char *dir, char *msg, size_t msglen)
{
	struct ukp_codeflow_index x;
	size_t i, max = ukp_disk_cache_max, left;
	int use, ret = -1;

	if (ukp_lock_for_show() != 0) {
		snprintf(msg, msglen, "no registry lock");
		return -1;
	}
	ukp_disk_cache_max = 2;
	for (i = 0; i <= n; i++) {
		/* the last round reads the last object's entry back */
		const struct ukp_object *obj = objs[i < n ? i : n - 1];
		int expect = i < n ? UKP_FLOW_CACHE_STORED : UKP_FLOW_CACHE_HIT;

		if (ukt_index_cached(obj, dir, &x, &use)) {
			snprintf(msg, msglen, "cached build of %s failed", obj->path);
			goto out;
		}
		free(x.targets);
		free(x.refs);
		if (use != expect) {
			snprintf(msg, msglen, "%s: the cache did %d, not %d", obj->path, use, expect);
			goto out;
		}
	}
	left = ukt_cache_count(dir);
	if (left != 2) {
		snprintf(msg, msglen, "%zu entries left of %zu, not 2", left, n);
		goto out;
	}
	snprintf(msg, msglen, "%zu stored, 2 kept: bounded", n);
	ret = 0;
out:
	ukp_disk_cache_max = max;
	ukp_unlock_for_show();
	return ret;
}

#endif /* UKT_CODEFLOW_INDEX_CHECK_H */
