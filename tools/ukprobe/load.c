/* SPDX-License-Identifier: MIT */
/*
 * load.c - ukprobe's ptrace loader (load.h, doc/static_agent.md): a
 * freestanding static PIE mapped into a process and started on a thread
 * of its own, with system calls only, made one at a time by a thread of
 * the process that ukprobe holds stopped. Nothing of the program runs
 * for it: no loader, no malloc, no lock the program's threads may hold.
 *
 *  1. The process is stopped: every thread seized and interrupted
 *     (PTRACE_SEIZE, PTRACE_INTERRUPT; threads started meanwhile are
 *     found by looking again until none is new), or, launched, its one
 *     thread is run from its execve to its entry point (AT_ENTRY) with a
 *     breakpoint there. One thread (the worker) makes the system calls.
 *  2. A stop inside a system call: the kernel restarts the call
 *     (-ERESTART*) when the thread resumes with the registers it stopped
 *     with and no handler to run; the worker resumes from a later stop,
 *     but PTRACE_DETACH has the kernel look for signals again on its way
 *     out (__ptrace_unlink), and that restart is made then, with its
 *     registers put back. The calls a stop turns into EINTR, which the
 *     kernel never restarts, are restarted here in every thread
 *     (ptrace_arch.h).
 *  3. A system call instruction is found in the process (the vDSO has
 *     one; else any executable mapping) and each call is made there: the
 *     registers set, PTRACE_SYSCALL to its entry and to its exit, the
 *     result read. The worker's signals are all blocked meanwhile (its
 *     mask through PTRACE_SETSIGMASK): no handler of the program's runs in
 *     it, and the new thread inherits the full mask.
 *  4. mmap an area, the object's image (with the libraries it needs,
 *     bound to it: load_elf.c) written into it (/proc/PID/mem),
 *     relocated for its address, each segment mprotect-ed as
 *     its flags say, PT_GNU_RELRO read-only, the clone trampoline in the
 *     area's last page (read-execute); mmap a stack (its lowest page
 *     PROT_NONE) with the block at its top (common/load_block.h).
 *  5. clone(CLONE_VM | CLONE_FS | CLONE_FILES | CLONE_SIGHAND |
 *     CLONE_THREAD | CLONE_SYSVSEM | CLONE_SETTLS (the block's tcb:
 *     ptrace_arch.h, ukp_arch_thread_pointer) |
 *     CLONE_PARENT_SETTID | CLONE_CHILD_CLEARTID), run at the trampoline's
 *     system call instruction: the new thread pops the block's address and
 *     the entry from its stack and jumps to the entry.
 *  6. The worker's registers and mask are put back, every thread let go.
 *
 * The unload: the object's thread, told to end by its own protocol,
 * exits; the kernel clears the block's ctid (CLONE_CHILD_CLEARTID), then
 * the process is stopped as above and the stack and the area unmapped.
 *
 * Runs in ukprobe's main thread; not async-signal-safe (malloc, stdio).
 */
#include <dirent.h>
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/ptrace.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "load.h"
#include "load_block.h"
#include "thread_block.h"
#include "ptrace_arch.h"
#include "target.h"

#define STACK_LEN (256 * 1024)

struct ukp_held {
	pid_t *tids;               /* every thread held stopped */
	size_t n, cap;
	pid_t tid;                 /* the worker */
	struct ukp_regs regs;      /* its registers */
	uint64_t mask;             /* its signal mask */
	bool mask_set;             /* changed: put back at the release */
	int sig;                   /* a signal it stopped for while it worked: given back */
	int mem;                   /* /proc/PID/mem */
	uintptr_t insn;            /* a system call instruction */
};

static int errf(struct ukp_loaded *l, int ret, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static int errf(struct ukp_loaded *l, int ret, const char *fmt, ...)
{
	va_list ap;
	int n = snprintf(l->err, sizeof(l->err), "process %d: ", l->pid);

	va_start(ap, fmt);
	if (n >= 0 && (size_t)n < sizeof(l->err))
		vsnprintf(l->err + n, sizeof(l->err) - (size_t)n, fmt, ap);
	va_end(ap);
	return ret;
}

static int mem_write(const struct ukp_held *h, uintptr_t addr, const void *buf, size_t len)
{
	return pwrite(h->mem, buf, len, (off_t)addr) == (ssize_t)len ? 0 : -EIO;
}

static int mem_read(int mem, uintptr_t addr, void *buf, size_t len)
{
	return pread(mem, buf, len, (off_t)addr) == (ssize_t)len ? 0 : -EIO;
}

/* Is the instruction before pc the system call instruction? */
static bool after_syscall_insn(int mem, uintptr_t pc)
{
	unsigned char b[8];
	size_t n = ukp_arch_syscall_insn_len;

	return pc >= n && mem_read(mem, pc - n, b, n) == 0 && !memcmp(b, ukp_arch_syscall_insn, n);
}

/* ------------------------------------------------- stopping threads */

static bool held(const struct ukp_held *h, pid_t tid)
{
	size_t i;

	for (i = 0; i < h->n; i++)
		if (h->tids[i] == tid)
			return true;
	return false;
}

static int add_tid(struct ukp_held *h, pid_t tid)
{
	if (h->n == h->cap) {
		size_t cap = h->cap ? h->cap * 2 : 16;
		pid_t *t = realloc(h->tids, cap * sizeof(*t));

		if (!t)
			return -ENOMEM;
		h->tids = t;
		h->cap = cap;
	}
	h->tids[h->n++] = tid;
	return 0;
}

static void drop_tid(struct ukp_held *h, size_t i)
{
	h->tids[i] = h->tids[--h->n];
}

/* A thread that has ended but not been reaped (a leader whose process
 * goes on) never stops: it is left out. */
static bool zombie(pid_t pid, pid_t tid)
{
	char path[64], buf[256], *p;

	snprintf(path, sizeof(path), "/proc/%d/task/%d/stat", pid, tid);
	if (!ukp_read_proc_text(path, buf, sizeof(buf)))
		return true;
	p = strrchr(buf, ')');
	return !p || p[1] != ' ' || p[2] == 'Z' || p[2] == 'X';
}

/* Has pid ended (its leader gone or a zombie)? */
static bool process_gone(pid_t pid)
{
	return zombie(pid, pid);
}

/* Is sig's action in process pid to ignore it (SIG_IGN, or the default
 * of SIGCHLD, SIGCONT, SIGURG, SIGWINCH)? */
static bool sig_ignored(pid_t pid, int sig)
{
	char path[64], buf[4096], *p;
	unsigned long long ign = 0, cgt = 0, bit = 1ULL << (sig - 1);

	snprintf(path, sizeof(path), "/proc/%d/status", pid);
	if (!ukp_read_proc_text(path, buf, sizeof(buf)))
		return false;
	if ((p = strstr(buf, "SigIgn:")))
		ign = strtoull(p + 7, NULL, 16);
	if ((p = strstr(buf, "SigCgt:")))
		cgt = strtoull(p + 7, NULL, 16);
	if (ign & bit)
		return true;
	return !(cgt & bit) &&
	       (sig == SIGCHLD || sig == SIGCONT || sig == SIGURG || sig == SIGWINCH);
}

static void undo_eintr(const struct ukp_held *h, pid_t tid);

/*
 * Wait for the interrupt's stop of tid; signals on their way stop it
 * first and are delivered. A traced thread is woken by a signal it
 * ignores, too (ptrace makes no signal ignored before its tracer saw
 * it: a child's SIGCHLD), and a waiting call then fails with EINTR that
 * the program would never have seen: such a signal is dropped (it would
 * be) and the call made again. 0, or -ESRCH when it ended.
 */
static int wait_interrupt(const struct ukp_held *h, pid_t pid, pid_t tid)
{
	int status;

	for (;;) {
		pid_t r = waitpid(tid, &status, __WALL);
		int sig;

		if (r < 0 && errno == EINTR)
			continue;
		if (r != tid || WIFEXITED(status) || WIFSIGNALED(status))
			return -ESRCH;
		if (status >> 16 == PTRACE_EVENT_STOP)
			return 0;
		sig = WSTOPSIG(status);
		if (sig_ignored(pid, sig)) {
			undo_eintr(h, tid);
			sig = 0;
		}
		if (ptrace(PTRACE_CONT, tid, NULL, (void *)(long)sig))
			return -ESRCH;
	}
}

/* The EINTR a stop gave a waiting call, undone (ptrace_arch.h). */
static void undo_eintr(const struct ukp_held *h, pid_t tid)
{
	struct ukp_regs r;

	if (ukp_arch_get_regs(tid, &r) == 0 &&
	    ukp_arch_restart_eintr(&r, after_syscall_insn(h->mem, ukp_arch_pc(&r))))
		ukp_arch_set_regs(tid, &r);
}

/* Seize and stop every thread of pid (see the top). */
/*
 * Every thread of the process stopped, the leader last. A signal the
 * process ignores (a child's SIGCHLD) is dropped when it is sent, unless
 * the thread it is sent to is traced: then it is queued and wakes another
 * thread, which, not traced yet (or any more), sees its waiting call fail
 * with EINTR (an epoll_wait) that nothing undoes. A child's SIGCHLD goes
 * to the thread that forked it and kill() to the leader: the leader is
 * taken last and let go first, so that while any thread runs untraced the
 * leader is too (a program whose other threads fork keeps that window).
 */
static int hold_all(struct ukp_loaded *l, struct ukp_held *h)
{
	char path[64];
	bool found = true, leader = false;

	snprintf(path, sizeof(path), "/proc/%d/task", l->pid);
	while (found || !leader) {
		DIR *d = opendir(path);
		struct dirent *e;
		size_t first = h->n, i;

		if (!d)
			return errf(l, -ESRCH, "no such process");
		/* the leader once no other thread is left to take */
		leader = leader || !found;
		found = false;
		while ((e = readdir(d))) {
			pid_t tid = (pid_t)atoi(e->d_name);

			if (tid <= 0 || held(h, tid) || zombie(l->pid, tid) ||
			    (tid == l->pid && !leader))
				continue;
			if (ptrace(PTRACE_SEIZE, tid, NULL, (void *)(long)PTRACE_O_TRACESYSGOOD)) {
				int err = errno;

				if (err == ESRCH)
					continue; /* ended meanwhile */
				closedir(d);
				return errf(l, -err, "ptrace (thread %d): %s", tid, strerror(err));
			}
			if (add_tid(h, tid)) {
				ptrace(PTRACE_DETACH, tid, NULL, NULL);
				closedir(d);
				return errf(l, -ENOMEM, "out of memory");
			}
			ptrace(PTRACE_INTERRUPT, tid, NULL, NULL);
			found = true;
		}
		closedir(d);
		for (i = first; i < h->n;) {
			if (wait_interrupt(h, l->pid, h->tids[i])) {
				drop_tid(h, i);
				continue;
			}
			undo_eintr(h, h->tids[i]);
			i++;
		}
	}
	if (!h->n)
		return errf(l, -ESRCH, "no thread left to stop");
	return 0;
}

/* Let every held thread go, the worker as it was: in the reverse order
 * of hold_all's, the leader first (see there). */
static void let_go(struct ukp_held *h)
{
	size_t i;

	for (i = h->n; i-- > 0;) {
		pid_t tid = h->tids[i];
		int sig = 0;

		if (tid == h->tid) {
			ukp_arch_set_regs(tid, &h->regs);
			if (h->mask_set)
				ptrace(PTRACE_SETSIGMASK, tid, (void *)sizeof(h->mask), &h->mask);
			sig = h->sig;
		}
		ptrace(PTRACE_DETACH, tid, NULL, (void *)(long)sig);
	}
	if (h->mem >= 0)
		close(h->mem);
	free(h->tids);
	free(h);
}

static struct ukp_held *held_new(void)
{
	struct ukp_held *h = calloc(1, sizeof(*h));

	if (h)
		h->mem = -1;
	return h;
}

static int open_mem(struct ukp_loaded *l, struct ukp_held *h)
{
	char path[64];

	snprintf(path, sizeof(path), "/proc/%d/mem", l->pid);
	h->mem = open(path, O_RDWR | O_CLOEXEC);
	if (h->mem < 0)
		return errf(l, -errno, "cannot open its memory: %s", strerror(errno));
	return 0;
}

/* Take the worker's registers and mask. */
/* The worker: the leader if it is held (hold_all takes it last, and a
 * program's main thread is the one most often found waiting, where the
 * system calls are made and undone cleanly), else the first thread. */
static pid_t leader_or_first(const struct ukp_held *h, pid_t pid)
{
	size_t i;

	for (i = 0; i < h->n; i++)
		if (h->tids[i] == pid)
			return pid;
	return h->tids[0];
}

static int take_worker(struct ukp_loaded *l, struct ukp_held *h, pid_t tid)
{
	h->tid = tid;
	l->worker = tid;
	if (ukp_arch_get_regs(tid, &h->regs) ||
	    ptrace(PTRACE_GETSIGMASK, tid, (void *)sizeof(h->mask), &h->mask))
		return errf(l, -ESRCH, "thread %d ended during the load", tid);
	return 0;
}

/* ------------------------------------------------- system calls */

static long remote(struct ukp_loaded *l, long nr, unsigned long a0, unsigned long a1,
		   unsigned long a2, unsigned long a3, unsigned long a4, unsigned long a5)
{
	const unsigned long a[6] = { a0, a1, a2, a3, a4, a5 };
	long res;

	if (ukp_remote_syscall(l->held->tid, &l->held->regs, l->held->insn, nr, a, &l->held->sig,
			       &res))
		return -ESRCH;
	return res;
}

static bool is_err(long res)
{
	return res < 0 && res > -4096;
}

/* A system call instruction in an executable mapping of the process. */
static int find_syscall_insn(struct ukp_loaded *l)
{
	int ret = ukp_find_syscall_insn(l->pid, l->held->mem, &l->held->insn);

	if (ret == -ESRCH)
		return errf(l, ret, "no such process");
	if (ret)
		return errf(l, ret, "no system call instruction in its executable mappings");
	return 0;
}

/* ------------------------------------------------- the load */

static int map_object(struct ukp_loaded *l, struct ukp_image *im)
{
	struct ukp_held *h = l->held;
	size_t page = (size_t)sysconf(_SC_PAGESIZE);
	long res;
	int i;

	l->area_len = im->len + page;
	res = remote(l, SYS_mmap, 0, l->area_len, PROT_READ | PROT_WRITE,
		     MAP_PRIVATE | MAP_ANONYMOUS, (unsigned long)-1, 0);
	if (is_err(res))
		return errf(l, (int)res, "mmap of %zu bytes for the object failed: %s", l->area_len,
			    strerror((int)-res));
	l->area = (uintptr_t)res;
	ukp_image_relocate(im, l->area);
	if (mem_write(h, l->area, im->buf, im->len) ||
	    mem_write(h, l->area + im->len, ukp_arch_clone_tramp, ukp_arch_clone_tramp_len))
		return errf(l, -EIO, "cannot write the object into its memory");
	for (i = 0; i < im->nseg; i++) {
		res = remote(l, SYS_mprotect, l->area + im->seg[i].off, im->seg[i].len,
			     (unsigned long)im->seg[i].prot, 0, 0, 0);
		if (is_err(res))
			return errf(l, (int)res, "mprotect of the object's segment %d failed: %s",
				    i, strerror((int)-res));
	}
	for (i = 0; i < im->nobj; i++) {
		const struct ukp_image_obj *o = &im->obj[i];

		if (!o->relro_len)
			continue;
		res = remote(l, SYS_mprotect, l->area + o->off + o->relro_off, o->relro_len,
			     PROT_READ, 0, 0, 0);
		if (is_err(res))
			return errf(l, (int)res, "mprotect of %s's RELRO failed: %s", o->name,
				    strerror((int)-res));
	}
	res = remote(l, SYS_mprotect, l->area + im->len, page, PROT_READ | PROT_EXEC, 0, 0, 0);
	if (is_err(res))
		return errf(l, (int)res, "mprotect of the clone trampoline failed: %s",
			    strerror((int)-res));
	l->entry = l->area + im->entry;
	return 0;
}

static int start_thread(struct ukp_loaded *l, const struct ukp_image *im, const void *params,
			size_t len)
{
	struct ukp_held *h = l->held;
	size_t page = (size_t)sysconf(_SC_PAGESIZE), bsize = (sizeof(struct ukp_load_block) + len + 15) & ~(size_t)15, nw;
	struct ukp_load_block *b;
	uint64_t words[4], full = ~0ULL;
	unsigned long a[6];
	uintptr_t sp, tp;
	long res;
	int ret;

	if (bsize > STACK_LEN / 4)
		return errf(l, -E2BIG, "the object's parameters (%zu bytes) do not fit its stack",
			    len);
	l->stack_len = STACK_LEN;
	res = remote(l, SYS_mmap, 0, l->stack_len, PROT_READ | PROT_WRITE,
		     MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK, (unsigned long)-1, 0);
	if (is_err(res))
		return errf(l, (int)res, "mmap of the object's stack failed: %s",
			    strerror((int)-res));
	l->stack = (uintptr_t)res;
	res = remote(l, SYS_mprotect, l->stack, page, PROT_NONE, 0, 0, 0);
	if (is_err(res))
		return errf(l, (int)res, "mprotect of the stack's guard page failed: %s",
			    strerror((int)-res));
	l->block = (l->stack + l->stack_len - bsize) & ~(uintptr_t)15;
	b = calloc(1, bsize);
	if (!b)
		return errf(l, -ENOMEM, "out of memory");
	b->magic = UKP_LOAD_MAGIC;
	b->size = (uint32_t)bsize;
	b->area = l->area;
	b->area_len = l->area_len;
	b->stack = l->stack;
	b->stack_len = l->stack_len;
	b->params_len = len;
	if (len)
		memcpy(b->params, params, len);
	tp = ukp_arch_thread_pointer(l->block + offsetof(struct ukp_load_block, tcb), b->tcb);
	ukp_arch_child_frame(l->block, l->entry, words, &nw, &sp);
	ret = mem_write(h, l->block, b, bsize) || mem_write(h, sp, words, nw * sizeof(words[0]));
	free(b);
	if (ret)
		return errf(l, -EIO, "cannot write the object's block into its memory");
	/* the new thread inherits the worker's mask: every signal blocked */
	if (ptrace(PTRACE_SETSIGMASK, h->tid, (void *)sizeof(full), &full))
		return errf(l, -ESRCH, "thread %d ended during the load", h->tid);
	h->mask_set = true;
	ukp_arch_clone_args(a,
			    CLONE_VM | CLONE_FS | CLONE_FILES | CLONE_SIGHAND | CLONE_THREAD |
				    CLONE_SYSVSEM | CLONE_SETTLS | CLONE_PARENT_SETTID |
				    CLONE_CHILD_CLEARTID,
			    sp, l->block + offsetof(struct ukp_load_block, ctid),
			    l->block + offsetof(struct ukp_load_block, ctid), tp);
	if (ukp_remote_syscall(h->tid, &h->regs, l->area + im->len, SYS_clone, a, &h->sig, &res))
		return errf(l, -ESRCH, "thread %d ended during the load", h->tid);
	if (is_err(res))
		return errf(l, (int)res, "clone of the object's thread failed: %s",
			    strerror((int)-res));
	l->tid = (pid_t)res;
	return 0;
}

/* Unmap what a failed load mapped (the worker still held). */
static void undo_maps(struct ukp_loaded *l)
{
	if (l->stack)
		remote(l, SYS_munmap, l->stack, l->stack_len, 0, 0, 0, 0);
	if (l->area)
		remote(l, SYS_munmap, l->area, l->area_len, 0, 0, 0, 0);
	l->stack = l->area = 0;
}

/* The value of the auxiliary vector's entry type in /proc/PID/auxv (the
 * kernel's copy, made at the exec), or 0. */
static uintptr_t auxv_value(pid_t pid, unsigned long type)
{
	char path[64];
	Elf64_auxv_t av[64];
	ssize_t n;
	size_t i;
	int fd;

	snprintf(path, sizeof(path), "/proc/%d/auxv", pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	n = read(fd, av, sizeof(av));
	close(fd);
	for (i = 0; n > 0 && i < (size_t)n / sizeof(av[0]) && av[i].a_type != AT_NULL; i++)
		if (av[i].a_type == type)
			return av[i].a_un.a_val;
	return 0;
}

/* The identity of the program image now in process pid (see
 * ukp_loaded.image_id), read through mem: AT_RANDOM's address and the
 * bytes it points at. */
static bool image_id(pid_t pid, int mem, unsigned char id[24])
{
	uintptr_t at = auxv_value(pid, AT_RANDOM);

	memcpy(id, &at, sizeof(at));
	return at && mem_read(mem, at, id + 8, 16) == 0;
}

/* Is the program image in the process still the one the object was
 * loaded into (true when that is not known)? */
static bool same_image(const struct ukp_loaded *l, int mem)
{
	unsigned char now[24];

	return !l->image_id_ok ||
	       (image_id(l->pid, mem, now) && !memcmp(now, l->image_id, sizeof(now)));
}

static int load_held(struct ukp_loaded *l, const void *params, size_t len, struct ukp_image *im)
{
	int ret = find_syscall_insn(l);

	l->image_id_ok = image_id(l->pid, l->held->mem, l->image_id);

	if (!ret)
		ret = map_object(l, im);
	if (!ret)
		ret = start_thread(l, im, params, len);
	if (ret && ret != -ESRCH)
		undo_maps(l);
	return ret;
}

static void loaded_init(struct ukp_loaded *l, pid_t pid)
{
	memset(l, 0, sizeof(*l));
	l->pid = pid;
}

int ukp_load_attach(pid_t pid, const char *path, const void *params, size_t len,
		    struct ukp_loaded *l)
{
	struct ukp_image im;
	int ret;

	loaded_init(l, pid);
	if (ukp_image_read(path, &im, l->err, sizeof(l->err)))
		return -ENOEXEC;
	l->held = held_new();
	if (!l->held) {
		ukp_image_free(&im);
		return errf(l, -ENOMEM, "out of memory");
	}
	ret = open_mem(l, l->held);
	if (!ret)
		ret = hold_all(l, l->held);
	if (!ret)
		ret = take_worker(l, l->held, leader_or_first(l->held, l->pid));
	if (!ret)
		ret = load_held(l, params, len, &im);
	ukp_image_free(&im);
	if (ret)
		ukp_load_release(l);
	return ret;
}

/* Run the traced child from its execve stop to its entry point. */
static int run_to_entry(struct ukp_loaded *l, struct ukp_held *h)
{
	uintptr_t entry = auxv_value(l->pid, AT_ENTRY);
	unsigned char orig[8];
	size_t n = ukp_arch_break_insn_len;
	struct ukp_regs r;
	int status;

	if (!entry)
		return errf(l, -ENOENT, "no AT_ENTRY in its auxiliary vector");
	if (ukp_arch_get_regs(l->pid, &r))
		return errf(l, -ESRCH, "not stopped under ukprobe's ptrace");
	if (ukp_arch_pc(&r) == entry)
		return 0; /* a static program starts there */
	if (mem_read(h->mem, entry, orig, n) || mem_write(h, entry, ukp_arch_break_insn, n))
		return errf(l, -EIO, "cannot write a breakpoint at its entry point %#lx",
			    (unsigned long)entry);
	for (int sig = 0;;) {
		if (ptrace(PTRACE_CONT, l->pid, NULL, (void *)(long)sig) ||
		    waitpid(l->pid, &status, __WALL) != l->pid || !WIFSTOPPED(status))
			return errf(l, -ESRCH, "ended before its entry point");
		sig = status >> 16 ? 0 : WSTOPSIG(status);
		if (sig == SIGTRAP && !ukp_arch_get_regs(l->pid, &r) &&
		    ukp_arch_pc(&r) == ukp_arch_break_stop_pc(entry))
			break;
	}
	ukp_arch_set_pc(&r, entry);
	if (mem_write(h, entry, orig, n) || ukp_arch_set_regs(l->pid, &r))
		return errf(l, -EIO, "cannot take the breakpoint at its entry point back");
	return 0;
}

static int load_child(pid_t pid, const char *path, const void *params, size_t len,
		      struct ukp_loaded *l, bool to_entry);

int ukp_load_at_entry(pid_t pid, const char *path, const void *params, size_t len,
		      struct ukp_loaded *l)
{
	return load_child(pid, path, params, len, l, true);
}

int ukp_load_stopped(pid_t pid, const char *path, const void *params, size_t len,
		     struct ukp_loaded *l)
{
	return load_child(pid, path, params, len, l, false);
}

static int load_child(pid_t pid, const char *path, const void *params, size_t len,
		      struct ukp_loaded *l, bool to_entry)
{
	struct ukp_image im;
	struct ukp_held *h;
	int ret;

	loaded_init(l, pid);
	if (ukp_image_read(path, &im, l->err, sizeof(l->err)))
		return -ENOEXEC;
	h = l->held = held_new();
	if (!h || add_tid(h, pid)) {
		ukp_image_free(&im);
		free(h);
		l->held = NULL;
		return errf(l, -ENOMEM, "out of memory");
	}
	if (open_mem(l, h))
		ret = -ESRCH;
	else if (ptrace(PTRACE_SETOPTIONS, pid, NULL, (void *)(long)PTRACE_O_TRACESYSGOOD))
		ret = errf(l, -errno, "not stopped under ukprobe's ptrace: %s", strerror(errno));
	else
		ret = to_entry ? run_to_entry(l, h) : 0;
	if (!ret)
		ret = take_worker(l, h, pid);
	if (!ret)
		ret = load_held(l, params, len, &im);
	ukp_image_free(&im);
	if (ret)
		ukp_load_release(l);
	return ret;
}

void ukp_load_release(struct ukp_loaded *l)
{
	if (l->held)
		let_go(l->held);
	l->held = NULL;
}

/* ------------------------------------------------- the unload */

static long now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000L + ts.tv_nsec / 1000000;
}

/* Has the object's thread ended (its ctid cleared, its task gone)? */
static int thread_ended(struct ukp_loaded *l, int mem)
{
	char path[64];
	uint32_t ctid = 1;

	if (mem_read(mem, l->block + offsetof(struct ukp_load_block, ctid), &ctid, sizeof(ctid)))
		return -ESRCH;
	snprintf(path, sizeof(path), "/proc/%d/task/%d", l->pid, l->tid);
	return ctid == 0 && access(path, F_OK) != 0;
}

int ukp_load_wait_end(struct ukp_loaded *l, int timeout_ms)
{
	long until = now_ms() + timeout_ms;
	char path[64];
	int mem, ret;

	snprintf(path, sizeof(path), "/proc/%d/mem", l->pid);
	mem = open(path, O_RDONLY | O_CLOEXEC);
	if (mem < 0)
		return errf(l, -errno, "cannot open its memory: %s", strerror(errno));
	while ((ret = thread_ended(l, mem)) == 0 && now_ms() < until)
		usleep(1000);
	close(mem);
	if (ret < 0)
		return errf(l, -ESRCH, "the process ended");
	if (!ret)
		return errf(l, -ETIMEDOUT, "the loaded object's thread %d did not end within %d ms",
			    l->tid, timeout_ms);
	return 0;
}

/* The object's word at its end (load_block.h), read once its thread is
 * gone: the block's head and, when it gave its maps back, their list. */
static int read_end(struct ukp_loaded *l, struct ukp_load_block *b, struct ukp_own_maps **maps)
{
	uint32_t n;

	*maps = NULL;
	if (mem_read(l->held->mem, l->block, b, sizeof(*b)))
		return errf(l, -ESRCH, "ended before the unload");
	if (b->unload != UKP_UNLOAD_GIVEN)
		return 0;
	if (mem_read(l->held->mem, b->own_maps, &n, sizeof(n)) || n > UKP_OWN_MAPS_MAX)
		return errf(l, -EIO, "the object's list of its mappings cannot be read");
	*maps = calloc(1, sizeof(**maps));
	if (!*maps)
		return errf(l, -ENOMEM, "out of memory");
	if (mem_read(l->held->mem, b->own_maps, *maps,
		     offsetof(struct ukp_own_maps, r) + n * sizeof((*maps)->r[0]))) {
		free(*maps);
		*maps = NULL;
		return errf(l, -EIO, "the object's list of its mappings cannot be read");
	}
	return 0;
}

/* Is a the object's (its image, its stack, a mapping it listed)? */
static bool object_addr(const struct ukp_loaded *l, const struct ukp_own_maps *m, uintptr_t a)
{
	uint32_t i;

	if (a - l->area < l->area_len || a - l->stack < l->stack_len)
		return true;
	for (i = 0; m && i < m->n; i++)
		if (a >= m->r[i].lo && a < m->r[i].hi)
			return true;
	return false;
}

/* With every thread held: is one of them in the object's code or
 * memory (the tail of a handler, a signal return)? Those whose block
 * base is the object's get theirs back to 0 (what the program had). */
static int threads_outside(struct ukp_loaded *l, const struct ukp_load_block *b,
			   const struct ukp_own_maps *m, bool *inside)
{
	struct ukp_held *h = l->held;
	size_t i;

	*inside = false;
	for (i = 0; i < h->n; i++) {
		struct ukp_regs r;

		if (h->tids[i] == h->tid)
			r = h->regs;
		else if (ukp_arch_get_regs(h->tids[i], &r))
			continue; /* (it ended meanwhile) */
		if (object_addr(l, m, ukp_arch_pc(&r))) {
			*inside = true;
			return 0;
		}
	}
	/* (every thread outside: only then is any base changed) */
	for (i = 0; i < h->n; i++) {
		struct ukp_regs r;
		uintptr_t base;

		if (h->tids[i] == h->tid)
			r = h->regs;
		else if (ukp_arch_get_regs(h->tids[i], &r))
			continue;
		base = ukp_arch_block_base(&r);
		if (base < b->tb_lo || base >= b->tb_hi)
			continue;
		ukp_arch_set_block_base(&r, 0);
		if (h->tids[i] == h->tid)
			h->regs = r;
		else if (ukp_arch_set_regs(h->tids[i], &r))
			return errf(l, -ESRCH, "thread %d ended during the unload", h->tids[i]);
	}
	return 0;
}

/*
 * With every thread held and none in the object: each return still
 * pending through the object's trampoline (a thread blocked in a function
 * whose return was probed) gets its real address back in its stack slot
 * (the object's list, load_block.h), so that it returns to its caller
 * with the object gone. Only where the slot is still in the live part of
 * its thread's stack and still holds the trampoline's address: a return
 * made since the list was written left its slot below the stack pointer
 * (the stack there is dead, its bytes the next call's).
 */
static int put_back_returns(struct ukp_loaded *l, const struct ukp_load_block *b)
{
	struct ukp_held *h = l->held;
	struct ukp_ret_back *rb;
	uint64_t i;
	size_t j;
	int ret = 0;

	if (!b->rets_n)
		return 0;
	if (b->rets_n > UKP_RET_BACK_MAX)
		return errf(l, -EIO, "the object's list of pending returns is too long");
	rb = calloc(b->rets_n, sizeof(*rb));
	if (!rb)
		return errf(l, -ENOMEM, "out of memory");
	if (mem_read(h->mem, b->rets, rb, b->rets_n * sizeof(*rb)))
		ret = errf(l, -EIO, "the object's list of pending returns cannot be read");
	for (i = 0; !ret && i < b->rets_n; i++) {
		struct ukp_regs r;
		uint64_t cur;

		for (j = 0; j < h->n && h->tids[j] != (pid_t)rb[i].tid; j++)
			;
		if (j == h->n)
			continue; /* (the thread has ended) */
		if (h->tids[j] == h->tid)
			r = h->regs;
		else if (ukp_arch_get_regs(h->tids[j], &r))
			continue;
		if (rb[i].slot < ukp_arch_sp(&r) || mem_read(h->mem, rb[i].slot, &cur, sizeof(cur)) ||
		    cur != b->trampoline)
			continue;
		if (mem_write(h, rb[i].slot, &rb[i].ret, sizeof(rb[i].ret)))
			ret = errf(l, -EIO, "thread %d's return address at %#lx cannot be put back",
				   h->tids[j], (unsigned long)rb[i].slot);
	}
	free(rb);
	return ret;
}

static const char *kept_why(const struct ukp_load_block *b, char *buf, size_t len)
{
	switch (b->unload) {
	case UKP_UNLOAD_RETURNS:
		snprintf(buf, len, "%u return probe hit%s still to return through it", b->unload_n,
			 b->unload_n == 1 ? "" : "s");
		break;
	case UKP_UNLOAD_SIGNALS:
		snprintf(buf, len, "%u signal action%s still its own", b->unload_n,
			 b->unload_n == 1 ? "" : "s");
		break;
	case UKP_UNLOAD_THREADS:
		snprintf(buf, len, "%u thread%s of its own still running", b->unload_n,
			 b->unload_n == 1 ? "" : "s");
		break;
	case UKP_UNLOAD_FORKS:
		snprintf(buf, len, "%u thread%s still in its fork() (-f)", b->unload_n,
			 b->unload_n == 1 ? "" : "s");
		break;
	case UKP_UNLOAD_LOST:
		snprintf(buf, len, "more mappings of its own than it could list");
		break;
	default:
		snprintf(buf, len, "it did not say it was done");
		break;
	}
	return buf;
}

/* Has the process exec'd since the load (not known: false)? */
static bool exec_since(const struct ukp_loaded *l)
{
	char path[64];
	bool same;
	int mem;

	if (!l->image_id_ok)
		return false;
	snprintf(path, sizeof(path), "/proc/%d/mem", l->pid);
	mem = open(path, O_RDONLY | O_CLOEXEC);
	if (mem < 0)
		return false;
	same = same_image(l, mem);
	close(mem);
	return !same;
}

int ukp_unload(struct ukp_loaded *l, int timeout_ms)
{
	long until = now_ms() + timeout_ms, res = 0;
	struct ukp_own_maps *maps = NULL;
	struct ukp_load_block b;
	bool inside = true;
	uint32_t i;
	int ret;

	if (l->held)
		ukp_load_release(l);
	if (exec_since(l))
		return errf(l, -ESRCH, "it exec'd: the agent went with its image");
	ret = ukp_load_wait_end(l, timeout_ms);
	if (ret == -ESRCH)
		return errf(l, -ESRCH, "ended before the unload");
	if (ret)
		return ret;
	/* stopped until no thread is in the object's code or memory (one
	 * leaving a handler of the library's now): held, looked at, let go */
	for (;;) {
		l->held = held_new();
		if (!l->held)
			return errf(l, -ENOMEM, "out of memory");
		ret = open_mem(l, l->held);
		if (!ret)
			ret = hold_all(l, l->held);
		if (!ret)
			ret = take_worker(l, l->held, leader_or_first(l->held, l->pid));
		/* (read at each stop: a thread stopped in the middle of an
		 * update of the list is inside, and looked at again) */
		free(maps);
		maps = NULL;
		/* (held, it can exec no more: decided here) */
		if (!ret && !same_image(l, l->held->mem))
			ret = errf(l, -ESRCH, "it exec'd: the agent went with its image");
		if (!ret)
			ret = read_end(l, &b, &maps);
		if (!ret && b.unload < 0) {
			char why[128];

			ret = errf(l, -EBUSY, "the agent stays loaded: %s",
				   kept_why(&b, why, sizeof(why)));
		}
		if (!ret)
			ret = threads_outside(l, &b, maps, &inside);
		if (ret || !inside)
			break;
		ukp_load_release(l);
		if (now_ms() >= until) {
			free(maps);
			return errf(l, -ETIMEDOUT, "a thread stayed in the loaded object's code "
				    "for %d ms: it was not unmapped", timeout_ms);
		}
		usleep(1000);
	}
	if (!ret)
		ret = put_back_returns(l, &b);
	if (!ret)
		ret = find_syscall_insn(l);
	/* (the list first: the object's own record of its mappings is in its
	 * image) */
	for (i = 0; !ret && maps && i < maps->n && !is_err(res); i++)
		res = remote(l, SYS_munmap, maps->r[i].lo, maps->r[i].hi - maps->r[i].lo, 0, 0, 0,
			     0);
	if (!ret && !is_err(res))
		res = remote(l, SYS_munmap, l->stack, l->stack_len, 0, 0, 0, 0);
	if (!ret && !is_err(res))
		res = remote(l, SYS_munmap, l->area, l->area_len, 0, 0, 0, 0);
	if (!ret && is_err(res))
		ret = errf(l, (int)res, "munmap failed: %s", strerror((int)-res));
	free(maps);
	ukp_load_release(l);
	if (!ret)
		l->area = l->stack = l->block = 0;
	else if (ret != -EBUSY && process_gone(l->pid))
		ret = errf(l, -ESRCH, "ended before the unload");
	return ret;
}

/* ------------------------------------------ the dynamic agent's blocks */


#define CODE_MAX 64

/* The executable mappings a thread must not be in for the blocks to go:
 * agent's (its file) and the anonymous ones (its slots and detour
 * buffers, which read the block; a program's own JIT code too: then it
 * waits, and gives up at the timeout). */
static size_t agent_code(pid_t pid, const char *agent, struct ukp_own_range *r, size_t max,
			 bool *agent_seen)
{
	char path[64], line[4200];
	size_t n = 0;

	*agent_seen = false;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/maps", pid);
	f = fopen(path, "re");
	while (f && fgets(line, sizeof(line), f)) {
		unsigned long lo, hi;
		char perms[8] = "", file[4096] = "";

		if (sscanf(line, "%lx-%lx %7s %*s %*s %*s %4095[^\n]", &lo, &hi, perms, file) < 3 ||
		    perms[2] != 'x')
			continue;
		if (file[0] && strcmp(file, agent) && !strstr(file, "libukprobe-agent"))
			continue;
		*agent_seen |= file[0] != 0;
		if (n == max) {
			n = max + 1; /* (too many: the caller waits for nothing) */
			break;
		}
		r[n++] = (struct ukp_own_range){ lo, hi };
	}
	if (f)
		fclose(f);
	return n;
}

static bool in_ranges(const struct ukp_own_range *r, size_t n, uintptr_t a)
{
	for (size_t i = 0; i < n; i++)
		if (a >= r[i].lo && a < r[i].hi)
			return true;
	return false;
}

/*
 * Is the thread whose registers r are between a bracket of the agent's or
 * the library's that counts in its block, with its code outside both
 * (common/thread_block.h: each room's first int, its "not now" count)?
 * The dynamic agent's fork handlers count from prepare to parent, with
 * libc's fork between: unmapped then, the parent handler found no block,
 * took one in a new arena and left its busy count at -1, and the thread
 * recorded nothing in every later session.
 */
static bool block_busy(struct ukp_loaded *l, const struct ukp_tb_unload *u, const struct ukp_regs *r)
{
	uintptr_t base = ukp_arch_block_base(r), block;
	int32_t lib = 0, agent = 0;

	if (base < u->base_lo || base >= u->base_hi)
		return false;
	block = base + (uintptr_t)(u->arena - u->base_lo);
	if (mem_read(l->held->mem, block + UKP_TB_LIB_OFF, &lib, sizeof(lib)) ||
	    mem_read(l->held->mem, block + UKP_TB_AGENT_OFF, &agent, sizeof(agent)))
		return true; /* (unreadable: not now) */
	return lib != 0 || agent != 0;
}

int ukp_unmap_blocks(pid_t pid, pid_t gone_tid, uint64_t info, const char *agent,
		     int timeout_ms, char *err, size_t errlen)
{
	long until = now_ms() + timeout_ms, res = 0;
	struct ukp_own_range code[CODE_MAX + 2];
	struct ukp_tb_unload u;
	struct ukp_loaded ld, *l = &ld;
	char task[64];
	size_t ncode, i;
	int ret = 0;

	loaded_init(l, pid);
	snprintf(task, sizeof(task), "/proc/%d/task/%d", pid, gone_tid);
	while (gone_tid > 0 && access(task, F_OK) == 0) {
		if (now_ms() >= until) {
			ret = errf(l, -ETIMEDOUT, "the agent's thread %d did not end: its blocks stay",
				   gone_tid);
			goto out;
		}
		usleep(1000);
	}
	for (;;) {
		bool inside = false, seen;

		l->held = held_new();
		if (!l->held) {
			ret = errf(l, -ENOMEM, "out of memory");
			goto out;
		}
		ret = open_mem(l, l->held);
		if (!ret)
			ret = hold_all(l, l->held);
		if (!ret)
			ret = take_worker(l, l->held, leader_or_first(l->held, l->pid));
		if (!ret && mem_read(l->held->mem, info, &u, sizeof(u)))
			ret = errf(l, -ESRCH, "the agent's blocks cannot be read");
		if (!ret && !u.arena)
			break; /* (none mapped) */
		ncode = ret ? 0 : agent_code(pid, agent, code, CODE_MAX, &seen);
		if (!ret && ncode > CODE_MAX)
			ret = errf(l, -EBUSY, "more than %d executable mappings to look at: the "
				   "agent's blocks stay", CODE_MAX);
		/* (the same image: not one that an exec made since) */
		if (!ret && (!seen || u.arena_len != UKP_TB_ARENA || (u.arena & 4095) ||
			     (u.zero && u.zero_len != 4096)))
			ret = errf(l, -ESRCH, "the agent is gone");
		if (ret)
			break;
		code[ncode++] = (struct ukp_own_range){ u.arena, u.arena + u.arena_len };
		if (u.zero)
			code[ncode++] = (struct ukp_own_range){ u.zero, u.zero + u.zero_len };
		for (i = 0; i < l->held->n && !inside; i++) {
			struct ukp_regs r;

			if (l->held->tids[i] == l->held->tid)
				r = l->held->regs;
			else if (ukp_arch_get_regs(l->held->tids[i], &r))
				continue;
			inside = in_ranges(code, ncode, ukp_arch_pc(&r)) || block_busy(l, &u, &r);
		}
		if (!inside)
			break;
		ukp_load_release(l);
		if (now_ms() >= until) {
			ret = errf(l, -ETIMEDOUT, "a thread stayed in the agent's code for %d ms: its "
				   "blocks stay", timeout_ms);
			goto out;
		}
		usleep(1000);
	}
	if (!ret && u.arena) {
		/* every block base of the arena's back to 0, then the words
		 * that name the arena, then the memory */
		for (i = 0; i < l->held->n && !ret; i++) {
			struct ukp_regs r;
			pid_t tid = l->held->tids[i];
			uintptr_t base;

			if (tid == l->held->tid)
				r = l->held->regs;
			else if (ukp_arch_get_regs(tid, &r))
				continue;
			base = ukp_arch_block_base(&r);
			if (base < u.base_lo || base >= u.base_hi)
				continue;
			ukp_arch_set_block_base(&r, 0);
			if (tid == l->held->tid)
				l->held->regs = r;
			else if (ukp_arch_set_regs(tid, &r))
				ret = errf(l, -ESRCH, "thread %d ended during the unmap", tid);
		}
		for (i = 0; !ret && i < sizeof(u.clear) / sizeof(u.clear[0]); i++) {
			static const char zero[8];

			if (u.clear[i].addr && u.clear[i].len <= sizeof(zero) &&
			    mem_write(l->held, u.clear[i].addr, zero, u.clear[i].len))
				ret = errf(l, -EIO, "the agent's words cannot be written");
		}
		if (!ret)
			ret = find_syscall_insn(l);
		if (!ret)
			res = remote(l, SYS_munmap, u.arena, u.arena_len, 0, 0, 0, 0);
		if (!ret && !is_err(res) && u.zero)
			res = remote(l, SYS_munmap, u.zero, u.zero_len, 0, 0, 0, 0);
		if (!ret && is_err(res))
			ret = errf(l, (int)res, "munmap of the agent's blocks failed: %s",
				   strerror((int)-res));
	}
	ukp_load_release(l);
out:
	if (ret && process_gone(pid))
		ret = -ESRCH; /* (it ended meanwhile: its blocks with it) */
	if (ret)
		snprintf(err, errlen, "%s", l->err);
	return ret;
}
