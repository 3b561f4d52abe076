/* SPDX-License-Identifier: MIT */
/*
 * attach.c - a session with running processes (ukprobe -p PID[,PID...]).
 *
 * ukprobe listens on an abstract SOCK_SEQPACKET socket of its own, makes
 * each process load the agent (inject.c), and sends each agent that
 * connects its settings (CONFIG, proto.h) and the parsed SPECs (a
 * memfd, specs_memfd.c). Messages then come as from a
 * launched program, one connection per process. Tracing ends when every
 * process has exited, on SIGINT/SIGTERM/SIGHUP, or when -d SECONDS have
 * passed: ukprobe sends DETACH, reads the last events and counts, and
 * waits until the agent's last thread in each process is gone.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"

#define CONNECT_TIMEOUT_MS 10000
#define GONE_TIMEOUT_MS 10000

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
			 (s->tracing_off ? UKP_CONFIG_TRACING_OFF : 0),
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
	int fd;
	pid_t pid;
};

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

/* Did the agent in pid say HELLO? */
static bool said_hello(const struct ukp_session *s, pid_t pid)
{
	size_t i;

	for (i = 0; i < s->nimages; i++)
		if (s->images[i]->pid == pid && s->images[i]->hello)
			return true;
	return false;
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
		snprintf(path, sizeof(path), "/proc/%d/task/%d", img->pid, img->agent_tid);
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

/* Every SPEC registered (or failed) somewhere? */
static bool all_announced(const struct ukp_session *s)
{
	int k;

	for (k = 0; k < s->nspecs; k++)
		if (!s->states || (!s->states[k].registered && !s->states[k].failed &&
				   !s->states[k].pending))
			return false;
	return true;
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
	int cap_conns = s->npids + 16;
	long deadline = 0, connect_until;
	bool detaching = false, timing = getenv("UKPROBE_TIMING") != NULL;

	buf = malloc(cap);
	conns = calloc((size_t)cap_conns, sizeof(*conns));
	pfd = calloc((size_t)cap_conns + 2, sizeof(*pfd));
	config = config_packet(s, &config_len);
	/* parsed here, once: each agent that connects gets this form */
	specs_fd = ukp_specs_memfd(s);
	if (!buf || !conns || !pfd || !config || specs_fd < 0)
		goto out;
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
		ret = ukp_inject(s->pids[i], s->agent, name, &t);
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
		if (!detaching && deadline && now >= deadline) {
			detaching = true;
			detach_ms = now;
			for (i = 0; i < nconns; i++)
				if (conns[i].fd >= 0) {
					struct ukp_msg m = { UKPM_DETACH, sizeof(m) };

					send(conns[i].fd, &m, sizeof(m), MSG_NOSIGNAL);
				}
		}
		if (nconns >= s->npids && !open_conns)
			break;
		if (nconns < s->npids) {
			/* a process gone before its agent connected */
			for (i = 0; i < s->npids; i++) {
				int k;

				for (k = 0; k < nconns && conns[k].pid != s->pids[i]; k++)
					;
				if (k == nconns && process_gone(s->pids[i])) {
					ukp_err("process %d exited during the attach", s->pids[i]);
					goto restore;
				}
			}
			if (now >= connect_until) {
				ukp_err("the agent did not connect back from process %d",
					s->pids[nconns]);
				goto restore;
			}
		}
		pfd[np++] = (struct pollfd){ sig_pipe[0], POLLIN, 0 };
		pfd[np++] = (struct pollfd){ lfd, POLLIN, 0 };
		for (i = 0; i < nconns; i++)
			pfd[np++] = (struct pollfd){ conns[i].fd, POLLIN, 0 };
		if (nconns < s->npids)
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
					if (conns[i].fd >= 0) {
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
			if (fd >= 0 && nconns < cap_conns &&
			    getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &clen) == 0 &&
			    send_config(s, fd, config, config_len, specs_fd)) {
				conns[nconns++] = (struct conn){ fd, cred.pid };
				open_conns++;
				if (detaching) {
					struct ukp_msg m = { UKPM_DETACH, sizeof(m) };

					send(fd, &m, sizeof(m), MSG_NOSIGNAL);
				}
			} else if (fd >= 0) {
				close(fd);
			}
		}
		for (i = 0; i < polled; i++) {
			struct pollfd *p = &pfd[2 + i];
			bool trunc;
			ssize_t r;

			if (p->fd < 0 || !p->revents)
				continue;
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
			ukp_session_packet(s, buf, (size_t)r, ops, arg);
			if (!registered_ms && all_announced(s))
				registered_ms = now_ms();
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
	/* a connection closed here makes its agent detach */
	for (i = 0; i < nconns; i++)
		if (conns[i].fd >= 0)
			close(conns[i].fd);
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
