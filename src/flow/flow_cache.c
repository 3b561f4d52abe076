// SPDX-License-Identifier: MIT
/*
 * flow_cache.c - the flow check's findings kept across runs (see
 * flow_cache.h).
 *
 * An entry: struct head, then nlits and ntargets 8-byte offsets from
 * the load bias, each list strictly increasing, then nfdes FDEs (start,
 * end, LSDA: offsets, the LSDA's NO_LSDA when none) in ukp_eh_frame's
 * order (by start, then end). The head's first part
 * (up to nlits) is the key, compared byte for byte; sum covers the head
 * (with sum 0), then each list (the FDEs one) as one piece
 * (ukp_disk_cache_sum).
 *
 * [reg] everything here.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/stat.h>

#include "flow/flow_cache.h"
#include "base/base.h"
#include "base/disk_cache.h"
#include "base/sys.h"
#include "symbols/elf_read.h"
#include "symbols/file_key.h"
#include "symbols/symbols.h"
#include "text/text.h"

size_t ukp_flow_cache_pages, ukp_flow_cache_pages_read;
bool ukp_flow_cache_compare_all;

#define MAGIC "UKPFLOW"
#define VERSION 3u
#define CMP_CHUNK 65536u

struct head {
	char magic[8];
	uint32_t version, pad;
	struct ukp_file_key file; /* (its self id: the library's decoder decided) */
	uint64_t inputs;
	/* the key ends here */
	uint64_t nlits, ntargets, nfdes;
	int64_t eh_err;         /* ukp_eh_frame_load's result (0 or -ENOENT) */
	uint64_t has_hdr;
	uint64_t sum;
};

#define KEY_LEN offsetof(struct head, nlits)

/* /proc/self/pagemap's bits (the kernel's Documentation/admin-guide/mm/pagemap.rst) */
#define PM_PRESENT (1ull << 63)
#define PM_SWAP (1ull << 62)
#define PM_FILE (1ull << 61)     /* a page of a file (or shared anonymous memory) */
#define PM_SOFT_DIRTY (1ull << 55)
#define MAX_XSEGS 8
#define PM_BATCH 512

/* A segment that is executable or not writable: [start, start + len)
 * should hold the file's bytes from off. */
struct xseg {
	uintptr_t start;
	uint64_t off, len;
};

/* Does the page whose pagemap entry is e hold its file's bytes? Absent
 * and never swapped (a fault reads the file), or present and the page
 * cache's (a private mapping's page becomes anonymous once written, by
 * our breakpoints or anyone's). */
static bool page_is_files(uint64_t e)
{
	return !(e & ~PM_SOFT_DIRTY) || (e & (PM_PRESENT | PM_FILE | PM_SWAP)) == (PM_PRESENT | PM_FILE);
}

/* [reg] Is every page over the segments mapped from st's file (its
 * device and inode) at the segment's offset, by /proc/self/maps? */
static bool maps_are_file(const struct stat *st, const struct xseg *xs, size_t n, uintptr_t page)
{
	uint64_t covered[MAX_XSEGS] = { 0 };
	struct ukp_map_ent e;
	struct ukp_maps m;
	bool ok = true;
	size_t i;
	int r;

	if (ukp_maps_open(&m))
		return false;
	while (ok && (r = ukp_maps_next(&m, &e)) == 1) {
		for (i = 0; i < n; i++) {
			uintptr_t lo = xs[i].start & ~(page - 1);
			uintptr_t hi = (xs[i].start + xs[i].len + page - 1) & ~(page - 1);

			if (e.end <= lo || e.start >= hi)
				continue;
			ok &= e.dev == (uint64_t)st->st_dev && e.inode == (uint64_t)st->st_ino &&
			      e.offset - e.start == xs[i].off - xs[i].start;
			covered[i] += (e.end < hi ? e.end : hi) - (e.start > lo ? e.start : lo);
		}
	}
	ukp_maps_close(&m);
	if (r < 0)
		return false;
	for (i = 0; ok && i < n; i++)
		ok = covered[i] == ((xs[i].start + xs[i].len + page - 1) & ~(page - 1)) -
				   (xs[i].start & ~(page - 1));
	return ok;
}

/* [reg] Are [addr, addr + n) in the process, as before our patches, the
 * bytes at file? (buf: CMP_CHUNK bytes) */
static bool same_bytes(uintptr_t addr, const uint8_t *file, uint64_t n, uint8_t *buf)
{
	for (uint64_t off = 0; off < n; off += CMP_CHUNK) {
		size_t k = n - off < CMP_CHUNK ? n - off : CMP_CHUNK;

		if (ukp_read_original(addr + off, buf, k) != k || memcmp(buf, file + off, k))
			return false;
	}
	return true;
}

/* [reg] Does segment x hold the file's bytes (file: the segment's)? The
 * pages the page table shows to be the file's are not read (pm: the
 * pagemap, or -1: every page compared); the others (a breakpoint's,
 * anyone's write, one swapped out) are compared. */
static bool seg_is_files(int pm, const struct xseg *x, const uint8_t *file, uintptr_t page,
			 uint8_t *buf)
{
	uint64_t ent[PM_BATCH];
	uintptr_t p, first = x->start / page, last = (x->start + x->len - 1) / page;

	if (!x->len)
		return true;
	ukp_flow_cache_pages += last - first + 1;
	if (pm < 0) {
		ukp_flow_cache_pages_read += last - first + 1;
		return same_bytes(x->start, file, x->len, buf);
	}
	for (p = first; p <= last;) {
		size_t want = last - p + 1 < PM_BATCH ? last - p + 1 : PM_BATCH, got, k;
		long r = ukp_sys_pread(pm, ent, want * 8, (uint64_t)p * 8);

		got = r > 0 ? (size_t)r / 8 : 0;
		for (k = 0; k < want; k++, p++) {
			uintptr_t lo = p * page < x->start ? x->start : p * page;
			uintptr_t hi = (p + 1) * page > x->start + x->len ? x->start + x->len :
									   (p + 1) * page;

			if (k < got && page_is_files(ent[k]))
				continue;
			ukp_flow_cache_pages_read++;
			if (!same_bytes(lo, file + (lo - x->start), hi - lo, buf))
				return false;
		}
	}
	return true;
}

/*
 * [reg] The key of obj's file, in *h, when the object's executable and
 * read-only segments in the process are the file's bytes and its
 * PT_LOAD layout is segs; else false. What was decoded, and the unwind
 * tables read, are what the file holds: when the
 * mappings over those segments are of the file opened (device, inode,
 * offsets), the pages the page table shows to be the file's are so
 * without being read (seg_is_files); otherwise every byte is compared.
 */
static bool file_key(const struct ukp_object *obj, const struct ukp_eh_seg *segs, size_t nsegs,
		     uint64_t inputs, struct head *h)
{
	struct ukp_elf elf;
	struct stat st;
	struct xseg xs[MAX_XSEGS];
	const uint8_t *file[MAX_XSEGS];
	uint8_t *buf = NULL;
	size_t i, j, nload = 0, nx = 0;
	uintptr_t page = (uintptr_t)ukp_getauxval(AT_PAGESZ);
	bool ok = false;
	int fd, pm = -1;

	memset(h, 0, sizeof(*h));
	if (!obj->path || !obj->path[0])
		return false;
	fd = ukp_sys_open(obj->path, O_RDONLY);
	if (fd < 0)
		return false;
	if (ukp_sys_fstat(fd, &st) || !S_ISREG(st.st_mode) || ukp_elf_open_fd(&elf, fd)) {
		ukp_sys_close(fd);
		return false;
	}
	ukp_sys_close(fd);
	memcpy(h->magic, MAGIC, sizeof(MAGIC));
	h->version = VERSION;
	h->inputs = inputs;
	if (!ukp_file_key_of(&elf, &st, &h->file))
		goto out;
	for (i = 0; i < elf.phnum; i++) {
		const Elf64_Phdr ph = *ukp_elf_phdr(&elf, i);
		bool found = false;

		if (ph.p_type != PT_LOAD)
			continue;
		nload++;
		for (j = 0; j < nsegs; j++)
			found |= segs[j].start == obj->base + ph.p_vaddr &&
				 segs[j].end == obj->base + ph.p_vaddr + ph.p_memsz;
		if (!found)
			goto out;
		/* the code, and what the program does not write: the unwind
		 * tables whose FDEs an entry keeps among them */
		if ((ph.p_flags & PF_W) && !(ph.p_flags & PF_X))
			continue;
		if (nx == MAX_XSEGS || ph.p_filesz != ph.p_memsz ||
		    !(file[nx] = ukp_elf_chunk(&elf, ph.p_offset, ph.p_filesz)))
			goto out;
		xs[nx++] = (struct xseg){ .start = obj->base + ph.p_vaddr, .off = ph.p_offset,
					  .len = ph.p_filesz };
	}
	if (nload != nsegs || !(buf = malloc(CMP_CHUNK)))
		goto out;
	if (!ukp_flow_cache_compare_all && page && !(page & (page - 1)) && page <= CMP_CHUNK &&
	    maps_are_file(&st, xs, nx, page))
		pm = ukp_sys_open("/proc/self/pagemap", O_RDONLY);
	ukp_flow_cache_pages = ukp_flow_cache_pages_read = 0;
	for (i = 0; i < nx; i++)
		if (!seg_is_files(pm, &xs[i], file[i], page, buf))
			goto out;
	ok = true;
	pr_debug("flow cache: %s: its code is its file's (%zu of %zu pages compared)\n", obj->name,
		 ukp_flow_cache_pages_read, ukp_flow_cache_pages);
out:
	if (pm >= 0)
		ukp_sys_close(pm);
	free(buf);
	ukp_elf_close(&elf);
	return ok;
}

/* The last key made (a lookup's, for the store after its miss). */
static struct {
	const struct ukp_object *obj;
	uint64_t gen, inputs;
	uintptr_t base;
	bool ok;
	struct head h;
} last;

/* [reg] file_key; a store takes the key its lookup just made (once). */
static bool key_of(const struct ukp_object *obj, const struct ukp_eh_seg *segs, size_t nsegs,
		   uint64_t inputs, struct head *h, bool store)
{
	if (!store || !(last.obj == obj && last.gen == obj->gen && last.base == obj->base &&
			last.inputs == inputs)) {
		last.obj = obj;
		last.gen = obj->gen;
		last.base = obj->base;
		last.inputs = inputs;
		last.ok = file_key(obj, segs, nsegs, inputs, &last.h);
	}
	*h = last.h;
	if (store)
		last.obj = NULL;
	return last.ok;
}

/* The checksum of an entry whose values are lits, targets and fdes
 * (each list summed as one piece: the entry is read into three arrays). */
static uint64_t entry_sum(const struct head *h, const uint64_t *lits, const uint64_t *targets,
			  const uint64_t *fdes)
{
	struct head z = *h;
	uint64_t sum;

	z.sum = 0;
	sum = ukp_disk_cache_hash(0x75b7f10c, &z, sizeof(z));
	sum = ukp_disk_cache_sum(sum, lits, h->nlits * sizeof(*lits));
	sum = ukp_disk_cache_sum(sum, targets, h->ntargets * sizeof(*targets));
	return ukp_disk_cache_sum(sum, fdes, h->nfdes * 3 * sizeof(*fdes));
}

_Static_assert(sizeof(uintptr_t) == sizeof(uint64_t), "an entry's offsets become addresses in place");

/* [reg] n values of fd from off into *out (malloc()ed; NULL when n is
 * 0): 0, -1 when they cannot be read, -ENOMEM. */
static int read_values(int fd, size_t n, uint64_t off, uintptr_t **out)
{
	*out = NULL;
	if (!n)
		return 0;
	*out = malloc(n * sizeof(**out));
	if (!*out)
		return -ENOMEM;
	return ukp_disk_cache_read(fd, *out, n * sizeof(**out), off) ? 0 : -1;
}

/* [reg] The offsets at v, if strictly increasing, made addresses at base
 * in place. */
static bool rebase(uintptr_t *v, size_t n, uintptr_t base)
{
	for (size_t i = 0; i < n; i++) {
		if (i && v[i] <= v[i - 1] - base)
			return false;
		v[i] += base;
	}
	return true;
}

#define NO_LSDA UINT64_MAX

_Static_assert(sizeof(struct ukp_fde) == 3 * sizeof(uint64_t), "an entry's FDEs are read in place");

/* [reg] The n FDEs at f, offsets in ukp_eh_frame_load's order (by start,
 * then end; each a range), made addresses at base in place. */
static bool rebase_fdes(struct ukp_fde *f, size_t n, uintptr_t base)
{
	for (size_t i = 0; i < n; i++) {
		if (f[i].end < f[i].start || (i && (f[i].start < f[i - 1].start - base ||
			(f[i].start == f[i - 1].start - base && f[i].end < f[i - 1].end - base))))
			return false;
		f[i].start += base;
		f[i].end += base;
		f[i].lsda = f[i].lsda == NO_LSDA ? 0 : f[i].lsda + base;
	}
	return true;
}

static void cached_free(struct ukp_flow_cached *c)
{
	free(c->lits);
	free(c->targets);
	free(c->fdes);
	memset(c, 0, sizeof(*c));
}

/* [reg] The entry is read straight into the arrays the caller gets. */
int ukp_flow_cache_load(const struct ukp_object *obj, const struct ukp_eh_seg *segs, size_t nsegs,
			uint64_t inputs, struct ukp_flow_cached *out)
{
	struct head want, h;
	char path[4200];
	struct ukp_flow_cached c = { 0 };
	uint64_t size, n;
	int fd, err, ret = UKP_FLOW_CACHE_MISS;

	memset(out, 0, sizeof(*out));
	if (!key_of(obj, segs, nsegs, inputs, &want, false) ||
	    ukp_disk_cache_path("flow", &want, KEY_LEN, path, sizeof(path)))
		return UKP_FLOW_CACHE_OFF;
	fd = ukp_disk_cache_open(path, &size);
	if (fd < 0)
		return UKP_FLOW_CACHE_MISS;
	if (size < sizeof(h) || !ukp_disk_cache_read(fd, &h, sizeof(h), 0))
		goto out;
	n = size / 8;
	if (memcmp(&h, &want, KEY_LEN) || h.nlits > n || h.ntargets > n || h.nfdes > n ||
	    sizeof(h) + (h.nlits + h.ntargets + h.nfdes * 3) * 8 != size ||
	    (h.eh_err != 0 && h.eh_err != -ENOENT) || h.has_hdr > 1)
		goto out;
	if ((err = read_values(fd, h.nlits, sizeof(h), &c.lits)) ||
	    (err = read_values(fd, h.ntargets, sizeof(h) + h.nlits * 8, &c.targets)) ||
	    (err = read_values(fd, h.nfdes * 3, sizeof(h) + (h.nlits + h.ntargets) * 8,
			       (uintptr_t **)&c.fdes))) {
		ret = err == -ENOMEM ? -ENOMEM : ret;
		goto out;
	}
	if (entry_sum(&h, (const uint64_t *)c.lits, (const uint64_t *)c.targets,
		      (const uint64_t *)c.fdes) != h.sum ||
	    !rebase(c.lits, h.nlits, obj->base) || !rebase(c.targets, h.ntargets, obj->base) ||
	    !rebase_fdes(c.fdes, h.nfdes, obj->base))
		goto out;
	c.nlits = h.nlits;
	c.ntargets = h.ntargets;
	c.nfdes = h.nfdes;
	c.eh_err = (int)h.eh_err;
	c.has_hdr = h.has_hdr;
	*out = c;
	memset(&c, 0, sizeof(c));
	ret = UKP_FLOW_CACHE_HIT;
out:
	cached_free(&c);
	ukp_sys_close(fd);
	return ret;
}

void ukp_flow_cached_free(struct ukp_flow_cached *c)
{
	cached_free(c);
}

/* [reg] */
int ukp_flow_cache_store(const struct ukp_object *obj, const struct ukp_eh_seg *segs,
			 size_t nsegs, uint64_t inputs, const struct ukp_flow_cached *c)
{
	char path[4200];
	struct head *h;
	uint64_t *v;
	size_t i, len;
	bool ok;

	if (c->eh_err != 0 && c->eh_err != -ENOENT)
		return UKP_FLOW_CACHE_OFF;
	len = sizeof(*h) + (c->nlits + c->ntargets + c->nfdes * 3) * 8;
	h = malloc(len);
	if (!h)
		return UKP_FLOW_CACHE_OFF;
	if (!key_of(obj, segs, nsegs, inputs, h, true) ||
	    ukp_disk_cache_path("flow", h, KEY_LEN, path, sizeof(path))) {
		free(h);
		return UKP_FLOW_CACHE_OFF;
	}
	v = (uint64_t *)(h + 1);
	for (i = 0; i < c->nlits; i++)
		*v++ = c->lits[i] - obj->base;
	for (i = 0; i < c->ntargets; i++)
		*v++ = c->targets[i] - obj->base;
	for (i = 0; i < c->nfdes; i++) {
		*v++ = c->fdes[i].start - obj->base;
		*v++ = c->fdes[i].end - obj->base;
		*v++ = c->fdes[i].lsda ? c->fdes[i].lsda - obj->base : NO_LSDA;
	}
	v = (uint64_t *)(h + 1);
	h->nlits = c->nlits;
	h->ntargets = c->ntargets;
	h->nfdes = c->nfdes;
	h->eh_err = c->eh_err;
	h->has_hdr = c->has_hdr;
	h->sum = entry_sum(h, v, v + c->nlits, v + c->nlits + c->ntargets);
	ok = ukp_disk_cache_write(path, (const void *const[]){ h }, (const size_t[]){ len }, 1);
	free(h);
	return ok ? UKP_FLOW_CACHE_STORED : UKP_FLOW_CACHE_OFF;
}
