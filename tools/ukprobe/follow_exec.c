/* SPDX-License-Identifier: MIT */
/*
 * follow_exec.c - -f, launched: a static program that a traced process
 * execs gets the freestanding agent, as the static program ukprobe
 * launches does (launch_static.c). A dynamic one gets the agent from
 * its environment (LD_PRELOAD); a static one has no loader, so its
 * agent is loaded by ptrace at its exec: the exec'ing thread asks for
 * it before the system call (agent/exec_follow.c, UKPM_EXEC) and waits
 * until it is traced. Here each request gets a thread of its own (the
 * tracer of one exec: ptrace's requests come from the thread that
 * seized), which seizes the thread with PTRACE_O_TRACEEXEC, waits for
 * its exec (or for the agent's word that it failed: the thread is let
 * go), and loads the agent into the new program there, one load at a
 * time; the session loop goes on meanwhile, reading what the images
 * send (the new program's agent among them, on the connection every
 * image of a launched session shares). Attached, an exec is not
 * followed: the agent says so, and so does ukprobe.
 */
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "session.h"
#include "target.h"

struct ukp_follow {
	struct ukp_follow *next;
	pthread_t th;
	pid_t tid;
	_Atomic bool failed;      /* the agent said: that exec failed */
	char *agent;              /* the freestanding agent's path */
};

struct ukp_follows {
	pthread_mutex_t lock;     /* the list */
	struct ukp_follow *list;
	int unfollowed;           /* attached: execs not followed (the first said) */
	pid_t unfollowed_pid;
};

/* one load at a time (load.c's state is ukprobe's) */
static pthread_mutex_t load_lock = PTHREAD_MUTEX_INITIALIZER;

/* The freestanding agent beside the dynamic one (inject.c's
 * choose_agent looks there too). */
static char *free_agent_of(const struct ukp_session *s)
{
	const char *slash = s->agent ? strrchr(s->agent, '/') : NULL;
	char *bin;

	if (s->free_agent)
		return strdup(s->free_agent);
	if (!slash || asprintf(&bin, "%.*s/libukprobe-agent.bin", (int)(slash - s->agent),
			       s->agent) < 0)
		return NULL;
	if (access(bin, R_OK)) {
		free(bin);
		return NULL;
	}
	return bin;
}

/* Wait for f's thread to exec (1: stopped there, its pid in *pid), end
 * (0), or to have failed its exec (0, let go). */
static int wait_exec(struct ukp_follow *f, pid_t *pid)
{
	bool interrupted = false;

	for (;;) {
		int st, r = waitpid(f->tid, &st, __WALL | WNOHANG);

		if (r < 0) {
			if (errno == EINTR)
				continue;
			return 0;
		}
		if (r == 0) {
			struct timespec ms = { 0, 1000000 };

			if (atomic_load(&f->failed) && !interrupted) {
				interrupted = true;
				ptrace(PTRACE_INTERRUPT, f->tid, NULL, NULL);
			}
			nanosleep(&ms, NULL);
			continue;
		}
		if (!WIFSTOPPED(st))
			return 0;
		if (st >> 8 == (SIGTRAP | (PTRACE_EVENT_EXEC << 8))) {
			*pid = r;
			return 1;
		}
		if (st >> 16 == PTRACE_EVENT_STOP && atomic_load(&f->failed)) {
			ptrace(PTRACE_DETACH, f->tid, NULL, NULL);
			return 0;
		}
		/* a signal on its way to the thread goes on; a group stop ends */
		ptrace(PTRACE_CONT, f->tid, NULL,
		       (void *)(long)(st >> 16 ? 0 : WSTOPSIG(st)));
	}
}

static void *follow_main(void *arg)
{
	struct ukp_follow *f = arg;
	char path[64];
	pid_t pid;

	if (ptrace(PTRACE_SEIZE, f->tid, NULL, (void *)(long)PTRACE_O_TRACEEXEC)) {
		ukp_warn("-f: the program thread %d execs cannot be followed (ptrace: %s): it "
			 "runs untraced", f->tid, strerror(errno));
		return NULL;
	}
	if (wait_exec(f, &pid) <= 0)
		return NULL;
	snprintf(path, sizeof(path), "/proc/%d/exe", pid);
	if (!ukp_program_is_static(pid)) {
		/* (a dynamic program: its agent is preloaded) */
		ptrace(PTRACE_DETACH, pid, NULL, NULL);
		return NULL;
	}
	pthread_mutex_lock(&load_lock);
	if (ukp_launch_static_stopped(path, f->agent, pid, NULL, NULL))
		kill(pid, SIGKILL); /* (said: it would run untraced) */
	pthread_mutex_unlock(&load_lock);
	return NULL;
}

void ukp_follow_exec(struct ukp_session *s, pid_t tid, int kind)
{
	struct ukp_follows *fs = s->follows;
	struct ukp_follow *f;

	if (!fs) {
		fs = s->follows = calloc(1, sizeof(*fs));
		if (!fs)
			return;
		pthread_mutex_init(&fs->lock, NULL);
	}
	if (kind == 2) {
		/* (the thread's id as its agent sees it: the pid of a
		 * process that has one thread, in ukprobe's namespace too
		 * unless the process is in a container of its own) */
		if (!fs->unfollowed++) {
			fs->unfollowed_pid = tid;
			ukp_warn("-f: process %d execs a program, which is not followed in an "
				 "attached session: it runs untraced", tid);
		}
		return;
	}
	if (kind == 1) {
		pthread_mutex_lock(&fs->lock);
		for (f = fs->list; f; f = f->next)
			if (f->tid == tid)
				atomic_store(&f->failed, true);
		pthread_mutex_unlock(&fs->lock);
		return;
	}
	f = calloc(1, sizeof(*f));
	if (!f)
		return;
	f->tid = tid;
	f->agent = free_agent_of(s);
	if (!f->agent) {
		ukp_warn("-f: process %d execs a static program, which needs the freestanding "
			 "agent (libukprobe-agent.bin beside %s): it runs untraced", tid,
			 s->agent ? s->agent : "the agent");
		free(f);
		return;
	}
	if (pthread_create(&f->th, NULL, follow_main, f)) {
		free(f->agent);
		free(f);
		return;
	}
	pthread_mutex_lock(&fs->lock);
	f->next = fs->list;
	fs->list = f;
	pthread_mutex_unlock(&fs->lock);
}

void ukp_follow_exec_end(struct ukp_session *s)
{
	struct ukp_follows *fs = s->follows;

	if (!fs)
		return;
	if (fs->unfollowed > 1)
		ukp_warn("-f: %d execs in all were not followed (the first in process %d)",
			 fs->unfollowed, fs->unfollowed_pid);
	while (fs->list) {
		struct ukp_follow *f = fs->list;

		fs->list = f->next;
		pthread_join(f->th, NULL);
		free(f->agent);
		free(f);
	}
	pthread_mutex_destroy(&fs->lock);
	free(fs);
	s->follows = NULL;
}
