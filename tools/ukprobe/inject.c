/* SPDX-License-Identifier: MIT */
/*
 * inject.c - load the agent into a running process (ukprobe -p PID), as
 * debuggers call functions in their inferior:
 *
 *  1. Checks that need no ptrace: the process exists, is a 64-bit x86-64
 *     program with a dynamic loader, maps the C library, whose dlopen
 *     (glibc >= 2.34; else libdl's) is found in its file's dynamic
 *     symbols; nobody traces it already.
 *  2. One thread is chosen and stopped with PTRACE_SEIZE +
 *     PTRACE_INTERRUPT; the others keep running (nothing here needs
 *     them stopped: the loader and malloc take their own locks, and a
 *     thread that holds one releases it). The thread must be at a point
 *     where it holds no lock of the C library: a thread blocked in a
 *     system call that waits (read, poll, futex, nanosleep, ...), else a
 *     thread stopped outside the C library and the loader; a thread
 *     found elsewhere is let go and stopped again a little later.
 *  3. Its registers (general and extended state) are saved, and it calls
 *     dlopen(agent, RTLD_NOW) and then ukprobe_agent_attach(name) in the
 *     agent: arguments below its red zone, a return address of 0, so
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
 */
#include <dlfcn.h>
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/user.h>
#include <sys/wait.h>
#include <dirent.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"

#ifndef NT_X86_XSTATE
#define NT_X86_XSTATE 0x202
#endif
#define RED_ZONE 128
#define XSTATE_MAX (64 * 1024)
#define RETRIES 500          /* stops outside a safe point before giving up */
#define CALL_TIMEOUT_MS 20000

static long now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000L + ts.tv_nsec / 1000;
}

/* ------------------------------------------------------ the process */

struct mapping {
	uintptr_t start, end;
	unsigned long off;
	bool exec;
	char path[4096];
};

struct target {
	pid_t pid;
	char comm[32];
	char root[64];            /* /proc/PID/root: the process's files */
	struct mapping libc, libdl, agent;
	uintptr_t libc_lo, libc_hi;   /* the C library's and the loader's code: no stop there */
	uintptr_t ld_lo, ld_hi;
	int mem;                  /* /proc/PID/mem */
};

static bool read_text(const char *path, char *buf, size_t len)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	ssize_t n;

	if (fd < 0)
		return false;
	n = read(fd, buf, len - 1);
	close(fd);
	if (n < 0)
		return false;
	buf[n] = '\0';
	return true;
}

/* A field of /proc/PID[/task/TID]/status, or -1. */
static long status_field(const char *dir, const char *field, int which)
{
	char path[96], buf[4096], *p;
	long v = -1;
	int i;

	snprintf(path, sizeof(path), "%s/status", dir);
	if (!read_text(path, buf, sizeof(buf)))
		return -1;
	p = strstr(buf, field);
	if (!p)
		return -1;
	p += strlen(field);
	for (i = 0; i <= which; i++)
		v = strtol(p, &p, 10);
	return v;
}

static unsigned long long status_mask(const char *dir, const char *field)
{
	char path[96], buf[4096], *p;

	snprintf(path, sizeof(path), "%s/status", dir);
	if (!read_text(path, buf, sizeof(buf)))
		return 0;
	p = strstr(buf, field);
	return p ? strtoull(p + strlen(field), NULL, 16) : 0;
}

static const char *base_name(const char *path)
{
	const char *s = strrchr(path, '/');

	return s ? s + 1 : path;
}

/* The C library, libdl, the loader and the agent in /proc/PID/maps. */
static int read_maps(struct target *t, const char *agent)
{
	char path[64], line[4096 + 256];
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/maps", t->pid);
	f = fopen(path, "re");
	if (!f)
		return -errno;
	memset(&t->libc, 0, sizeof(t->libc));
	memset(&t->libdl, 0, sizeof(t->libdl));
	memset(&t->agent, 0, sizeof(t->agent));
	t->libc_lo = t->ld_lo = UINTPTR_MAX;
	t->libc_hi = t->ld_hi = 0;
	while (fgets(line, sizeof(line), f)) {
		struct mapping m = { 0 };
		char perms[8], *p;
		int n = 0;
		const char *b;

		if (sscanf(line, "%lx-%lx %7s %lx %*s %*s %n", &m.start, &m.end, perms, &m.off, &n) <
			    4 ||
		    !n)
			continue;
		p = line + n;
		p[strcspn(p, "\n")] = '\0';
		if (*p != '/')
			continue;
		snprintf(m.path, sizeof(m.path), "%s", p);
		m.exec = perms[2] == 'x';
		b = base_name(m.path);
		if (!strncmp(b, "libc.so", 7) || !strncmp(b, "libc-2.", 7)) {
			if (m.off == 0 && !t->libc.path[0])
				t->libc = m;
			if (m.exec) {
				t->libc_lo = m.start < t->libc_lo ? m.start : t->libc_lo;
				t->libc_hi = m.end > t->libc_hi ? m.end : t->libc_hi;
			}
		} else if (!strncmp(b, "ld-linux", 8) || !strncmp(b, "ld-2.", 5)) {
			if (m.exec) {
				t->ld_lo = m.start < t->ld_lo ? m.start : t->ld_lo;
				t->ld_hi = m.end > t->ld_hi ? m.end : t->ld_hi;
			}
		} else if (!strncmp(b, "libdl.so", 8)) {
			if (m.off == 0 && !t->libdl.path[0])
				t->libdl = m;
		} else if (!strcmp(m.path, agent) && m.off == 0 && !t->agent.path[0]) {
			t->agent = m;
		}
	}
	fclose(f);
	return 0;
}

/* ------------------------------------------------------- ELF files */

/*
 * The load bias of an object mapped at m (its mapping of file offset 0)
 * and the value of its dynamic symbol name (the default version when
 * there are several). 0 or -1.
 */
static int elf_dynsym(const char *root, const struct mapping *m, const char *name,
		      uintptr_t *addr)
{
	char path[4200];
	Elf64_Ehdr eh;
	Elf64_Shdr *sh = NULL;
	Elf64_Sym *syms = NULL;
	uint16_t *vers = NULL;
	char *strs = NULL;
	uint64_t vaddr0 = UINT64_MAX;
	size_t nsyms = 0, i;
	int fd, ret = -1, k;

	snprintf(path, sizeof(path), "%s%s", root, m->path);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	if (pread(fd, &eh, sizeof(eh), 0) != (ssize_t)sizeof(eh) ||
	    memcmp(eh.e_ident, ELFMAG, SELFMAG) || eh.e_ident[EI_CLASS] != ELFCLASS64 ||
	    eh.e_shentsize != sizeof(Elf64_Shdr) || !eh.e_shnum)
		goto out;
	for (k = 0; k < eh.e_phnum; k++) {
		Elf64_Phdr ph;

		if (pread(fd, &ph, sizeof(ph), (off_t)(eh.e_phoff + (Elf64_Off)k * eh.e_phentsize)) ==
			    (ssize_t)sizeof(ph) &&
		    ph.p_type == PT_LOAD && ph.p_offset == 0) {
			vaddr0 = ph.p_vaddr & ~(ph.p_align ? ph.p_align - 1 : 0);
			break;
		}
	}
	if (vaddr0 == UINT64_MAX)
		goto out;
	sh = calloc(eh.e_shnum, sizeof(*sh));
	if (!sh || pread(fd, sh, eh.e_shnum * sizeof(*sh), (off_t)eh.e_shoff) !=
			   (ssize_t)(eh.e_shnum * sizeof(*sh)))
		goto out;
	for (k = 0; k < eh.e_shnum; k++) {
		if (sh[k].sh_type == SHT_DYNSYM && sh[k].sh_link < eh.e_shnum && !syms) {
			const Elf64_Shdr *st = &sh[sh[k].sh_link];

			nsyms = sh[k].sh_size / sizeof(Elf64_Sym);
			syms = malloc(sh[k].sh_size);
			strs = malloc(st->sh_size + 1);
			if (!syms || !strs ||
			    pread(fd, syms, sh[k].sh_size, (off_t)sh[k].sh_offset) !=
				    (ssize_t)sh[k].sh_size ||
			    pread(fd, strs, st->sh_size, (off_t)st->sh_offset) != (ssize_t)st->sh_size)
				goto out;
			strs[st->sh_size] = '\0';
		} else if (sh[k].sh_type == SHT_GNU_versym && !vers) {
			vers = malloc(sh[k].sh_size);
			if (!vers || pread(fd, vers, sh[k].sh_size, (off_t)sh[k].sh_offset) !=
					     (ssize_t)sh[k].sh_size)
				goto out;
		}
	}
	for (i = 0; syms && i < nsyms; i++) {
		if (!syms[i].st_value || syms[i].st_shndx == SHN_UNDEF ||
		    ELF64_ST_TYPE(syms[i].st_info) != STT_FUNC || strcmp(strs + syms[i].st_name, name))
			continue;
		/* a hidden (non-default) version is a compatibility symbol */
		if (vers && (vers[i] & 0x8000))
			continue;
		*addr = m->start - (uintptr_t)vaddr0 + (uintptr_t)syms[i].st_value;
		ret = 0;
		break;
	}
out:
	free(sh);
	free(syms);
	free(strs);
	free(vers);
	close(fd);
	return ret;
}

/* The ELF header of the program: 64-bit x86-64, with a loader? */
static int check_program(const struct target *t)
{
	char path[64];
	Elf64_Ehdr eh;
	bool interp = false;
	int fd, i;

	snprintf(path, sizeof(path), "/proc/%d/exe", t->pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	if (pread(fd, &eh, sizeof(eh), 0) < (ssize_t)EI_NIDENT ||
	    memcmp(eh.e_ident, ELFMAG, SELFMAG)) {
		close(fd);
		ukp_err("process %d (%s): its program is not an ELF file", t->pid, t->comm);
		return -ENOEXEC;
	}
	if (eh.e_ident[EI_CLASS] != ELFCLASS64 || eh.e_machine != EM_X86_64) {
		close(fd);
		ukp_err("process %d (%s) is a %s program: only x86-64 processes can be traced",
			t->pid, t->comm,
			eh.e_ident[EI_CLASS] == ELFCLASS32 ? "32-bit" : "non-x86-64");
		return -ENOEXEC;
	}
	for (i = 0; i < eh.e_phnum; i++) {
		Elf64_Phdr ph;

		if (pread(fd, &ph, sizeof(ph), (off_t)(eh.e_phoff + (Elf64_Off)i * eh.e_phentsize)) ==
			    (ssize_t)sizeof(ph) &&
		    ph.p_type == PT_INTERP)
			interp = true;
	}
	close(fd);
	if (!interp) {
		ukp_err("process %d (%s) is statically linked: the agent cannot be loaded into it "
			"(tracing static programs is not supported)",
			t->pid, t->comm);
		return -ENOEXEC;
	}
	return 0;
}

/* Why PTRACE_SEIZE was refused, in one line. */
static void explain_eperm(const struct target *t, const char *dir)
{
	long uid = status_field(dir, "Uid:", 1), tracer = status_field(dir, "TracerPid:", 0);
	char buf[16] = "";

	if (tracer > 0) {
		char tdir[32], tcomm[64] = "?";

		snprintf(tdir, sizeof(tdir), "/proc/%ld/comm", tracer);
		if (read_text(tdir, tcomm, sizeof(tcomm)))
			tcomm[strcspn(tcomm, "\n")] = '\0';
		ukp_err("process %d (%s) is already traced by process %ld (%s): detach the debugger "
			"first",
			t->pid, t->comm, tracer, tcomm);
		return;
	}
	if (uid >= 0 && (uid_t)uid != geteuid() && geteuid() != 0) {
		ukp_err("process %d (%s) belongs to another user (uid %ld): not permitted to trace "
			"it (run ukprobe as that user or as root)",
			t->pid, t->comm, uid);
		return;
	}
	if (read_text("/proc/sys/kernel/yama/ptrace_scope", buf, sizeof(buf)) && atoi(buf) > 0 &&
	    geteuid() != 0) {
		ukp_err("process %d (%s): ptrace is not permitted by Yama (kernel.yama.ptrace_scope = "
			"%d): run ukprobe as root, or set it to 0",
			t->pid, t->comm, atoi(buf));
		return;
	}
	ukp_err("process %d (%s): not permitted to trace it (it is not dumpable: "
		"PR_SET_DUMPABLE 0, or a set-user-ID program)",
		t->pid, t->comm);
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

/* System calls a thread waits in, holding no lock of the C library. */
static bool waiting_syscall(long nr)
{
	switch (nr) {
	case SYS_read: case SYS_write: case SYS_readv: case SYS_writev: case SYS_pread64:
	case SYS_pwrite64: case SYS_recvfrom: case SYS_recvmsg: case SYS_recvmmsg:
	case SYS_sendto: case SYS_sendmsg: case SYS_accept: case SYS_accept4: case SYS_connect:
	case SYS_poll: case SYS_ppoll: case SYS_select: case SYS_pselect6: case SYS_epoll_wait:
	case SYS_epoll_pwait: case SYS_nanosleep: case SYS_clock_nanosleep: case SYS_futex:
	case SYS_wait4: case SYS_waitid: case SYS_pause: case SYS_rt_sigsuspend:
	case SYS_rt_sigtimedwait: case SYS_restart_syscall: case SYS_msgrcv: case SYS_semop:
	case SYS_semtimedop: case SYS_io_getevents: case SYS_flock:
#ifdef SYS_epoll_pwait2
	case SYS_epoll_pwait2:
#endif
		return true;
	default:
		return false;
	}
}

/* /proc/PID/task/TID/syscall: the system call tid is blocked in, -1 when
 * it is not blocked in one, -2 when unknown. */
static long blocked_syscall(pid_t pid, pid_t tid)
{
	char path[64], buf[256];

	snprintf(path, sizeof(path), "/proc/%d/task/%d/syscall", pid, tid);
	if (!read_text(path, buf, sizeof(buf)))
		return -2;
	if (!strncmp(buf, "running", 7))
		return -1;
	return strtol(buf, NULL, 10);
}

/* The thread to stop: the first one found waiting in a system call (the
 * main thread first), else the main thread. Threads that block or
 * ignore SIGSEGV are left alone (the calls end in one). */
static pid_t choose_thread(const struct target *t)
{
	char path[64];
	DIR *d;
	struct dirent *e;
	pid_t best = 0, fallback = 0;

	snprintf(path, sizeof(path), "/proc/%d/task", t->pid);
	d = opendir(path);
	if (!d)
		return 0;
	while ((e = readdir(d)) && !best) {
		pid_t tid = (pid_t)atoi(e->d_name);
		char dir[64];
		unsigned long long bit = 1ULL << (SIGSEGV - 1);

		if (tid <= 0)
			continue;
		snprintf(dir, sizeof(dir), "/proc/%d/task/%d", t->pid, tid);
		if ((status_mask(dir, "SigBlk:") | status_mask(dir, "SigIgn:")) & bit)
			continue;
		if (!fallback || tid == t->pid)
			fallback = tid;
		if (waiting_syscall(blocked_syscall(t->pid, tid)))
			best = tid;
		if (tid == t->pid && best)
			break;
	}
	closedir(d);
	return best ? best : fallback;
}

struct saved {
	struct user_regs_struct regs;
	void *xstate;
	size_t xlen;
};

static int save_state(pid_t tid, struct saved *sv)
{
	struct iovec iov;

	if (ptrace(PTRACE_GETREGS, tid, NULL, &sv->regs))
		return -errno;
	sv->xstate = malloc(XSTATE_MAX);
	if (!sv->xstate)
		return -ENOMEM;
	iov.iov_base = sv->xstate;
	iov.iov_len = XSTATE_MAX;
	if (ptrace(PTRACE_GETREGSET, tid, (void *)NT_X86_XSTATE, &iov) == 0) {
		sv->xlen = iov.iov_len;
	} else {
		iov.iov_len = sizeof(struct user_fpregs_struct);
		if (ptrace(PTRACE_GETREGSET, tid, (void *)NT_PRFPREG, &iov))
			return -errno;
		sv->xlen = iov.iov_len | (1UL << 62); /* NT_PRFPREG */
	}
	return 0;
}

static int restore_state(pid_t tid, const struct saved *sv)
{
	struct iovec iov = { sv->xstate, sv->xlen & ~(1UL << 62) };

	if (ptrace(PTRACE_SETREGSET, tid,
		   (void *)(uintptr_t)(sv->xlen & (1UL << 62) ? NT_PRFPREG : NT_X86_XSTATE), &iov))
		return -errno;
	if (ptrace(PTRACE_SETREGS, tid, NULL, &sv->regs))
		return -errno;
	return 0;
}

/*
 * Stop tid at a safe point (see the top): seized and interrupted; a
 * stop elsewhere lets it go and tries again. 0 with the thread stopped
 * and its state in *sv, or -errno.
 */
static int stop_safely(const struct target *t, pid_t tid, struct saved *sv, long *stopped_at)
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
		nr = (long)sv->regs.orig_rax;
		if (nr >= 0 ? waiting_syscall(nr)
			    : !((sv->regs.rip >= t->libc_lo && sv->regs.rip < t->libc_hi) ||
				(sv->regs.rip >= t->ld_lo && sv->regs.rip < t->ld_hi)))
			return 0;
		free(sv->xstate);
		sv->xstate = NULL;
		if (ptrace(PTRACE_CONT, tid, NULL, NULL))
			return -errno;
		usleep(200 + (unsigned int)tries * 20);
	}
	return -EAGAIN;
}

static int mem_write(const struct target *t, uintptr_t addr, const void *buf, size_t len)
{
	return pwrite(t->mem, buf, len, (off_t)addr) == (ssize_t)len ? 0 : -EIO;
}

static int mem_read(const struct target *t, uintptr_t addr, void *buf, size_t len)
{
	return pread(t->mem, buf, len, (off_t)addr) == (ssize_t)len ? 0 : -EIO;
}

/*
 * Call fn(a0, a1) in the stopped thread tid with the registers of base;
 * string arguments are written below the red zone first (args[i] != NULL:
 * a pointer to that string is passed instead of ints[i]). The call
 * returns to address 0: the SIGSEGV stops the thread and is dropped.
 * *result: rax. 0 or -errno.
 */
static int call_in(const struct target *t, pid_t tid, const struct user_regs_struct *base,
		   uintptr_t fn, const char *args[2], const unsigned long ints[2],
		   unsigned long *result)
{
	struct user_regs_struct r = *base;
	uintptr_t sp = (base->rsp - RED_ZONE - 64) & ~(uintptr_t)15;
	unsigned long argv[2];
	uint64_t zero = 0;
	int status, i, ret;

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
	sp -= 8; /* rsp % 16 == 8 at a function's entry */
	if (mem_write(t, sp, &zero, sizeof(zero)))
		return -EIO;
	r.rsp = sp;
	r.rip = fn;
	r.rdi = argv[0];
	r.rsi = argv[1];
	r.rax = 0;
	r.orig_rax = (unsigned long)-1; /* not in a system call: no restart */
	r.eflags &= ~0x400UL;           /* DF clear, as the ABI wants */
	if (ptrace(PTRACE_SETREGS, tid, NULL, &r) || ptrace(PTRACE_CONT, tid, NULL, NULL))
		return -errno;
	for (;;) {
		ret = wait_stop(tid, &status);
		if (ret)
			return ret;
		if (WSTOPSIG(status) == SIGSEGV && status >> 16 == 0) {
			if (ptrace(PTRACE_GETREGS, tid, NULL, &r))
				return -errno;
			if (r.rip == 0)
				break;
		}
		/* the program's own signals go on (its handlers run on top
		 * of the call); stops of the process are left as they are */
		if (ptrace(PTRACE_CONT, tid, NULL,
			   (void *)(long)(status >> 16 ? 0 : WSTOPSIG(status))))
			return -errno;
	}
	*result = r.rax;
	return 0;
}

static bool is_syscall_insn(const struct target *t, uintptr_t after)
{
	unsigned char b[2];

	return mem_read(t, after - 2, b, 2) == 0 && b[0] == 0x0f && b[1] == 0x05;
}

int ukp_inject(pid_t pid, const char *agent, const char *name, struct ukp_inject_times *times)
{
	struct target t = { .pid = pid, .mem = -1 };
	struct saved sv = { 0 };
	char dir[32], path[64];
	uintptr_t dlopen_fn = 0, dlerror_fn = 0, attach_fn = 0;
	unsigned long res = 0;
	long t0 = now_us(), stop0 = 0;
	pid_t tid;
	int ret, code = UKP_EXIT_FAIL;
	bool seized = false;

	snprintf(dir, sizeof(dir), "/proc/%d", pid);
	snprintf(path, sizeof(path), "%s/comm", dir);
	if (kill(pid, 0) && errno == ESRCH) {
		ukp_err("no process %d", pid);
		return UKP_EXIT_FAIL;
	}
	if (read_text(path, t.comm, sizeof(t.comm)))
		t.comm[strcspn(t.comm, "\n")] = '\0';
	else
		snprintf(t.comm, sizeof(t.comm), "?");
	snprintf(t.root, sizeof(t.root), "/proc/%d/root", pid);
	ret = check_program(&t);
	if (ret == -EACCES || ret == -EPERM) {
		explain_eperm(&t, dir);
		return UKP_EXIT_FAIL;
	}
	if (ret == -ENOENT || ret == -ESRCH) {
		ukp_err("no process %d (it exited)", pid);
		return UKP_EXIT_FAIL;
	}
	if (ret)
		return UKP_EXIT_FAIL;
	if (status_field(dir, "TracerPid:", 0) > 0) {
		explain_eperm(&t, dir);
		return UKP_EXIT_FAIL;
	}
	{
		char st[256] = "";

		snprintf(path, sizeof(path), "%s/stat", dir);
		if (read_text(path, st, sizeof(st)) && strrchr(st, ')') &&
		    strrchr(st, ')')[1] == ' ' && strrchr(st, ')')[2] == 'T') {
			/* its new threads would stop too: the agent could not
			 * start */
			ukp_err("process %d (%s) is stopped (SIGSTOP): continue it first", pid,
				t.comm);
			return UKP_EXIT_FAIL;
		}
	}
	if (read_maps(&t, agent)) {
		ukp_err("process %d (%s): cannot read its memory map: %s", pid, t.comm,
			strerror(errno));
		return UKP_EXIT_FAIL;
	}
	if (!t.libc.path[0] ||
	    (elf_dynsym(t.root, &t.libc, "dlopen", &dlopen_fn) &&
	     (!t.libdl.path[0] || elf_dynsym(t.root, &t.libdl, "dlopen", &dlopen_fn)))) {
		ukp_err("process %d (%s) has no dynamic loader's dlopen() to load the agent with "
			"(it does not use the GNU C library%s)",
			pid, t.comm, t.libc.path[0] ? ", or one older than 2.34 without libdl" : "");
		return UKP_EXIT_FAIL;
	}
	if (elf_dynsym(t.root, &t.libc, "dlerror", &dlerror_fn) && t.libdl.path[0])
		elf_dynsym(t.root, &t.libdl, "dlerror", &dlerror_fn);

	tid = choose_thread(&t);
	if (!tid) {
		ukp_err("process %d (%s): no thread can be used (every one blocks SIGSEGV, or it "
			"exited)",
			pid, t.comm);
		return UKP_EXIT_FAIL;
	}
	if (ptrace(PTRACE_SEIZE, tid, NULL, NULL)) {
		if (errno == ESRCH)
			ukp_err("process %d (%s) exited during the attach", pid, t.comm);
		else if (errno == EPERM)
			explain_eperm(&t, dir);
		else
			ukp_err("process %d (%s): ptrace: %s", pid, t.comm, strerror(errno));
		return UKP_EXIT_FAIL;
	}
	seized = true;
	snprintf(path, sizeof(path), "/proc/%d/mem", pid);
	t.mem = open(path, O_RDWR | O_CLOEXEC);
	if (t.mem < 0) {
		ukp_err("process %d (%s): cannot open its memory: %s", pid, t.comm, strerror(errno));
		goto out;
	}
	ret = stop_safely(&t, tid, &sv, &stop0);
	if (ret == -EAGAIN) {
		ukp_err("process %d (%s): thread %d was never found outside the C library and the "
			"loader: no safe point to load the agent; try again",
			pid, t.comm, tid);
		goto out_running;
	}
	if (ret) {
		ukp_err("process %d (%s) exited during the attach", pid, t.comm);
		goto out;
	}
	/* A stop that made a waiting system call fail with EINTR (those the
	 * kernel does not restart after a stop): run it again. */
	if ((long)sv.regs.orig_rax >= 0 && (long)sv.regs.rax == -EINTR &&
	    is_syscall_insn(&t, sv.regs.rip)) {
		sv.regs.rax = sv.regs.orig_rax;
		sv.regs.rip -= 2;
	}
	{
		const char *a[2] = { agent, NULL };
		const unsigned long n[2] = { 0, RTLD_NOW };

		ret = call_in(&t, tid, &sv.regs, dlopen_fn, a, n, &res);
	}
	if (!ret && !res) {
		char msg[512] = "";
		unsigned long s = 0;
		const char *a[2] = { NULL, NULL };
		const unsigned long n[2] = { 0, 0 };

		if (dlerror_fn && !call_in(&t, tid, &sv.regs, dlerror_fn, a, n, &s) && s) {
			ssize_t k = pread(t.mem, msg, sizeof(msg) - 1, (off_t)s);

			msg[k > 0 ? k : 0] = '\0';
			msg[strnlen(msg, sizeof(msg) - 1)] = '\0';
		}
		ukp_err("process %d (%s) could not load the agent: %s", pid, t.comm,
			msg[0] ? msg : "dlopen() failed");
		goto out_restore;
	}
	if (!ret) {
		if (read_maps(&t, agent) || !t.agent.path[0] ||
		    elf_dynsym("", &t.agent, "ukprobe_agent_attach", &attach_fn)) {
			ukp_err("process %d (%s): the agent was loaded but its entry point was not "
				"found",
				pid, t.comm);
			goto out_restore;
		}
		{
			const char *a[2] = { name, NULL };
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
	if (restore_state(tid, &sv)) {
		ukp_err("process %d (%s) exited during the attach", pid, t.comm);
		code = UKP_EXIT_FAIL;
	}
out_running:
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
	free(sv.xstate);
	return code;
}
