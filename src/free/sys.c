/* SPDX-License-Identifier: MIT */
/*
 * sys.c - the C library's system-call wrappers the freestanding agent's
 * code calls (libukprobe-agent.bin has no C library; src/free/ is the C
 * library of that build, and of no other): each the raw system call
 * (src/base/sys.h, common/syscall_raw.h), with errno the agent's own per
 * thread (agent/free/errno.c): never the program's, whose C library
 * (glibc, musl, Go's runtime) is unknown.
 * [any] context: no lock, no allocation.
 */
/* (the 64-bit names are the ones the agent's objects call: defined as
 * themselves, not as what the headers redirect them to) */
#undef _FILE_OFFSET_BITS
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include "syscall_raw.h"
#include "base/sys.h"

/* the C library's convention: -1 and errno for a result in [-4095, -1] */
static long ret(long r)
{
	if (r < 0 && r >= -4095) {
		errno = (int)-r;
		return -1;
	}
	return r;
}

#define SC0(n) arch_syscall3((n), 0, 0, 0)

long syscall(long n, ...)
{
	va_list ap;
	long a[6];
	int i;

	va_start(ap, n);
	for (i = 0; i < 6; i++)
		a[i] = va_arg(ap, long);
	va_end(ap);
	return ret(arch_syscall6(n, a[0], a[1], a[2], a[3], a[4], a[5]));
}

int close(int fd) { return (int)ret(arch_syscall3(__NR_close, fd, 0, 0)); }
int open64(const char *p, int flags, ...)
{
	va_list ap;
	int mode;

	va_start(ap, flags);
	mode = va_arg(ap, int);
	va_end(ap);
	return (int)ret(arch_syscall4(__NR_openat, AT_FDCWD, (long)p, flags, mode));
}
int fcntl64(int fd, int cmd, ...)
{
	va_list ap;
	long a;

	va_start(ap, cmd);
	a = va_arg(ap, long);
	va_end(ap);
	return (int)ret(arch_syscall3(__NR_fcntl, fd, cmd, a));
}
int fstat64(int fd, struct stat64 *st) { return (int)ret(arch_syscall3(__NR_fstat, fd, (long)st, 0)); }
int ftruncate64(int fd, off64_t len) { return (int)ret(arch_syscall3(__NR_ftruncate, fd, len, 0)); }
ssize_t readlink(const char *p, char *b, size_t n)
{
	return ret(arch_syscall4(__NR_readlinkat, AT_FDCWD, (long)p, (long)b, (long)n));
}
ssize_t writev(int fd, const struct iovec *v, int n)
{
	return ret(arch_syscall3(__NR_writev, fd, (long)v, n));
}
int poll(struct pollfd *p, nfds_t n, int ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };

	return (int)ret(arch_syscall6(__NR_ppoll, (long)p, (long)n, ms < 0 ? 0 : (long)&ts, 0, 8, 0));
}
int nanosleep(const struct timespec *t, struct timespec *rem)
{
	return (int)ret(arch_syscall3(__NR_nanosleep, (long)t, (long)rem, 0));
}
int clock_gettime(clockid_t c, struct timespec *t)
{
	return (int)ret(arch_syscall3(__NR_clock_gettime, c, (long)t, 0));
}
int sched_yield(void) { return (int)ret(SC0(__NR_sched_yield)); }
pid_t getpid(void) { return (pid_t)SC0(__NR_getpid); }
pid_t getppid(void) { return (pid_t)SC0(__NR_getppid); }
pid_t gettid(void) { return (pid_t)SC0(__NR_gettid); }
uid_t getuid(void) { return (uid_t)SC0(__NR_getuid); }
uid_t geteuid(void) { return (uid_t)SC0(__NR_geteuid); }
int kill(pid_t p, int s) { return (int)ret(arch_syscall3(__NR_kill, p, s, 0)); }
int madvise(void *a, size_t n, int adv) { return (int)ret(arch_syscall3(__NR_madvise, (long)a, (long)n, adv)); }
void *mmap64(void *a, size_t n, int prot, int flags, int fd, off64_t off)
{
	long r = arch_syscall6(__NR_mmap, (long)a, (long)n, prot, flags, fd, off);

	/* (noted for the unload: base/own_maps.c) */
	if (r < 0 && r > -4096)
		return (void *)ret(r);
	ukp_own_map_note((void *)r, n);
	return (void *)r;
}
int munmap(void *a, size_t n)
{
	ukp_own_unmap_note(a, n);
	return (int)ret(arch_syscall3(__NR_munmap, (long)a, (long)n, 0));
}
int prctl(int op, ...)
{
	va_list ap;
	long a[4];
	int i;

	va_start(ap, op);
	for (i = 0; i < 4; i++)
		a[i] = va_arg(ap, long);
	va_end(ap);
	return (int)ret(arch_syscall6(__NR_prctl, op, a[0], a[1], a[2], a[3], 0));
}
int socket(int d, int t, int p) { return (int)ret(arch_syscall3(__NR_socket, d, t, p)); }
int connect(int fd, const struct sockaddr *a, socklen_t n)
{
	return (int)ret(arch_syscall3(__NR_connect, fd, (long)a, n));
}
int getsockopt(int fd, int l, int o, void *v, socklen_t *n)
{
	return (int)ret(arch_syscall6(__NR_getsockopt, fd, l, o, (long)v, (long)n, 0));
}
int setsockopt(int fd, int l, int o, const void *v, socklen_t n)
{
	return (int)ret(arch_syscall6(__NR_setsockopt, fd, l, o, (long)v, n, 0));
}
ssize_t read(int fd, void *b, size_t n) { return ret(arch_syscall3(__NR_read, fd, (long)b, (long)n)); }
ssize_t write(int fd, const void *b, size_t n)
{
	return ret(arch_syscall3(__NR_write, fd, (long)b, (long)n));
}
ssize_t pread64(int fd, void *b, size_t n, off64_t off)
{
	return ret(arch_syscall4(__NR_pread64, fd, (long)b, (long)n, off));
}
ssize_t pwrite64(int fd, const void *b, size_t n, off64_t off)
{
	return ret(arch_syscall4(__NR_pwrite64, fd, (long)b, (long)n, off));
}
ssize_t send(int fd, const void *b, size_t n, int f)
{
	return ret(arch_syscall6(__NR_sendto, fd, (long)b, (long)n, f, 0, 0));
}
ssize_t recv(int fd, void *b, size_t n, int f)
{
	return ret(arch_syscall6(__NR_recvfrom, fd, (long)b, (long)n, f, 0, 0));
}
ssize_t sendmsg(int fd, const struct msghdr *m, int f)
{
	return ret(arch_syscall3(__NR_sendmsg, fd, (long)m, f));
}
ssize_t recvmsg(int fd, struct msghdr *m, int f)
{
	return ret(arch_syscall3(__NR_recvmsg, fd, (long)m, f));
}

/* the first word of a sigset_t is the kernel's whole mask here (64 signals) */
int sigemptyset(sigset_t *s) { memset(s, 0, sizeof(*s)); return 0; }
int sigfillset(sigset_t *s) { memset(s, 0xff, sizeof(*s)); return 0; }
int sigaddset(sigset_t *s, int n)
{
	if (n < 1 || n > 64) {
		errno = EINVAL;
		return -1;
	}
	((uint64_t *)s)[0] |= 1ULL << (n - 1);
	return 0;
}
int sigdelset(sigset_t *s, int n)
{
	if (n < 1 || n > 64) {
		errno = EINVAL;
		return -1;
	}
	((uint64_t *)s)[0] &= ~(1ULL << (n - 1));
	return 0;
}

/* The process ends: only where the dynamic agent would end it (a SPEC
 * that cannot be registered in probes mode, a broken invariant). */
void _exit(int code)
{
	for (;;)
		arch_syscall3(__NR_exit_group, code, 0, 0);
}
void abort(void)
{
	arch_syscall3(__NR_tgkill, SC0(__NR_getpid), SC0(__NR_gettid), SIGABRT);
	_exit(127);
}
__attribute__((visibility("default"))) void __stack_chk_fail(void)
{
	abort();
}

long sysconf(int name)
{
	switch (name) {
	case _SC_PAGESIZE:
		return 4096;
	case _SC_NPROCESSORS_CONF:
	case _SC_NPROCESSORS_ONLN: {
		uint64_t set[16] = { 0 };
		long n = arch_syscall3(__NR_sched_getaffinity, 0, sizeof(set), (long)set), c = 0;

		for (long i = 0; n > 0 && i < n / 8; i++)
			c += __builtin_popcountll(set[i]);
		return c ? c : 1;
	}
	default:
		errno = EINVAL;
		return -1;
	}
}
