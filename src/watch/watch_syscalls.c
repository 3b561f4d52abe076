/* SPDX-License-Identifier: MIT */
/*
 * watch_syscalls.c - system calls that copy to or from a watched page.
 *
 * The kernel's copies into user memory respect page protection: a read()
 * into a page protected for a watchpoint would fail with EFAULT, which
 * the program would never have seen. The common libc wrappers that take
 * a user buffer are interposed: when the buffer touches a watched page,
 * the system call uses a bounce buffer and the bytes move through the
 * watchpoint code (ukp_watch_user_copy), which fires the breakpoints the
 * copy touched (a read() into the buffer is a write of it, a write() from
 * it a read), with regs->ip the wrapper's caller. Buffers on no watched
 * page go straight to libc. Covered: read, pread, pread64, write, pwrite,
 * pwrite64, recv, recvfrom, send, sendto. Not covered (EFAULT as without
 * the interposer): other system calls, and libc's internal calls (stdio's
 * buffers, for instance: fread() into a watched buffer copies from
 * stdio's own buffer, which works; its underlying read() does not go
 * through here, but it reads into stdio's buffer, not the program's).
 * [any]: these run wherever the program calls them.
 *
 * Not in the freestanding agent (UKP_FREE): a static program's wrappers
 * are its own, not interposable (its watched buffers get EFAULT from
 * these calls, as without the interposers), and the agent's own calls
 * are agent/free/sys.c's.
 */
#ifndef UKP_FREE
#include <dlfcn.h>
#include <errno.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>

#include "base/base.h"
#include "watch/watch.h"
#include "watch/watch.h"

typedef ssize_t (*rw_fn)(int, void *, size_t);
typedef ssize_t (*prw_fn)(int, void *, size_t, off_t);
typedef ssize_t (*sr_fn)(int, void *, size_t, int, struct sockaddr *, socklen_t *);
typedef ssize_t (*st_fn)(int, const void *, size_t, int, const struct sockaddr *, socklen_t);

static rw_fn real_read, real_write;
static prw_fn real_pread, real_pwrite;
static sr_fn real_recvfrom;
static st_fn real_sendto;

__attribute__((constructor)) static void resolve(void)
{
	real_read = (rw_fn)dlsym(RTLD_NEXT, "read");
	real_write = (rw_fn)dlsym(RTLD_NEXT, "write");
	real_pread = (prw_fn)dlsym(RTLD_NEXT, "pread64");
	real_pwrite = (prw_fn)dlsym(RTLD_NEXT, "pwrite64");
	real_recvfrom = (sr_fn)dlsym(RTLD_NEXT, "recvfrom");
	real_sendto = (st_fn)dlsym(RTLD_NEXT, "sendto");
}

enum op { OP_READ, OP_WRITE, OP_PREAD, OP_PWRITE, OP_RECVFROM, OP_SENDTO };

struct call {
	enum op op;
	int fd, flags;
	off_t off;
	const struct sockaddr *to;
	struct sockaddr *from;
	socklen_t tolen, *fromlen;
};

static ssize_t do_call(const struct call *c, void *buf, size_t n)
{
	if (!real_sendto)
		resolve(); /* called before our constructor ran */
	switch (c->op) {
	case OP_READ: return real_read(c->fd, buf, n);
	case OP_WRITE: return real_write(c->fd, buf, n);
	case OP_PREAD: return real_pread(c->fd, buf, n, c->off);
	case OP_PWRITE: return real_pwrite(c->fd, buf, n, c->off);
	case OP_RECVFROM: return real_recvfrom(c->fd, buf, n, c->flags, c->from, c->fromlen);
	case OP_SENDTO: return real_sendto(c->fd, buf, n, c->flags, c->to, c->tolen);
	}
	errno = ENOSYS;
	return -1;
}

/* The call with buf on a watched page: into (the kernel writes buf) or
 * out of it, through a bounce buffer. */
static ssize_t bounced(const struct call *c, void *buf, size_t n, bool into, uintptr_t ip)
{
	char small[4096];
	void *b = small;
	ssize_t r;
	int err;

	if (ukp_watch_check_user(buf, n, into)) {
		errno = EFAULT;
		return -1;
	}
	if (n > sizeof(small)) {
		b = mmap(NULL, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (b == MAP_FAILED)
			return -1;
	}
	if (!into && ukp_watch_user_copy(buf, b, n, false, ip)) {
		r = -1;
		err = EFAULT;
		goto out;
	}
	r = do_call(c, b, n);
	err = errno;
	if (into && r > 0 && ukp_watch_user_copy(buf, b, (size_t)r, true, ip)) {
		r = -1;
		err = EFAULT;
	}
out:
	if (b != small)
		munmap(b, n);
	errno = err;
	return r;
}

#define IP ((uintptr_t)__builtin_return_address(0))
#define WRAP(into, ...)                                                        \
	do {                                                                   \
		struct call c = { __VA_ARGS__ };                               \
		if (!ukp_watch_overlaps((uintptr_t)buf, n))                               \
			return do_call(&c, (void *)buf, n);                    \
		return bounced(&c, (void *)buf, n, into, IP);                  \
	} while (0)

__attribute__((visibility("default"))) ssize_t read(int fd, void *buf, size_t n)
{
	WRAP(true, .op = OP_READ, .fd = fd);
}

__attribute__((visibility("default"))) ssize_t write(int fd, const void *buf, size_t n)
{
	WRAP(false, .op = OP_WRITE, .fd = fd);
}

/* pread and pwrite are the same functions as pread64 and pwrite64 here
 * (64-bit off_t): the headers name them so; these are their other names. */
ssize_t ukp_pread_alias(int fd, void *buf, size_t n, off_t off) __asm__("pread");
ssize_t ukp_pwrite_alias(int fd, const void *buf, size_t n, off_t off) __asm__("pwrite");

__attribute__((visibility("default"))) ssize_t pread64(int fd, void *buf, size_t n, off_t off)
{
	WRAP(true, .op = OP_PREAD, .fd = fd, .off = off);
}

__attribute__((visibility("default"))) ssize_t ukp_pread_alias(int fd, void *buf, size_t n,
							       off_t off)
{
	WRAP(true, .op = OP_PREAD, .fd = fd, .off = off);
}

__attribute__((visibility("default"))) ssize_t pwrite64(int fd, const void *buf, size_t n,
							off_t off)
{
	WRAP(false, .op = OP_PWRITE, .fd = fd, .off = off);
}

__attribute__((visibility("default"))) ssize_t ukp_pwrite_alias(int fd, const void *buf, size_t n,
								off_t off)
{
	WRAP(false, .op = OP_PWRITE, .fd = fd, .off = off);
}

__attribute__((visibility("default"))) ssize_t recvfrom(int fd, void *buf, size_t n, int flags,
							struct sockaddr *from, socklen_t *fromlen)
{
	WRAP(true, .op = OP_RECVFROM, .fd = fd, .flags = flags, .from = from, .fromlen = fromlen);
}

__attribute__((visibility("default"))) ssize_t recv(int fd, void *buf, size_t n, int flags)
{
	WRAP(true, .op = OP_RECVFROM, .fd = fd, .flags = flags);
}

__attribute__((visibility("default"))) ssize_t sendto(int fd, const void *buf, size_t n, int flags,
						      const struct sockaddr *to, socklen_t tolen)
{
	WRAP(false, .op = OP_SENDTO, .fd = fd, .flags = flags, .to = to, .tolen = tolen);
}

__attribute__((visibility("default"))) ssize_t send(int fd, const void *buf, size_t n, int flags)
{
	WRAP(false, .op = OP_SENDTO, .fd = fd, .flags = flags);
}
#endif /* UKP_FREE */
