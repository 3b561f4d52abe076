/* SPDX-License-Identifier: MIT */
/*
 * text_patch.c - changing code that other threads are running.
 *
 * Bytes are written through /proc/self/mem: the kernel breaks copy-on-write
 * for us and the page never loses its execute permission, so a thread
 * running on the page is never caught by a non-executable mapping. Probe
 * arming changes one byte (int3 <-> original), which every thread sees
 * either before or after. ukp_text_sync() then makes every thread execute
 * a serializing instruction (membarrier SYNC_CORE) before we go on.
 *
 * The descriptor is reopened after fork(): an inherited /proc/self/mem
 * descriptor still points at the parent's memory. It is also checked
 * before every use: a program may close descriptors it does not know
 * about (daemons close them all) and get the number back for one of its
 * own files, which must never receive our bytes nor be closed by us.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <linux/membarrier.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <stdatomic.h>

#include "base/base.h"
#include "base/sys.h"
#include "text/text.h"

/* text.h: true until membarrier is known to serialize every thread */
_Atomic bool ukp_reader_fence = true;

static int mem_fd = -1;
static pid_t mem_pid;
/* What mem_fd was opened on: /proc/<mem_pid>/mem. */
static dev_t mem_dev;
static ino_t mem_ino;
static bool membarrier_ok;
static pid_t membarrier_pid;

/* Raw system calls here (base/sys.h): libc's wrappers may be probed,
 * and registering must not hit the probes it has just armed. */
#define membarrier ukp_sys_membarrier

/* [reg] */
static void membarrier_register(void)
{
	int cmds = membarrier(MEMBARRIER_CMD_QUERY, 0);

	membarrier_ok = false;
	/* Readers may skip their fence only while writers can membarrier. */
	atomic_store(&ukp_reader_fence, true);
	/* Asked once per process, supported or not. */
	membarrier_pid = ukp_sys_getpid();
	if (cmds < 0 || !(cmds & MEMBARRIER_CMD_PRIVATE_EXPEDITED_SYNC_CORE))
		return;
	if (membarrier(MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED_SYNC_CORE, 0) == 0)
		membarrier_ok = true;
	atomic_store(&ukp_reader_fence, !membarrier_ok);
}

/*
 * [init] At load, while the process most likely has one thread: the
 * kernel then registers at once; with a second thread it waits for an
 * RCU grace period first (the agent's first registration, after its
 * reader thread started, spent most of its start-up there). A fork
 * registers again (membarrier_pid).
 */
__attribute__((constructor)) static void membarrier_at_load(void)
{
	membarrier_register();
}

/* [any] Does descriptor mem_fd still name the file we opened? (asked
 * before every write: raw, as the writes) */
static bool mem_fd_ours(void)
{
	struct stat st;

	return mem_fd >= 0 && arch_syscall3(__NR_fstat, mem_fd, (long)&st, 0) == 0 &&
	       st.st_dev == mem_dev && st.st_ino == mem_ino;
}

/* [reg] A descriptor on this process's memory. */
static int mem_open(void)
{
	struct stat st;
	int fd, err;

	if (mem_pid == ukp_sys_getpid() && mem_fd_ours())
		return 0;
	/* Ours but another process's memory (forked without atfork):
	 * close it. Not ours any more: the number is the program's. */
	if (mem_fd_ours())
		ukp_sys_close(mem_fd);
	mem_fd = -1;
	fd = ukp_sys_open("/proc/self/mem", O_RDWR);
	if (fd < 0)
		return fd;
	err = ukp_sys_fstat(fd, &st);
	if (err) {
		ukp_sys_close(fd);
		return err;
	}
	mem_dev = st.st_dev;
	mem_ino = st.st_ino;
	mem_pid = ukp_sys_getpid();
	mem_fd = fd;
	return 0;
}

/* [reg] */
int ukp_text_init(void)
{
	membarrier_register();
	return mem_open() == 0 ? 0 : 0; /* mprotect fallback below */
}

/* ukp_text_poke_many's buffer, kept from call to call (under ukp_mutex,
 * as every writer: the optimizer writes each batch of jumps in two). */
static uint8_t *span_buf;

/* [any] Called in the child after fork (pthread_atfork). (The child
 * keeps span_buf: a fork without atfork may have left malloc's locks
 * taken.) */
void ukp_text_after_fork(void)
{
	if (mem_fd_ours())
		ukp_sys_close(mem_fd);
	mem_fd = -1;
}

/* [reg] ukprobes_shutdown: the descriptor and the buffer go. */
void ukp_text_release(void)
{
	ukp_text_after_fork();
	free(span_buf);
	span_buf = NULL;
}

const uint8_t ukp_breakpoint_insn[UKP_BREAKPOINT_SIZE] = UKP_BREAKPOINT_BYTES;
_Static_assert(sizeof(kprobe_opcode_t) == UKP_BREAKPOINT_SIZE,
	       "struct kprobe's opcode holds what the breakpoint replaces");

/* [any] (text.h) */
void ukp_fill_breakpoints(void *p, size_t n)
{
	uint8_t *b = p;
	size_t i;

	for (i = 0; i + UKP_BREAKPOINT_SIZE <= n; i += UKP_BREAKPOINT_SIZE)
		memcpy(b + i, ukp_breakpoint_insn, UKP_BREAKPOINT_SIZE);
}

/* [reg] Fallback when /proc/self/mem cannot be used: keep the page
 * executable while it is writable. */
static int poke_mprotect(uintptr_t addr, const void *buf, size_t len)
{
	long pg = sysconf(_SC_PAGESIZE);
	uintptr_t start = addr & ~(uintptr_t)(pg - 1);
	uintptr_t end = (addr + len + pg - 1) & ~(uintptr_t)(pg - 1);

	int err = ukp_sys_mprotect((void *)start, end - start, PROT_READ | PROT_WRITE | PROT_EXEC);

	if (err)
		return err;
	memcpy((void *)addr, buf, len);
	/* Architectures whose instruction cache does not snoop stores need
	 * this (a no-op on x86-64). */
	__builtin___clear_cache((char *)addr, (char *)addr + len);
	/* Text and slot pages are always r-x when we do not write them. */
	ukp_sys_mprotect((void *)start, end - start, PROT_READ | PROT_EXEC);
	return 0;
}

static int poke_mem(uintptr_t addr, const void *buf, size_t len);

/*
 * [reg] Write len bytes of code at addr. Returns 0 or a negative errno.
 * The caller orders multi-byte changes (int3 first) and calls
 * ukp_text_sync() when other threads must see the result.
 */
int ukp_text_poke(uintptr_t addr, const void *buf, size_t len)
{
	if (!UKP_TEXT_POKE_MEM || mem_open() < 0)
		return poke_mprotect(addr, buf, len);
	return poke_mem(addr, buf, len);
}

/* [reg] One write through mem_fd (opened); the mprotect fallback when
 * the kernel refuses forced writes to read-only mappings
 * (proc_mem.force_override=never). */
static int poke_mem(uintptr_t addr, const void *buf, size_t len)
{
	long n = arch_syscall4(__NR_pwrite64, mem_fd, (long)buf, (long)len, (long)addr);

	if (n == (long)len)
		return 0;
	if (n == -EIO || n == -EPERM || n == -EACCES)
		return poke_mprotect(addr, buf, len);
	return n < 0 ? (int)n : -EIO;
}

/* v by address: a heapsort of our own, as libc's qsort (which may be
 * probed) copies the elements with memcpy, a call per move. */
static void sift_down(struct ukp_poke *v, size_t i, size_t n)
{
	for (;;) {
		size_t c = 2 * i + 1;
		struct ukp_poke t;

		if (c >= n)
			return;
		if (c + 1 < n && v[c + 1].addr > v[c].addr)
			c++;
		if (v[i].addr >= v[c].addr)
			return;
		t = v[i];
		v[i] = v[c];
		v[c] = t;
		i = c;
	}
}

static void sort_pokes(struct ukp_poke *v, size_t n)
{
	size_t i;

	for (i = n / 2; i-- > 0;)
		sift_down(v, i, n);
	for (i = n; i-- > 1;) {
		struct ukp_poke t = v[0];

		v[0] = v[i];
		v[i] = t;
		sift_down(v, 0, i);
	}
}

/* memcpy without libc's, which may be probed: a batch copies thousands
 * of pokes, each a hit of a breakpoint written by an earlier batch. The
 * volatile destination keeps the compiler from making the loop a call to
 * memcpy again. */
static void copy_bytes(uint8_t *dst, const void *src, size_t n)
{
	volatile uint8_t *d = dst;
	const uint8_t *s = src;

	while (n--)
		*d++ = *s++;
}

/* Longest span one write covers (bytes between the pokes included). */
#define SPAN_MAX (64 * 1024UL)

/*
 * [reg] Write n pokes (sorted here by address; they must not overlap)
 * with one write per page, or per run of contiguous pages: the bytes
 * between two pokes of a span are read first and written back as they
 * are, so that only the poked bytes change. Every code writer holds
 * ukp_mutex, so nothing of ours changes them in between. Registering a
 * batch of thousands of probes then costs a few hundred system calls,
 * not one per probe. The caller orders multi-byte protocols and calls
 * ukp_text_sync() once. 0 or the first error (some pokes may be done).
 */
int ukp_text_poke_many(struct ukp_poke *v, size_t n)
{
	static long pg;
	uint8_t *span = NULL;
	size_t i, j;
	int ret = 0;

	if (!n)
		return 0;
	if (!pg)
		pg = sysconf(_SC_PAGESIZE);
	sort_pokes(v, n);
	if (UKP_TEXT_POKE_MEM && mem_open() == 0) {
		if (!span_buf)
			span_buf = malloc(SPAN_MAX);
		span = span_buf;
	}
	for (i = 0; i < n && !ret; i = j) {
		uintptr_t start = v[i].addr, end = v[i].addr + v[i].len;
		uintptr_t page_end = (start | (uintptr_t)(pg - 1)) + 1;

		/* the pokes on start's page, and on the pages right after
		 * while they follow without a gap */
		for (j = i + 1; j < n; j++) {
			uintptr_t e = v[j].addr + v[j].len;

			if (v[j].addr >= page_end && v[j].addr > end)
				break;
			if (e - start > SPAN_MAX)
				break;
			if (e > end)
				end = e;
		}
		if (!span || j == i + 1 || arch_copy_nofault(span, (const void *)start, end - start)) {
			/* one by one: no buffer, a single poke, or a gap
			 * that cannot be read */
			for (size_t k = i; k < j && !ret; k++)
				ret = span ? poke_mem(v[k].addr, v[k].buf, v[k].len)
					   : ukp_text_poke(v[k].addr, v[k].buf, v[k].len);
			continue;
		}
		for (size_t k = i; k < j; k++)
			copy_bytes(span + (v[k].addr - start), v[k].buf, v[k].len);
		ret = poke_mem(start, span, end - start);
	}
	return ret;
}

/*
 * [reg] Make every thread of the process see the new code. Returns true
 * when every other running thread also executed a full memory barrier
 * (membarrier), false when only this thread did.
 */
bool ukp_text_sync(void)
{
	if (membarrier_pid != ukp_sys_getpid())
		membarrier_register();
	if (membarrier_ok &&
	    membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED_SYNC_CORE, 0) == 0)
		return true;
	/* Without membarrier: an IPI-free fallback is a full barrier plus the
	 * fact that a thread entering the kernel serializes; x86 keeps
	 * instruction caches coherent. */
	atomic_thread_fence(memory_order_seq_cst);
	return false;
}
