/* SPDX-License-Identifier: MIT */
/*
 * disk_cache.h - the per-user directory where the library keeps what it
 * learnt of a file across runs, as perf keeps build-ids in ~/.debug: the
 * flow check's findings (flow/flow_cache.h) and the symbols of a debug
 * file (symbols/sym_cache.h). This file owns the directory and its
 * entries' files; what an entry holds and what keys it is its user's.
 *
 * Where: $UKPROBES_CACHE when it names a directory (an absolute path),
 * else $XDG_CACHE_HOME/ukprobes, else $HOME/.cache/ukprobes;
 * UKPROBES_CACHE=0 turns it off, as does a program whose effective user
 * is not its real one. The directory must belong to the effective user
 * and be writable by no one else (made so, mode 0700, when missing); an
 * entry must belong to the user, be writable by no one else and be a
 * regular file, or it is not read. A directory keeps ukp_disk_cache_max
 * entries at most, of every kind together (the oldest written go
 * first). An entry is named KIND-HASH (HASH: 16 hex digits of its key's
 * hash); stores write a temporary file in the directory and rename it
 * over the entry, so a reader sees a whole entry or none.
 *
 * Context: [reg] (registration time, registry mutex held, may allocate).
 */
#ifndef UKP_DISK_CACHE_H
#define UKP_DISK_CACHE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>

/* A hash of words: h = ukp_disk_cache_mix(h, w). */
static inline uint64_t ukp_disk_cache_mix(uint64_t h, uint64_t w)
{
	h ^= w + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2);
	return h * 0xff51afd7ed558ccdULL;
}

/* [any] The hash of len bytes at p, from h. A whole number of 8-byte
 * words hashes the same in one call or in pieces of whole words (an
 * entry's checksum, read a chunk at a time). */
uint64_t ukp_disk_cache_hash(uint64_t h, const void *p, size_t len);

/* [any] A checksum of len bytes at p, from h: four independent lanes,
 * for an entry's hundreds of kilobytes (one piece at a time: pieces
 * sum differently than their whole). */
uint64_t ukp_disk_cache_sum(uint64_t h, const void *p, size_t len);

/* A file as stat() saw it, for a key: another inode, size, modification
 * or change time is another file. */
struct ukp_disk_cache_file {
	uint64_t dev, ino, size, mtime_sec, mtime_nsec, ctime_sec, ctime_nsec;
};

/* [any] st as a key's part. */
void ukp_disk_cache_file_of(const struct stat *st, struct ukp_disk_cache_file *f);

/*
 * [reg] The path of the entry of kind ("flow", "syms") for the key's
 * keylen bytes, into out[len]: 0, or -1 when the cache is off or no
 * directory can be used (the default one is made when missing).
 */
int ukp_disk_cache_path(const char *kind, const void *key, size_t keylen, char *out, size_t len);

/* [reg] A descriptor of the entry at path, and its size, when it is one
 * to trust (a regular file of the user's that no one else could have
 * written); else -1. */
int ukp_disk_cache_open(const char *path, uint64_t *size);

/* [reg] All len bytes at off of fd into buf: true, or false. */
bool ukp_disk_cache_read(int fd, void *buf, size_t len, uint64_t off);

/* [reg] Write the entry at path (a path ukp_disk_cache_path gave): the
 * nparts pieces parts[i] of lens[i] bytes, one after the other, to a
 * temporary file renamed over it, after making room in its directory.
 * True when it was written (false is no error: a cache is not needed). */
bool ukp_disk_cache_write(const char *path, const void *const *parts, const size_t *lens,
			  size_t nparts);

/* Tests: a directory to use instead of the environment's ("" or NULL:
 * the environment's), and whether the cache is off for this process. */
extern const char *ukp_disk_cache_dir_override;
extern bool ukp_disk_cache_off;
/* The most entries a directory keeps: a store into a full one removes the
 * entries written longest ago first (tests lower it). */
extern size_t ukp_disk_cache_max;

#endif /* UKP_DISK_CACHE_H */
