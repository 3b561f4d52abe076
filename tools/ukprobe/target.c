/* SPDX-License-Identifier: MIT */
/*
 * target.c - what ukprobe reads about a running process before it
 * attaches (ukprobe -p): /proc/PID (its program, its threads, who traces
 * it, its memory map), and the dynamic symbols of the objects it maps
 * (dlopen, dlerror, the agent's entry point). Nothing here stops or
 * changes the process.
 */
#include <dirent.h>
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <limits.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <linux/magic.h>
#include <unistd.h>

#include "cli.h"
#include "target.h"

/* A field of /proc/PID[/task/TID]/status, or -1. */
static long status_field(const char *dir, const char *field, int which)
{
	char path[96], buf[4096], *p;
	long v = -1;
	int i;

	snprintf(path, sizeof(path), "%s/status", dir);
	if (!ukp_read_proc_text(path, buf, sizeof(buf)))
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
	if (!ukp_read_proc_text(path, buf, sizeof(buf)))
		return 0;
	p = strstr(buf, field);
	return p ? strtoull(p + strlen(field), NULL, 16) : 0;
}

/* A process's file system credentials, from one read of its status. */
struct fs_creds {
	long uid, gid;
	long groups[64];
	int ngroups;
};

static bool fs_creds_read(const char *dir, struct fs_creds *c)
{
	char path[96], buf[4096], *p, *e;
	int i;

	snprintf(path, sizeof(path), "%s/status", dir);
	if (!ukp_read_proc_text(path, buf, sizeof(buf)))
		return false;
	c->uid = c->gid = -1;
	c->ngroups = 0;
	/* the fourth number of Uid: and Gid: is the file system one */
	if ((p = strstr(buf, "Uid:")))
		for (p += 4, i = 0; i < 4; i++)
			c->uid = strtol(p, &p, 10);
	if ((p = strstr(buf, "Gid:")))
		for (p += 4, i = 0; i < 4; i++)
			c->gid = strtol(p, &p, 10);
	if ((p = strstr(buf, "Groups:")))
		for (p += 7; *p && *p != '\n' && c->ngroups < 64; p = e) {
			long g = strtol(p, &e, 10);

			if (e == p)
				break;
			c->groups[c->ngroups++] = g;
		}
	return c->uid >= 0 && c->gid >= 0;
}

static bool in_groups(const struct fs_creds *c, gid_t gid)
{
	if ((long)gid == c->gid)
		return true;
	for (int i = 0; i < c->ngroups; i++)
		if (c->groups[i] == (long)gid)
			return true;
	return false;
}

/* Can the process open path for reading, by its file system uid and
 * groups and the mode bits of each directory on the way and of the file
 * (ACLs aside)? A server running as its own user cannot read an agent
 * built in root's home. */
static bool readable_by(const struct ukp_target *t, const char *path)
{
	struct fs_creds c;
	char part[PATH_MAX];
	size_t i, n = strlen(path);

	if (!fs_creds_read(t->dir, &c))
		return false;
	if (c.uid == 0)
		return true;
	if (n >= sizeof(part) || path[0] != '/')
		return false;
	for (i = 1; i <= n; i++) {
		struct stat st;
		mode_t want;

		if (i < n && path[i] != '/')
			continue;
		memcpy(part, path, i);
		part[i] = '\0';
		if (stat(part, &st))
			return false;
		want = i < n ? S_IXOTH : S_IROTH;
		if ((long)st.st_uid == c.uid)
			want <<= 6;
		else if (in_groups(&c, st.st_gid))
			want <<= 3;
		if (!(st.st_mode & want))
			return false;
	}
	return true;
}

static const char *base_name(const char *path)
{
	const char *s = strrchr(path, '/');

	return s ? s + 1 : path;
}

/* The C library, libdl, the loader and the agent in /proc/PID/maps. */
static int read_maps(struct ukp_target *t, const char *agent)
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
		struct ukp_mapping m = { 0 };
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
		} else if ((!strcmp(m.path, agent) || !strcmp(m.path, UKP_AGENT_MEMFD_MAPPED)) &&
			   m.off == 0 && !t->agent.path[0]) {
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
static int elf_dynsym(pid_t pid, const struct ukp_mapping *m, const char *name,
		      uintptr_t *addr)
{
	char path[96];
	Elf64_Ehdr eh;
	Elf64_Shdr *sh = NULL;
	Elf64_Sym *syms = NULL;
	uint16_t *vers = NULL;
	char *strs = NULL;
	uint64_t vaddr0 = UINT64_MAX;
	size_t nsyms = 0, i;
	int fd, ret = -1, k;

	/* the mapping's own file (the agent loaded from memory has no
	 * path); opening it so needs CAP_SYS_ADMIN or CAP_CHECKPOINT_RESTORE,
	 * else the path in maps, which is as ukprobe's root sees it */
	snprintf(path, sizeof(path), "/proc/%d/map_files/%lx-%lx", (int)pid, (unsigned long)m->start,
		 (unsigned long)m->end);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		fd = open(m->path, O_RDONLY | O_CLOEXEC);
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

/* The ELF header of the program: 64-bit, of this build's architecture,
 * with a loader? */
static int check_program(const struct ukp_target *t, bool free_agent)
{
	char path[64];
	Elf64_Ehdr eh;
	bool interp;
	int fd;

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
	if (eh.e_ident[EI_CLASS] != ELFCLASS64 || eh.e_machine != UKP_ELF_MACHINE) {
		close(fd);
		ukp_err("process %d (%s) is a %s program: only " UKP_ARCH_NAME
			" processes can be traced",
			t->pid, t->comm,
			eh.e_ident[EI_CLASS] == ELFCLASS32 ? "32-bit" : "non-" UKP_ARCH_NAME);
		return -ENOEXEC;
	}
	interp = ukp_elf_has_interp(fd, &eh);
	if (interp && ukp_go_without_cgo(fd)) {
		close(fd);
		ukp_err("process %d (%s) is a Go program built without cgo: its threads are the Go "
			"runtime's own, where the agent loaded into a dynamically linked program "
			"cannot run (build it with CGO_ENABLED=1, or without -linkmode=external: "
			"Go's default static program is traced)",
			t->pid, t->comm);
		return -ENOEXEC;
	}
	close(fd);
	if (!interp && !free_agent) {
		ukp_err("process %d (%s) is statically linked: the agent cannot be loaded into it "
			"(tracing static programs is not supported)",
			t->pid, t->comm);
		return -ENOEXEC;
	}
	return 0;
}

/* Why PTRACE_SEIZE was refused, in one line. */
void ukp_target_explain_eperm(const struct ukp_target *t)
{
	const char *dir = t->dir;
	long uid = status_field(dir, "Uid:", 1), tracer = status_field(dir, "TracerPid:", 0);
	char buf[16] = "";

	if (tracer > 0) {
		char tdir[32], tcomm[64] = "?";

		snprintf(tdir, sizeof(tdir), "/proc/%ld/comm", tracer);
		if (ukp_read_proc_text(tdir, tcomm, sizeof(tcomm)))
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
	if (ukp_read_proc_text("/proc/sys/kernel/yama/ptrace_scope", buf, sizeof(buf)) && atoi(buf) > 0 &&
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

/* System calls a thread waits in, holding no lock of the C library. */
bool ukp_waiting_syscall(long nr)
{
	switch (nr) {
	case SYS_read: case SYS_write: case SYS_readv: case SYS_writev: case SYS_pread64:
	case SYS_pwrite64: case SYS_recvfrom: case SYS_recvmsg: case SYS_recvmmsg:
	case SYS_sendto: case SYS_sendmsg: case SYS_accept: case SYS_accept4: case SYS_connect:
	case SYS_ppoll: case SYS_pselect6: case SYS_epoll_pwait: case SYS_nanosleep:
	case SYS_clock_nanosleep: case SYS_futex: case SYS_wait4: case SYS_waitid:
	case SYS_rt_sigsuspend:
	case SYS_rt_sigtimedwait: case SYS_restart_syscall: case SYS_msgrcv: case SYS_semop:
	case SYS_semtimedop: case SYS_io_getevents: case SYS_flock:
#ifdef SYS_epoll_pwait2
	case SYS_epoll_pwait2:
#endif
	/* the older calls, which AArch64 has only as the ones above */
#ifdef SYS_poll
	case SYS_poll: case SYS_select: case SYS_epoll_wait: case SYS_pause:
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
	if (!ukp_read_proc_text(path, buf, sizeof(buf)))
		return -2;
	if (!strncmp(buf, "running", 7))
		return -1;
	return strtol(buf, NULL, 10);
}

/* The thread to stop (never skip): the main thread whenever it can be
 * used, else the first one found waiting in a system call, else any.
 * The main thread first because the agent's dlopen() allocates on the
 * thread it runs on: the main thread has used the program's allocator
 * already, where another thread's first allocation can make the allocator
 * set up for it (jemalloc gives a new thread an arena of its own and
 * starts a background thread for it, which stays after the detach).
 * Threads that block or ignore SIGSEGV are left alone (the calls end in
 * one). */
pid_t ukp_target_choose_thread(const struct ukp_target *t, pid_t skip)
{
	char path[64];
	DIR *d;
	struct dirent *e;
	pid_t best = 0, fallback = 0;

	snprintf(path, sizeof(path), "/proc/%d/task", t->pid);
	d = opendir(path);
	if (!d)
		return 0;
	while ((e = readdir(d))) {
		pid_t tid = (pid_t)atoi(e->d_name);
		char dir[64];
		unsigned long long bit = 1ULL << (SIGSEGV - 1);

		if (tid <= 0 || tid == skip)
			continue;
		snprintf(dir, sizeof(dir), "/proc/%d/task/%d", t->pid, tid);
		if ((status_mask(dir, "SigBlk:") | status_mask(dir, "SigIgn:")) & bit)
			continue;
		if (tid == t->pid) {
			best = tid;
			break;
		}
		if (!fallback)
			fallback = tid;
		if (!best && ukp_waiting_syscall(blocked_syscall(t->pid, tid)))
			best = tid;
	}
	closedir(d);
	return best ? best : fallback;
}

bool ukp_target_in_libc(const struct ukp_target *t, uintptr_t ip)
{
	return (ip >= t->libc_lo && ip < t->libc_hi) || (ip >= t->ld_lo && ip < t->ld_hi);
}

static bool same_file_in_root(const struct ukp_target *t, const char *path);

int ukp_target_check(struct ukp_target *t, pid_t pid, bool free_agent)
{
	char path[64], st[256] = "";
	int ret;

	memset(t, 0, sizeof(*t));
	t->pid = pid;
	t->mem = -1;
	snprintf(t->dir, sizeof(t->dir), "/proc/%d", pid);
	snprintf(t->root, sizeof(t->root), "/proc/%d/root", pid);
	if (kill(pid, 0) && errno == ESRCH) {
		ukp_err("no process %d", pid);
		return -1;
	}
	snprintf(path, sizeof(path), "%s/comm", t->dir);
	if (ukp_read_proc_text(path, t->comm, sizeof(t->comm)))
		t->comm[strcspn(t->comm, "\n")] = '\0';
	else
		snprintf(t->comm, sizeof(t->comm), "?");
	ret = check_program(t, free_agent);
	if (ret == -EACCES || ret == -EPERM) {
		ukp_target_explain_eperm(t);
		return -1;
	}
	if (ret == -ENOENT || ret == -ESRCH) {
		ukp_err("no process %d (it exited)", pid);
		return -1;
	}
	if (ret)
		return -1;
	if (status_field(t->dir, "TracerPid:", 0) > 0) {
		ukp_target_explain_eperm(t);
		return -1;
	}
	snprintf(path, sizeof(path), "%s/stat", t->dir);
	if (ukp_read_proc_text(path, st, sizeof(st)) && strrchr(st, ')') && strrchr(st, ')')[1] == ' ' &&
	    strrchr(st, ')')[2] == 'T') {
		/* its new threads would stop too: the agent could not start */
		ukp_err("process %d (%s) is stopped (SIGSTOP): continue it first", pid, t->comm);
		return -1;
	}
	return 0;
}

bool ukp_target_has_session(pid_t pid)
{
	char path[64], *line = NULL;
	size_t cap = 0;
	bool found = false;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/maps", pid);
	f = fopen(path, "re");
	if (!f)
		return false;
	while (!found && getline(&line, &cap, f) > 0)
		found = strstr(line, " /memfd:ukprobe-region") != NULL;
	free(line);
	fclose(f);
	return found;
}

int ukp_target_examine(struct ukp_target *t, pid_t pid, const char *agent)
{
	if (ukp_target_check(t, pid, false))
		return -1;
	if (read_maps(t, agent)) {
		ukp_err("process %d (%s): cannot read its memory map: %s", pid, t->comm,
			strerror(errno));
		return -1;
	}
	if (!t->libc.path[0] ||
	    (elf_dynsym(t->pid, &t->libc, "dlopen", &t->dlopen_fn) &&
	     (!t->libdl.path[0] || elf_dynsym(t->pid, &t->libdl, "dlopen", &t->dlopen_fn)))) {
		ukp_err("process %d (%s) has no dynamic loader's dlopen() to load the agent with "
			"(it does not use the GNU C library%s)",
			pid, t->comm, t->libc.path[0] ? ", or one older than 2.34 without libdl" : "");
		return -1;
	}
	if (elf_dynsym(t->pid, &t->libc, "dlerror", &t->dlerror_fn) && t->libdl.path[0])
		elf_dynsym(t->pid, &t->libdl, "dlerror", &t->dlerror_fn);
	t->other_root = !same_file_in_root(t, agent);
	/* (then it is loaded from memory, as into another root) */
	t->unreadable = !t->other_root && !readable_by(t, agent);
	if ((t->other_root || t->unreadable) && !t->agent.path[0]) {
		struct statfs sf;
		char proc[sizeof(t->root) + 8];

		snprintf(proc, sizeof(proc), "%s/proc", t->root);
		if (elf_dynsym(t->pid, &t->libc, "memfd_create", &t->memfd_fn) ||
		    elf_dynsym(t->pid, &t->libc, "close", &t->close_fn)) {
			ukp_err("process %d (%s) %s, and its C library has no "
				"memfd_create() to load the agent from memory with (glibc < 2.27)",
				pid, t->comm,
				t->unreadable ? "cannot read the agent where it is"
					      : "runs in another root");
			return -1;
		}
		if (statfs(proc, &sf) || sf.f_type != PROC_SUPER_MAGIC) {
			ukp_err("process %d (%s) runs in another root, with no /proc mounted in it: "
				"the agent cannot be loaded there (mount /proc in its root)",
				pid, t->comm);
			return -1;
		}
	}
	return 0;
}

/* Is path, as ukprobe sees it, the same file at the same path in the
 * process's root (not when it runs in a container or a chroot)? */
static bool same_file_in_root(const struct ukp_target *t, const char *path)
{
	char there[4200];
	struct stat a, b;

	snprintf(there, sizeof(there), "%s%s", t->root, path);
	return !stat(path, &a) && !stat(there, &b) && a.st_dev == b.st_dev && a.st_ino == b.st_ino;
}

/* Does the process map an object named name (a file whose name begins
 * with it: libz.so.1.2.13 for libz.so.1), or one ukprobe loaded into it
 * from memory under that name? */
bool ukp_target_maps_object(const struct ukp_target *t, const char *name)
{
	char path[64], line[4096 + 256], mem[300];
	bool found = false;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/maps", t->pid);
	snprintf(mem, sizeof(mem), "/memfd:" UKP_DEP_MEMFD_PREFIX "%s (deleted)", name);
	f = fopen(path, "re");
	if (!f)
		return false;
	while (!found && fgets(line, sizeof(line), f)) {
		char *p = strchr(line, '/');

		if (!p)
			continue;
		p[strcspn(p, "\n")] = '\0';
		found = !strcmp(p, mem) || !strncmp(base_name(p), name, strlen(name));
	}
	fclose(f);
	return found;
}

int ukp_target_agent_entry(struct ukp_target *t, const char *agent, uintptr_t *addr)
{
	if (read_maps(t, agent) || !t->agent.path[0])
		return -1;
	return elf_dynsym(t->pid, &t->agent, "ukprobe_agent_attach", addr);
}

pid_t ukp_parent_of(pid_t pid)
{
	char path[64], buf[512], *p;
	long ppid = 0;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/stat", pid);
	f = fopen(path, "re");
	if (!f)
		return 0;
	p = fgets(buf, sizeof(buf), f) ? strrchr(buf, ')') : NULL;
	fclose(f);
	if (!p || sscanf(p + 1, " %*c %ld", &ppid) != 1)
		return 0;
	return (pid_t)ppid;
}
