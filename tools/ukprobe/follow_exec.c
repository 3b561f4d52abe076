/* SPDX-License-Identifier: MIT */
/*
 * follow_exec.c - -f: a static program that a traced process execs (and
 * attached, any program) gets the freestanding agent, as the static program ukprobe
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
 * image of a launched session shares). A dynamic program's
 * posix_spawn() of a static one: its thread asks before the call (glibc's
 * child execs inside libc, unseen: agent/exec_follow.c), and is traced
 * for the call so that its child is traced from its vfork
 * (wait_spawn).
 *
 * Attached, the agent asks for every program, dynamic or static (no
 * LD_PRELOAD reaches it): the new program gets the freestanding agent
 * with the attach's socket name and key, as a process -p names does
 * (inject.c), and is held until that agent's READY says its probes are
 * in place; its agent connects, is admitted as a descendant, and at the
 * detach is unloaded like the others (ukp_follow_exec_unload).
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
#include "session_loop.h"
#include "target.h"

struct ukp_follow {
	struct ukp_follow *next;
	pthread_t th;
	pid_t tid;
	_Atomic bool failed;      /* the agent said: that exec failed (or, spawn:
				   * its posix_spawn returned) */
	bool spawn;               /* a posix_spawn()'s child is followed */
	char *agent;              /* the freestanding agent's path */
	/* attached: the session's socket and key (NULL launched), the
	 * exec'd process, and whether its agent said READY */
	struct ukp_session *s;
	const char *name, *key;
	_Atomic pid_t pid;
	_Atomic bool ready;
};

/* attached: an agent loaded into an exec'd program, for the unload */
struct ukp_exec_load {
	struct ukp_exec_load *next;
	struct ukp_loaded *ld;
	unsigned long long start;  /* its process's start time (proc_start) */
};

struct ukp_follows {
	pthread_mutex_t lock;     /* the lists */
	struct ukp_follow *list;
	struct ukp_exec_load *loads;
	/* follow threads not done yet: an attached session goes on while
	 * one is (the process that execs may have been its last
	 * connection: ukp_follow_exec_busy) */
	_Atomic int running;
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

/* Stop a seized thread and let it go (it may have ended). */
static void release(pid_t tid)
{
	if (ptrace(PTRACE_INTERRUPT, tid, NULL, NULL))
		return;
	for (;;) {
		int st, r = waitpid(tid, &st, __WALL);

		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0 || !WIFSTOPPED(st))
			return;
		if (st >> 16 == PTRACE_EVENT_STOP) {
			ptrace(PTRACE_DETACH, tid, NULL, NULL);
			return;
		}
		/* (a signal on its way goes on; another event's stop
		 * too: the interrupt's comes after it) */
		ptrace(PTRACE_CONT, tid, NULL, (void *)(long)(st >> 16 ? 0 : WSTOPSIG(st)));
	}
}

/*
 * posix_spawn's child: f's thread is seized with PTRACE_O_TRACEVFORK
 * (glibc's child is a clone with CLONE_VM | CLONE_VFORK), so that the
 * child is traced from its start with the same options; waits for the
 * child's exec (1: stopped there, *pid), its end or the call's return
 * without a child (0). The thread is let go either way, before the
 * child's agent is loaded (it waits for that in posix_spawn's return).
 */
static int wait_spawn(struct ukp_follow *f, pid_t *pid)
{
	pid_t child = 0;
	int ret = 0;

	for (;;) {
		int st, r = waitpid(child ? child : f->tid, &st, __WALL | WNOHANG);

		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0 || (r > 0 && !WIFSTOPPED(st))) {
			if (r > 0 && r == f->tid)
				return 0; /* (the thread ended) */
			break;    /* (the child ended without an exec) */
		}
		if (r == 0) {
			struct timespec ms = { 0, 1000000 };

			/* (the call returned without a child) */
			if (!child && atomic_load(&f->failed))
				break;
			if (child) {
				/* the thread: stops of its own meanwhile go on */
				r = waitpid(f->tid, &st, __WALL | WNOHANG);
				if (r > 0 && WIFSTOPPED(st))
					ptrace(PTRACE_CONT, f->tid, NULL,
					       (void *)(long)(st >> 16 ? 0 : WSTOPSIG(st)));
			}
			nanosleep(&ms, NULL);
			continue;
		}
		if (!child && (st >> 16 == PTRACE_EVENT_VFORK || st >> 16 == PTRACE_EVENT_FORK)) {
			unsigned long msg = 0;

			ptrace(PTRACE_GETEVENTMSG, r, NULL, &msg);
			child = (pid_t)msg;
			ptrace(PTRACE_CONT, r, NULL, NULL);
			continue;
		}
		if (child && st >> 8 == (SIGTRAP | (PTRACE_EVENT_EXEC << 8))) {
			*pid = r;
			ret = 1;
			break;
		}
		ptrace(PTRACE_CONT, r, NULL, (void *)(long)(st >> 16 ? 0 : WSTOPSIG(st)));
	}
	release(f->tid);
	return ret;
}

/* pid's start time (/proc/PID/stat's field 22, in clock ticks since
 * boot), which an exec keeps and a new process of a reused pid has not;
 * 0 when it is gone. */
static unsigned long long proc_start(pid_t pid)
{
	char path[64], buf[1024], *p, *save = NULL;
	unsigned long long start = 0;
	FILE *f;
	int field;

	snprintf(path, sizeof(path), "/proc/%d/stat", pid);
	f = fopen(path, "re");
	if (!f)
		return 0;
	p = fgets(buf, sizeof(buf), f) ? strrchr(buf, ')') : NULL;
	fclose(f);
	/* (after the command's ')': field 3 on) */
	for (field = 2, p = p ? strtok_r(p + 1, " ", &save) : NULL; p;
	     p = strtok_r(NULL, " ", &save))
		if (++field == 22) {
			start = strtoull(p, NULL, 10);
			break;
		}
	return start;
}

/* [follow] Has f's program's agent said READY? */
static bool said_ready(void *arg)
{
	return atomic_load(&((struct ukp_follow *)arg)->ready);
}

/* Attached: the program pid, stopped at its exec, gets the agent with
 * the attach's parameters (launch_static.c), kept for the unload. */
static void follow_attached(struct ukp_follow *f, const char *path, pid_t pid)
{
	struct ukp_follows *fs = f->s->follows;
	struct ukp_exec_load *el = calloc(1, sizeof(*el));
	struct ukp_loaded *ld;
	int ret;

	if (!el) {
		ptrace(PTRACE_DETACH, pid, NULL, NULL);
		return;
	}
	atomic_store(&f->pid, pid);
	pthread_mutex_lock(&load_lock);
	ret = ukp_follow_load(path, f->agent, pid, ukp_program_is_static(pid), f->name, f->key,
			      &ld);
	pthread_mutex_unlock(&load_lock);
	if (ret) {
		/* (ended; or said, and let go) */
		if (ret < 0)
			ukp_warn("-f: process %d runs the program it exec'd untraced", pid);
		free(el);
		return;
	}
	/* (the next load meanwhile: the program is held by this thread) */
	ukp_follow_hold(ld, said_ready, f);
	el->ld = ld;
	el->start = proc_start(pid);
	pthread_mutex_lock(&fs->lock);
	/* an agent loaded into this process before went with this exec, and
	 * one of a process gone went with it: nothing of them to unload
	 * (their addresses may be the new program's, or another process's
	 * that has the pid now) */
	for (struct ukp_exec_load **pp = &fs->loads; *pp;) {
		struct ukp_exec_load *old = *pp;
		pid_t op = ukp_loaded_pid(old->ld);

		if (op == pid || proc_start(op) != old->start) {
			*pp = old->next;
			free(old->ld);
			free(old);
		} else {
			pp = &old->next;
		}
	}
	el->next = fs->loads;
	fs->loads = el;
	pthread_mutex_unlock(&fs->lock);
}

static void *follow_main(void *arg)
{
	struct ukp_follow *f = arg;
	char path[64];
	pid_t pid;
	long opts = f->spawn ? PTRACE_O_TRACEEXEC | PTRACE_O_TRACEVFORK | PTRACE_O_TRACEFORK
			     : PTRACE_O_TRACEEXEC;

	if (ptrace(PTRACE_SEIZE, f->tid, NULL, (void *)opts)) {
		ukp_warn("-f: the program thread %d execs cannot be followed (ptrace: %s): it "
			 "runs untraced", f->tid, strerror(errno));
		goto out;
	}
	if ((f->spawn ? wait_spawn(f, &pid) : wait_exec(f, &pid)) <= 0)
		goto out;
	snprintf(path, sizeof(path), "/proc/%d/exe", pid);
	if (f->name) {
		follow_attached(f, path, pid);
		goto out;
	}
	if (!ukp_program_is_static(pid)) {
		/* (a dynamic program: its agent is preloaded) */
		ptrace(PTRACE_DETACH, pid, NULL, NULL);
		goto out;
	}
	pthread_mutex_lock(&load_lock);
	if (ukp_launch_static_stopped(path, f->agent, pid, NULL, NULL))
		kill(pid, SIGKILL); /* (said: it would run untraced) */
	pthread_mutex_unlock(&load_lock);
out:
	atomic_fetch_sub(&f->s->follows->running, 1);
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
		ukp_warn("-f: process %d execs a set-user-ID or set-group-ID program, which is "
			 "not followed (traced, it would run without its privileges): it runs "
			 "untraced", tid);
		return;
	}
	if (kind == 1 || kind == 4) {
		pthread_mutex_lock(&fs->lock);
		for (f = fs->list; f; f = f->next)
			if (f->tid == tid && f->spawn == (kind == 4))
				atomic_store(&f->failed, true);
		pthread_mutex_unlock(&fs->lock);
		return;
	}
	f = calloc(1, sizeof(*f));
	if (!f)
		return;
	f->tid = tid;
	f->spawn = kind == 3;
	f->s = s;
	f->name = s->attach_name;
	f->key = s->attach_key;
	f->agent = free_agent_of(s);
	if (!f->agent) {
		ukp_warn("-f: process %d execs a %sprogram, which needs the freestanding agent "
			 "(libukprobe-agent.bin beside %s): it runs untraced", tid,
			 f->name ? "" : "static ", s->agent ? s->agent : "the agent");
		free(f);
		return;
	}
	atomic_fetch_add(&fs->running, 1);
	if (pthread_create(&f->th, NULL, follow_main, f)) {
		atomic_fetch_sub(&fs->running, 1);
		free(f->agent);
		free(f);
		return;
	}
	pthread_mutex_lock(&fs->lock);
	f->next = fs->list;
	fs->list = f;
	pthread_mutex_unlock(&fs->lock);
}

bool ukp_follow_exec_busy(const struct ukp_session *s)
{
	return s->follows && atomic_load(&s->follows->running) > 0;
}

bool ukp_follow_exec_reloaded(const struct ukp_session *s, pid_t pid)
{
	bool found = false;

	if (!s->follows)
		return false;
	pthread_mutex_lock(&s->follows->lock);
	for (struct ukp_exec_load *el = s->follows->loads; el && !found; el = el->next)
		found = ukp_loaded_pid(el->ld) == pid;
	pthread_mutex_unlock(&s->follows->lock);
	return found;
}

void ukp_follow_exec_ready(struct ukp_session *s, pid_t pid)
{
	struct ukp_follows *fs = s->follows;
	struct ukp_follow *f;

	if (!fs)
		return;
	pthread_mutex_lock(&fs->lock);
	for (f = fs->list; f; f = f->next)
		if (atomic_load(&f->pid) == pid)
			atomic_store(&f->ready, true);
	pthread_mutex_unlock(&fs->lock);
}

static void follows_free(struct ukp_session *s)
{
	struct ukp_follows *fs = s->follows;

	pthread_mutex_destroy(&fs->lock);
	free(fs);
	s->follows = NULL;
}

void ukp_follow_exec_end(struct ukp_session *s)
{
	struct ukp_follows *fs = s->follows;

	if (!fs)
		return;
	for (;;) {
		struct ukp_follow *f;

		pthread_mutex_lock(&fs->lock);
		f = fs->list;
		if (f)
			fs->list = f->next;
		pthread_mutex_unlock(&fs->lock);
		if (!f)
			break;
		pthread_join(f->th, NULL);
		free(f->agent);
		free(f);
	}
	if (!fs->loads)
		follows_free(s);
}

void ukp_follow_exec_unload(struct ukp_session *s, int timeout_ms)
{
	struct ukp_follows *fs = s->follows;

	if (!fs)
		return;
	while (fs->loads) {
		struct ukp_exec_load *el = fs->loads;

		fs->loads = el->next;
		/* (a process gone, or its pid another's now: nothing to do) */
		if (proc_start(ukp_loaded_pid(el->ld)) == el->start)
			ukp_inject_unload(el->ld, timeout_ms); /* (frees it) */
		else
			free(el->ld);
		free(el);
	}
	follows_free(s);
}
