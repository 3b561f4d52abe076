/* SPDX-License-Identifier: MIT */
/*
 * target.h - what ukprobe reads about a running process it attaches to
 * (target.c), for the injection (inject.c).
 */
#ifndef UKPROBE_TARGET_H
#define UKPROBE_TARGET_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

struct ukp_mapping {
	uintptr_t start, end;
	unsigned long off;
	bool exec;
	char path[4096];
};

struct ukp_target {
	pid_t pid;
	char comm[32];
	char dir[32];             /* /proc/PID */
	char root[64];            /* /proc/PID/root: the process's files */
	struct ukp_mapping libc, libdl, agent;
	uintptr_t libc_lo, libc_hi;   /* the C library's and the loader's code */
	uintptr_t ld_lo, ld_hi;
	uintptr_t dlopen_fn, dlerror_fn;  /* dlerror_fn may be 0 */
	/* the agent is not at its path in the process's root (a container,
	 * a chroot): it and the libraries it needs are loaded from memfds
	 * made in the process (memfd_create, then dlopen /proc/self/fd/N) */
	bool other_root;
	/* the agent is where the process may not read it (its user cannot
	 * search a directory on the way): loaded from memfds too */
	bool unreadable;
	uintptr_t memfd_fn, close_fn;     /* set when other_root */
	int mem;                  /* /proc/PID/mem (inject.c), or -1 */
	/* inject.c: the stack its calls run on, mapped in the process for
	 * them (the stopped thread's own may be a goroutine's few KB) */
	uintptr_t call_stack;     /* 0: not mapped */
};

/* The names of the memfds the agent (and each library it needs, after
 * the prefix) is loaded from, and the agent's as /proc/PID/maps shows it. */
#define UKP_AGENT_MEMFD "ukprobe-agent"
#define UKP_AGENT_MEMFD_MAPPED "/memfd:" UKP_AGENT_MEMFD " (deleted)"
#define UKP_DEP_MEMFD_PREFIX "ukprobe:"
#define UKP_AGENT_FILES_MAX 32

/* The text of the small file path (a /proc one) into buf (len bytes,
 * NUL-terminated), or false when it cannot be opened or read. */
bool ukp_read_proc_text(const char *path, char *buf, size_t len);

/* What any attach needs (the process is there, a 64-bit program of this
 * architecture, not traced, not stopped; with the dynamic agent, one that
 * has an interpreter and threads of the C library's): fills t's pid,
 * comm and directories. 0, or -1 after one line that says why not. */
int ukp_target_check(struct ukp_target *t, pid_t pid, bool free_agent);
/* Does an agent of a session hold its region in the process (agent/
 * region.c's memfd, mapped from the session's start to its detach)? The
 * freestanding agent is loaded beside any other: this is how it knows
 * that another ukprobe traces the process. */
bool ukp_target_has_session(pid_t pid);
/* Everything that can be checked without ptrace for the dynamic agent's
 * dlopen(); fills *t. 0, or -1 after one line that says why the process
 * cannot be attached to. */
int ukp_target_examine(struct ukp_target *t, pid_t pid, const char *agent);
/* The address of ukprobe_agent_attach() once the agent is loaded. 0 or -1. */
int ukp_target_agent_entry(struct ukp_target *t, const char *agent, uintptr_t *addr);
/* One line: why ptrace is not permitted. */
void ukp_target_explain_eperm(const struct ukp_target *t);
/* The thread to stop (see inject.c), or 0. */
pid_t ukp_target_choose_thread(const struct ukp_target *t, pid_t skip);
/* Is ip in the C library's or the loader's code? */
bool ukp_target_in_libc(const struct ukp_target *t, uintptr_t ip);
/* Does the process map an object of that name (see target.c)? */
bool ukp_target_maps_object(const struct ukp_target *t, const char *name);
/* The agent's libraries (not the C library's) in the order to load
 * them, each after those it needs, then the agent: *paths[n], and their
 * sonames in *names. n, or -1 after a line saying why (agent_files.c). */
int ukp_agent_files(const char *agent, char ***paths, char ***names);
/* remote_sys.c: a system call instruction in an executable mapping of
 * process pid (the vDSO's first), read through mem (/proc/PID/mem): 0,
 * -ESRCH or -ENOENT. */
int ukp_find_syscall_insn(pid_t pid, int mem, uintptr_t *insn);
/* nr(a[0..5]) made by tid, stopped under ptrace (PTRACE_O_TRACESYSGOOD)
 * with registers base, at the instruction insn; its result in *res (a
 * value or -errno), the first signal it stopped for meanwhile in *sig
 * when *sig was 0 (the caller gives it back). The registers are left as
 * the call left them. 0, or -ESRCH (the thread is gone). */
struct ukp_regs;
int ukp_remote_syscall(pid_t tid, const struct ukp_regs *base, uintptr_t insn, long nr,
		       const unsigned long a[6], int *sig, long *res);
/* A Go program built without cgo (its threads are not the C library's:
 * the agent cannot run in them), from its file fd (go_threads.c). */
bool ukp_go_without_cgo(int fd);
void ukp_agent_files_free(char **paths, char **names, int n);
/* A system call a thread waits in, holding no lock of the C library? */
bool ukp_waiting_syscall(long nr);

/* pid's parent as ukprobe sees it (/proc/PID/stat), or 0. */
pid_t ukp_parent_of(pid_t pid);

/* inject.c: make process pid load the agent and connect back to the
 * abstract socket name, presenting key (the session's secret, in hex).
 * 0, or ukprobe's exit code after one line that says why (the process
 * is left as it was). */
struct ukp_inject_times {
	long stop_us;             /* the chosen thread was stopped this long */
	long inject_us;           /* ukp_inject() took this long */
	pid_t tid;                /* the thread */
	/* the freestanding agent as loaded (load.h; malloc'ed, the
	 * caller's), for its unload after the detach; NULL for the dynamic
	 * agent */
	struct ukp_loaded *loaded;
};
int ukp_inject(pid_t pid, const char *agent, const char *name, const char *key,
	       struct ukp_inject_times *times);
/* Is the process's program statically linked (no interpreter)? */
bool ukp_program_is_static(pid_t pid);
/* The freestanding agent (times->loaded) unmapped once its session is
 * over (load.c, ukp_unload): said if it stays; ld freed. */
void ukp_inject_unload(struct ukp_loaded *ld, int timeout_ms);
/* (load.h) */
int ukp_unmap_blocks(pid_t pid, pid_t gone_tid, uint64_t info, const char *agent,
		     int timeout_ms, char *err, size_t errlen);

#endif /* UKPROBE_TARGET_H */
