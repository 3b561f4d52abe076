/* SPDX-License-Identifier: MIT */
/*
 * load.h - ukprobe's ptrace loader (load.c): a freestanding static-PIE
 * object mapped into a process and started on a thread of its own, with
 * nothing of the program called (doc/static_agent.md). The object's
 * entry gets a struct ukp_load_block (common/load_block.h).
 *
 * Runs in ukprobe's main thread; the process's threads are held stopped
 * from a load (or an unload) to ukp_load_release().
 */
#ifndef UKPROBE_LOAD_H
#define UKPROBE_LOAD_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct ukp_held;

struct ukp_loaded {
	pid_t pid;
	pid_t tid;                /* the object's thread */
	uintptr_t area;           /* its image, then the clone trampoline's page */
	size_t area_len;
	uintptr_t stack;          /* its stack (a guard page at the bottom) */
	size_t stack_len;
	uintptr_t block;          /* the ukp_load_block, at the stack's top */
	uintptr_t entry;
	char err[256];            /* why the last call failed: one line */
	struct ukp_held *held;    /* the threads held stopped, until the release */
};

/*
 * Load the object at path into the running process pid (attached with
 * PTRACE_SEIZE, every thread stopped with PTRACE_INTERRUPT) and start its
 * thread with params[0..len) in its block. 0, with the threads still
 * stopped (ukp_load_release() lets them go), or -errno and l->err (the
 * process left as it was, let go).
 */
int ukp_load_attach(pid_t pid, const char *path, const void *params, size_t len,
		    struct ukp_loaded *l);
/*
 * The same for a child of ukprobe's stopped at the SIGTRAP of its execve
 * (PTRACE_TRACEME): it is run to its entry point (AT_ENTRY) first, and is
 * held there.
 */
int ukp_load_at_entry(pid_t pid, const char *path, const void *params, size_t len,
		      struct ukp_loaded *l);
/* Let the held threads go (their registers and signal masks as they were). */
void ukp_load_release(struct ukp_loaded *l);
/*
 * After the object's thread was told to end (its own protocol): wait up
 * to timeout_ms for it to end, then stop the process, unmap its stack
 * and the object, and let the process go. 0, or -errno and l->err
 * (-ETIMEDOUT: the thread is still there, nothing was unmapped).
 */
int ukp_unload(struct ukp_loaded *l, int timeout_ms);

/* ---------------------------------------------- the object (load_elf.c) */

#define UKP_IMAGE_SEGS 16

struct ukp_image {
	unsigned char *buf;       /* the image as mapped: segments at their offsets, the rest 0 */
	size_t len;               /* page-rounded */
	uintptr_t entry;          /* offsets in the image */
	struct { uintptr_t off; size_t len; int prot; } seg[UKP_IMAGE_SEGS];
	int nseg;
	uintptr_t relro_off;      /* PT_GNU_RELRO, pages read-only once relocated */
	size_t relro_len;
	uintptr_t rela_off, relr_off;  /* the relocations in buf (0: none) */
	size_t rela_n, relr_n;
};

/* Read a static PIE (ELF64, this architecture, ET_DYN, no interpreter,
 * no DT_NEEDED, no TLS, relative relocations only). 0, or -1 with
 * err (one line). */
int ukp_image_read(const char *path, struct ukp_image *im, char *err, size_t errlen);
/* Apply its relocations for the load address base, in im->buf. */
void ukp_image_relocate(struct ukp_image *im, uintptr_t base);
void ukp_image_free(struct ukp_image *im);

#endif /* UKPROBE_LOAD_H */
