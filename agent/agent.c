/* SPDX-License-Identifier: MIT */
/*
 * agent.c - start-up and end of libukprobe-agent.so in each process
 * image: the program ukprobe runs, and with -f its forked children and
 * the programs they exec.
 *
 * The constructor runs after every object of the program's initial link
 * map is loaded and relocated (the dynamic loader maps all DT_NEEDED
 * objects before it runs any initializer), so SPECs can name the
 * program's libraries; SPECs on objects the program dlopen()s later wait
 * for them (probes.c). libukprobes' own constructors run before this one:
 * its sources come first in this shared object (.init_array runs in link
 * order).
 *
 * If a SPEC cannot be registered in the first image, the agent reports
 * why and ends the program before its main() runs: nothing of it runs
 * with a partial set of probes. In images that -f follows, a SPEC that
 * does not apply is skipped quietly.
 *
 * In probes mode (ukprobe probes) the constructor resolves every SPEC,
 * reports, and _exit(0)s: the program's main() never runs.
 */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "agent.h"
#include "script_abi.h"

_Atomic bool ukpa_tracing;
_Atomic bool ukpa_trace_on = true;
enum ukp_mode ukpa_mode;
bool ukpa_follow;
bool ukpa_attached;

static int out_fd = -1;
/* Who ends the image (exit, exec, a signal's end, the script's exit()):
 * the first thread to come; 0 none yet, 1 ending, 2 ended. [init] */
static _Atomic int ending;

static dev_t out_dev;
static ino_t out_ino;
static bool out_broken;
static pid_t agent_pid;
static uint64_t image_id;

/* -f: our variables, to put back into an exec'd program's environment */
#define NVARS 10
static char *saved_vars[NVARS];
#define KEPT_FDS 3
static int kept_fds[KEPT_FDS], nkept;

/* ----------------------------------------------------------- output */

/* [init][reader] The socket may have been closed by the program (some
 * close every descriptor they do not know) and its number reused: never
 * write into someone else's file. */
static int send_fd(const void *buf, size_t len, int fd, uint32_t seq);

int ukpa_send(const void *buf, size_t len)
{
	return send_fd(buf, len, -1, 0);
}

int ukpa_send_seq(const void *buf, size_t len, uint32_t seq)
{
	return send_fd(buf, len, -1, seq);
}

/* The same, with a descriptor for ukprobe (SCM_RIGHTS) unless fd < 0,
 * and the reader's packet number (common/region.h) or 0. */
static int send_fd(const void *buf, size_t len, int fd, uint32_t seq)
{
	struct ukp_msg_from from = {
		.h = { UKPM_FROM, sizeof(from) },
		.pid = (int32_t)agent_pid,
		.pad = seq,
		.image = image_id,
	};
	struct iovec iov[2] = { { &from, sizeof(from) }, { (void *)buf, len } };
	struct msghdr mh = { .msg_iov = iov, .msg_iovlen = 2 };
	union {
		char buf[CMSG_SPACE(sizeof(int))];
		struct cmsghdr align;
	} ctl;
	struct stat st;

	if (fd >= 0) {
		struct cmsghdr *c;

		memset(&ctl, 0, sizeof(ctl));
		mh.msg_control = ctl.buf;
		mh.msg_controllen = sizeof(ctl.buf);
		c = CMSG_FIRSTHDR(&mh);
		c->cmsg_level = SOL_SOCKET;
		c->cmsg_type = SCM_RIGHTS;
		c->cmsg_len = CMSG_LEN(sizeof(int));
		memcpy(CMSG_DATA(c), &fd, sizeof(int));
	}
	if (out_fd < 0 || out_broken)
		return -1;
	if (fstat(out_fd, &st) || st.st_dev != out_dev || st.st_ino != out_ino) {
		out_broken = true;
		return -1;
	}
	/* a SOCK_SEQPACKET packet goes whole or not at all */
	while (sendmsg(out_fd, &mh, MSG_NOSIGNAL) < 0) {
		if (errno != EINTR) {
			out_broken = true;
			return -1;
		}
	}
	return 0;
}

/* [init] The same, from a thread that may be a vfork() child sharing
 * the image's memory (exec_follow.c): a descriptor the child closed
 * leaves the image's connection as it was (nothing marked broken). */
int ukpa_send_shared(const void *buf, size_t len)
{
	struct ukp_msg_from from = {
		.h = { UKPM_FROM, sizeof(from) },
		.pid = (int32_t)agent_pid,
		.image = image_id,
	};
	struct iovec iov[2] = { { &from, sizeof(from) }, { (void *)buf, len } };
	struct msghdr mh = { .msg_iov = iov, .msg_iovlen = 2 };
	struct stat st;

	if (out_fd < 0 || out_broken || fstat(out_fd, &st) || st.st_dev != out_dev ||
	    st.st_ino != out_ino)
		return -1;
	while (sendmsg(out_fd, &mh, MSG_NOSIGNAL) < 0)
		if (errno != EINTR)
			return -1;
	return 0;
}

void ukpa_from_header(struct ukp_msg_from *from)
{
	*from = (struct ukp_msg_from){
		.h = { UKPM_FROM, sizeof(*from) },
		.pid = (int32_t)agent_pid,
		.image = image_id,
	};
}

bool ukpa_active(void)
{
	/* not in a vfork() child, which shares our memory */
	return out_fd >= 0 && getpid() == agent_pid;
}

static uint64_t new_image_id(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

/* nspecs: the SPECs of this image (the count ukprobe's form claimed, when
 * the agent could not take them: ukprobe then reads the END that says so) */
static void send_hello(enum ukp_origin origin, uint32_t nspecs)
{
	struct ukp_msg_hello h = {
		.h = { UKPM_HELLO, sizeof(h) },
		.pid = (int32_t)getpid(),
		.ppid = (int32_t)getppid(),
		.version = UKP_PROTO_VERSION,
		.nspecs = nspecs,
		.mode = ukpa_mode,
		.origin = origin,
	};

	/* with the image's region (region.c), if it has a new one */
	int rfd = ukpa_region_take_fd();
	int fd = open("/proc/self/comm", O_RDONLY | O_CLOEXEC);
	ssize_t n = fd >= 0 ? read(fd, h.comm, sizeof(h.comm) - 1) : -1;

	/* the process's name (its main thread's), not this thread's: an
	 * attached session's thread has a name of its own */
	if (fd >= 0)
		close(fd);
	if (n > 0)
		h.comm[n - (h.comm[n - 1] == '\n')] = '\0';
	else
		prctl(PR_GET_NAME, h.comm, 0, 0, 0);
	send_fd(&h, sizeof(h), rfd, 0);
	if (rfd >= 0)
		close(rfd);
}

static void send_end(uint64_t lost, bool setup_failed, enum ukp_end_reason reason)
{
	struct ukp_msg_end e = {
		.h = { UKPM_END, sizeof(e) },
		.lost = lost,
		.setup_failed = setup_failed,
		.reason = reason,
	};

	ukpa_send(&e, sizeof(e));
}

/* ------------------------------------------------------ environment */

static const char *const our_vars[NVARS] = {
	UKP_ENV_FD, UKP_ENV_SPECS, UKP_ENV_MODE, UKP_ENV_FOLLOW, UKP_ENV_DLOPEN,
	UKP_ENV_NO_OPTIMIZE, UKP_ENV_FOLLOWED, UKP_ENV_RAW_FD, UKP_ENV_TRACING_OFF,
	UKP_ENV_SCRIPT,
};

static const char *self_path(void)
{
	static char self[PATH_MAX];
	struct ukpa_obj_at at;

	if (!self[0] && (ukpa_obj_at((void *)self_path, &at) || !realpath(at.obj.path, self)))
		self[0] = '\0';
	return self;
}

/* Without -f, programs the traced program runs are not traced: take the
 * agent out of LD_PRELOAD and drop our variables. */
static void clean_environment(void)
{
	const char *pre = getenv("LD_PRELOAD"), *self = self_path();
	char ent[PATH_MAX];
	char *copy, *tok, *save = NULL, *out;
	size_t olen = 0, i;

	for (i = 0; i < NVARS; i++)
		unsetenv(our_vars[i]);
	if (!pre || !self[0])
		return;
	copy = strdup(pre);
	out = calloc(1, strlen(pre) + 1);
	if (!copy || !out)
		goto done;
	for (tok = strtok_r(copy, ": ", &save); tok; tok = strtok_r(NULL, ": ", &save)) {
		if (realpath(tok, ent) && !strcmp(ent, self))
			continue;
		if (olen)
			out[olen++] = ':';
		strcpy(out + olen, tok);
		olen += strlen(tok);
	}
	if (olen)
		setenv("LD_PRELOAD", out, 1);
	else
		unsetenv("LD_PRELOAD");
done:
	free(copy);
	free(out);
}

static int env_fd(const char *text);

/* With -f: remember our variables (as "NAME=value") for exec'd programs
 * whose environment lost them. */
static void save_environment(void)
{
	size_t i;

	/* its value: the launched process's pid (script.c: its images run
	 * BEGIN, END and the interval probes) */
	if (!getenv(UKP_ENV_FOLLOWED)) {
		char pid[16];

		snprintf(pid, sizeof(pid), "%d", (int)getpid());
		setenv(UKP_ENV_FOLLOWED, pid, 1);
	}
	for (i = 0; i < NVARS; i++) {
		const char *v = getenv(our_vars[i]);

		if (v && asprintf(&saved_vars[i], "%s=%s", our_vars[i], v) < 0)
			saved_vars[i] = NULL;
		/* the descriptors the programs we exec inherit */
		if (v && (!strcmp(our_vars[i], UKP_ENV_FD) || !strcmp(our_vars[i], UKP_ENV_SPECS) ||
			  !strcmp(our_vars[i], UKP_ENV_RAW_FD)) && nkept < KEPT_FDS) {
			int fd = env_fd(v);

			if (fd >= 0)
				kept_fds[nkept++] = fd;
		}
	}
}

/* [any] With -f, launched: is fd one that the programs we exec inherit
 * (interpose.c keeps it through the program's close_range())? */
bool ukpa_fd_kept(unsigned int fd)
{
	for (int i = 0; i < nkept; i++)
		if ((unsigned int)kept_fds[i] == fd)
			return true;
	return false;
}

bool ukpa_fd_kept_now(unsigned int fd)
{
	int out = out_fd;

	return ukpa_fd_kept(fd) || (out >= 0 && (unsigned int)out == fd);
}

static bool env_has(char *const *envp, const char *name, const char *want_in)
{
	size_t nl = strlen(name);

	for (; envp && *envp; envp++)
		if (!strncmp(*envp, name, nl) && (*envp)[nl] == '=')
			return !want_in || strstr(*envp + nl + 1, want_in);
	return false;
}

/* [init] The environment an exec'd program gets with -f: envp with our
 * variables put back where the program removed them. Writes into
 * out[0..max) and returns it, or envp when nothing is missing. May run
 * in a vfork() child: no allocation, the caller's buffers only. */
static char *const *exec_env(char *const *envp, char **out, size_t max)
{
	static char preload[2 * PATH_MAX + 16];
	const char *self = self_path();
	bool missing = !env_has(envp, "LD_PRELOAD", self);
	size_t n = 0, i;
	char *const *e;

	if (!ukpa_follow || !self[0])
		return envp;
	for (i = 0; i < NVARS; i++)
		if (saved_vars[i] && !env_has(envp, our_vars[i], NULL))
			missing = true;
	if (!missing)
		return envp;
	for (e = envp; e && *e && n + NVARS + 2 < max; e++) {
		if (!strncmp(*e, "LD_PRELOAD=", 11))
			continue;
		out[n++] = *e;
	}
	for (i = 0; i < NVARS; i++)
		if (saved_vars[i] && !env_has(envp, our_vars[i], NULL))
			out[n++] = saved_vars[i];
	/* the agent first, then what the program wanted preloaded */
	for (e = envp; e && *e; e++)
		if (!strncmp(*e, "LD_PRELOAD=", 11))
			break;
	if (e && *e && strstr(*e, self))
		snprintf(preload, sizeof(preload), "%s", *e);
	else if (e && *e && (*e)[11])
		snprintf(preload, sizeof(preload), "LD_PRELOAD=%s:%s", self, *e + 11);
	else
		snprintf(preload, sizeof(preload), "LD_PRELOAD=%s", self);
	out[n++] = preload;
	out[n] = NULL;
	return out;
}

/* ------------------------------------------------------ life cycle */

/* [init] In a forked child: close its copy of the parent's connection,
 * if out_fd is that (the number is the program's once it is not: a
 * server accepts a connection into the lowest free number and forks).
 * The parent's detach changes out_fd under the probes' lock (out_close),
 * which its fork handler holds; the check is for a program that closed
 * the agent's descriptor itself (some close every one they do not know)
 * and reused its number. */
static void out_close_copy(void)
{
	struct stat st;

	if (out_fd >= 0 && !fstat(out_fd, &st) && st.st_dev == out_dev && st.st_ino == out_ino)
		close(out_fd);
	out_fd = -1;
}

/* [init] The detach closes the connection under the probes' lock, which
 * atfork_prepare takes: a fork happens before, when out_fd is the
 * connection (the child closes its copy), or after, when it is -1; never
 * between the close() and the store, when the child would close the
 * number the program may have reused meanwhile for its own (a PostgreSQL
 * backend lost its client's socket so and ended with 'epoll_ctl()
 * failed: File exists'). */
static void out_close(void)
{
	int fd;

	ukpa_probes_lock();
	fd = out_fd;
	out_fd = -1;
	if (fd >= 0)
		close(fd);
	ukpa_probes_unlock();
}

static pid_t atfork_pid;
/* Tracing when the fork began (under the probes' lock, which the
 * attached session's set-up and detach hold while they change them). */
static bool atfork_tracing;
/* The fork's handlers count in the thread's busy: not between attached
 * sessions, when ukprobe may have unmapped the blocks (ukp_unmap_blocks:
 * the handlers must not map them again, and ukprobe waits for a busy
 * count of 0 in every thread before it unmaps). Under the probes' lock,
 * from prepare to parent or child. */
static bool atfork_busy;
static bool sessions_only; /* loaded by an attach: it works in sessions */

/* No fork while the agent's own locks are held: the child gets them
 * free and its lists whole. With -f the events so far go out first:
 * the child's come after them. */
static void atfork_prepare(void)
{
	atfork_pid = getpid();
	if (ukpa_follow && ukpa_active() && !ukpa_busy)
		ukpa_reader_flush(100);
	ukpa_probes_lock();
	atfork_tracing = atomic_load(&ukpa_tracing);
	/* Until the child has a region of its own, a hit in it would count
	 * and record in the parent's (shared) memory: libc's fork itself
	 * (run after this, the last prepare handler) records nothing. */
	atfork_busy = !sessions_only || ukpa_attached;
	if (atfork_busy)
		ukpa_busy++;
}

static void atfork_parent(void)
{
	if (atfork_busy)
		ukpa_busy--;
	ukpa_probes_unlock();
}

/* [init] In a forked child: with -f a new image that goes on tracing;
 * without, the child runs untraced. */
static void atfork_child(void)
{
	ukpa_probes_after_fork();
	ukpa_loader_after_fork();
	/* Attached, a child forked while the session sets up or detaches
	 * (its SPECs not there yet, or gone) runs untraced: its HELLO
	 * would claim no SPECs, which ukprobe refuses (it ended the session
	 * with an error; the postmaster under pgbench -C forked so). */
	if (out_fd < 0 || agent_pid != atfork_pid || !ukpa_follow ||
	    (ukpa_attached && !atfork_tracing)) {
		atomic_store(&ukpa_tracing, false);
		ukpa_region_forget();
		if (agent_pid == atfork_pid)
			out_close_copy();
		if (atfork_busy)
			ukpa_busy--;
		return;
	}
	agent_pid = getpid();
	image_id = new_image_id();
	atomic_store(&ending, 0);
	if (ukpa_attached) {
		/* a connection of its own, so that ukprobe can tell this
		 * process to detach */
		int fd = ukpa_attach_connect();
		struct stat st;

		out_close_copy();
		out_fd = fd;
		if (fd < 0 || fstat(fd, &st)) {
			atomic_store(&ukpa_tracing, false);
			ukpa_region_forget();
			if (atfork_busy)
			ukpa_busy--;
			return;
		}
		out_dev = st.st_dev;
		out_ino = st.st_ino;
	}
	if (ukpa_rings_after_fork()) {
		ukpa_region_forget();
		atomic_store(&ukpa_tracing, false);
		if (atfork_busy)
			ukpa_busy--;
		return;
	}
	send_hello(UKP_ORIGIN_FORK, (uint32_t)ukpa_specs_count());
	ukpa_script_after_fork();
	ukpa_probes_restart();
	/* (libukprobes refuses probes in glibc's thread start, which runs
	 * with every signal blocked) */
	if (ukpa_reader_start())
		atomic_store(&ukpa_tracing, false);
	if (ukpa_attached && ukpa_attach_forked(out_fd))
		atomic_store(&ukpa_tracing, false);
	if (atfork_busy)
		ukpa_busy--;
}

/* [init] The image is over: its last events, its counts, END. */
/* [init] True for the first caller. A later one (another thread's exit
 * while exit()'s END is being sent) waits up to two seconds for the
 * first to finish, so that the process does not end under it, and ends
 * nothing itself: END and the maps go to ukprobe once. */
static bool end_claim(void)
{
	int expect = 0, saved_errno = errno;

	if (atomic_compare_exchange_strong(&ending, &expect, 1))
		return true;
	for (int i = 0; i < 2000 && atomic_load(&ending) == 1; i++) {
		struct timespec ms = { 0, 1000000 };

		nanosleep(&ms, NULL);
	}
	errno = saved_errno;
	return false;
}

static void end_image(enum ukp_end_reason reason)
{
	uint64_t lost = ukpa_reader_stop(-1);

	ukpa_script_end(reason == UKP_END_EXEC);
	ukpa_probes_send_stats();
	send_end(lost, false, reason);
}

/* [init] script.c: the program got SIGINT or SIGTERM, whose default
 * action (the end) follows: this image ends first, as at exit, so that
 * the script's END and maps reach ukprobe. */
int ukpa_end_before_signal(void)
{
	int expect = 0;

	if (!ukpa_active())
		return -1;
	/* not end_claim()'s wait: the thread ending the image may be
	 * joining the caller (the script's timer thread) */
	if (!atomic_compare_exchange_strong(&ending, &expect, 1))
		return expect == 1 ? 0 : -1;
	ukpa_busy++;
	end_image(UKP_END_EXIT);
	out_fd = -1;
	atomic_store(&ending, 2);
	ukpa_busy--;
	return 1;
}

/* [init] Around an exec: flush and end this image; after a failed one,
 * start a new image. */
static void before_exec(void)
{
	if (!ukpa_active() || !end_claim())
		return;
	ukpa_busy++;
	end_image(UKP_END_EXEC);
	atomic_store(&ending, 2);
	ukpa_busy--;
}

/*
 * _exit() skips the destructors (shells end that way, and children after
 * fork). It may be called from a signal handler that interrupted a thread
 * holding a lock the reader needs: the reader is given a second, and the
 * image is not flushed at all when the thread was inside the agent.
 */
void ukpa_before_exit(void)
{
	uint64_t lost;

	if (!ukpa_active() || ukpa_busy || !end_claim())
		return;
	ukpa_busy++;
	ukpa_attach_wait_admitted(1000);
	lost = ukpa_reader_stop(1000);
	ukpa_script_end(false);
	if (ukpa_probes_send_stats_nowait() == 0)
		send_end(lost, false, UKP_END_EXIT);
	out_fd = -1;
	atomic_store(&ending, 2);
	ukpa_busy--;
}

static void after_failed_exec(void)
{
	if (!ukpa_active())
		return;
	ukpa_busy++;
	image_id = new_image_id();
	atomic_store(&ending, 0);
	if (ukpa_rings_new_image()) {
		ukpa_busy--;
		return; /* (untraced from here: tracing stays off) */
	}
	send_hello(UKP_ORIGIN_EXEC_FAILED, (uint32_t)ukpa_specs_count());
	ukpa_probes_restart();
	atomic_store(&ukpa_tracing, true);
	if (ukpa_reader_start())
		atomic_store(&ukpa_tracing, false);
	ukpa_busy--;
}

static enum ukp_mode parse_mode(const char *mode)
{
	if (mode && !strcmp(mode, "stat"))
		return UKP_MODE_STAT;
	if (mode && !strcmp(mode, "probes"))
		return UKP_MODE_PROBES;
	return UKP_MODE_TRACE;
}

/* probes mode, "ukprobe probes OBJ": load the object to look at (with
 * libc's dlopen: this is not the program loading it). */
static int load_object(const char *path)
{
	const char *err;

	if (ukpa_real_dlopen(path, RTLD_LAZY | RTLD_LOCAL))
		return 0;
	err = dlerror();
	ukpa_probes_fail_all(UKP_WHAT_OBJECT, err ? err : "cannot load it");
	return -1;
}

/* A descriptor number as ukprobe wrote it in the environment, or -1. */
static int env_fd(const char *text)
{
	char *end;
	long fd = strtol(text, &end, 10);

	return *text && !*end && fd >= 0 && fd <= INT_MAX ? (int)fd : -1;
}

/* [init] The SPECs could not be taken: say so (HELLO, then END with
 * UKP_END_SPECS: ukprobe tells a version mismatch by HELLO's version).
 * The caller ends the program before its main() or, in an image -f
 * follows, lets it run untraced. */
static void specs_refused(enum ukp_origin origin, uint32_t claimed)
{
	send_hello(origin, claimed);
	send_end(0, true, UKP_END_SPECS);
}

static void set_up(const char *fds, const char *specs_fds, const char *mode)
{
	const char *load = getenv(UKP_ENV_DLOPEN), *noopt = getenv(UKP_ENV_NO_OPTIMIZE);
	char *script = getenv(UKP_ENV_SCRIPT) ? strdup(getenv(UKP_ENV_SCRIPT)) : NULL;
	bool first = !getenv(UKP_ENV_FOLLOWED), no_optimize = noopt && !strcmp(noopt, "1");
	enum ukp_origin origin = first ? UKP_ORIGIN_START : UKP_ORIGIN_EXEC;
	int fd = env_fd(fds), specs_fd = env_fd(specs_fds);
	struct stat st;
	uint32_t claimed;
	int failed;

	if (fd < 0 || fstat(fd, &st) || !S_ISSOCK(st.st_mode))
		return;
	out_fd = (int)fd;
	out_dev = st.st_dev;
	out_ino = st.st_ino;
	agent_pid = getpid();
	image_id = new_image_id();
	atomic_store(&ending, 0);
	ukpa_mode = parse_mode(mode);
	ukpa_follow = getenv(UKP_ENV_FOLLOW) && !strcmp(getenv(UKP_ENV_FOLLOW), "1");
	if (ukpa_follow)
		ukpa_exec_follow_init();
	atomic_store(&ukpa_trace_on, !getenv(UKP_ENV_TRACING_OFF));
	/* with -f the programs we exec keep the socket and the SPECs */
	fcntl(out_fd, F_SETFD, ukpa_follow ? 0 : FD_CLOEXEC);
	if (specs_fd < 0 || ukpa_specs_load(specs_fd, &claimed)) {
		specs_refused(origin, specs_fd < 0 ? 0 : claimed);
		if (first)
			_exit(UKP_EXIT_SETUP);
		/* an image -f follows (the program closed the descriptor, say):
		 * it runs untraced, as ukprobe reports */
		close(out_fd);
		out_fd = -1;
		return;
	}
	if (!ukpa_follow)
		close(specs_fd);
	if (load && !(load = strdup(load))) {
		/* (the environment is cleaned below) */
		send_hello(origin, (uint32_t)ukpa_specs_count());
		send_end(0, true, UKP_END_EXIT);
		_exit(UKP_EXIT_SETUP);
	}
	ukpa_rings_set_file(getenv(UKP_ENV_RAW_FD));
	if (ukpa_follow)
		save_environment();
	else
		clean_environment();
	/* the counts and rings in memory ukprobe holds too (region.c) */
	if (ukpa_rings_new_image()) {
		send_hello(origin, (uint32_t)ukpa_specs_count());
		send_end(0, true, UKP_END_EXIT);
		_exit(UKP_EXIT_SETUP);
	}
	ukpa_probes_place_hists();
	send_hello(origin, (uint32_t)ukpa_specs_count());
	if (no_optimize)
		kprobes_set_optimization(false);
	if (load && load_object(load)) {
		send_end(0, true, UKP_END_PROBES);
		_exit(UKP_EXIT_SETUP);
	}
	/* ukprobe run: the compiled script (script.c), before the rings
	 * (its records' size) and the probes (its handlers) */
	if (script)
		ukpa_script_set_root(first ? getpid() : (pid_t)atol(getenv(UKP_ENV_FOLLOWED)), first);
	if (script && ukpa_script_load(script)) {
		send_end(0, true, UKP_END_EXIT);
		_exit(UKP_EXIT_SETUP);
	}
	free(script);
	/* The reader thread starts before any probe is in place: glibc
	 * starts a thread with every signal blocked (_setjmp, __ctype_init
	 * run so), where a probe's SIGTRAP would kill the process. */
	if (ukpa_mode != UKP_MODE_PROBES && (ukpa_rings_init() || ukpa_reader_start())) {
		send_end(0, true, UKP_END_EXIT);
		_exit(UKP_EXIT_SETUP);
	}
	/* with -f a SPEC may apply to a later program only */
	failed = ukpa_probes_setup();
	if (ukpa_mode == UKP_MODE_PROBES) {
		send_end(0, false, UKP_END_PROBES);
		_exit(0);
	}
	if (failed && first && !ukpa_follow) {
		send_end(0, true, UKP_END_EXIT);
		_exit(UKP_EXIT_SETUP);
	}
	/* The program starts with its probes optimized. (The optimizer's
	 * thread scans no longer cut the program's sleeps short: threads
	 * blocked in the kernel are not signalled.) */
	ukprobes_wait_optimizer();
	pthread_atfork(atfork_prepare, atfork_parent, atfork_child);
	atomic_store(&ukpa_tracing, true);
	ukpa_script_begin();
}

/* ------------------------------------------------------- attached */

/*
 * [init] On the agent's thread in a process ukprobe attached to: the
 * settings came over fd (CONFIG). As set_up(), but nothing ends the
 * program: a SPEC that cannot be registered ends the session (END with
 * setup_failed), and the caller detaches. raw_fd: trace -o's records
 * file (it came with CONFIG; this session owns it), or -1. Returns 0 (tracing), 1
 * (probes mode: reported) or -1 (failed, reported).
 */
int ukpa_attach_begin(int fd, enum ukp_mode mode, bool follow, bool no_optimize, int specs_fd,
		      const char *load, int raw_fd, bool tracing_off)
{
	static bool atfork_done;
	uint32_t claimed;
	struct stat st;

	if (fstat(fd, &st)) {
		if (raw_fd >= 0)
			close(raw_fd);
		close(specs_fd);
		return -1;
	}
	out_fd = fd;
	out_dev = st.st_dev;
	out_ino = st.st_ino;
	out_broken = false;
	agent_pid = getpid();
	image_id = new_image_id();
	atomic_store(&ending, 0);
	ukpa_mode = mode;
	ukpa_follow = follow;
	if (follow)
		ukpa_exec_follow_init();
	sessions_only = true;
	ukpa_attached = true;
	atomic_store(&ukpa_trace_on, !tracing_off);
	ukpa_rings_set_fd(raw_fd);
	/* a forked child (-f) has them in its memory: the memfd is done */
	if (ukpa_specs_load(specs_fd, &claimed)) {
		close(specs_fd);
		specs_refused(UKP_ORIGIN_ATTACH, claimed);
		return -1;
	}
	close(specs_fd);
	if (ukpa_rings_new_image()) {
		/* (no memory, or the program mapped something where the
		 * threads' counters were: ukprobe says it could not set up) */
		send_hello(UKP_ORIGIN_ATTACH, (uint32_t)ukpa_specs_count());
		send_end(0, true, UKP_END_EXIT);
		return -1;
	}
	ukpa_probes_place_hists();
	send_hello(UKP_ORIGIN_ATTACH, (uint32_t)ukpa_specs_count());
	if (ukpa_script_load_set()) {
		send_end(0, true, UKP_END_EXIT);
		return -1;
	}
	kprobes_set_optimization(!no_optimize);
	if (*load && load_object(load)) {
		send_end(0, true, UKP_END_PROBES);
		return -1;
	}
	if (mode != UKP_MODE_PROBES && (ukpa_rings_init() || ukpa_reader_start())) {
		send_end(0, true, UKP_END_EXIT);
		return -1;
	}
	if (ukpa_probes_setup() && !follow && mode != UKP_MODE_PROBES) {
		send_end(0, true, UKP_END_EXIT);
		return -1;
	}
	if (mode == UKP_MODE_PROBES) {
		send_end(0, false, UKP_END_PROBES);
		return 1;
	}
	if (!atfork_done)
		pthread_atfork(atfork_prepare, atfork_parent, atfork_child);
	atfork_done = true;
	/* The process runs already: its hits count from here, as ukprobe's
	 * -d does (from the probes' announcement), not from when the
	 * optimizer is done with them (seconds, for thousands of probes on
	 * a busy machine: a short session then counted nothing). A
	 * script's BEGIN (and its pid, comm) first: the process's threads
	 * hit the probes as soon as tracing is on. */
	ukpa_script_begin();
	atomic_store(&ukpa_tracing, true);
	{
		struct ukp_msg ready = { UKPM_READY, sizeof(ready) };

		ukpa_send(&ready, sizeof(ready));
	}
	ukprobes_wait_optimizer();
	return 0;
}

/*
 * [init] The detach, on the agent's thread: the last events and the
 * counts go out (unless the session already ended), every probe is
 * unregistered, the reader and the library's thread end, the program
 * gets its signal actions back, and DETACHED names this thread, the
 * only one left. The socket is closed.
 */
/* (src/core/kretprobes.c) */
unsigned int ukp_krp_pending(void);

void ukpa_attach_end(bool tracing)
{
	struct ukp_msg_detached d = { .h = { UKPM_DETACHED, sizeof(d) } };

	if (tracing && end_claim()) {
		end_image(UKP_END_DETACH);
		atomic_store(&ending, 2);
	}
	atomic_store(&ukpa_tracing, false);
	ukpa_reader_stop(-1);
	ukpa_probes_unregister_all();
	/* no loader stop may enter the library after its shutdown below */
	ukpa_loader_drain();
	ukpa_reader_exit();
	/* the reader wrote its last records: the next session may have none */
	ukpa_rings_close_file();
	kprobes_set_optimization(true);
	ukprobes_shutdown();
	ukpa_region_release();
	d.tid = (int32_t)gettid();
#ifndef UKP_FREE
	/* ukprobe unmaps the blocks once this thread is gone, unless a
	 * return is still to come through the trampoline, whose dispatch
	 * finds the thread's return stack from its block (the freestanding
	 * agent's blocks go with all its memory at its unload:
	 * free/entry.c) */
	if (!ukp_krp_pending())
		d.blocks = (uintptr_t)ukp_thread_blocks_unload_info();
#endif
	ukpa_send(&d, sizeof(d));
	out_close();
	ukpa_attached = false;
}

/* [init] The library's exec notifier (register_exec_notifier): every
 * exec of the program, launched or attached. May run in a vfork()
 * child. */
static int exec_notifier(struct notifier_block *nb, unsigned long action, void *data)
{
	(void)nb;
	if (action == EXEC_NOTIFY_BEFORE) {
		struct exec_notify_env *e = data;

		before_exec();
		e->envp = exec_env(e->envp, e->env_out, e->env_max);
	} else if (action == EXEC_NOTIFY_FAILED) {
		after_failed_exec();
	}
	return NOTIFY_DONE;
}

static struct notifier_block exec_nb = { .notifier_call = exec_notifier };

#ifdef UKP_FREE
/* [any] A forked child of a static program, at its first hit (no atfork
 * handler runs there: thread_block.c calls this, in place of its empty
 * weak one, common/thread_block.h): it runs untraced, so that nothing
 * of it is counted or recorded in its parent's shared region. With -f a
 * fork the agent saw (free/fork_sites.c) then makes it a new image. */
void ukp_tb_forked(void)
{
	atomic_store(&ukpa_tracing, false);
}
#endif

__attribute__((constructor)) static void ukpa_init(void)
{
	const char *fds = getenv(UKP_ENV_FD), *specs = getenv(UKP_ENV_SPECS);
	int saved_errno = errno;

	/* before any exec, whether ukprobe started us or injected us */
	register_exec_notifier(&exec_nb);

	if (!fds || !specs)
		return; /* not started by ukprobe */
	ukpa_busy++;
	set_up(fds, specs, getenv(UKP_ENV_MODE));
	ukpa_busy--;
	errno = saved_errno;
}

/*
 * After the program's own destructors and atexit handlers (the
 * executable's fini runs before those of the objects it was linked
 * with). Probes stay registered: threads still running, and libc's own
 * clean-up, hit them and record nothing.
 */
__attribute__((destructor)) static void ukpa_fini(void)
{
	int saved_errno = errno;

	if (!ukpa_active() || !end_claim())
		return;
	ukpa_busy++;
	ukpa_attach_wait_admitted(5000);
	end_image(UKP_END_EXIT);
	{
		/* forgotten before it is closed (a thread forking meanwhile:
		 * out_close) */
		int fd = out_fd;

		out_fd = -1;
		close(fd);
	}
	atomic_store(&ending, 2);
	ukpa_busy--;
	errno = saved_errno;
}
