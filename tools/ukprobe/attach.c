/* SPDX-License-Identifier: MIT */
/*
 * attach.c - a session with running processes (ukprobe -p PID[,PID...]).
 *
 * ukprobe listens on an abstract SOCK_SEQPACKET socket of its own, makes
 * each process load the agent (inject.c), and sends each agent that
 * connects its settings (CONFIG, proto.h) and the parsed SPECs (a
 * memfd, specs_memfd.c). Anyone may connect to an abstract socket: a
 * peer gets nothing until it is known as an agent (admit): SO_PEERCRED
 * names a process ukprobe attached to (with -f, or a descendant of
 * one), and its first message is AUTH with the secret ukprobe handed the
 * agent at injection. Every other connection is closed unanswered, and
 * counted. Messages then come as from a
 * launched program, one connection per process. Tracing ends when every
 * process has exited, on SIGINT/SIGTERM/SIGHUP, or when -d SECONDS have
 * passed: ukprobe sends DETACH, reads the last events and counts, and
 * waits until the agent's last thread in each process is gone.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
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

#include "cli.h"

#define CONNECT_TIMEOUT_MS 10000
#define GONE_TIMEOUT_MS 10000
#define AUTH_TIMEOUT_MS 5000
#define ANCESTORS_MAX 64

static int sig_pipe[2] = { -1, -1 };

static void on_signal(int sig)
{
	int saved = errno;
	char c = (char)sig;

	if (write(sig_pipe[1], &c, 1) < 0) {
		/* the pipe is full: a stop is already on its way */
	}
	errno = saved;
}

static long now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000L + ts.tv_nsec / 1000000L;
}

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

struct conn {
	int fd;                   /* -1: closed */
	pid_t pid;
	uid_t uid;
	bool agent;               /* admitted: it sent the secret, got CONFIG */
	long auth_until;          /* not yet: refused after this */
};

/* Connections refused: how many, and who the first one was. */
struct refusals {
	int n;
	pid_t pid;
	uid_t uid;
};

static void refuse(struct refusals *r, int fd, pid_t pid, uid_t uid)
{
	if (!r->n++) {
		r->pid = pid;
		r->uid = uid;
	}
	close(fd);
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
static pid_t host_tid(const struct ukp_image *img, pid_t own)
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
	long until = now_ms() + GONE_TIMEOUT_MS;
	size_t i;

	for (i = 0; i < s->nimages; i++) {
		const struct ukp_image *img = s->images[i];
		char path[64];

		if (!img->detached || img->agent_tid <= 0)
			continue;
		snprintf(path, sizeof(path), "/proc/%d/task/%d", img->pid,
			 host_tid(img, img->agent_tid));
		while (access(path, F_OK) == 0 && now_ms() < until) {
			struct timespec d = { 0, 200000 };

			nanosleep(&d, NULL);
		}
	}
}

/* UKPROBE_TIMING: the first event, on its way to the command's ops. */
struct timed_ops {
	const struct ukp_session_ops *ops;
	void *arg;
	long first_event_ms;
};

static void timed_event(struct ukp_session *s, struct ukp_image *img,
			const struct ukp_probe_info *pi, const struct ukp_rec *rec, void *arg)
{
	struct timed_ops *t = arg;

	if (!t->first_event_ms)
		t->first_event_ms = now_ms();
	if (img->pid != img->own_pid) {
		struct ukp_rec r = *rec;

		r.tid = host_tid(img, rec->tid);
		if (t->ops && t->ops->event)
			t->ops->event(s, img, pi, &r, t->arg);
		return;
	}
	if (t->ops && t->ops->event)
		t->ops->event(s, img, pi, rec, t->arg);
}

static void timed_probe(struct ukp_session *s, struct ukp_image *img,
			const struct ukp_probe_report *r, void *arg)
{
	struct timed_ops *t = arg;

	if (t->ops && t->ops->probe)
		t->ops->probe(s, img, r, t->arg);
}

static void timed_batch(struct ukp_session *s, void *arg)
{
	struct timed_ops *t = arg;

	if (t->ops && t->ops->batch)
		t->ops->batch(s, t->arg);
}

/* Has every process's agent put its probes in place (READY), or ended
 * trying? (-d counts from then: a glob's first probe is announced long
 * before its last, on a busy machine.) */
static bool all_ready(const struct ukp_session *s)
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

int ukp_session_attach(struct ukp_session *s, const struct ukp_session_ops *user_ops,
		       void *user_arg)
{
	const struct ukp_session_ops timed = { timed_event, timed_probe, timed_batch };
	struct timed_ops tops = { user_ops, user_arg, 0 };
	const struct ukp_session_ops *ops = &timed;
	void *arg = &tops;
	long start_ms = now_ms(), registered_ms = 0, detach_ms = 0;
	struct sigaction sa, old_int, old_term, old_hup, old_pipe;
	struct pollfd *pfd = NULL;
	struct conn *conns = NULL;
	char name[64], *config = NULL, *buf = NULL;
	size_t config_len = 0, cap = 2 * UKP_PACKET_MAX;
	int lfd = -1, nconns = 0, open_conns = 0, i, code = UKP_EXIT_FAIL, specs_fd;
	int cap_conns = s->npids + 16, nagents = 0, pending = 0;
	long deadline = 0, connect_until;
	bool detaching = false, timing = getenv("UKPROBE_TIMING") != NULL;
	unsigned char secret[UKP_AUTH_SECRET_LEN];
	char key[2 * UKP_AUTH_SECRET_LEN + 1];
	struct refusals refused = { 0 };

	buf = malloc(cap);
	conns = calloc((size_t)cap_conns, sizeof(*conns));
	pfd = calloc((size_t)cap_conns + 2, sizeof(*pfd));
	config = config_packet(s, &config_len);
	/* parsed here, once: each agent that connects gets this form */
	specs_fd = ukp_specs_memfd(s);
	if (!buf || !conns || !pfd || !config || specs_fd < 0)
		goto out;
	if (!make_secret(secret, sizeof(secret), key)) {
		ukp_err("getrandom: %s", strerror(errno));
		goto out;
	}
	if (pipe2(sig_pipe, O_CLOEXEC | O_NONBLOCK)) {
		ukp_err("pipe: %s", strerror(errno));
		goto out;
	}
	lfd = listen_socket(name, sizeof(name));
	if (lfd < 0) {
		ukp_err("cannot listen for the agent: %s", strerror(errno));
		goto out;
	}
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;
	sigaction(SIGINT, &sa, &old_int);
	sigaction(SIGTERM, &sa, &old_term);
	sigaction(SIGHUP, &sa, &old_hup);
	sa.sa_handler = SIG_IGN;
	sigaction(SIGPIPE, &sa, &old_pipe);

	for (i = 0; i < s->npids; i++) {
		struct ukp_inject_times t = { 0 };
		long t0 = now_ms();

		sigset_t all, old;
		int ret;

		/* ukprobe must not die while a thread of the process runs a
		 * call it set up (that thread would go on with a return
		 * address of 0): signals wait until the thread is back */
		sigfillset(&all);
		sigprocmask(SIG_BLOCK, &all, &old);
		ret = ukp_inject(s->pids[i], s->agent, name, key, &t);
		sigprocmask(SIG_SETMASK, &old, NULL);
		if (ret) {
			/* agents already injected see the socket close and
			 * end before registering anything */
			goto restore;
		}
		if (timing)
			fprintf(stderr,
				"ukprobe: attach %d: thread %d stopped %ld us, injection %ld us "
				"(%ld ms)\n",
				s->pids[i], t.tid, t.stop_us, t.inject_us, now_ms() - t0);
	}
	connect_until = now_ms() + CONNECT_TIMEOUT_MS;

	for (;;) {
		int np = 0, timeout = -1, n, polled;
		long now = now_ms();

		/* -d counts from when the probes are in place (or, if that
		 * never comes, from the end of the time to connect) */
		if (s->duration > 0 && !deadline && (registered_ms || now >= connect_until))
			deadline = (registered_ms ? registered_ms : now) + (long)(s->duration * 1000.0);
		if (!detaching && ((deadline && now >= deadline) || s->stop)) {
			detaching = true;
			detach_ms = now;
			for (i = 0; i < nconns; i++)
				if (conns[i].fd >= 0 && conns[i].agent) {
					struct ukp_msg m = { UKPM_DETACH, sizeof(m) };

					send(conns[i].fd, &m, sizeof(m), MSG_NOSIGNAL);
				}
		}
		/* connections that did not say who they are in time */
		for (i = 0; i < nconns && pending; i++)
			if (conns[i].fd >= 0 && !conns[i].agent && now >= conns[i].auth_until) {
				refuse(&refused, conns[i].fd, conns[i].pid, conns[i].uid);
				conns[i].fd = -1;
				pending--;
			}
		if (nagents >= s->npids && !open_conns)
			break;
		if (nagents < s->npids) {
			/* a process gone before its agent connected */
			for (i = 0; i < s->npids; i++) {
				int k;

				for (k = 0; k < nconns && !(conns[k].agent && conns[k].pid == s->pids[i]);
				     k++)
					;
				if (k < nconns)
					continue;
				if (process_gone(s->pids[i])) {
					ukp_err("process %d exited during the attach", s->pids[i]);
					goto restore;
				}
				if (now >= connect_until) {
					ukp_err("the agent did not connect back from process %d",
						s->pids[i]);
					goto restore;
				}
			}
		}
		pfd[np++] = (struct pollfd){ sig_pipe[0], POLLIN, 0 };
		pfd[np++] = (struct pollfd){ lfd, POLLIN, 0 };
		for (i = 0; i < nconns; i++)
			pfd[np++] = (struct pollfd){ conns[i].fd, POLLIN, 0 };
		if (nagents < s->npids || pending)
			timeout = 100;
		if (deadline && !detaching && (timeout < 0 || deadline - now < timeout))
			timeout = (int)(deadline - now);
		if (s->duration > 0 && !deadline && (timeout < 0 || timeout > 100))
			timeout = 100;
		n = poll(pfd, (nfds_t)np, timeout);
		if (n < 0 && errno != EINTR) {
			ukp_err("poll: %s", strerror(errno));
			goto restore;
		}
		if (n <= 0)
			continue;
		if (pfd[0].revents) {
			char c[16];

			while (read(sig_pipe[0], c, sizeof(c)) > 0)
				;
			if (!detaching) {
				detaching = true;
				detach_ms = now_ms();
				for (i = 0; i < nconns; i++)
					if (conns[i].fd >= 0 && conns[i].agent) {
						struct ukp_msg m = { UKPM_DETACH, sizeof(m) };

						send(conns[i].fd, &m, sizeof(m), MSG_NOSIGNAL);
					}
			}
		}
		polled = nconns;
		if (pfd[1].revents & POLLIN) {
			int fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
			struct ucred cred;
			socklen_t clen = sizeof(cred);

			if (fd >= 0 && nconns == cap_conns) {
				/* -f: each forked child connects too */
				struct conn *nc = realloc(conns, 2 * (size_t)cap_conns * sizeof(*nc));
				struct pollfd *np2 = realloc(pfd, (2 * (size_t)cap_conns + 2) * sizeof(*np2));

				if (nc)
					conns = nc;
				if (np2)
					pfd = np2;
				if (nc && np2)
					cap_conns *= 2;
			}
			if (fd >= 0 && getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &clen))
				cred = (struct ucred){ 0, (uid_t)-1, (gid_t)-1 };
			if (fd >= 0 && !admitted_pid(s, cred.pid)) {
				refuse(&refused, fd, cred.pid, cred.uid);
			} else if (fd >= 0 && nconns < cap_conns) {
				/* it says AUTH first (polled with the others) */
				conns[nconns++] = (struct conn){ fd, cred.pid, cred.uid, false,
								 now_ms() + AUTH_TIMEOUT_MS };
				pending++;
			} else if (fd >= 0) {
				close(fd);
			}
		}
		for (i = 0; i < polled; i++) {
			struct pollfd *p = &pfd[2 + i];
			bool trunc;
			ssize_t r;

			if (p->fd < 0 || !p->revents || conns[i].fd < 0)
				continue;
			if (!conns[i].agent) {
				pending--;
				if (!authenticated(conns[i].fd, secret) ||
				    !send_config(s, conns[i].fd, config, config_len, specs_fd)) {
					refuse(&refused, conns[i].fd, conns[i].pid, conns[i].uid);
					conns[i].fd = -1;
					continue;
				}
				conns[i].agent = true;
				nagents++;
				open_conns++;
				if (detaching) {
					struct ukp_msg m = { UKPM_DETACH, sizeof(m) };

					send(conns[i].fd, &m, sizeof(m), MSG_NOSIGNAL);
				}
				continue;
			}
			r = ukp_region_recvmsg(s, p->fd, buf, cap, MSG_DONTWAIT, &trunc);
			if (r < 0 && (errno == EINTR || errno == EAGAIN))
				continue;
			if (r <= 0) {
				close(conns[i].fd);
				conns[i].fd = -1;
				open_conns--;
				continue;
			}
			if (trunc)
				s->protocol_error = true;
			s->peer_pid = conns[i].pid;
			ukp_session_packet(s, buf, (size_t)r, ops, arg);
			s->peer_pid = 0;
			if (!registered_ms && all_ready(s)) {
				registered_ms = now_ms();
				/* at once: what waits for the probes (bench/redis.py) */
				if (timing)
					fprintf(stderr, "ukprobe: every probe in place after %ld ms\n",
						registered_ms - start_ms);
			}
			if (s->protocol_error && s->version_mismatch)
				goto restore;
			if (s->protocol_error) {
				ukp_err("unexpected data from the agent in process %d (a different "
					"ukprobe version?)",
					conns[i].pid);
				goto restore;
			}
		}
	}
	wait_agents_gone(s);
	if (timing)
		fprintf(stderr,
			"ukprobe: probes registered after %ld ms, first event after %ld ms, "
			"detached in %ld ms\n",
			registered_ms ? registered_ms - start_ms : -1L,
			tops.first_event_ms ? tops.first_event_ms - start_ms : -1L,
			detach_ms ? now_ms() - detach_ms : -1L);
	for (i = 0; i < s->npids; i++)
		if (!said_hello(s, s->pids[i])) {
			ukp_err("process %d exited during the attach", s->pids[i]);
			goto restore;
		}
	if (s->first && !s->first->ended && !s->first->detached && !any_registered(s)) {
		/* killed (or it exited) while its agent registered the probes */
		char how[64];

		ukp_err("process %d (%s) ended during the attach, before its probes were in place "
			"(%s)",
			s->first->pid, s->first->comm, how_ended(s->first->pid, how, sizeof(how)));
		/* its set-up did not complete: no table of probes never placed */
		s->first->setup_failed = true;
		goto restore;
	}
	if (s->first && s->first->setup_failed) {
		if (s->first->end_reason == UKP_END_SPECS)
			ukp_err("the agent could not read the SPECs ukprobe sent it (an agent of "
				"another build?)");
		else if (!s->probe_errors)
			ukp_err("the agent could not set up tracing in process %d", s->pids[0]);
		goto restore;
	}
	/* processes that ended while traced: what they left */
	ukp_region_recover(s, ops, arg);
	ukp_report_end(s);
	code = 0;
restore:
	/* a connection closed here makes its agent detach (one of a traced
	 * process that had not said AUTH yet, a child forked as the session
	 * ended, is not counted as refused) */
	for (i = 0; i < nconns; i++)
		if (conns[i].fd >= 0)
			close(conns[i].fd);
	if (refused.n)
		ukp_warn("refused %d connection%s to ukprobe's socket that did not come from the "
			 "agent of a traced process (the first from process %d, uid %d)",
			 refused.n, refused.n == 1 ? "" : "s", (int)refused.pid, (int)refused.uid);
	sigaction(SIGINT, &old_int, NULL);
	sigaction(SIGTERM, &old_term, NULL);
	sigaction(SIGHUP, &old_hup, NULL);
	sigaction(SIGPIPE, &old_pipe, NULL);
out:
	if (lfd >= 0)
		close(lfd);
	if (sig_pipe[0] >= 0) {
		close(sig_pipe[0]);
		close(sig_pipe[1]);
		sig_pipe[0] = sig_pipe[1] = -1;
	}
	if (specs_fd >= 0)
		close(specs_fd);
	free(buf);
	free(conns);
	free(pfd);
	free(config);
	return code;
}
