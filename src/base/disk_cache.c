// SPDX-License-Identifier: MIT
/*
 * disk_cache.c - the per-user cache directory and its entries' files
 * (see disk_cache.h).
 *
 * [reg] everything here but the hashing ([any]).
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "base/disk_cache.h"
#include "base/base.h"
#include "base/sys.h"

const char *ukp_disk_cache_dir_override;
bool ukp_disk_cache_off;
size_t ukp_disk_cache_max = 256;

#define HASH_DIGITS 16

/* [any] */
uint64_t ukp_disk_cache_hash(uint64_t h, const void *p, size_t len)
{
	const uint8_t *b = p;
	uint64_t w;

	for (; len >= 8; b += 8, len -= 8) {
		memcpy(&w, b, 8);
		h = ukp_disk_cache_mix(h, w);
	}
	if (!len)
		return h;
	w = 0;
	memcpy(&w, b, len);
	return ukp_disk_cache_mix(h, w ^ (uint64_t)len << 56);
}

/* [any] */
uint64_t ukp_disk_cache_sum(uint64_t h, const void *p, size_t len)
{
	uint64_t l[4] = { h, h ^ 0x243f6a8885a308d3ULL, h ^ 0x13198a2e03707344ULL,
			  h ^ 0xa4093822299f31d0ULL };
	const uint8_t *b = p;
	uint64_t w;

	for (; len >= 32; b += 32, len -= 32)
		for (int i = 0; i < 4; i++) {
			memcpy(&w, b + 8 * i, 8);
			w = (l[i] ^ w) * 0x9e3779b97f4a7c15ULL;
			l[i] = w << 29 | w >> 35;
		}
	h = ukp_disk_cache_mix(ukp_disk_cache_mix(ukp_disk_cache_mix(l[0], l[1]), l[2]), l[3]);
	return ukp_disk_cache_hash(h, b, len);
}

/* [any] */
void ukp_disk_cache_file_of(const struct stat *st, struct ukp_disk_cache_file *f)
{
	memset(f, 0, sizeof(*f));
	f->dev = st->st_dev;
	f->ino = st->st_ino;
	f->size = (uint64_t)st->st_size;
	f->mtime_sec = (uint64_t)st->st_mtim.tv_sec;
	f->mtime_nsec = (uint64_t)st->st_mtim.tv_nsec;
	f->ctime_sec = (uint64_t)st->st_ctim.tv_sec;
	f->ctime_nsec = (uint64_t)st->st_ctim.tv_nsec;
}

/* [reg] The directory (made when it is the default one and missing): 0,
 * or -1 when the cache is off or no directory can be used. */
static int cache_dir(char *out, size_t len)
{
	static bool warned; /* (once per process) */
	const char *env = getenv("UKPROBES_CACHE"), *xdg, *home;
	struct stat st;
	int n;

	if (ukp_disk_cache_off || ukp_sys_getuid() != ukp_sys_geteuid())
		return -1;
	if (ukp_disk_cache_dir_override && ukp_disk_cache_dir_override[0]) {
		env = ukp_disk_cache_dir_override;
	} else if (env && env[0]) {
		if (env[0] != '/') {
			/* "0": off; anything else is a mistake worth a word (a
			 * debug one: the agent takes warnings for a probe's failure) */
			if (strcmp(env, "0") && !warned) {
				pr_debug("cache: UKPROBES_CACHE=%s is neither 0 nor an absolute "
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
			pr_debug("cache: %s is not a directory of the user's that no one else "
				"can write: not used\n", out);
		warned = true;
		return -1;
	}
	return 0;
}

/* [reg] */
int ukp_disk_cache_path(const char *kind, const void *key, size_t keylen, char *out, size_t len)
{
	char dir[4096];
	int n;

	if (cache_dir(dir, sizeof(dir)))
		return -1;
	n = snprintf(out, len, "%s/%s-%0*llx", dir, kind, HASH_DIGITS,
		     (unsigned long long)ukp_disk_cache_hash(0x5eed, key, keylen));
	return n > 0 && (size_t)n < len ? 0 : -1;
}

/* [reg] */
int ukp_disk_cache_open(const char *path, uint64_t *size)
{
	struct stat st;
	int fd = ukp_sys_open(path, O_RDONLY | O_NOFOLLOW);

	if (fd < 0)
		return -1;
	/* a regular file of the user's that no one else could have written */
	if (ukp_sys_fstat(fd, &st) || !S_ISREG(st.st_mode) || st.st_uid != ukp_sys_geteuid() ||
	    (st.st_mode & 022) || (uint64_t)st.st_size > ((uint64_t)1 << 32)) {
		ukp_sys_close(fd);
		return -1;
	}
	*size = (uint64_t)st.st_size;
	return fd;
}

/* [reg] */
bool ukp_disk_cache_read(int fd, void *buf, size_t len, uint64_t off)
{
	size_t got = 0;

	while (got < len) {
		long r = ukp_sys_pread(fd, (uint8_t *)buf + got, len - got, off + got);

		if (r <= 0)
			return false;
		got += (size_t)r;
	}
	return true;
}

/* An entry's name: KIND-HASH, KIND lower-case letters. */
static bool entry_name(const char *name)
{
	const char *p = name;
	size_t i;

	while (*p >= 'a' && *p <= 'z')
		p++;
	if (p == name || *p++ != '-')
		return false;
	for (i = 0; i < HASH_DIGITS; i++)
		if (!((p[i] >= '0' && p[i] <= '9') || (p[i] >= 'a' && p[i] <= 'f')))
			return false;
	return !p[HASH_DIGITS];
}

/*
 * [reg] Room for one more entry in dir: while it holds ukp_disk_cache_max
 * entries or more, the one written longest ago goes (a library rebuilt,
 * or a file replaced, leaves entries that nothing reads any more).
 */
static void make_room(const char *dir)
{
	for (int round = 0; round < 8; round++) {
		char path[4300], oldest[64] = "";
		struct ukp_dir d;
		const char *name;
		struct stat st;
		int64_t oldest_t = INT64_MAX;
		size_t n = 0;

		if (ukp_dir_open(&d, dir))
			return;
		while ((name = ukp_dir_next(&d))) {
			if (!entry_name(name) || strlen(name) >= sizeof(oldest) ||
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
		if (n < ukp_disk_cache_max || !oldest[0])
			return;
		snprintf(path, sizeof(path), "%s/%s", dir, oldest);
		ukp_sys_unlink(path);
	}
}

/* [reg] */
bool ukp_disk_cache_write(const char *path, const void *const *parts, const size_t *lens,
			  size_t nparts)
{
	char dir[4200], tmp[4300];
	const char *slash = strrchr(path, '/');
	bool ok = true;
	int fd;

	if (!slash || (size_t)(slash - path) >= sizeof(dir) ||
	    snprintf(tmp, sizeof(tmp), "%s.%d.tmp", path, ukp_sys_getpid()) >= (int)sizeof(tmp))
		return false;
	memcpy(dir, path, (size_t)(slash - path));
	dir[slash - path] = '\0';
	make_room(dir);
	ukp_sys_unlink(tmp);	/* (a dead process's with this pid) */
	fd = ukp_sys_openat(AT_FDCWD, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
			    0600);
	if (fd < 0)
		return false;
	for (size_t i = 0; i < nparts && ok; i++) {
		size_t done = 0;

		while (done < lens[i]) {
			long r = ukp_sys_write(fd, (const uint8_t *)parts[i] + done, lens[i] - done);

			if (r <= 0)
				break;
			done += (size_t)r;
		}
		ok = done == lens[i];
	}
	ok &= ukp_sys_close(fd) == 0;
	ok = ok && ukp_sys_rename(tmp, path) == 0;
	if (!ok)
		ukp_sys_unlink(tmp);
	return ok;
}
