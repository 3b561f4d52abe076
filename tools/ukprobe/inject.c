/* SPDX-License-Identifier: MIT */
/*
 * inject.c - load the agent into a running process (ukprobe -p PID).
 *
 * On x86-64 every process gets the freestanding agent (with -f too),
 * mapped by ukprobe's ptrace loader (load.c): nothing of the program runs
 * for it (choose_agent() below says when the dynamic one is loaded
 * instead). The dynamic agent is dlopen()ed in a stopped thread, as
 * debuggers call functions in their inferior:
 *
 *  1. Checks that need no ptrace (target.c): the process exists, is a
 *     64-bit x86-64 program with a dynamic loader, maps the C library,
 *     whose dlopen (glibc >= 2.34; else libdl's) is found in its file's
 *     dynamic symbols; nobody traces it already; it is not stopped.
 *  2. One thread is chosen and stopped with PTRACE_SEIZE +
 *     PTRACE_INTERRUPT; the others keep running (nothing here needs
 *     them stopped: the loader and malloc take their own locks, and a
 *     thread that holds one releases it). The thread must be at a point
 *     where it holds no lock of the C library: a thread blocked in a
 *     system call that waits (read, poll, futex, nanosleep, ...), else a
 *     thread stopped outside the C library and the loader; a thread
 *     found elsewhere is let go and stopped again a little later.
 *  3. Its registers (general and extended state) are saved, and it calls
 *     dlopen(agent, RTLD_NOW) and then ukprobe_agent_attach(name, key) in
 *     the agent (key: the session's secret, agent/attach.c): arguments below its red zone, a return address of 0, so
 *     that each call ends in a SIGSEGV at address 0, which stops the
 *     thread for ukprobe and is never delivered.
 *  4. Its registers are put back and it is detached. A system call the
 *     stop interrupted is restarted by the kernel as for any stop without
 *     a handler (-ERESTART*: ptrace hands the same registers back, so the
 *     kernel's restart logic runs when the thread resumes); the few that
 *     a stop turns into EINTR (epoll_wait, semop, sigtimedwait, sockets
 *     with a timeout) are restarted here (the syscall instruction again,
 *     with the same arguments; a timeout starts over).
 *
 * The agent then starts its own thread and connects back (agent/attach.c);
 * the stopped thread's part is only the two calls.
 *
 * The registers, the calls' set-up and the restart of a call a stop made
 * fail are the architecture's (arch/ARCH/ptrace_arch.c); -p is ported to
 * x86-64 only: elsewhere the options refuse it (cli.h: UKP_CAN_ATTACH)
 * and ukp_inject() says so.
 */
#include <dlfcn.h>
#include <elf.h>
#include <limits.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/ptrace.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "ptrace_arch.h"
#include "target.h"
#include "load.h"

#define RETRIES 500          /* stops outside a safe point before giving up */
/* a call into the process not back by then is waiting for a lock:
 * ukprobe says so (once) and goes on waiting */
#define CALL_NOTE_MS 2000

static long now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000L + ts.tv_nsec / 1000;
}

/* --------------------------------------------------------- ptrace */

static bool exited(pid_t tid, int status)
{
	(void)tid;
	return WIFEXITED(status) || WIFSIGNALED(status);
}

/* Wait for a stop of tid. 0, or -ESRCH when it (or the process) is gone. */
static int wait_stop(pid_t tid, int *status)
{
	for (;;) {
		pid_t r = waitpid(tid, status, __WALL);

		if (r == tid && !exited(tid, *status))
			return 0;
		if (r == tid || (r < 0 && errno == ECHILD))
			return -ESRCH;
		if (r < 0 && errno != EINTR)
			return -errno;
	}
}

/*
 * wait_stop() for a call running in tid: the same, but a call not back
 * within CALL_NOTE_MS is said to wait (the agent's dlopen() waits for a
 * lock another thread holds: malloc's, the loader's). It cannot be given
 * up: the thread runs the callee on ukprobe's registers and returns to
 * address 0, where ukprobe must take it back; ukprobe's SIGINT and
 * SIGTERM are acted on once it is back (attach.c).
 */
static int wait_call(const struct ukp_target *t, pid_t tid, uintptr_t fn, int *status)
{
	long start = now_us();
	bool said = false;

	for (;;) {
		pid_t r = waitpid(tid, status, __WALL | WNOHANG);
		struct timespec ts = { 0, 5 * 1000 * 1000 };

		if (r == tid && !exited(tid, *status))
			return 0;
		if (r == tid || (r < 0 && errno == ECHILD))
			return -ESRCH;
		if (r < 0 && errno != EINTR)
			return -errno;
		if (!said && now_us() - start > CALL_NOTE_MS * 1000L) {
			said = true;
			fprintf(stderr,
				"ukprobe: process %d (%s): thread %d is still in %s, waiting for a "
				"lock that another thread holds (malloc's or the dynamic loader's: "
				"a thread inside malloc(), fork() or dlopen()); the attach goes on "
				"when that thread lets go\n",
				t->pid, t->comm, (int)tid,
				fn == t->dlopen_fn ? "dlopen() of the agent" : "a call of ukprobe's");
		}
		if (r == 0)
			nanosleep(&ts, NULL);
	}
}

struct saved {
	struct ukp_regs regs;
	void *ext;                /* the vector and floating-point state */
	size_t ext_len;
};

static int save_state(pid_t tid, struct saved *sv)
{
	int ret = ukp_arch_get_regs(tid, &sv->regs);

	return ret ? ret : ukp_arch_ext_save(tid, &sv->ext, &sv->ext_len);
}

static int restore_state(pid_t tid, const struct saved *sv)
{
	int ret = ukp_arch_ext_restore(tid, sv->ext, sv->ext_len);

	return ret ? ret : ukp_arch_set_regs(tid, &sv->regs);
}

static bool is_syscall_insn(const struct ukp_target *t, uintptr_t after);

/*
 * Stop tid at a safe point (see the top): seized and interrupted; a
 * stop elsewhere lets it go and tries again. 0 with the thread stopped
 * and its state in *sv; -EAGAIN (no safe point found) with the thread
 * stopped too and its state in *sv; or -errno (it is gone).
 */
static int stop_safely(const struct ukp_target *t, pid_t tid, struct saved *sv, long *stopped_at)
{
	int status, tries, ret;

	for (tries = 0; tries < RETRIES; tries++) {
		long nr;

		if (ptrace(PTRACE_INTERRUPT, tid, NULL, NULL))
			return -errno;
		*stopped_at = now_us();
		/* a signal on its way stops it first: deliver it, wait for
		 * the interrupt's stop */
		for (;;) {
			ret = wait_stop(tid, &status);
			if (ret)
				return ret;
			if (status >> 16 == PTRACE_EVENT_STOP)
				break;
			if (ptrace(PTRACE_CONT, tid, NULL, (void *)(long)WSTOPSIG(status)))
				return -errno;
		}
		if (save_state(tid, sv))
			return -ESRCH;
		/* a waiting call the stop made fail with EINTR runs again */
		ukp_arch_restart_eintr(&sv->regs, is_syscall_insn(t, ukp_arch_pc(&sv->regs)));
		nr = ukp_arch_syscall_nr(tid, &sv->regs);
		if (nr >= 0 ? ukp_waiting_syscall(nr)
			    : !ukp_target_in_libc(t, ukp_arch_pc(&sv->regs)))
			return 0;
		if (tries == RETRIES - 1)
			return -EAGAIN; /* stopped, its state in *sv */
		free(sv->ext);
		sv->ext = NULL;
		if (ukp_arch_set_regs(tid, &sv->regs) || ptrace(PTRACE_CONT, tid, NULL, NULL))
			return -ESRCH;
		usleep(200 + (unsigned int)tries * 20);
	}
	return -EAGAIN;
}

static int mem_write(const struct ukp_target *t, uintptr_t addr, const void *buf, size_t len)
{
	return pwrite(t->mem, buf, len, (off_t)addr) == (ssize_t)len ? 0 : -EIO;
}

static int mem_read(const struct ukp_target *t, uintptr_t addr, void *buf, size_t len)
{
	return pread(t->mem, buf, len, (off_t)addr) == (ssize_t)len ? 0 : -EIO;
}

/*
 * nr(a[0..5]) as a system call of the stopped thread tid (registers
 * base), with every signal held back meanwhile: run at a system call
 * instruction of the process, no byte of its stack touched. *res: its
 * result. 0 or -errno.
 */
static int syscall_in(const struct ukp_target *t, pid_t tid, const struct ukp_regs *base,
		      long nr, const unsigned long a[6], long *res)
{
	uint64_t mask, all = ~(uint64_t)0;
	uintptr_t insn;
	int sig = 0, ret;

	ret = ukp_find_syscall_insn(t->pid, t->mem, &insn);
	if (ret)
		return ret;
	if (ptrace(PTRACE_GETSIGMASK, tid, (void *)sizeof(mask), &mask) ||
	    ptrace(PTRACE_SETSIGMASK, tid, (void *)sizeof(all), &all))
		return -ESRCH;
	ret = ukp_remote_syscall(tid, base, insn, nr, a, &sig, res);
	if (ptrace(PTRACE_SETSIGMASK, tid, (void *)sizeof(mask), &mask))
		return -ESRCH;
	/* (all blocked: only SIGSTOP can have stopped it; it stops again) */
	if (sig)
		syscall(SYS_tgkill, t->pid, tid, sig);
	return ret;
}

/* The stack the calls below run on: mapped in the process at the first
 * call. The stopped thread may be a goroutine's (Go gives it a few KB
 * and places other goroutines' stacks beside it), or a coroutine's:
 * dlopen() and the agent's constructors overran such a stack into its
 * neighbours. 0 or -errno. */
#define CALL_STACK_LEN (8UL << 20)

static int call_stack_map(struct ukp_target *t, pid_t tid, const struct ukp_regs *base)
{
	const unsigned long a[6] = { 0, CALL_STACK_LEN, PROT_READ | PROT_WRITE,
				     MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_STACK,
				     (unsigned long)-1, 0 };
	long res;
	int ret = syscall_in(t, tid, base, SYS_mmap, a, &res);

	if (ret)
		return ret;
	if (res < 0 && res > -4096)
		return (int)res;
	t->call_stack = (uintptr_t)res;
	return 0;
}

/* [attach] The call stack unmapped, once the calls are done. */
static void call_stack_unmap(struct ukp_target *t, pid_t tid, const struct ukp_regs *base)
{
	const unsigned long a[6] = { t->call_stack, CALL_STACK_LEN, 0, 0, 0, 0 };
	long res;

	if (t->call_stack && !syscall_in(t, tid, base, SYS_munmap, a, &res))
		t->call_stack = 0;
}

/*
 * Call fn(a0, a1) in the stopped thread tid with the registers of base,
 * on the call stack (call_stack_map); string arguments are written on it
 * first (args[i] != NULL: a pointer to that string is passed instead of
 * ints[i]). The call returns to address 0: the SIGSEGV stops the thread
 * and is dropped. *result: its return value. 0 or -errno.
 */
static int call_in(struct ukp_target *t, pid_t tid, const struct ukp_regs *base,
		   uintptr_t fn, const char *args[2], const unsigned long ints[2],
		   unsigned long *result)
{
	struct ukp_regs r = *base;
	uintptr_t sp, at = 0;
	unsigned long argv[2];
	uint64_t word = 0;
	size_t n = 0;
	int status, i, ret;

	if (!t->call_stack) {
		ret = call_stack_map(t, tid, base);
		if (ret)
			return ret;
	}
	sp = (t->call_stack + CALL_STACK_LEN - 64) & ~(uintptr_t)15;

	for (i = 1; i >= 0; i--) {
		argv[i] = ints[i];
		if (args[i]) {
			size_t len = strlen(args[i]) + 1;

			sp = (sp - len) & ~(uintptr_t)15;
			if (mem_write(t, sp, args[i], len))
				return -EIO;
			argv[i] = sp;
		}
	}
	ukp_arch_set_call(&r, fn, sp, argv[0], argv[1], &word, &at, &n);
	if (n && mem_write(t, at, &word, sizeof(word)))
		return -EIO;
	if (ukp_arch_set_regs(tid, &r) || ptrace(PTRACE_CONT, tid, NULL, NULL))
		return -ESRCH;
	for (;;) {
		ret = wait_call(t, tid, fn, &status);
		if (ret)
			return ret;
		if (WSTOPSIG(status) == SIGSEGV && status >> 16 == 0) {
			if (ukp_arch_get_regs(tid, &r))
				return -ESRCH;
			if (ukp_arch_pc(&r) == 0)
				break;
		}
		/* the program's own signals go on (its handlers run on top
		 * of the call); stops of the process are left as they are */
		if (ptrace(PTRACE_CONT, tid, NULL,
			   (void *)(long)(status >> 16 ? 0 : WSTOPSIG(status))))
			return -errno;
	}
	*result = (unsigned long)ukp_arch_result(&r);
	return 0;
}

static bool is_syscall_insn(const struct ukp_target *t, uintptr_t after)
{
	unsigned char b[8];
	size_t n = ukp_arch_syscall_insn_len;

	return after >= n && mem_read(t, after - n, b, n) == 0 &&
	       !memcmp(b, ukp_arch_syscall_insn, n);
}

/* Copy the file at path into the process's descriptor fd. */
static bool fill_memfd(const struct ukp_target *t, int fd, const char *path)
{
	char there[64], buf[65536];
	int in = open(path, O_RDONLY | O_CLOEXEC), out;
	ssize_t n = 0;

	snprintf(there, sizeof(there), "/proc/%d/fd/%d", t->pid, fd);
	out = open(there, O_WRONLY | O_CLOEXEC);
	while (in >= 0 && out >= 0 && (n = read(in, buf, sizeof(buf))) > 0)
		if (write(out, buf, (size_t)n) != n) {
			n = -1;
			break;
		}
	if (in >= 0)
		close(in);
	if (out >= 0)
		close(out);
	return in >= 0 && out >= 0 && n == 0;
}

/*
 * A process in another root (t->other_root): the agent's path is not
 * its, and the libraries the agent needs may not be there either. Each
 * one it does not map yet, then the agent, is copied into a memfd made
 * in the process (memfd_create) and loaded with dlopen("/proc/self/fd/N")
 * (the loader finds each one's needed libraries loaded already, by
 * their sonames); the descriptors are closed at the end. *res: the agent's dlopen()
 * handle (0: failed, dlerror says why). -ENOENT after a line saying
 * why; 0; or -errno (the process is gone).
 */
static int load_from_memory(struct ukp_target *t, pid_t tid,
			    const struct ukp_regs *base, const char *agent,
			    unsigned long *res)
{
	char **paths = NULL, **names = NULL;
	int n = ukp_agent_files(agent, &paths, &names), i, ret = 0, nfds = 0;
	bool failed = false;
	unsigned long fds[UKP_AGENT_FILES_MAX];

	if (n < 0)
		return -ENOENT;
	*res = 1;
	for (i = 0; i < n && !ret && *res; i++) {
		bool is_agent = i == n - 1;
		char memname[300], fdpath[64];
		unsigned long fd = (unsigned long)-1;

		if (!is_agent && ukp_target_maps_object(t, names[i]))
			continue;
		snprintf(memname, sizeof(memname), "%s%s", is_agent ? "" : UKP_DEP_MEMFD_PREFIX,
			 names[i]);
		{
			const char *a[2] = { memname, NULL };
			const unsigned long v[2] = { 0, MFD_CLOEXEC };

			ret = call_in(t, tid, base, t->memfd_fn, a, v, &fd);
		}
		if (ret)
			break;
		if ((long)fd < 0) {
			ukp_err("process %d (%s): memfd_create() failed in it, to load the agent "
				"from memory",
				t->pid, t->comm);
			failed = true;
			break;
		}
		if (!fill_memfd(t, (int)fd, paths[i])) {
			ukp_err("process %d (%s): cannot copy %s into its memory: %s", t->pid,
				t->comm, paths[i], strerror(errno));
			failed = true;
		} else {
			const char *a[2] = { fdpath, NULL };
			const unsigned long v[2] = { 0, RTLD_NOW };

			snprintf(fdpath, sizeof(fdpath), "/proc/self/fd/%d", (int)fd);
			ret = call_in(t, tid, base, t->dlopen_fn, a, v, res);
		}
		fds[nfds++] = fd;
		if (failed)
			break;
	}
	/* closed once all are loaded: the loader knows an object by its
	 * name, and each needs a name of its own */
	for (i = 0; i < nfds; i++) {
		const char *a[2] = { NULL, NULL };
		const unsigned long v[2] = { fds[i], 0 };
		unsigned long ignored;

		if (!ret)
			ret = call_in(t, tid, base, t->close_fn, a, v, &ignored);
	}
	ukp_agent_files_free(paths, names, n);
	free(paths);
	free(names);
	return ret ? ret : failed ? -ENOENT : 0;
}

/* Is the process's program without an interpreter (statically linked)? */
bool ukp_program_is_static(pid_t pid)
{
	char path[64];
	Elf64_Ehdr eh;
	bool interp;
	int fd;

	snprintf(path, sizeof(path), "/proc/%d/exe", pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return false;
	interp = pread(fd, &eh, sizeof(eh), 0) != (ssize_t)sizeof(eh) ||
		 memcmp(eh.e_ident, ELFMAG, SELFMAG) || eh.e_ident[EI_CLASS] != ELFCLASS64 ||
		 ukp_elf_has_interp(fd, &eh);
	close(fd);
	return !interp;
}

/*
 * Which agent an attach loads: the one place that decides.
 *
 * The freestanding agent (libukprobe-agent.bin, beside the dynamic one),
 * mapped by ukprobe's ptrace loader (load.c), for every process it can
 * run in: nothing of the program runs for it (no dlopen(), so no call of
 * the program's malloc and no wait for a lock a thread of the program
 * holds: malloc's, the loader's, fork()'s), and at the detach it is
 * unmapped whole (ukp_unload), where the dynamic agent stays loaded with
 * its memory (doc/cli.md, "Detach"). A static program can have no other.
 *
 * With -f too: the free agent probes the fork and clone system call
 * instructions of the program and of libc.so.6 (glibc's _Fork among
 * them) and runs its own atfork handlers around each fork
 * (agent/free/fork_sites.c), so each child gets a session of its own as
 * the dynamic agent's atfork handler gives it.
 *
 * The dynamic agent (libukprobe-agent.so, dlopen()ed in a stopped thread)
 * where the free one is not there (sanitizer builds do not build it; it
 * exists for x86-64 only). UKPROBE_AGENT_DYNAMIC=1 asks for the dynamic
 * one in a dynamic program (its own paths tested in every build:
 * cli_attach_unload_blocks).
 *
 * bin gets the free agent's path. Sets *free_agent.
 */
static int choose_agent(pid_t pid, const char *agent, char *bin, size_t len, bool *free_agent)
{
	const char *slash = strrchr(agent, '/');
	bool is_static = ukp_program_is_static(pid);

	*free_agent = false;
	if (!slash || (size_t)(slash - agent) + sizeof("/libukprobe-agent.bin") > len) {
		/* (no directory to find it in: the dynamic agent) */
		if (!is_static)
			return 0;
		ukp_err("process %d is statically linked: no freestanding agent beside %s", pid,
			agent);
		return -1;
	}
	snprintf(bin, len, "%.*s/libukprobe-agent.bin", (int)(slash - agent), agent);
	if (is_static) {
		*free_agent = true;
		if (access(bin, R_OK)) {
			ukp_err("process %d is statically linked: it needs the freestanding agent, "
				"%s, which is not there (%s)", pid, bin, strerror(errno));
			return -1;
		}
		return 0;
	}
#if defined(__x86_64__)
	{
		const char *dyn = getenv("UKPROBE_AGENT_DYNAMIC");

		*free_agent = !(dyn && !strcmp(dyn, "1")) && access(bin, R_OK) == 0;
	}
#endif
	return 0;
}

/*
 * The freestanding agent mapped and started on a thread of its own by
 * the ptrace loader (load.c), its parameters the socket's name and the
 * key (and 'g': a Go program's threads, keyed by their FS base).
 */
static int inject_free(pid_t pid, const char *bin, const char *name, const char *key,
		       struct ukp_inject_times *times)
{
	struct ukp_loaded l;
	struct ukp_target t;
	char params[256];
	size_t nl = strlen(name), kl = strlen(key);
	long t0 = now_us();
	bool go;
	int ret;

	if (nl + kl + 4 > sizeof(params))
		return UKP_EXIT_FAIL;
	if (ukp_target_check(&t, pid, true))
		return UKP_EXIT_FAIL;
	if (ukp_target_has_session(pid)) {
		ukp_err("process %d (%s) is already traced by another ukprobe", pid, t.comm);
		return UKP_EXIT_FAIL;
	}
	{
		char exe[64];
		int fd;

		snprintf(exe, sizeof(exe), "/proc/%d/exe", pid);
		fd = open(exe, O_RDONLY | O_CLOEXEC);
		go = fd >= 0 && ukp_go_without_cgo(fd);
		if (fd >= 0)
			close(fd);
	}
	if (go && !ukp_go_threads_ok()) {
		ukp_err("process %d is a static Go program: its threads are keyed by their FS "
			"base, which needs the FSGSBASE instructions this machine does not allow",
			pid);
		return UKP_EXIT_FAIL;
	}
	memcpy(params, name, nl + 1);
	memcpy(params + nl + 1, key, kl + 1);
	params[nl + kl + 2] = go ? 'g' : 0;
	params[nl + kl + 3] = 0;
	ret = ukp_load_attach(pid, bin, params, nl + kl + 4, &l);
	if (ret) {
		if (ret == -ESRCH || ret == -ENOENT)
			ukp_err("process %d (%s) exited during the attach", pid, t.comm);
		else if (ret == -EPERM)
			ukp_target_explain_eperm(&t);
		else
			ukp_err("process %d (%s): the freestanding agent could not be loaded: %s",
				pid, t.comm, l.err);
		return UKP_EXIT_FAIL;
	}
	ukp_load_release(&l);
	if (times) {
		/* (every thread was held: the worker made the calls) */
		times->stop_us = now_us() - t0;
		times->inject_us = now_us() - t0;
		times->tid = l.worker;
		times->loaded = malloc(sizeof(l));
		if (times->loaded)
			*times->loaded = l;
	}
	return 0;
}

void ukp_inject_unload(struct ukp_loaded *ld, int timeout_ms)
{
	int ret = ukp_unload(ld, timeout_ms);

	/* (a process that ended took the agent with it) */
	if (ret && ret != -ESRCH && !(kill(ld->pid, 0) && errno == ESRCH))
		ukp_warn("%s", ld->err);
	free(ld);
}

int ukp_inject(pid_t pid, const char *agent, const char *name, const char *key,
	       struct ukp_inject_times *times)
{
	char bin[PATH_MAX];
	bool free_agent;
	struct ukp_target t;
	struct saved sv = { 0 };
	char path[64];
	uintptr_t attach_fn = 0;
	unsigned long res = 0;
	long t0 = now_us(), stop0 = 0;
	pid_t tid;
	int ret, code = UKP_EXIT_FAIL;
	bool seized = false;

	if (!UKP_CAN_ATTACH) {
		ukp_err("process %d: attaching to a running process is not supported on "
			UKP_ARCH_NAME " yet", pid);
		return UKP_EXIT_FAIL;
	}
	if (choose_agent(pid, agent, bin, sizeof(bin), &free_agent))
		return UKP_EXIT_FAIL;
	if (free_agent)
		return inject_free(pid, bin, name, key, times);
	if (ukp_target_examine(&t, pid, agent))
		return UKP_EXIT_FAIL;
	tid = ukp_target_choose_thread(&t, 0);
	if (!tid) {
		ukp_err("process %d (%s): no thread can be used (every one blocks SIGSEGV, or it "
			"exited)",
			pid, t.comm);
		return UKP_EXIT_FAIL;
	}
	snprintf(path, sizeof(path), "/proc/%d/mem", pid);
	t.mem = open(path, O_RDWR | O_CLOEXEC);
	if (t.mem < 0) {
		ukp_err("process %d (%s): cannot open its memory: %s", pid, t.comm, strerror(errno));
		return UKP_EXIT_FAIL;
	}
	for (bool other = false;; other = true) {
		/* (syscall stops for syscall_in) */
		if (ptrace(PTRACE_SEIZE, tid, NULL, (void *)(long)PTRACE_O_TRACESYSGOOD)) {
			if (errno == ESRCH)
				ukp_err("process %d (%s) exited during the attach", pid, t.comm);
			else if (errno == EPERM)
				ukp_target_explain_eperm(&t);
			else
				ukp_err("process %d (%s): ptrace: %s", pid, t.comm,
					strerror(errno));
			goto out;
		}
		seized = true;
		ret = stop_safely(&t, tid, &sv, &stop0);
		if (ret != -EAGAIN || tid != pid || other)
			break;
		/* the main thread, busy in the C library all along: a thread
		 * waiting in a system call instead, if there is one */
		if (restore_state(tid, &sv)) {
			ukp_err("process %d (%s) exited during the attach", pid, t.comm);
			goto out;
		}
		ptrace(PTRACE_DETACH, tid, NULL, NULL);
		seized = false;
		free(sv.ext);
		memset(&sv, 0, sizeof(sv));
		tid = ukp_target_choose_thread(&t, pid);
		if (!tid)
			tid = pid; /* (no other: the main thread again) */
	}
	if (ret == -EAGAIN) {
		ukp_err("process %d (%s): thread %d was never found outside the C library and the "
			"loader: no safe point to load the agent; try again",
			pid, t.comm, tid);
		goto out_restore;
	}
	if (ret) {
		ukp_err("process %d (%s) exited during the attach", pid, t.comm);
		goto out;
	}
	if ((t.other_root || t.unreadable) && t.agent.path[0]) {
		/* loaded from memory by an earlier session */
		ret = 0;
		res = 1;
	} else if (t.other_root || t.unreadable) {
		ret = load_from_memory(&t, tid, &sv.regs, agent, &res);
		if (ret == -ENOENT)
			goto out_restore;
	} else {
		const char *a[2] = { agent, NULL };
		const unsigned long n[2] = { 0, RTLD_NOW };

		ret = call_in(&t, tid, &sv.regs, t.dlopen_fn, a, n, &res);
	}
	if (!ret && !res) {
		char msg[512] = "";
		unsigned long s = 0;
		const char *a[2] = { NULL, NULL };
		const unsigned long n[2] = { 0, 0 };

		if (t.dlerror_fn && !call_in(&t, tid, &sv.regs, t.dlerror_fn, a, n, &s) && s) {
			ssize_t k = pread(t.mem, msg, sizeof(msg) - 1, (off_t)s);

			msg[k > 0 ? k : 0] = '\0';
			msg[strnlen(msg, sizeof(msg) - 1)] = '\0';
		}
		ukp_err("process %d (%s) could not load the agent: %s", pid, t.comm,
			msg[0] ? msg : "dlopen() failed");
		goto out_restore;
	}
	if (!ret) {
		if (ukp_target_agent_entry(&t, agent, &attach_fn)) {
			ukp_err("process %d (%s): the agent was loaded but its entry point was not "
				"found",
				pid, t.comm);
			goto out_restore;
		}
		{
			const char *a[2] = { name, key };
			const unsigned long n[2] = { 0, 0 };

			ret = call_in(&t, tid, &sv.regs, attach_fn, a, n, &res);
		}
		if (!ret && (int)res == -EBUSY) {
			ukp_err("process %d (%s) is already traced by another ukprobe", pid, t.comm);
			goto out_restore;
		}
		if (!ret && (int)res) {
			ukp_err("process %d (%s): the agent could not start: %s", pid, t.comm,
				strerror(-(int)res));
			goto out_restore;
		}
	}
	if (ret) {
		ukp_err("process %d (%s) exited during the attach", pid, t.comm);
		goto out;
	}
	code = 0;
out_restore:
	call_stack_unmap(&t, tid, &sv.regs);
	if (restore_state(tid, &sv)) {
		ukp_err("process %d (%s) exited during the attach", pid, t.comm);
		code = UKP_EXIT_FAIL;
	}
	ptrace(PTRACE_DETACH, tid, NULL, NULL);
	seized = false;
	if (times) {
		times->stop_us = stop0 ? now_us() - stop0 : 0;
		times->inject_us = now_us() - t0;
		times->tid = tid;
	}
out:
	if (seized)
		ptrace(PTRACE_DETACH, tid, NULL, NULL);
	if (t.mem >= 0)
		close(t.mem);
	free(sv.ext);
	return code;
}
