/* SPDX-License-Identifier: MIT */
/*
 * sys.c - the system as every layer may use it, in any context: raw
 * system calls that go past libc (whose wrappers may be probed, and set
 * errno), and where the calling thread's errno lives. And the system
 * layer's helpers (sys.h; doc/static_agent.md, slice 1): /proc/self/maps
 * and directories read with read()/getdents64() into the caller's
 * buffer, the real path of a file, the library's own threads; none of
 * them calls libc's stdio, takes one of libc's locks or allocates
 * (ukp_realpath_dup aside: its copy). Those are [reg] context.
 */
#include <errno.h>
#include <limits.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <sys/auxv.h>
#include <sys/mman.h>
#include <stdint.h>
#include <sys/syscall.h>

#include "base/base.h"
#include "base/sys.h"
#include "thread_block.h"

/* [any] */
UKP_TRAP_TEXT long ukp_sys_sigprocmask(int how, const uint64_t *set, uint64_t *old)
{
	return arch_syscall4(__NR_rt_sigprocmask, how, (long)set, (long)old, 8);
}

UKP_TRAP_TEXT int ukp_sys_gettid(void)
{
	return (int)arch_syscall3(__NR_gettid, 0, 0, 0);
}

UKP_TRAP_TEXT int ukp_sys_getpid(void)
{
	return (int)arch_syscall3(__NR_getpid, 0, 0, 0);
}

UKP_TRAP_TEXT long ukp_sys_tgkill(int pid, int tid, int sig)
{
	return arch_syscall3(__NR_tgkill, pid, tid, sig);
}

/* [any] getauxval(type), with the program's errno as it was: glibc sets
 * ENOENT for an entry the kernel did not give (no vDSO under qemu-user,
 * no AT_HWCAP2 on an older kernel). 0 when there is none. */
unsigned long ukp_getauxval(unsigned long type)
{
#ifdef UKP_FREE
	/* (no program's errno here; and the agent's own is in the thread's
	 * block, which the per-thread blocks' mode, decided with this, must
	 * not need yet) */
	return getauxval(type);
#endif
	int saved = errno;
	unsigned long v = getauxval(type);

	errno = saved;
	return v;
}

long ukp_errno_offset;
uintptr_t ukp_self_text_lo, ukp_self_text_hi;

/* [reg] Where errno lives relative to the thread pointer (the same for
 * every thread: libc's TLS is initial-exec). */
void ukp_errno_init(void)
{
#ifdef UKP_FREE
	/* The freestanding agent's errno is its own, in the thread's block:
	 * nothing of the program's to keep. The templates' save and restore
	 * at %fs:offset then read and write back the thread pointer's own
	 * word at %fs:0, unchanged (an offset of the agent's errno from one
	 * thread's pointer would be another thread's memory). In a Go
	 * program's threads that word is the key arch_tb_tp() writes on a
	 * thread's first look-up (a hit may save it before and restore it
	 * after): the word after it instead, Go's unused m.tls[2]. */
	ukp_errno_offset = ukp_tb_go ? 8 : 0;
	return;
#endif
	ukp_errno_offset = (long)((uintptr_t)&errno - arch_thread_pointer());
}

/* ------------------------------------------------------ the system layer */

long arch_clone_thread(unsigned long flags, void *stack_top, int *ptid, int *ctid,
		       unsigned long tls, int (*fn)(void *), void *arg);

/* --------------------------------------------------------------- maps */

int ukp_maps_open(struct ukp_maps *m)
{
	m->fd = ukp_sys_open("/proc/self/maps", O_RDONLY);
	m->eof = m->skip = false;
	m->pos = m->len = 0;
	return m->fd < 0 ? m->fd : 0;
}

void ukp_maps_close(struct ukp_maps *m)
{
	if (m->fd >= 0)
		ukp_sys_close(m->fd);
	m->fd = -1;
}

static uint64_t hex(const char **s)
{
	uint64_t v = 0;

	for (;; (*s)++) {
		char c = **s;

		if (c >= '0' && c <= '9')
			v = v << 4 | (uint64_t)(c - '0');
		else if (c >= 'a' && c <= 'f')
			v = v << 4 | (uint64_t)(c - 'a' + 10);
		else
			return v;
	}
}

static const char *skip_field(const char *s)
{
	while (*s && *s != ' ')
		s++;
	while (*s == ' ')
		s++;
	return s;
}

/* "start-end perms offset dev inode   path" */
static int parse_line(char *line, struct ukp_map_ent *e)
{
	const char *s = line;
	uint64_t major, minor;

	e->start = (uintptr_t)hex(&s);
	if (*s++ != '-')
		return -EINVAL;
	e->end = (uintptr_t)hex(&s);
	if (*s++ != ' ' || strlen(s) < 4)
		return -EINVAL;
	memcpy(e->perms, s, 4);
	e->perms[4] = 0;
	s = skip_field(s);
	e->offset = hex(&s);
	s = skip_field(s);
	/* "major:minor" in hex, encoded as stat's st_dev */
	major = hex(&s);
	minor = *s == ':' ? (s++, hex(&s)) : 0;
	e->dev = (minor & 0xff) | (major & 0xfff) << 8 | (major & ~0xfffull) << 32 |
		 (minor & ~0xffull) << 12;
	s = skip_field(s);
	e->inode = 0;
	for (; *s >= '0' && *s <= '9'; s++)
		e->inode = e->inode * 10 + (uint64_t)(*s - '0');
	while (*s == ' ')
		s++;
	e->path = s;
	return 0;
}

int ukp_maps_next(struct ukp_maps *m, struct ukp_map_ent *e)
{
	for (;;) {
		char *line = m->buf + m->pos;
		char *nl = m->len > m->pos ? memchr(line, '\n', m->len - m->pos) : NULL;
		long n;

		if (m->skip) {
			/* the rest of an overlong line */
			m->pos = nl ? (size_t)(nl - m->buf) + 1 : m->len;
			m->skip = !nl;
			if (nl)
				continue;
		} else if (nl || (m->eof && m->len > m->pos)) {
			/* a line (the last one may lack its newline) */
			nl = nl ? nl : m->buf + m->len;
			*nl = 0;
			m->pos = nl < m->buf + m->len ? (size_t)(nl - m->buf) + 1 : m->len;
			if (parse_line(line, e))
				continue;
			return 1;
		} else if (m->pos == 0 && m->len == sizeof(m->buf)) {
			/* longer than the buffer: its start (the path cut) */
			m->buf[sizeof(m->buf) - 1] = 0;
			m->pos = m->len;
			m->skip = true;
			if (parse_line(line, e))
				continue;
			return 1;
		}
		if (m->eof)
			return 0;
		/* the part line to the front, then more */
		memmove(m->buf, m->buf + m->pos, m->len - m->pos);
		m->len -= m->pos;
		m->pos = 0;
		n = ukp_sys_read(m->fd, m->buf + m->len, sizeof(m->buf) - m->len);
		if (n < 0)
			return (int)n;
		if (!n)
			m->eof = true;
		m->len += (size_t)n;
	}
}

/* ---------------------------------------------------------- directories */

struct dirent64_k {
	uint64_t ino;
	int64_t off;
	unsigned short reclen;
	unsigned char type;
	char name[];
};

int ukp_dir_open(struct ukp_dir *d, const char *path)
{
	d->fd = ukp_sys_open(path, O_RDONLY | O_DIRECTORY);
	d->pos = d->len = 0;
	return d->fd < 0 ? d->fd : 0;
}

const char *ukp_dir_next(struct ukp_dir *d)
{
	for (;;) {
		struct dirent64_k *de;

		if (d->pos >= d->len) {
			long n = ukp_sys_getdents64(d->fd, d->buf, sizeof(d->buf));

			if (n <= 0)
				return NULL;
			d->pos = 0;
			d->len = (size_t)n;
		}
		de = (struct dirent64_k *)(void *)(d->buf + d->pos);
		d->pos += de->reclen;
		if (strcmp(de->name, ".") && strcmp(de->name, ".."))
			return de->name;
	}
}

void ukp_dir_close(struct ukp_dir *d)
{
	if (d->fd >= 0)
		ukp_sys_close(d->fd);
	d->fd = -1;
}

/* ------------------------------------------------------------ real path */

int ukp_sys_realpath(const char *path, char *out, size_t size)
{
	char link[32] = "/proc/self/fd/", digits[12];
	int fd = ukp_sys_open(path, O_PATH), k = 0, i = 14;
	long n;

	if (fd < 0)
		return fd;
	for (unsigned int v = (unsigned int)fd; k == 0 || v; v /= 10)
		digits[k++] = (char)('0' + v % 10);
	while (k)
		link[i++] = digits[--k];
	link[i] = 0;
	n = ukp_sys_readlinkat(AT_FDCWD, link, out, size);
	ukp_sys_close(fd);
	if (n < 0)
		return (int)n;
	if ((size_t)n >= size)
		return -ENAMETOOLONG;
	out[n] = 0;
	/* not a path of this root (a pipe, another mount namespace's) */
	if (out[0] != '/')
		return -ENOENT;
	return 0;
}

char *ukp_realpath_dup(const char *path)
{
	char buf[PATH_MAX];

	return ukp_sys_realpath(path, buf, sizeof(buf)) ? NULL : strdup(buf);
}

/* -------------------------------------------------------------- threads */

#define THREAD_FLAGS (CLONE_VM | CLONE_FS | CLONE_FILES | CLONE_SIGHAND | CLONE_THREAD | \
		      CLONE_SYSVSEM | CLONE_PARENT_SETTID | CLONE_CHILD_CLEARTID)

/* The raw thread's body: it has its creator's thread pointer (and GS
 * base), so it forgets its creator's per-thread block first, and gives
 * its own back at its end (common/thread_block.h), if it had one of its
 * own. */
static int raw_thread_main(void *p)
{
	struct ukp_sys_thread *t = p;
	bool own = ukp_thread_block_forget();
	int r;

	r = t->fn(t->arg);
	if (own)
		ukp_thread_block_release();
	return r;
}

int ukp_sys_thread_start(struct ukp_sys_thread *t, size_t stack_size, int (*fn)(void *), void *arg)
{
	uint64_t all = ~0ULL, old;
	void *stack;
	long tid;
	int r;

	stack_size = (stack_size + 4095) & ~4095UL;
	r = ukp_sys_mmap(NULL, stack_size, PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK, -1, 0, &stack);
	if (r)
		return r;
	t->stack = stack;
	t->stack_size = stack_size;
	t->fn = fn;
	t->arg = arg;
	atomic_store(&t->ctid, 0);
	/* the new thread starts with every signal blocked: none of the
	 * program's is delivered on it */
	arch_syscall4(__NR_rt_sigprocmask, SIG_SETMASK, (long)&all, (long)&old, 8);
	tid = arch_clone_thread(THREAD_FLAGS, (char *)stack + stack_size, (int *)&t->ctid,
				(int *)&t->ctid, 0, raw_thread_main, t);
	arch_syscall4(__NR_rt_sigprocmask, SIG_SETMASK, (long)&old, 0, 8);
	if (tid < 0) {
		ukp_sys_munmap(stack, stack_size);
		t->stack = NULL;
		return (int)tid;
	}
	t->tid = (int)tid;
	return 0;
}

void ukp_sys_thread_join(struct ukp_sys_thread *t)
{
	uint32_t v;

	if (!t->stack)
		return;
	/* the kernel clears ctid and wakes its futex once the thread is gone
	 * (off its stack) */
	while ((v = atomic_load(&t->ctid)))
		ukp_sys_futex_wait((uint32_t *)&t->ctid, v, NULL);
	ukp_sys_munmap(t->stack, t->stack_size);
	t->stack = NULL;
}

int ukp_sys_read_self(void *dst, const void *src, size_t n)
{
	static int refused;
	struct iovec local = { dst, n }, remote = { (void *)src, n };
	long r;

	if (!n)
		return 0;
	if (!__atomic_load_n(&refused, __ATOMIC_RELAXED)) {
		r = arch_syscall6(__NR_process_vm_readv, ukp_sys_getpid(), (long)&local, 1,
				  (long)&remote, 1, 0);
		if (r == (long)n)
			return 0;
		if (r >= 0 || r == -EFAULT)
			return -EFAULT;
		if (r != -ENOSYS && r != -EPERM)
			return (int)r;
		__atomic_store_n(&refused, 1, __ATOMIC_RELAXED);
	}
	memcpy(dst, src, n);
	return 0;
}
