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
	int mem;                  /* /proc/PID/mem (inject.c), or -1 */
};

/* Everything that can be checked without ptrace; fills *t. 0, or -1
 * after one line that says why the process cannot be attached to. */
int ukp_target_examine(struct ukp_target *t, pid_t pid, const char *agent);
/* The address of ukprobe_agent_attach() once the agent is loaded. 0 or -1. */
int ukp_target_agent_entry(struct ukp_target *t, const char *agent, uintptr_t *addr);
/* One line: why ptrace is not permitted. */
void ukp_target_explain_eperm(const struct ukp_target *t);
/* The thread to stop (see inject.c), or 0. */
pid_t ukp_target_choose_thread(const struct ukp_target *t);
/* Is ip in the C library's or the loader's code? */
bool ukp_target_in_libc(const struct ukp_target *t, uintptr_t ip);
/* A system call a thread waits in, holding no lock of the C library? */
bool ukp_waiting_syscall(long nr);

#endif /* UKPROBE_TARGET_H */
