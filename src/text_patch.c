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
 * descriptor still points at the parent's memory.
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/membarrier.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "internal.h"

static int mem_fd = -1;
static pid_t mem_pid;
static bool membarrier_ok;
static pid_t membarrier_pid;

static int membarrier(int cmd, unsigned int flags)
{
	return (int)syscall(__NR_membarrier, cmd, flags, 0);
}

/* [reg] */
static void membarrier_register(void)
{
	int cmds = membarrier(MEMBARRIER_CMD_QUERY, 0);

	membarrier_ok = false;
	if (cmds < 0 || !(cmds & MEMBARRIER_CMD_PRIVATE_EXPEDITED_SYNC_CORE))
		return;
	if (membarrier(MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED_SYNC_CORE, 0) == 0)
		membarrier_ok = true;
	membarrier_pid = getpid();
}

/* [reg] */
static int mem_open(void)
{
	if (mem_fd >= 0 && mem_pid == getpid())
		return 0;
	if (mem_fd >= 0)
		close(mem_fd);
	mem_fd = open("/proc/self/mem", O_RDWR | O_CLOEXEC);
	mem_pid = getpid();
	return mem_fd < 0 ? -errno : 0;
}

/* [reg] */
int ukp_text_init(void)
{
	membarrier_register();
	return mem_open() == 0 ? 0 : 0; /* mprotect fallback below */
}

/* [any] Called in the child after fork (pthread_atfork). */
void ukp_text_after_fork(void)
{
	if (mem_fd >= 0)
		close(mem_fd);
	mem_fd = -1;
}

/* [reg] Fallback when /proc is not mounted: keep the page executable. */
static int poke_mprotect(uintptr_t addr, const void *buf, size_t len)
{
	long pg = sysconf(_SC_PAGESIZE);
	uintptr_t start = addr & ~(uintptr_t)(pg - 1);
	uintptr_t end = (addr + len + pg - 1) & ~(uintptr_t)(pg - 1);

	if (mprotect((void *)start, end - start, PROT_READ | PROT_WRITE | PROT_EXEC))
		return -errno;
	memcpy((void *)addr, buf, len);
	/* Text and slot pages are always r-x when we do not write them. */
	mprotect((void *)start, end - start, PROT_READ | PROT_EXEC);
	return 0;
}

/*
 * [reg] Write len bytes of code at addr. Returns 0 or a negative errno.
 * The caller orders multi-byte changes (int3 first) and calls
 * ukp_text_sync() when other threads must see the result.
 */
int ukp_text_poke(uintptr_t addr, const void *buf, size_t len)
{
	ssize_t n;

	if (mem_open() < 0)
		return poke_mprotect(addr, buf, len);
	n = pwrite(mem_fd, buf, len, (off_t)addr);
	if (n == (ssize_t)len)
		return 0;
	return n < 0 ? -errno : -EIO;
}

/* [reg] Make every thread of the process see the new code. */
void ukp_text_sync(void)
{
	if (membarrier_pid != getpid())
		membarrier_register();
	if (membarrier_ok &&
	    membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED_SYNC_CORE, 0) == 0)
		return;
	/* Without membarrier: an IPI-free fallback is a full barrier plus the
	 * fact that a thread entering the kernel serializes; x86 keeps
	 * instruction caches coherent. */
	atomic_thread_fence(memory_order_seq_cst);
}
