/* SPDX-License-Identifier: MIT */
/*
 * sys.h - the library's narrow system layer (doc/static_agent.md, slice
 * 1): what libukprobes asks of the kernel, as raw system calls through
 * the arch's arch_syscallN() (common/arch/ARCH/syscall_raw.h: x86-64's
 * syscall, AArch64's svc 0). None goes through libc: none sets the
 * program's errno, takes a lock of libc's, allocates, is a cancellation
 * point or can be interposed; each returns the kernel's value, -errno on
 * failure. The same code serves a build without libc later.
 *
 * The inline calls are [any] context (signal handlers included); sys.c's
 * helpers (the maps and directory readers, the real path, the library's
 * own threads) are [reg]: they take no lock and allocate nothing.
 */
#ifndef UKP_SYS_H
#define UKP_SYS_H

#include <fcntl.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <time.h>

#include "syscall_raw.h"

/* ------------------------------------------------------------- files */

static inline int ukp_sys_openat(int dfd, const char *path, int flags, int mode)
{
	return (int)arch_syscall4(__NR_openat, dfd, (long)path, flags, mode);
}

/* open(path, flags), always close-on-exec */
static inline int ukp_sys_open(const char *path, int flags)
{
	return ukp_sys_openat(AT_FDCWD, path, flags | O_CLOEXEC, 0);
}

static inline long ukp_sys_read(int fd, void *buf, size_t n)
{
	return arch_syscall3(__NR_read, fd, (long)buf, (long)n);
}

static inline long ukp_sys_pread(int fd, void *buf, size_t n, uint64_t off)
{
	return arch_syscall4(__NR_pread64, fd, (long)buf, (long)n, (long)off);
}

static inline long ukp_sys_write(int fd, const void *buf, size_t n)
{
	return arch_syscall3(__NR_write, fd, (long)buf, (long)n);
}

static inline int ukp_sys_close(int fd)
{
	return (int)arch_syscall3(__NR_close, fd, 0, 0);
}

static inline int ukp_sys_fstat(int fd, struct stat *st)
{
	return (int)arch_syscall3(__NR_fstat, fd, (long)st, 0);
}

static inline long ukp_sys_readlinkat(int dfd, const char *path, char *buf, size_t n)
{
	return arch_syscall4(__NR_readlinkat, dfd, (long)path, (long)buf, (long)n);
}

static inline long ukp_sys_getdents64(int fd, void *buf, size_t n)
{
	return arch_syscall3(__NR_getdents64, fd, (long)buf, (long)n);
}

static inline long ukp_sys_pwrite(int fd, const void *buf, size_t n, uint64_t off)
{
	return arch_syscall4(__NR_pwrite64, fd, (long)buf, (long)n, (long)off);
}

static inline long ukp_sys_lseek(int fd, int64_t off, int whence)
{
	return arch_syscall3(__NR_lseek, fd, (long)off, whence);
}

/* stat(path) (follows links) */
static inline int ukp_sys_stat(const char *path, struct stat *st)
{
	return (int)arch_syscall4(__NR_newfstatat, AT_FDCWD, (long)path, (long)st, 0);
}

/* access(path, mode) */
static inline int ukp_sys_access(const char *path, int mode)
{
	return (int)arch_syscall3(__NR_faccessat, AT_FDCWD, (long)path, mode);
}

static inline long ukp_sys_readlink(const char *path, char *buf, size_t n)
{
	return ukp_sys_readlinkat(AT_FDCWD, path, buf, n);
}

/* mkdir(path, mode) */
static inline int ukp_sys_mkdir(const char *path, int mode)
{
	return (int)arch_syscall3(__NR_mkdirat, AT_FDCWD, (long)path, mode);
}

/* rename(from, to): to replaced atomically */
static inline int ukp_sys_rename(const char *from, const char *to)
{
	return (int)arch_syscall6(__NR_renameat2, AT_FDCWD, (long)from, AT_FDCWD, (long)to, 0, 0);
}

/* unlink(path) */
static inline int ukp_sys_unlink(const char *path)
{
	return (int)arch_syscall3(__NR_unlinkat, AT_FDCWD, (long)path, 0);
}

static inline unsigned int ukp_sys_getuid(void)
{
	return (unsigned int)arch_syscall3(__NR_getuid, 0, 0, 0);
}

static inline unsigned int ukp_sys_geteuid(void)
{
	return (unsigned int)arch_syscall3(__NR_geteuid, 0, 0, 0);
}

/* ------------------------------------------------------------ memory */

/*
 * The freestanding agent's mappings (own_maps.c): the ranges it mapped
 * and has not unmapped, for ukprobe's unload (tools/ukprobe/load.c reads
 * ukp_own_maps, its address in the load block). Each mmap notes its range
 * after it succeeded, each munmap before it is made. [any] context. Only
 * UKP_FREE builds note anything.
 */
struct ukp_own_maps; /* (common/load_block.h) */
extern struct ukp_own_maps ukp_own_maps;
void ukp_own_map_note_(void *addr, size_t len);
void ukp_own_unmap_note_(void *addr, size_t len);

static inline void ukp_own_map_note(void *addr, size_t len)
{
#ifdef UKP_FREE
	ukp_own_map_note_(addr, len);
#else
	(void)addr;
	(void)len;
#endif
}

static inline void ukp_own_unmap_note(void *addr, size_t len)
{
#ifdef UKP_FREE
	ukp_own_unmap_note_(addr, len);
#else
	(void)addr;
	(void)len;
#endif
}

/* 0 and *out, or -errno */
static inline int ukp_sys_mmap(void *addr, size_t len, int prot, int flags, int fd, uint64_t off,
			       void **out)
{
	long r = arch_syscall6(__NR_mmap, (long)addr, (long)len, prot, flags, fd, (long)off);

	if ((unsigned long)r > -4096UL)
		return (int)r;
	*out = (void *)r;
	ukp_own_map_note(*out, len);
	return 0;
}

static inline int ukp_sys_munmap(void *addr, size_t len)
{
	ukp_own_unmap_note(addr, len);
	return (int)arch_syscall3(__NR_munmap, (long)addr, (long)len, 0);
}

static inline int ukp_sys_mprotect(void *addr, size_t len, int prot)
{
	return (int)arch_syscall3(__NR_mprotect, (long)addr, (long)len, prot);
}

static inline int ukp_sys_membarrier(int cmd, unsigned int flags)
{
	return (int)arch_syscall3(__NR_membarrier, cmd, flags, 0);
}

/* getrlimit(res, rl) (prlimit64 of the calling process; struct rlimit
 * is the kernel's rlimit64 on both 64-bit architectures) */
static inline int ukp_sys_getrlimit(int res, void *rl)
{
	return (int)arch_syscall4(__NR_prlimit64, 0, res, 0, (long)rl);
}

/* ------------------------------------------------ processes, time */

/* (getpid, gettid: base.h's, in the hit path's text) */
static inline int ukp_sys_sched_yield(void)
{
	return (int)arch_syscall3(__NR_sched_yield, 0, 0, 0);
}

/* nanosleep(ts) on CLOCK_MONOTONIC, relative; -EINTR when a signal's
 * handler ran */
static inline int ukp_sys_nanosleep(const struct timespec *ts)
{
	return (int)arch_syscall4(__NR_clock_nanosleep, CLOCK_MONOTONIC, 0, (long)ts, 0);
}

/* The kernel's clock (a system call, not the vDSO's: for the library's
 * timeouts and budgets, never per hit). */
static inline int ukp_sys_clock_gettime(int clk, struct timespec *ts)
{
	return (int)arch_syscall3(__NR_clock_gettime, clk, (long)ts, 0);
}

static inline long ukp_sys_rt_tgsigqueueinfo(int pid, int tid, int sig, void *info)
{
	return arch_syscall4(__NR_rt_tgsigqueueinfo, pid, tid, sig, (long)info);
}

static inline int ukp_sys_perf_event_open(void *attr, int pid, int cpu, int group,
					  unsigned long flags)
{
	return (int)arch_syscall6(__NR_perf_event_open, (long)attr, pid, cpu, group, (long)flags, 0);
}

/* sigaltstack(ss, old) (stack_t is the kernel's on both) */
static inline int ukp_sys_sigaltstack(const void *ss, void *old)
{
	return (int)arch_syscall3(__NR_sigaltstack, (long)ss, (long)old, 0);
}

/* --------------------------------------------------- futex, signals */

/* FUTEX_WAIT while *uaddr == val (ts relative, NULL: no limit) */
static inline long ukp_sys_futex_wait(uint32_t *uaddr, uint32_t val, const struct timespec *ts)
{
	return arch_syscall4(__NR_futex, (long)uaddr, 0 /* FUTEX_WAIT */, val, (long)ts);
}

/* FUTEX_WAKE: the number of waiters woken */
static inline long ukp_sys_futex_wake(uint32_t *uaddr, int n)
{
	return arch_syscall4(__NR_futex, (long)uaddr, 1 /* FUTEX_WAKE */, n, 0);
}

/* The kernel's struct sigaction for rt_sigaction (x86-64 and AArch64:
 * the restorer before the mask). */
struct ukp_ksigaction {
	void *handler;
	unsigned long flags;
	void *restorer;
	uint64_t mask;
};

static inline long ukp_sys_rt_sigaction(int sig, const struct ukp_ksigaction *act,
					struct ukp_ksigaction *old)
{
	return arch_syscall4(__NR_rt_sigaction, sig, (long)act, (long)old, 8);
}

/* ------------------------------------------- sys.c's helpers: [reg] */

/* /proc/self/maps, a line at a time, read with read() into the reader's
 * own buffer (no stdio, no allocation). A line longer than the buffer
 * keeps its start (the path cut). */
struct ukp_maps {
	int fd;
	bool eof, skip;
	size_t pos, len;
	char buf[4096];
};

struct ukp_map_ent {
	uintptr_t start, end;
	uint64_t offset;
	uint64_t dev;      /* as stat's st_dev */
	uint64_t inode;
	char perms[5];    /* "r-xp" */
	const char *path; /* "" when none; in the reader's buffer until the next line */
};

int ukp_maps_open(struct ukp_maps *m);
int ukp_maps_next(struct ukp_maps *m, struct ukp_map_ent *e); /* 1, 0 at the end, -errno */
void ukp_maps_close(struct ukp_maps *m);

/* A directory's entries (getdents64; "." and ".." skipped). */
struct ukp_dir {
	int fd;
	size_t pos, len;
	_Alignas(8) char buf[2048];
};

int ukp_dir_open(struct ukp_dir *d, const char *path);  /* 0 or -errno; d->fd for openat */
const char *ukp_dir_next(struct ukp_dir *d);            /* a name, or NULL at the end */
void ukp_dir_close(struct ukp_dir *d);

/* The canonical absolute path of an existing file (realpath()'s), into
 * out: the kernel's own resolution (an O_PATH descriptor's
 * /proc/self/fd link). 0 or -errno (-ENAMETOOLONG when size is short). */
int ukp_sys_realpath(const char *path, char *out, size_t size);

/* n bytes of this process's memory at src into dst without faulting
 * (process_vm_readv on itself: no signal handler needed): 0, or -EFAULT
 * when a byte of it is not mapped readable (an object unmapped by
 * another thread meanwhile). Where the call is refused (ENOSYS, EPERM: a
 * seccomp filter), a plain copy. [reg] */
int ukp_sys_read_self(void *dst, const void *src, size_t n);
/* the same, malloc'ed (realpath(path, NULL)); NULL on failure */
char *ukp_realpath_dup(const char *path);

/* A thread of the library's own: the raw clone on a stack it maps, every
 * signal blocked, joined through CLONE_CHILD_CLEARTID and a futex (no
 * pthread, no allocation of libc's). fn runs with its creator's thread
 * pointer: it must touch no TLS (no libc function, no errno), only the
 * library's raw calls. */
struct ukp_sys_thread {
	_Atomic uint32_t ctid; /* the thread's id until it has ended (the kernel clears it) */
	int tid;
	void *stack;
	size_t stack_size;
	int (*fn)(void *);
	void *arg;
};

int ukp_sys_thread_start(struct ukp_sys_thread *t, size_t stack_size, int (*fn)(void *),
			 void *arg); /* 0 or -errno */
void ukp_sys_thread_join(struct ukp_sys_thread *t);

#endif
