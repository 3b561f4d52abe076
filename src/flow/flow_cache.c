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
#include "base/sys.h"
#include "symbols/elf_read.h"
#include "symbols/symbols.h"
#include "text/text.h"

const char *ukp_flow_cache_dir_override;
bool ukp_flow_cache_off;
size_t ukp_flow_cache_max = 256;

#define MAGIC "UKPFLOW"
#define VERSION 1u
#define BUILD_ID_MAX 64
#define CMP_CHUNK 65536u

struct head {
	char magic[8];
	uint32_t version, machine;
	uint64_t dev, ino, size, mtime_sec, mtime_nsec, ctime_sec, ctime_nsec;
	uint64_t inputs;
	uint32_t build_id_len, self_id_len;
	uint8_t build_id[BUILD_ID_MAX];
	uint8_t self_id[BUILD_ID_MAX]; /* the library's own: its decoder decided */
	/* the key ends here */
	uint64_t nlits, ntargets;
	uint64_t sum;
};

#define KEY_LEN offsetof(struct head, nlits)

/* [reg] The directory (made when it is the default one and missing): 0,
 * or -1 when the cache is off or no directory can be used. */
static int cache_dir(char *out, size_t len)
{
	static bool warned; /* (once per process) */
	const char *env = getenv("UKPROBES_CACHE"), *xdg, *home;
	struct stat st;
	int n;

	if (ukp_flow_cache_off || ukp_sys_getuid() != ukp_sys_geteuid())
		return -1;
	if (ukp_flow_cache_dir_override && ukp_flow_cache_dir_override[0]) {
		env = ukp_flow_cache_dir_override;
	} else if (env && env[0]) {
		if (env[0] != '/') {
			/* "0": off; anything else is a mistake worth a word (a
			 * debug one: the agent takes warnings for a probe's failure) */
			if (strcmp(env, "0") && !warned) {
				pr_debug("flow cache: UKPROBES_CACHE=%s is neither 0 nor an absolute "
					"path: not used\n", env);
				warned = true;
			}
			return -1;
		}
	} else {
		env = NULL;
	}
	if (env) {
		n = snprintf(out, len, "%s", env);
	} else if ((xdg = getenv("XDG_CACHE_HOME")) && xdg[0] == '/') {
		n = snprintf(out, len, "%s/ukprobes", xdg);
	} else if ((home = getenv("HOME")) && home[0] == '/') {
		n = snprintf(out, len, "%s/.cache", home);
		if (n > 0 && (size_t)n < len)
			ukp_sys_mkdir(out, 0700);
		n = snprintf(out, len, "%s/.cache/ukprobes", home);
	} else {
		return -1;
	}
	if (n <= 0 || (size_t)n >= len)
		return -1;
	ukp_sys_mkdir(out, 0700);
	/* the user's own, that no one else can write into */
	if (ukp_sys_stat(out, &st) || !S_ISDIR(st.st_mode) || st.st_uid != ukp_sys_geteuid() ||
	    (st.st_mode & 022)) {
		if (!warned)
			pr_debug("flow cache: %s is not a directory of the user's that no one else "
				"can write: not used\n", out);
		warned = true;
		return -1;
	}
	return 0;
}

static uint64_t hash_bytes(uint64_t h, const void *p, size_t len)
{
	const uint8_t *b = p;
	uint64_t w;

	for (; len >= 8; b += 8, len -= 8) {
		memcpy(&w, b, 8);
		h = ukp_flow_cache_mix(h, w);
	}
	w = 0;
	memcpy(&w, b, len);
	return ukp_flow_cache_mix(h, w ^ len);
}

/* [reg] The build-id of the object holding this code (the library, or
 * the program it is linked into): false when it has none. */
static bool self_id(uint8_t *out, uint32_t *len)
{
	static uint8_t id[BUILD_ID_MAX];
	static size_t idlen;
	static int known; /* 0 not yet, 1 found, -1 none */
	const struct ukp_object *self;

	if (!known) {
		struct ukp_elf elf;
		const uint8_t *p;
		int fd = -1;

		known = -1;
		self = ukp_object_of((uintptr_t)self_id);
		if (self && self->path && self->path[0])
			fd = ukp_sys_open(self->path, O_RDONLY);
		if (fd >= 0 && !ukp_elf_open_fd(&elf, fd)) {
			p = ukp_elf_build_id(&elf, &idlen);
			if (p && idlen && idlen <= BUILD_ID_MAX) {
				memcpy(id, p, idlen);
				known = 1;
			}
			ukp_elf_close(&elf);
		}
		if (fd >= 0)
			ukp_sys_close(fd);
	}
	if (known < 0)
		return false;
	memcpy(out, id, idlen);
	*len = (uint32_t)idlen;
	return true;
}

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
	const uint8_t *id;
	uint8_t *buf = NULL;
	size_t i, j, idlen = 0, nload = 0;
	bool ok = false;
	int fd;

	memset(h, 0, sizeof(*h));
	if (!obj->path || !obj->path[0] || !self_id(h->self_id, &h->self_id_len))
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
	h->machine = elf.ehdr->e_machine;
	h->dev = st.st_dev;
	h->ino = st.st_ino;
	h->size = (uint64_t)st.st_size;
	h->mtime_sec = (uint64_t)st.st_mtim.tv_sec;
	h->mtime_nsec = (uint64_t)st.st_mtim.tv_nsec;
	h->ctime_sec = (uint64_t)st.st_ctim.tv_sec;
	h->ctime_nsec = (uint64_t)st.st_ctim.tv_nsec;
	h->inputs = inputs;
	id = ukp_elf_build_id(&elf, &idlen);
	if (id && idlen <= BUILD_ID_MAX) {
		memcpy(h->build_id, id, idlen);
		h->build_id_len = (uint32_t)idlen;
	}
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
	return hash_bytes(hash_bytes(0x75b7f10c, &z, sizeof(z)), v, n * sizeof(*v));
}

static int entry_path(const char *dir, char *out, size_t len, const struct head *h)
{
	int n = snprintf(out, len, "%s/flow-%016llx", dir,
		     (unsigned long long)hash_bytes(0x5eed, h, KEY_LEN));
	return n > 0 && (size_t)n < len ? 0 : -1;
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
	char dir[4096], path[4200];
	struct stat st;
	uint8_t *data = NULL;
	const uint64_t *v;
	size_t got = 0;
	int fd, ret = UKP_FLOW_CACHE_MISS;

	*lits = *targets = NULL;
	*nlits = *ntargets = 0;
	if (cache_dir(dir, sizeof(dir)) || !key_of(obj, segs, nsegs, inputs, &want, false) ||
	    entry_path(dir, path, sizeof(path), &want))
		return UKP_FLOW_CACHE_OFF;
	fd = ukp_sys_open(path, O_RDONLY | O_NOFOLLOW);
	if (fd < 0)
		return UKP_FLOW_CACHE_MISS;
	/* a regular file of the user's that no one else could have written */
	if (ukp_sys_fstat(fd, &st) || !S_ISREG(st.st_mode) || st.st_uid != ukp_sys_geteuid() ||
	    (st.st_mode & 022) || (uint64_t)st.st_size < sizeof(*h) ||
	    (uint64_t)st.st_size > ((uint64_t)1 << 32) || !(data = malloc((size_t)st.st_size)))
		goto out;
	while (got < (size_t)st.st_size) {
		long r = ukp_sys_pread(fd, data + got, (size_t)st.st_size - got, got);

		if (r <= 0)
			goto out;
		got += (size_t)r;
	}
	h = (struct head *)data;
	v = (const uint64_t *)(h + 1);
	if (memcmp(h, &want, KEY_LEN) || h->nlits > (uint64_t)st.st_size / 8 ||
	    h->ntargets > (uint64_t)st.st_size / 8 ||
	    sizeof(*h) + (h->nlits + h->ntargets) * 8 != (uint64_t)st.st_size ||
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

/*
 * [reg] Room for one more entry in dir: while it holds ukp_flow_cache_max
 * entries or more, the one written longest ago goes (a library rebuilt,
 * or a file replaced, leaves entries that nothing reads any more).
 */
static void make_room(const char *dir)
{
	for (int round = 0; round < 8; round++) {
		char path[4200], oldest[64] = "";
		struct ukp_dir d;
		const char *name;
		struct stat st;
		int64_t oldest_t = INT64_MAX;
		size_t n = 0;

		if (ukp_dir_open(&d, dir))
			return;
		while ((name = ukp_dir_next(&d))) {
			if (strncmp(name, "flow-", 5) || strlen(name) >= sizeof(oldest) ||
			    snprintf(path, sizeof(path), "%s/%s", dir, name) >= (int)sizeof(path) ||
			    ukp_sys_stat(path, &st) || !S_ISREG(st.st_mode))
				continue;
			n++;
			if ((int64_t)st.st_mtim.tv_sec < oldest_t) {
				oldest_t = (int64_t)st.st_mtim.tv_sec;
				strcpy(oldest, name);
			}
		}
		ukp_dir_close(&d);
		if (n < ukp_flow_cache_max || !oldest[0])
			return;
		snprintf(path, sizeof(path), "%s/%s", dir, oldest);
		ukp_sys_unlink(path);
	}
}

/* [reg] */
int ukp_flow_cache_store(const struct ukp_object *obj, const struct ukp_eh_seg *segs,
			 size_t nsegs, uint64_t inputs, const uintptr_t *lits, size_t nlits,
			 const uintptr_t *targets, size_t ntargets)
{
	char dir[4096], path[4200], tmp[4300];
	struct head *h;
	uint64_t *v;
	size_t i, len, done = 0;
	bool ok = false;
	int fd;

	len = sizeof(*h) + (nlits + ntargets) * 8;
	h = malloc(len);
	if (!h)
		return UKP_FLOW_CACHE_OFF;
	if (cache_dir(dir, sizeof(dir)) || !key_of(obj, segs, nsegs, inputs, h, true) ||
	    entry_path(dir, path, sizeof(path), h) ||
	    snprintf(tmp, sizeof(tmp), "%s.%d.tmp", path, ukp_sys_getpid()) >= (int)sizeof(tmp)) {
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
	make_room(dir);
	ukp_sys_unlink(tmp);	/* (a dead process's with this pid) */
	fd = ukp_sys_openat(AT_FDCWD, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
			    0600);
	if (fd >= 0) {
		while (done < len) {
			long r = ukp_sys_write(fd, (const uint8_t *)h + done, len - done);

			if (r <= 0)
				break;
			done += (size_t)r;
		}
		ok = done == len;
		ok &= ukp_sys_close(fd) == 0;
		ok = ok && ukp_sys_rename(tmp, path) == 0;
		if (!ok)
			ukp_sys_unlink(tmp);
	}
	free(h);
	return ok ? UKP_FLOW_CACHE_STORED : UKP_FLOW_CACHE_OFF;
}
