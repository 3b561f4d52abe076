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

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct ukp_held;

struct ukp_loaded {
	pid_t pid;
	pid_t tid;                /* the object's thread */
	pid_t worker;             /* the held thread that made the system calls */
	uintptr_t area;           /* its image, then the clone trampoline's page */
	size_t area_len;
	uintptr_t stack;          /* its stack (a guard page at the bottom) */
	size_t stack_len;
	uintptr_t block;          /* the ukp_load_block, at the stack's top */
	uintptr_t entry;
	/* the program image it was loaded into: AT_RANDOM's address and its
	 * 16 bytes, new at every exec (an exec takes the object with it, and
	 * its addresses may then be the new program's) */
	unsigned char image_id[24];
	bool image_id_ok;
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
/* The same where the child is stopped now (a system call's stop). */
int ukp_load_stopped(pid_t pid, const char *path, const void *params, size_t len,
		     struct ukp_loaded *l);
/* Wait up to timeout_ms for the object's thread to end (nothing is
 * unmapped; the held threads stay held). 0, or -errno and l->err. */
int ukp_load_wait_end(struct ukp_loaded *l, int timeout_ms);
/* Let the held threads go (their registers and signal masks as they were). */
void ukp_load_release(struct ukp_loaded *l);
/*
 * After the object's thread was told to end (its own protocol): wait up
 * to timeout_ms for it to end, then stop the process, unmap its stack
 * and the object, and let the process go. When the object said at its
 * end that it gave back what it took (its block's unload word,
 * load_block.h), the mappings it listed go too, and the threads whose
 * block base (x86-64's GS base) is the object's get 0 back; it is done
 * with every thread stopped outside the object's code and memory (a
 * thread found inside is let go and looked at again, until timeout_ms).
 * 0, or -errno and l->err (-ETIMEDOUT: the thread is still there or
 * stayed inside, nothing was unmapped; -EBUSY: the object said it stays,
 * l->err says why).
 */
int ukp_unload(struct ukp_loaded *l, int timeout_ms);

/*
 * After a detach from a dynamic program (its agent stays loaded: doc/
 * cli.md): unmap the agent's per-thread blocks, described by the
 * library's struct ukp_tb_unload at info in the process
 * (common/thread_block.h), once its thread gone_tid has ended. Every
 * thread is stopped outside the agent's code (the executable mappings of
 * the file agent and the anonymous ones: its slots and detour buffers)
 * and outside the blocks, their block bases put back to 0, the arena and
 * the zero page unmapped and the library's words that name them zeroed.
 * 0, or -errno and err (nothing unmapped).
 */
int ukp_unmap_blocks(pid_t pid, pid_t gone_tid, uint64_t info, const char *agent,
		     int timeout_ms, char *err, size_t errlen);

/* ---------------------------------------------- the object (load_elf.c) */

#define UKP_IMAGE_SEGS 16
#define UKP_IMAGE_OBJS 4

/* One object of the image: the loaded one first, then the libraries it
 * needs. Offsets are in the object's own part of the image. */
struct ukp_image_obj {
	char name[64];            /* its file's name, for messages */
	uintptr_t off;            /* where its part starts in the image */
	size_t len;               /* its part, page-rounded */
	uintptr_t rela_off, jmprel_off, relr_off;  /* its relocations (0: none) */
	size_t rela_n, jmprel_n, relr_n;
	uintptr_t symtab, strtab; /* its dynamic symbols and their names */
	size_t nsyms, strsz;
	uintptr_t relro_off;      /* PT_GNU_RELRO, pages read-only once relocated */
	size_t relro_len;
};

struct ukp_image {
	unsigned char *buf;       /* the image as mapped: each object's segments at their offsets */
	size_t len;               /* page-rounded */
	uintptr_t entry;          /* offsets in the image */
	struct { uintptr_t off; size_t len; int prot; } seg[UKP_IMAGE_SEGS];
	int nseg;
	struct ukp_image_obj obj[UKP_IMAGE_OBJS];
	int nobj;
};

/*
 * Read a freestanding PIE (ELF64, this architecture, ET_DYN, no
 * interpreter, no TLS) and the shared libraries it needs (DT_NEEDED, from
 * the system's library directories), all into one image: the C library
 * and the dynamic loader are never among them (the objects define what
 * they would give: memcpy, memset, ...), and every symbol the objects
 * refer to must be defined by one of them. 0, or -1 with err (one line).
 */
int ukp_image_read(const char *path, struct ukp_image *im, char *err, size_t errlen);
/* Apply the relocations of every object for the image's load address. */
void ukp_image_relocate(struct ukp_image *im, uintptr_t base);
void ukp_image_free(struct ukp_image *im);

#endif /* UKPROBE_LOAD_H */
