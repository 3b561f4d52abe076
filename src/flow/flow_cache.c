// SPDX-License-Identifier: MIT
/*
 * flow_cache.c - the flow check's findings kept across runs (see
 * flow_cache.h).
 *
 * An entry: struct head, then nlits and ntargets 8-byte offsets from
 * the load bias, each list strictly increasing. The head's first part
 * (up to nlits) is the key, compared byte for byte; sum covers the head
 * (with sum 0) and the values.
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
#include <sys/stat.h>

#include "flow/flow_cache.h"
#include "base/base.h"
#include "base/disk_cache.h"
#include "base/sys.h"
#include "symbols/elf_read.h"
#include "symbols/file_key.h"
#include "symbols/symbols.h"
#include "text/text.h"

#define MAGIC "UKPFLOW"
#define VERSION 2u
#define CMP_CHUNK 65536u

struct head {
	char magic[8];
	uint32_t version, pad;
	struct ukp_file_key file; /* (its self id: the library's decoder decided) */
	uint64_t inputs;
	/* the key ends here */
	uint64_t nlits, ntargets;
	uint64_t sum;
};

#define KEY_LEN offsetof(struct head, nlits)

/*
 * [reg] The key of obj's file, in *h, when the object's executable
 * segments in the process are the file's bytes and its PT_LOAD layout
 * is segs; else false.
 */
static bool file_key(const struct ukp_object *obj, const struct ukp_eh_seg *segs, size_t nsegs,
		     uint64_t inputs, struct head *h)
{
	struct ukp_elf elf;
	struct stat st;
	uint8_t *buf = NULL;
	size_t i, j, nload = 0;
	bool ok = false;
	int fd;

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
	buf = malloc(CMP_CHUNK);
	if (!buf)
		goto out;
	for (i = 0; i < elf.phnum; i++) {
		const Elf64_Phdr ph = *ukp_elf_phdr(&elf, i);
		const uint8_t *file;
		bool found = false;

		if (ph.p_type != PT_LOAD)
			continue;
		nload++;
		for (j = 0; j < nsegs; j++)
			found |= segs[j].start == obj->base + ph.p_vaddr &&
				 segs[j].end == obj->base + ph.p_vaddr + ph.p_memsz;
		if (!found)
			goto out;
		if (!(ph.p_flags & PF_X))
			continue;
		/* what was decoded is what the file holds */
		file = ukp_elf_chunk(&elf, ph.p_offset, ph.p_filesz);
		if (!file || ph.p_filesz != ph.p_memsz)
			goto out;
		for (uint64_t off = 0; off < ph.p_filesz; off += CMP_CHUNK) {
			size_t n = ph.p_filesz - off < CMP_CHUNK ? ph.p_filesz - off : CMP_CHUNK;

			if (ukp_read_original(obj->base + ph.p_vaddr + off, buf, n) != n ||
			    memcmp(buf, file + off, n))
				goto out;
		}
	}
	ok = nload == nsegs;
out:
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

static uint64_t entry_sum(const struct head *h, const uint64_t *v, size_t n)
{
	struct head z = *h;

	z.sum = 0;
	return ukp_disk_cache_sum(ukp_disk_cache_hash(0x75b7f10c, &z, sizeof(z)), v,
				  n * sizeof(*v));
}

/* Strictly increasing? */
static bool increasing(const uint64_t *v, size_t n)
{
	for (size_t i = 1; i < n; i++)
		if (v[i] <= v[i - 1])
			return false;
	return true;
}

/* [reg] The n offsets at v as addresses at base (malloc()ed, NULL if none). */
static int absolute(const uint64_t *v, size_t n, uintptr_t base, uintptr_t **out)
{
	*out = NULL;
	if (!n)
		return 0;
	*out = malloc(n * sizeof(**out));
	if (!*out)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++)
		(*out)[i] = base + (uintptr_t)v[i];
	return 0;
}

/* [reg] */
int ukp_flow_cache_load(const struct ukp_object *obj, const struct ukp_eh_seg *segs, size_t nsegs,
			uint64_t inputs, uintptr_t **lits, size_t *nlits, uintptr_t **targets,
			size_t *ntargets)
{
	struct head want, *h;
	char path[4200];
	uint8_t *data = NULL;
	const uint64_t *v;
	uint64_t size;
	int fd, ret = UKP_FLOW_CACHE_MISS;

	*lits = *targets = NULL;
	*nlits = *ntargets = 0;
	if (!key_of(obj, segs, nsegs, inputs, &want, false) ||
	    ukp_disk_cache_path("flow", &want, KEY_LEN, path, sizeof(path)))
		return UKP_FLOW_CACHE_OFF;
	fd = ukp_disk_cache_open(path, &size);
	if (fd < 0)
		return UKP_FLOW_CACHE_MISS;
	if (size < sizeof(*h) || !(data = malloc((size_t)size)) ||
	    !ukp_disk_cache_read(fd, data, (size_t)size, 0))
		goto out;
	h = (struct head *)data;
	v = (const uint64_t *)(h + 1);
	if (memcmp(h, &want, KEY_LEN) || h->nlits > size / 8 || h->ntargets > size / 8 ||
	    sizeof(*h) + (h->nlits + h->ntargets) * 8 != size ||
	    entry_sum(h, v, h->nlits + h->ntargets) != h->sum || !increasing(v, h->nlits) ||
	    !increasing(v + h->nlits, h->ntargets))
		goto out;
	if (absolute(v, h->nlits, obj->base, lits) ||
	    absolute(v + h->nlits, h->ntargets, obj->base, targets)) {
		free(*lits);
		*lits = NULL;
		ret = -ENOMEM;
		goto out;
	}
	*nlits = h->nlits;
	*ntargets = h->ntargets;
	ret = UKP_FLOW_CACHE_HIT;
out:
	free(data);
	ukp_sys_close(fd);
	return ret;
}

/* [reg] */
int ukp_flow_cache_store(const struct ukp_object *obj, const struct ukp_eh_seg *segs,
			 size_t nsegs, uint64_t inputs, const uintptr_t *lits, size_t nlits,
			 const uintptr_t *targets, size_t ntargets)
{
	char path[4200];
	struct head *h;
	uint64_t *v;
	size_t i, len;
	bool ok;

	len = sizeof(*h) + (nlits + ntargets) * 8;
	h = malloc(len);
	if (!h)
		return UKP_FLOW_CACHE_OFF;
	if (!key_of(obj, segs, nsegs, inputs, h, true) ||
	    ukp_disk_cache_path("flow", h, KEY_LEN, path, sizeof(path))) {
		free(h);
		return UKP_FLOW_CACHE_OFF;
	}
	v = (uint64_t *)(h + 1);
	for (i = 0; i < nlits; i++)
		v[i] = lits[i] - obj->base;
	for (i = 0; i < ntargets; i++)
		v[nlits + i] = targets[i] - obj->base;
	h->nlits = nlits;
	h->ntargets = ntargets;
	h->sum = entry_sum(h, v, nlits + ntargets);
	ok = ukp_disk_cache_write(path, (const void *const[]){ h }, (const size_t[]){ len }, 1);
	free(h);
	return ok ? UKP_FLOW_CACHE_STORED : UKP_FLOW_CACHE_OFF;
}
