/* SPDX-License-Identifier: MIT */
/*
 * attach.c - how a session starts with running processes (ukprobe -p
 * PID[,PID...]) and how it ends with them; the session loop
 * (session_loop.c) drives them as it drives a launched
 * program.
 *
 * ukprobe listens on an abstract SOCK_SEQPACKET socket of its own, makes
 * each process load the agent (inject.c), and sends each agent that
 * connects its settings (CONFIG, proto.h) and the parsed SPECs (a
 * memfd, specs_memfd.c). Anyone may connect to an abstract socket: a
 * peer gets nothing until it is known as an agent (admit): SO_PEERCRED
 * names a process ukprobe attached to (with -f, or a descendant of
 * one), and its first message is AUTH with the secret ukprobe handed the
 * agent at injection. Every other connection is closed unanswered, and
 * counted. Messages then come as from a launched program, one
 * connection per process. Tracing ends when every process has exited,
 * on SIGINT/SIGTERM/SIGHUP, or when -d SECONDS have passed: ukprobe
 * sends DETACH, reads the last events and counts, and waits until the
 * agent's last thread in each process is gone.
 */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "session_loop.h"

#define CONNECT_TIMEOUT_MS 10000
#define GONE_TIMEOUT_MS 10000
/* the dynamic agent's blocks stay if a thread is in anonymous code (a JIT
 * program's own, or the agent's slots) at every stop this long */
#define BLOCKS_TIMEOUT_MS 2000
#define AUTH_TIMEOUT_MS 5000
#define ANCESTORS_MAX 64

static int listen_socket(char *name, size_t len)
{
	struct sockaddr_un a = { .sun_family = AF_UNIX };
	struct timespec ts;
	int fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0), tries;

	if (fd < 0)
		return -1;
	for (tries = 0; tries < 16; tries++) {
		clock_gettime(CLOCK_MONOTONIC, &ts);
		snprintf(name, len, "ukprobe-%d-%lx", (int)getpid(),
			 (unsigned long)ts.tv_nsec ^ ((unsigned long)tries << 20));
		memset(a.sun_path, 0, sizeof(a.sun_path));
		memcpy(a.sun_path + 1, name, strlen(name));
		if (bind(fd, (struct sockaddr *)&a,
			 (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + strlen(name))) == 0 &&
		    listen(fd, 64) == 0)
			return fd;
	}
	close(fd);
	return -1;
}

/* CONFIG: settings and the object to look at (the SPECs go with it as a
 * descriptor, send_config). */
static char *config_packet(const struct ukp_session *s, size_t *len)
{
	const char *load = s->load ? s->load : "";
	char *buf;
	struct ukp_msg_config c = {
		.version = UKP_PROTO_VERSION,
		.mode = s->mode,
		.flags = (s->follow ? UKP_CONFIG_FOLLOW : 0) |
			 (s->no_optimize ? UKP_CONFIG_NO_OPTIMIZE : 0) |
			 (s->tracing_off ? UKP_CONFIG_TRACING_OFF : 0) |
			 (s->load_script ? UKP_CONFIG_SCRIPT : 0),
	};
	size_t n = (sizeof(c) + strlen(load) + 1 + 7) & ~(size_t)7;

	if (n > UKP_PACKET_MAX) {
		ukp_err("the object's path is too long to send to an attached process");
		return NULL;
	}
	buf = calloc(1, n);
	if (buf) {
		c.h.type = UKPM_CONFIG;
		c.h.len = (uint32_t)n;
		memcpy(buf, &c, sizeof(c));
		strcpy(buf + sizeof(c), load);
	}
	*len = n;
	return buf;
}

/* CONFIG on a new connection, with the parsed SPECs' memfd and trace
 * -o's records file for the agent to write (SCM_RIGHTS, in that order),
 * as a launched program gets them through its environment. */
static bool send_config(const struct ukp_session *s, int fd, const char *config, size_t len,
			int specs_fd)
{
	union {
		struct cmsghdr h;
		char space[CMSG_SPACE(2 * sizeof(int))];
	} ctl;
	struct iovec iov = { (void *)config, len };
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1 };
	int fds[2] = { specs_fd, s->raw_fd }, nfds = s->send_raw ? 2 : 1;

	memset(&ctl, 0, sizeof(ctl));
	mh.msg_control = &ctl;
	mh.msg_controllen = CMSG_SPACE((size_t)nfds * sizeof(int));
	ctl.h.cmsg_level = SOL_SOCKET;
	ctl.h.cmsg_type = SCM_RIGHTS;
	ctl.h.cmsg_len = CMSG_LEN((size_t)nfds * sizeof(int));
	memcpy(CMSG_DATA(&ctl.h), fds, (size_t)nfds * sizeof(int));
	return sendmsg(fd, &mh, MSG_NOSIGNAL) == (ssize_t)len;
}

/* May pid's agent connect? A process ukprobe attached to, or with -f
 * one of their descendants (a forked child connects too). */
static bool admitted_pid(const struct ukp_session *s, pid_t pid)
{
	int depth, i;

	for (depth = 0; pid > 0 && depth < ANCESTORS_MAX; depth++) {
		for (i = 0; i < s->npids; i++)
			if (s->pids[i] == pid)
				return true;
		if (!s->follow)
			return false;
		pid = ukp_parent_of(pid);
	}
	return false;
}

/* The peer's first message: AUTH with the secret? Read without waiting
 * (poll said there is one); anything else, or more, is a refusal. */
static bool authenticated(int fd, const unsigned char *secret)
{
	struct ukp_msg_auth a;
	char more[sizeof(a) + 1];
	unsigned char diff = 0;
	ssize_t n;
	size_t i;

	/* (SCM_RIGHTS sent with it are closed unread: no control buffer) */
	n = recv(fd, more, sizeof(more), MSG_DONTWAIT);
	if (n != (ssize_t)sizeof(a))
		return false;
	memcpy(&a, more, sizeof(a));
	if (a.h.type != UKPM_AUTH || a.h.len != sizeof(a))
		return false;
	for (i = 0; i < sizeof(a.secret); i++)
		diff |= (unsigned char)(a.secret[i] ^ secret[i]);
	return diff == 0;
}

/* A new secret for this session, and its hex for the injected call. */
static bool make_secret(unsigned char *secret, size_t len, char *hex)
{
	size_t i;

	if (getrandom(secret, len, 0) != (ssize_t)len)
		return false;
	for (i = 0; i < len; i++)
		sprintf(hex + 2 * i, "%02x", secret[i]);
	return true;
}

/* Gone, or a zombie its parent has not reaped yet. */
static bool process_gone(pid_t pid)
{
	char path[64], buf[512], *p;
	FILE *f;

	if (kill(pid, 0) && errno == ESRCH)
		return true;
	snprintf(path, sizeof(path), "/proc/%d/stat", pid);
	f = fopen(path, "re");
	if (!f)
		return true;
	p = fgets(buf, sizeof(buf), f) ? strrchr(buf, ')') : NULL;
	fclose(f);
	return p && (p[2] == 'Z' || p[2] == 'X');
}

/* How pid ended, for a message: its status while it is a zombie
 * (/proc/PID/stat's exit_code, Linux 3.5), else a guess. A process whose
 * connection closed may still be on its way out (its files are closed
 * before it becomes a zombie): it is given a moment to get there. */
static const char *how_ended(pid_t pid, char *out, size_t len)
{
	char path[64], buf[1024], *p;
	unsigned long code = 0;
	bool zombie = false;
	FILE *f;
	int field = 0, tries;

	snprintf(out, len, "killed, or it exited");
	snprintf(path, sizeof(path), "/proc/%d/stat", pid);
	for (tries = 0; tries < 100 && !zombie; tries++) {
		if (tries)
			usleep(5000);
		f = fopen(path, "re");
		if (!f)
			return out;
		p = fgets(buf, sizeof(buf), f) ? strrchr(buf, ')') : NULL;
		fclose(f);
		if (!p)
			return out;
		/* field 3 is the state; exit_code is field 52 */
		for (field = 2, p = strtok(p + 1, " "); p; p = strtok(NULL, " ")) {
			field++;
			if (field == 3)
				zombie = *p == 'Z';
			if (field == 52)
				code = strtoul(p, NULL, 10);
		}
	}
	if (!zombie || field < 52)
		return out;
	if (WIFSIGNALED((int)code))
		snprintf(out, len, "killed by SIG%s", sigabbrev_np(WTERMSIG((int)code)) ?: "?");
	else
		snprintf(out, len, "exit status %d", WEXITSTATUS((int)code));
	return out;
}

/* Did the agent in pid say HELLO? */
static bool said_hello(const struct ukp_session *s, pid_t pid)
{
	size_t i;

	for (i = 0; i < s->nimages; i++)
		if (s->images[i]->pid == pid && s->images[i]->hello)
			return true;
	return false;
}

/*
 * Thread ids of processes in another PID namespace, as ukprobe sees
 * them: the agent's records carry the process's own numbers. Found in
 * /proc/PID/task/TID/status (NSpid, whose last number is the thread's
 * own) and kept; a thread gone before it is looked up keeps its own
 * number.
 */
#define TIDS_MAX 4096
static struct tid_pair {
	pid_t pid, own, tid;      /* own (in pid): tid here */
} tids[TIDS_MAX];
static size_t ntids;

static pid_t tid_lookup(pid_t pid, pid_t own)
{
	size_t i;

	for (i = 0; i < ntids; i++)
		if (tids[i].pid == pid && tids[i].own == own)
			return tids[i].tid;
	return 0;
}

/* Every thread of pid into tids (those not there yet). */
static void tids_scan(pid_t pid)
{
	char path[64];
	DIR *d;
	struct dirent *e;

	snprintf(path, sizeof(path), "/proc/%d/task", pid);
	d = opendir(path);
	while (d && (e = readdir(d))) {
		char st[96], line[256];
		pid_t tid = (pid_t)atoi(e->d_name), own = 0;
		FILE *f;

		if (tid <= 0)
			continue;
		snprintf(st, sizeof(st), "/proc/%d/task/%d/status", pid, tid);
		f = fopen(st, "re");
		while (f && fgets(line, sizeof(line), f))
			if (!strncmp(line, "NSpid:", 6)) {
				char *last = strrchr(line, '\t');

				own = last ? (pid_t)atoi(last + 1) : 0;
				break;
			}
		if (f)
			fclose(f);
		if (own > 0 && !tid_lookup(pid, own) && ntids < TIDS_MAX)
			tids[ntids++] = (struct tid_pair){ pid, own, tid };
	}
	if (d)
		closedir(d);
}

/* Thread own of img's process, as ukprobe sees it. */
pid_t ukp_host_tid(const struct ukp_image *img, pid_t own)
{
	pid_t t;

	if (img->pid == img->own_pid || own <= 0)
		return own;
	t = tid_lookup(img->pid, own);
	if (!t) {
		tids_scan(img->pid);
		t = tid_lookup(img->pid, own);
	}
	if (!t && ntids < TIDS_MAX)
		tids[ntids++] = (struct tid_pair){ img->pid, own, own }; /* gone: not again */
	return t ? t : own;
}

/* Until the agent's last thread in each process has returned. */
static void wait_agents_gone(const struct ukp_session *s)
{
	long until = ukp_now_ms() + GONE_TIMEOUT_MS;
	size_t i;

	for (i = 0; i < s->nimages; i++) {
		const struct ukp_image *img = s->images[i];
		char path[64];

		if (!img->detached || img->agent_tid <= 0)
			continue;
		snprintf(path, sizeof(path), "/proc/%d/task/%d", img->pid,
			 ukp_host_tid(img, img->agent_tid));
		while (access(path, F_OK) == 0 && ukp_now_ms() < until) {
			struct timespec d = { 0, 200000 };

			nanosleep(&d, NULL);
		}
	}
}

/* (-d counts from then: a glob's first probe is announced long before
 * its last, on a busy machine.) */
bool ukp_attach_all_ready(const struct ukp_session *s)
{
	size_t j;
	int i;

	for (i = 0; i < s->npids; i++) {
		for (j = 0; j < s->nimages; j++) {
			const struct ukp_image *img = s->images[j];

			if (img->pid == s->pids[i] && img->origin == UKP_ORIGIN_ATTACH &&
			    (img->ready || img->ended))
				break;
		}
		if (j == s->nimages)
			return false;
	}
	return true;
}

/* Did any SPEC get a probe somewhere? */
static bool any_registered(const struct ukp_session *s)
{
	int k;

	for (k = 0; k < s->nspecs && s->states; k++)
		if (s->states[k].registered)
			return true;
	return false;
}

int ukp_attach_start(struct ukp_session *s, struct ukp_loop *l)
{
	char key[2 * UKP_AUTH_SECRET_LEN + 1];
	int i;

	l->config = config_packet(s, &l->config_len);
	if (!l->config)
		return UKP_EXIT_FAIL;
	/* -f: a program a traced process execs gets the agent as the
	 * processes named do, with the same socket and key (follow_exec.c) */
	s->exec_msg = s->follow ? ukp_follow_exec : NULL;
	if (!make_secret(l->secret, sizeof(l->secret), key)) {
		ukp_err("getrandom: %s", strerror(errno));
		return UKP_EXIT_FAIL;
	}
	l->loaded = calloc((size_t)s->npids, sizeof(*l->loaded));
	if (!l->loaded) {
		ukp_err("out of memory");
		return UKP_EXIT_FAIL;
	}
	l->lfd = listen_socket(l->name, sizeof(l->name));
	if (l->lfd < 0) {
		ukp_err("cannot listen for the agent: %s", strerror(errno));
		return UKP_EXIT_FAIL;
	}
	if (s->follow && (!(s->attach_name = strdup(l->name)) || !(s->attach_key = strdup(key)))) {
		ukp_err("out of memory");
		return UKP_EXIT_FAIL;
	}
	/* every process checked before any is loaded into: one that cannot
	 * be attached to ends the attach with no agent started */
	for (i = 0; i < s->npids; i++) {
		struct ukp_target t;

		if (ukp_target_check(&t, s->pids[i], true))
			return UKP_EXIT_FAIL;
	}
	ukp_loop_signals(l);
	for (i = 0; i < s->npids; i++) {
		struct ukp_inject_times t = { 0 };
		long t0 = ukp_now_ms();
		sigset_t all, old;
		int ret;

		/* ukprobe must not die while a thread of the process runs a
		 * call it set up (that thread would go on with a return
		 * address of 0): signals wait until the thread is back */
		sigfillset(&all);
		sigprocmask(SIG_BLOCK, &all, &old);
		ret = ukp_inject(s->pids[i], s->agent, l->name, key, &t);
		sigprocmask(SIG_SETMASK, &old, NULL);
		if (t.loaded)
			l->loaded[i] = t.loaded;
		/* (agents already injected see the socket close and end
		 * before registering anything) */
		if (ret)
			return ret;
		if (l->timing)
			fprintf(stderr,
				"ukprobe: attach %d: thread %d stopped %ld us, injection %ld us "
				"(%ld ms)\n",
				s->pids[i], t.tid, t.stop_us, t.inject_us, ukp_now_ms() - t0);
	}
	l->connect_until = ukp_now_ms() + CONNECT_TIMEOUT_MS;
	return 0;
}

static void refuse(struct ukp_refusals *r, int fd, pid_t pid, uid_t uid)
{
	if (!r->n++) {
		r->pid = pid;
		r->uid = uid;
	}
	close(fd);
}

void ukp_attach_accept(const struct ukp_session *s, struct ukp_loop *l)
{
	int fd = accept4(l->lfd, NULL, NULL, SOCK_CLOEXEC);
	struct ucred cred;
	socklen_t clen = sizeof(cred);

	if (fd < 0)
		return;
	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &clen))
		cred = (struct ucred){ 0, (uid_t)-1, (gid_t)-1 };
	if (!admitted_pid(s, cred.pid))
		refuse(&l->refused, fd, cred.pid, cred.uid);
	/* it says AUTH first (polled with the others) */
	else if (ukp_loop_add(l, &(struct ukp_conn){ fd, cred.pid, cred.uid, false,
						     ukp_now_ms() + AUTH_TIMEOUT_MS }))
		l->pending++;
	else
		close(fd);
}

static void send_detach(int fd)
{
	struct ukp_msg m = { UKPM_DETACH, sizeof(m) };

	send(fd, &m, sizeof(m), MSG_NOSIGNAL);
}

void ukp_attach_admit(const struct ukp_session *s, struct ukp_loop *l, struct ukp_conn *c)
{
	if (!authenticated(c->fd, l->secret) ||
	    !send_config(s, c->fd, l->config, l->config_len, l->specs_fd)) {
		refuse(&l->refused, c->fd, c->pid, c->uid);
		c->fd = -1;
		return;
	}
	c->agent = true;
	l->nagents++;
	l->open_conns++;
	if (l->detaching)
		send_detach(c->fd);
}

void ukp_attach_expire(struct ukp_loop *l, long now)
{
	int i;

	for (i = 0; i < l->nconns && l->pending; i++)
		if (l->conns[i].fd >= 0 && !l->conns[i].agent && now >= l->conns[i].auth_until) {
			refuse(&l->refused, l->conns[i].fd, l->conns[i].pid, l->conns[i].uid);
			l->conns[i].fd = -1;
			l->pending--;
		}
}

int ukp_attach_missing(const struct ukp_session *s, const struct ukp_loop *l, long now)
{
	int i, k;

	for (i = 0; i < s->npids; i++) {
		for (k = 0; k < l->nconns && !(l->conns[k].agent && l->conns[k].pid == s->pids[i]);
		     k++)
			;
		if (k < l->nconns)
			continue;
		if (process_gone(s->pids[i])) {
			ukp_err("process %d exited during the attach", s->pids[i]);
			return UKP_EXIT_FAIL;
		}
		if (now >= l->connect_until) {
			ukp_err("the agent did not connect back from process %d", s->pids[i]);
			return UKP_EXIT_FAIL;
		}
	}
	return 0;
}

void ukp_attach_detach(struct ukp_loop *l)
{
	int i;

	l->detaching = true;
	l->detach_ms = ukp_now_ms();
	for (i = 0; i < l->nconns; i++)
		if (l->conns[i].fd >= 0 && l->conns[i].agent)
			send_detach(l->conns[i].fd);
}

int ukp_attach_finish(struct ukp_session *s, struct ukp_loop *l,
		      const struct ukp_session_ops *ops, void *arg)
{
	char where[32];
	int i;

	wait_agents_gone(s);
	ukp_follow_exec_end(s);
	if (l->timing)
		fprintf(stderr,
			"ukprobe: probes registered after %ld ms, first event after %ld ms, "
			"detached in %ld ms\n",
			l->registered_ms ? l->registered_ms - l->start_ms : -1L,
			l->first_event_ms ? l->first_event_ms - l->start_ms : -1L,
			l->detach_ms ? ukp_now_ms() - l->detach_ms : -1L);
	for (i = 0; i < s->npids; i++)
		if (!said_hello(s, s->pids[i])) {
			ukp_err("process %d exited during the attach", s->pids[i]);
			return UKP_EXIT_FAIL;
		}
	if (s->first && !s->first->ended && !s->first->detached && !any_registered(s)) {
		/* killed (or it exited) while its agent registered the probes */
		char how[64];

		ukp_err("process %d (%s) ended during the attach, before its probes were in place "
			"(%s)",
			s->first->pid, s->first->comm, how_ended(s->first->pid, how, sizeof(how)));
		/* its set-up did not complete: no table of probes never placed */
		s->first->setup_failed = true;
		return UKP_EXIT_FAIL;
	}
	if (s->first && s->first->setup_failed) {
		snprintf(where, sizeof(where), "process %d", s->pids[0]);
		ukp_setup_failed(s, where);
		return UKP_EXIT_FAIL;
	}
	/* processes that ended while traced: what they left */
	ukp_region_recover(s, ops, arg);
	ukp_report_end(s);
	return 0;
}

/*
 * The freestanding agent (every process's on x86-64: inject.c) ends its session thread
 * once it has given back what it took, and says so in its load block:
 * its image, its stack and the mappings it listed are then unmapped,
 * with every thread of the process stopped (load.c, ukp_unload). Signals
 * wait meanwhile: ukprobe must not end while it holds the threads.
 */
void ukp_attach_unload(struct ukp_session *s, struct ukp_loop *l)
{
	sigset_t all, old;
	int i;

	sigfillset(&all);
	sigprocmask(SIG_BLOCK, &all, &old);
	ukp_follow_exec_end(s);
	for (i = 0; l->loaded && i < s->npids; i++) {
		/* (one that exec'd: its agent went with the exec, the new
		 * program's is unloaded below) */
		if (l->loaded[i] && ukp_follow_exec_reloaded(s, s->pids[i]))
			free(l->loaded[i]);
		else if (l->loaded[i])
			ukp_inject_unload(l->loaded[i], GONE_TIMEOUT_MS);
	}
	/* -f: the agents loaded into programs the processes exec'd */
	ukp_follow_exec_unload(s, GONE_TIMEOUT_MS);
	/* the dynamic agents' blocks (the agents stay loaded: doc/cli.md) */
	for (size_t k = 0; k < s->nimages; k++) {
		const struct ukp_image *img = s->images[k];
		char err[256];
		int ret;

		if (!img->detached || !img->agent_blocks)
			continue;
		ret = ukp_unmap_blocks(img->pid, ukp_host_tid(img, img->agent_tid),
				       img->agent_blocks, s->agent, BLOCKS_TIMEOUT_MS, err,
				       sizeof(err));
		if (ret && ret != -ESRCH)
			ukp_warn("%s", err);
	}
	sigprocmask(SIG_SETMASK, &old, NULL);
	free(l->loaded);
	l->loaded = NULL;
}

void ukp_attach_refusals(const struct ukp_loop *l)
{
	const struct ukp_refusals *r = &l->refused;

	if (r->n)
		ukp_warn("refused %d connection%s to ukprobe's socket that did not come from the "
			 "agent of a traced process (the first from process %d, uid %d)",
			 r->n, r->n == 1 ? "" : "s", (int)r->pid, (int)r->uid);
}
