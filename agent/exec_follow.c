/* SPDX-License-Identifier: MIT */
/*
 * exec_follow.c - -f: a program a traced one execs is traced too.
 * Launched, a dynamic program gets the agent back from its environment
 * (LD_PRELOAD, agent.c's exec_env); a static one has no loader to
 * preload it, so before the execve system call the thread asks ukprobe
 * to take it (UKPM_EXEC, proto.h) and waits until it is traced: ukprobe
 * seizes it, and at the exec loads the freestanding agent into the new
 * program as into a static program it launched (tools/ukprobe/
 * follow_exec.c). Attached, nothing comes from the environment: the
 * thread asks for every program, dynamic or static, and ukprobe loads
 * the freestanding agent into it with the attach's socket and key, as
 * -p does. A failed exec is said, and ukprobe lets the thread go.
 * A dynamic program's posix_spawn() of a static one: ukprobe traces the
 * spawning thread for the call instead (ukpa_spawn_follow).
 *
 * Context: [init], on the program's thread making the exec, which may be
 * a vfork() child sharing its parent's memory (or, in the freestanding
 * agent, a child made by a raw clone): only system calls and the stack,
 * nothing allocated, no lock taken, errno as it was.
 */
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "agent.h"

/* How long a thread waits to be traced before it execs untraced (ukprobe
 * could not seize it: it says so). */
#define TRACED_WAIT_MS 5000

/* Is path an ELF program without a program interpreter (static)? */
static bool static_elf(const char *path)
{
	Elf64_Ehdr eh;
	Elf64_Phdr ph;
	bool interp = false;
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return false;
	if (pread(fd, &eh, sizeof(eh), 0) != (ssize_t)sizeof(eh) ||
	    memcmp(eh.e_ident, ELFMAG, SELFMAG) || eh.e_ident[EI_CLASS] != ELFCLASS64 ||
	    (eh.e_type != ET_EXEC && eh.e_type != ET_DYN) || eh.e_phentsize != sizeof(ph)) {
		close(fd);
		return false;
	}
	for (int i = 0; i < eh.e_phnum && !interp; i++) {
		if (pread(fd, &ph, sizeof(ph), (off_t)(eh.e_phoff + (size_t)i * sizeof(ph))) !=
		    (ssize_t)sizeof(ph))
			break;
		interp = ph.p_type == PT_INTERP;
	}
	close(fd);
	/* (a static-PIE is ET_DYN without PT_INTERP; a shared library run
	 * as a program has PT_INTERP or is no program) */
	return !interp;
}

/* Is path a set-user-ID or set-group-ID file? */
static bool set_id(const char *path)
{
	struct stat st;

	return syscall(SYS_newfstatat, AT_FDCWD, path, &st, 0) == 0 &&
	       (st.st_mode & (S_ISUID | S_ISGID));
}

/* Has this thread a tracer (/proc/thread-self/status's TracerPid)? */
static bool traced(void)
{
	char buf[1024];
	const char *p;
	ssize_t n;
	int fd = open("/proc/thread-self/status", O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return false;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return false;
	buf[n] = '\0';
	p = strstr(buf, "\nTracerPid:");
	if (!p)
		return false;
	p += sizeof("\nTracerPid:") - 1;
	while (*p == ' ' || *p == '\t')
		p++;
	return *p >= '1' && *p <= '9';
}

static void wait_traced(bool want);

/* The thread whose exec ukprobe was asked to follow, until it is made
 * (a vfork child's: its parent waits meanwhile; no TLS in the
 * freestanding agent) */
static _Atomic int asked;

/*
 * Before the execve of path (path NULL: after it, failed). Sends the
 * request with -f: launched, for a static program (dynamic programs:
 * not here); attached, for any program (doc/cli.md). A path that cannot
 * be executed (execvp()'s tries along PATH) asks nothing.
 */
void ukpa_exec_follow(const char *path)
{
	struct ukp_msg_exec m = { .h = { UKPM_EXEC, sizeof(m) } };
	int saved_errno = errno;

	if (!ukpa_follow)
		return;
	m.tid = (int32_t)syscall(SYS_gettid);
	if (!path) {
		int me = m.tid;

		if (atomic_compare_exchange_strong(&asked, &me, 0)) {
			m.failed = 1;
			/* (untraced again before another try can ask) */
			if (ukpa_send_shared(&m, sizeof(m)) == 0)
				wait_traced(false);
		}
		errno = saved_errno;
		return;
	}
	/* (the freestanding agent's C library has no access(); a set-user-ID
	 * or set-group-ID program is not followed: traced, its exec would
	 * not take the privileges it is installed with) */
	if ((!ukpa_attached && !static_elf(path)) ||
	    syscall(SYS_faccessat, AT_FDCWD, path, X_OK, 0)) {
		errno = saved_errno;
		return;
	}
	if (set_id(path)) {
		/* (said by ukprobe) */
		m.failed = 2;
		ukpa_send_shared(&m, sizeof(m));
		errno = saved_errno;
		return;
	}
	if (ukpa_send_shared(&m, sizeof(m)) == 0) {
		atomic_store(&asked, m.tid);
		wait_traced(true);
	}
	errno = saved_errno;
}

/* Wait until this thread is traced (want) or no longer is, at most
 * TRACED_WAIT_MS. */
static void wait_traced(bool want)
{
	for (int i = 0; i < TRACED_WAIT_MS && traced() != want; i++) {
		struct timespec ms = { 0, 1000000 };

		nanosleep(&ms, NULL);
	}
}

#ifndef UKP_FREE
/* (src/process/exec.c: around each execve system call the library's
 * exec interposers make) */
extern void (*ukp_exec_call_hook)(const char *path);
/* (src/process/sigmask.c: around each posix_spawn the program calls) */
extern bool (*ukp_spawn_call_hook)(const char *file, bool by_file, bool done);

/* posix_spawnp's program: FILE as is if it has a '/', else the first
 * executable regular file of that name in PATH (as glibc searches;
 * false if none). */
static bool spawn_path(const char *file, bool by_file, char *buf, size_t size)
{
	const char *p, *end;
	size_t flen = strlen(file);

	if (!*file || flen >= size)
		return false;
	if (!by_file || strchr(file, '/')) {
		memcpy(buf, file, flen + 1);
		return true;
	}
	p = getenv("PATH");
	if (!p)
		p = "/bin:/usr/bin";
	for (;; p = end + 1) {
		size_t dl;
		struct stat st;

		end = strchrnul(p, ':');
		dl = (size_t)(end - p);
		if (dl + flen + 2 <= size) {
			memcpy(buf, p, dl);
			if (dl)
				buf[dl++] = '/';
			memcpy(buf + dl, file, flen + 1);
			if (!stat(buf, &st) && S_ISREG(st.st_mode) && !access(buf, X_OK))
				return true;
		}
		if (!*end)
			return false;
	}
}
#endif

/*
 * -f, launched, a dynamic program: around its posix_spawn() of FILE
 * (src/process/sigmask.c's interposer). glibc's child (a vfork, in the
 * thread's memory) makes its execve inside libc, which neither the exec
 * interposers nor the hook see: for a static program, before the call
 * the thread asks ukprobe to trace it (UKPM_EXEC, failed 3), so that
 * ukprobe takes the child at its vfork and loads the freestanding agent
 * at the child's exec; after it (done), the thread says so (failed 4)
 * and waits until ukprobe let it go. Returns whether it asked (the call
 * after is wanted). [any] on the program's thread, before and after
 * libc's posix_spawn.
 */
bool ukpa_spawn_follow(const char *file, bool by_file, bool done)
{
	struct ukp_msg_exec m = { .h = { UKPM_EXEC, sizeof(m) }, .failed = done ? 4 : 3 };
	int saved_errno = errno;
	bool asked = false;
#ifndef UKP_FREE
	char path[PATH_MAX];

	if (!ukpa_follow || ukpa_attached || !file)
		return false;
	m.tid = (int32_t)syscall(SYS_gettid);
	if (done) {
		if (ukpa_send_shared(&m, sizeof(m)) == 0)
			wait_traced(false);
	} else if (spawn_path(file, by_file, path, sizeof(path)) && static_elf(path) &&
		   ukpa_send_shared(&m, sizeof(m)) == 0) {
		wait_traced(true);
		asked = true;
	}
#else
	(void)m;
	(void)file;
	(void)by_file;
	(void)done;
#endif
	errno = saved_errno;
	return asked;
}

/* [init] With -f (agent.c's set-up, launched or attached): from now on. */
void ukpa_exec_follow_init(void)
{
#ifndef UKP_FREE
	ukp_exec_call_hook = ukpa_exec_follow;
	ukp_spawn_call_hook = ukpa_spawn_follow;
#endif
}
