/* SPDX-License-Identifier: MIT */
/*
 * region.c - the image's counts and event rings in a memfd that ukprobe
 * holds too (common/region.h), so that what the process counted and
 * recorded reaches ukprobe however it ends.
 *
 * Each image has a file of its own, sent to ukprobe with its HELLO. The
 * process maps one at a time, always at the same address: a thread keeps
 * pointers to its ring and its count slot in TLS (the hit path reads
 * nothing else), and those stay valid when a new image (a forked child,
 * a failed exec, the next attach) puts its new file in the old one's
 * place. In the same process the new file starts with the old header
 * and rings (the threads' claims go on) and zero counts and records; a
 * forked child starts from nothing (only its forking thread exists).
 *
 * A detach unmaps the file (ukpa_region_release): nothing of it stays
 * in the process. The threads' pointers into it stay in their TLS, so
 * the next attach maps its file at the same address again, or, when the
 * program has mapped something there meanwhile, refuses to trace.
 *
 * Contexts: [init] (ring.c's and counts.c's image changes), with no
 * thread recording (tracing off, or a forked child's only thread).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "agent.h"
#include "raw_syscall.h"

#ifndef MFD_CLOEXEC
#define MFD_CLOEXEC 0x0001U
#endif

struct ukp_region_head *ukpa_region;
static _Atomic int region_fd = -1; /* this image's file, until HELLO takes it */
/* where the file is mapped, for the process's life; unmapped at a
 * detach (released: ukpa_region is NULL then) */
static void *region_at;
static bool released;
static bool reserved;         /* released, with the range kept (PROT_NONE) */
/* at a detach: the header and rings (the threads' claims), for the next
 * attach's file */
static unsigned char saved[UKP_REGION_COUNTS_OFF];

_Static_assert(sizeof(struct ukp_region_ring) == 128, "a ring is two cache lines");
_Static_assert(offsetof(struct ukp_region_ring, recs) < 64, "the producer's line");

static void head_init(struct ukp_region_head *h)
{
	h->magic = UKP_REGION_MAGIC;
	h->version = UKP_REGION_VERSION;
	h->head_size = sizeof(*h);
	h->ring_size = sizeof(struct ukp_region_ring);
	h->rings = UKP_REGION_RINGS;
	h->slots = UKP_REGION_SLOTS;
	h->ids = UKP_REGION_IDS;
	h->pid = (int32_t)getpid();
	h->rings_off = UKP_REGION_RINGS_OFF;
	h->counts_off = UKP_REGION_COUNTS_OFF;
	h->recs_off = UKP_REGION_RECS_OFF;
	h->ring_stride = UKP_REGION_RING_MAX;
	h->size = UKP_REGION_SIZE;
	atomic_store(&h->lost_other, 0);
	atomic_store(&h->out_state, UKP_REGION_OUT_STATE(0, UKP_REGION_OUT_NONE, 0));
	atomic_store(&h->out_seq, 1);
}

/* [attach] Is the reservation a detach left in the region's place
 * (ukpa_region_release) still there, whole and ours: a line of
 * /proc/self/maps "START-END ---p 00000000 00:00 0" with nothing after? */
static bool still_reserved(void)
{
	char want[96], buf[4096 + 96];
	size_t have = 0, wlen;
	bool ours = false;
	int fd;

	if (!reserved)
		return false;
	wlen = (size_t)snprintf(want, sizeof(want), "%lx-%lx ---p 00000000 00:00 0 ",
				(unsigned long)(uintptr_t)region_at,
				(unsigned long)((uintptr_t)region_at + UKP_REGION_SIZE));
	fd = open("/proc/self/maps", O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return false;
	for (;;) {
		ssize_t n = read(fd, buf + have, sizeof(buf) - 1 - have);
		char *line = buf, *nl;

		if (n <= 0)
			break;
		have += (size_t)n;
		buf[have] = '\0';
		while ((nl = memchr(line, '\n', have - (size_t)(line - buf)))) {
			/* the kernel pads the inode column with blanks */
			if (!strncmp(line, want, wlen - 1)) {
				const char *c = line + wlen - 1;

				while (*c == ' ')
					c++;
				ours = c == nl;
				goto out;
			}
			line = nl + 1;
		}
		have -= (size_t)(line - buf);
		memmove(buf, line, have);
		if (have >= sizeof(buf) - 1)
			have = 0; /* (a line longer than the buffer: not ours) */
	}
out:
	close(fd);
	return ours;
}

/* [init] region_fd becomes fd, and the old one is closed after: a thread
 * forking meanwhile gives its child a region_fd that is still the file
 * (the child closes it: ukpa_region_forget), never a number closed
 * already, which the program may have reused for its own. */
static void fd_replace(int fd)
{
	int old = atomic_exchange(&region_fd, fd);

	if (old >= 0)
		close(old);
}

int ukpa_region_new_image(bool keep)
{
	long r = ukpa_sys(SYS_memfd_create, "ukprobe-region", MFD_CLOEXEC, 0);
	int fd = (int)r;
	size_t prefix = UKP_REGION_COUNTS_OFF;
	const void *from = released ? (const void *)saved : (const void *)region_at;
	int flags = MAP_SHARED | MAP_NORESERVE;
	void *at;

	if (r < 0)
		return (int)r;
	/* sparse: only the pages threads touch take memory */
	if (ftruncate(fd, (off_t)UKP_REGION_SIZE))
		goto fail;
	if (keep && region_at && pwrite(fd, from, prefix, 0) != (ssize_t)prefix)
		goto fail;
	/* the same address as before: in place of the last file, or of the
	 * reservation a detach left there (if it is still ours), or where it
	 * was (if nothing else is there now) */
	if (region_at)
		flags |= released && !still_reserved() ? MAP_FIXED_NOREPLACE : MAP_FIXED;
	at = mmap(region_at, UKP_REGION_SIZE, PROT_READ | PROT_WRITE, flags, fd, 0);
	/* after a detach the program may have mapped something in the hole
	 * for a moment (a library loaded and unloaded in a loop): the same
	 * place, a little later (the threads still hold addresses in it) */
	for (int i = 0; at == MAP_FAILED && errno == EEXIST && i < 500; i++) {
		struct timespec ms = { 0, 1000000 };

		nanosleep(&ms, NULL);
		at = mmap(region_at, UKP_REGION_SIZE, PROT_READ | PROT_WRITE, flags, fd, 0);
	}
	if (at == MAP_FAILED)
		goto fail;
	if (region_at && at != region_at) {
		/* (a kernel that takes MAP_FIXED_NOREPLACE as a hint) */
		munmap(at, UKP_REGION_SIZE);
		goto fail;
	}
	ukpa_region = region_at = at;
	released = false;
	head_init(ukpa_region);
	fd_replace(fd);
	return 0;
fail:
	close(fd);
	return -ENOMEM;
}

int ukpa_region_take_fd(void)
{
	return atomic_exchange(&region_fd, -1);
}

void ukpa_region_release(void)
{
	if (!ukpa_region)
		return;
	memcpy(saved, ukpa_region, sizeof(saved));
	/* nothing may reach it now: every use checks ukpa_region */
	ukpa_region = NULL;
	/* The range stays reserved (no access, no memory): the program maps
	 * nothing there meanwhile, so that a re-attach finds the region's
	 * place free (the threads still hold addresses in it; a server that
	 * maps and unmaps, postgres, had put something there), and a stale
	 * address faults instead of reaching the program's memory. */
	reserved = mmap(region_at, UKP_REGION_SIZE, PROT_NONE,
			MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_FIXED, -1, 0) == region_at;
	if (!reserved)
		munmap(region_at, UKP_REGION_SIZE);
	released = true;
	fd_replace(-1);
}

void ukpa_region_forget(void)
{
	/* private memory in its place: nothing this process does reaches
	 * the parent's file, and the addresses stay reserved */
	if (ukpa_region)
		mmap(ukpa_region, UKP_REGION_SIZE, PROT_READ | PROT_WRITE,
		     MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_FIXED, -1, 0);
	if (region_fd >= 0)
		close(region_fd);
	region_fd = -1;
}
