/* SPDX-License-Identifier: MIT */
/*
 * session_loop.c - the one session loop, for a launched program and
 * for attached processes alike (session_loop.h): it polls the agents'
 * connections, has new ones admitted (attach.c), hands every packet to
 * the images (images.c), detaches attached agents when told to, and
 * ends when every agent is done; launch.c and attach.c then report.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "session_loop.h"

long ukp_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000L + ts.tv_nsec / 1000000L;
}

static volatile sig_atomic_t child_pid;
static int sig_pipe[2] = { -1, -1 };

/* [signal handler] Launched, the program decides how to end: the
 * request goes on to it and ukprobe stays to report. Attached, the loop
 * detaches (sig_pipe). */
static void on_signal(int sig)
{
	int saved = errno;
	char c = (char)sig;

	if (child_pid > 0)
		kill((pid_t)child_pid, sig);
	else if (write(sig_pipe[1], &c, 1) < 0) {
		/* the pipe is full: a stop is already on its way */
	}
	errno = saved;
}

/* What each signal does during a session; NULL: left as it is. */
static const struct {
	int sig;
	void (*launched)(int), (*attached)(int);
} sig_plan[UKP_LOOP_SIGNALS] = {
	/* ^C and ^\ reach a launched program from the terminal */
	{ SIGINT, SIG_IGN, on_signal },
	{ SIGQUIT, SIG_IGN, NULL },
	{ SIGTERM, on_signal, on_signal },
	{ SIGHUP, on_signal, on_signal },
	{ SIGPIPE, NULL, SIG_IGN },
};

/* Signal i's handler in l's kind of session, or NULL. */
static void (*planned(const struct ukp_loop *l, int i))(int)
{
	return l->can_detach ? sig_plan[i].attached : sig_plan[i].launched;
}

void ukp_loop_signals(struct ukp_loop *l)
{
	struct sigaction sa;
	int i;

	child_pid = l->can_detach ? 0 : l->child;
	memset(&sa, 0, sizeof(sa));
	for (i = 0; i < UKP_LOOP_SIGNALS; i++) {
		sa.sa_handler = planned(l, i);
		if (sa.sa_handler)
			sigaction(sig_plan[i].sig, &sa, &l->old[i]);
	}
	l->signals = true;
}

void ukp_loop_signals_restore(struct ukp_loop *l)
{
	int i;

	child_pid = 0;
	for (i = 0; i < UKP_LOOP_SIGNALS && l->signals; i++)
		if (planned(l, i))
			sigaction(sig_plan[i].sig, &l->old[i], NULL);
	l->signals = false;
}

bool ukp_loop_add(struct ukp_loop *l, const struct ukp_conn *c)
{
	if (l->nconns == l->cap) {
		/* -f: each forked child connects too */
		int cap = l->cap ? 2 * l->cap : 16;
		struct ukp_conn *nc = realloc(l->conns, (size_t)cap * sizeof(*nc));
		struct pollfd *np = nc ? realloc(l->pfd, ((size_t)cap + 2) * sizeof(*np)) : NULL;

		if (nc)
			l->conns = nc;
		if (!np)
			return false;
		l->pfd = np;
		l->cap = cap;
	}
	l->conns[l->nconns++] = *c;
	return true;
}

/* The command's ops behind the loop's: the thread ids of records as
 * ukprobe sees them (an attached process in another PID namespace),
 * and when the first event came (UKPROBE_TIMING). */
struct relay {
	const struct ukp_session_ops *ops;
	void *arg;
	struct ukp_loop *l;
};

static void relay_event(struct ukp_session *s, struct ukp_image *img,
			const struct ukp_probe_info *pi, const struct ukp_rec *rec, void *arg)
{
	struct relay *t = arg;
	struct ukp_rec r;

	if (!t->l->first_event_ms)
		t->l->first_event_ms = ukp_now_ms();
	if (!t->ops || !t->ops->event)
		return;
	if (img->pid != img->own_pid) {
		r = *rec;
		r.tid = ukp_host_tid(img, rec->tid);
		rec = &r;
	}
	t->ops->event(s, img, pi, rec, t->arg);
}

static void relay_probe(struct ukp_session *s, struct ukp_image *img,
			const struct ukp_probe_report *r, void *arg)
{
	struct relay *t = arg;

	if (t->ops && t->ops->probe)
		t->ops->probe(s, img, r, t->arg);
}

static void relay_batch(struct ukp_session *s, void *arg)
{
	struct relay *t = arg;

	if (t->ops && t->ops->batch)
		t->ops->batch(s, t->arg);
}

static const struct ukp_session_ops relay_ops = { relay_event, relay_probe, relay_batch };

/* How long poll() may wait, in ms (-1: until something comes). */
static int poll_timeout(const struct ukp_session *s, const struct ukp_loop *l, long now)
{
	int timeout = -1;

	/* agents still to connect or authenticate: look at them often */
	if (l->nagents < l->expect || l->pending || ukp_follow_exec_busy(s))
		timeout = 100;
	if (l->deadline && !l->detaching && (timeout < 0 || l->deadline - now < timeout))
		timeout = (int)(l->deadline - now);
	if (s->duration > 0 && !l->deadline && (timeout < 0 || timeout > 100))
		timeout = 100;
	return timeout;
}

/* Attached: -d counts from when the probes are in place (or, if that
 * never comes, from the end of the time to connect); detach when it is
 * over or when told to stop. */
static void maybe_detach(struct ukp_session *s, struct ukp_loop *l, long now)
{
	if (!l->can_detach)
		return;
	if (s->duration > 0 && !l->deadline && (l->registered_ms || now >= l->connect_until))
		l->deadline =
			(l->registered_ms ? l->registered_ms : now) + (long)(s->duration * 1000.0);
	if (!l->detaching && ((l->deadline && now >= l->deadline) || s->stop))
		ukp_attach_detach(l);
}

void ukp_loop_protocol_error(const struct ukp_session *s, pid_t pid)
{
	if (s->version_mismatch)
		return; /* said already */
	if (pid)
		ukp_err("unexpected data from the agent in process %d (a different ukprobe "
			"version?)",
			pid);
	else
		ukp_err("unexpected data from the agent (a different ukprobe version?)");
}

/* A packet (or the end) on connection i. 0, or UKP_EXIT_FAIL after
 * saying why. */
static int read_conn(struct ukp_session *s, struct ukp_loop *l, int i, char *buf, size_t cap,
		     struct relay *relay)
{
	struct ukp_conn *c = &l->conns[i];
	bool trunc;
	ssize_t r;

	if (!c->agent) {
		l->pending--;
		ukp_attach_admit(s, l, c);
		return 0;
	}
	r = ukp_region_recvmsg(s, c->fd, buf, cap, MSG_DONTWAIT, &trunc);
	if (r < 0 && (errno == EINTR || errno == EAGAIN))
		return 0;
	if (r <= 0) {
		close(c->fd);
		c->fd = -1;
		l->open_conns--;
		return 0;
	}
	if (trunc)
		s->protocol_error = true;
	s->peer_pid = c->pid;
	ukp_session_packet(s, buf, (size_t)r, &relay_ops, relay);
	s->peer_pid = 0;
	if (!l->registered_ms && l->can_detach && ukp_attach_all_ready(s)) {
		l->registered_ms = ukp_now_ms();
		/* at once: what waits for the probes (bench/redis.py) */
		if (l->timing)
			fprintf(stderr, "ukprobe: every probe in place after %ld ms\n",
				l->registered_ms - l->start_ms);
	}
	if (!s->protocol_error)
		return 0;
	ukp_loop_protocol_error(s, c->pid);
	return UKP_EXIT_FAIL;
}

void ukp_loop_drain(struct ukp_session *s, struct ukp_loop *l, int i)
{
	size_t cap = 2 * UKP_PACKET_MAX;
	char *buf = malloc(cap);
	struct pollfd p = { .events = POLLIN };

	while (buf && i < l->nconns && l->conns[i].fd >= 0) {
		p.fd = l->conns[i].fd;
		if (poll(&p, 1, 0) != 1 || read_conn(s, l, i, buf, cap, l->relay))
			break;
	}
	free(buf);
}

/* Poll the connections until every agent waited for has come and every
 * connection has closed. 0, or UKP_EXIT_FAIL after saying why. */
static int drive(struct ukp_session *s, struct ukp_loop *l, struct relay *relay)
{
	size_t cap = 2 * UKP_PACKET_MAX;
	char *buf = malloc(cap);
	int code = 0;

	if (!buf) {
		ukp_err("out of memory");
		return UKP_EXIT_FAIL;
	}
	while (!code) {
		long now = ukp_now_ms();
		int i, n, polled = l->nconns;

		maybe_detach(s, l, now);
		ukp_attach_expire(l, now);
		/* (-f: a process that execs closes its connection, its new
		 * program's agent opens one once loaded) */
		if (l->nagents >= l->expect && !l->open_conns && !ukp_follow_exec_busy(s))
			break;
		if (l->nagents < l->expect) {
			code = ukp_attach_missing(s, l, now);
			if (code)
				break;
		}
		l->pfd[0] = (struct pollfd){ sig_pipe[0], POLLIN, 0 };
		l->pfd[1] = (struct pollfd){ l->lfd, POLLIN, 0 };
		for (i = 0; i < polled; i++)
			l->pfd[2 + i] = (struct pollfd){ l->conns[i].fd, POLLIN, 0 };
		n = poll(l->pfd, (nfds_t)polled + 2, poll_timeout(s, l, now));
		if (n < 0 && errno != EINTR) {
			ukp_err("poll: %s", strerror(errno));
			code = UKP_EXIT_FAIL;
		}
		if (n <= 0)
			continue;
		if (l->pfd[0].revents) {
			char c[16];

			while (read(sig_pipe[0], c, sizeof(c)) > 0)
				;
			if (!l->detaching)
				ukp_attach_detach(l);
		}
		if (l->pfd[1].revents & POLLIN)
			ukp_attach_accept(s, l);
		/* (l->pfd may have moved: a connection was accepted) */
		for (i = 0; i < polled && !code; i++)
			if (l->pfd[2 + i].fd >= 0 && l->pfd[2 + i].revents && l->conns[i].fd >= 0)
				code = read_conn(s, l, i, buf, cap, relay);
	}
	free(buf);
	return code;
}

void ukp_setup_failed(const struct ukp_session *s, const char *where)
{
	if (s->first->end_reason == UKP_END_SPECS)
		ukp_err("the agent could not read the SPECs ukprobe sent it (an agent of "
			"another build?)");
	else if (!s->probe_errors)
		ukp_err("the agent could not set up tracing in %s", where);
}

/* Both ways of running: the loop's resources, then launched or attached,
 * the one loop, and each one's end. */
int ukp_session_run(struct ukp_session *s, const struct ukp_session_ops *ops, void *arg)
{
	struct ukp_loop l = {
		.lfd = -1,
		.expect = s->npids ? s->npids : 1,
		.can_detach = s->npids > 0,
		.timing = s->npids && getenv("UKPROBE_TIMING"),
		.start_ms = ukp_now_ms(),
	};
	struct relay relay = { ops, arg, &l };
	int code = UKP_EXIT_FAIL, i;

	l.relay = &relay;
	/* parsed here, once: the agent in every image reads this form */
	l.specs_fd = ukp_specs_memfd(s);
	if (l.specs_fd < 0)
		return UKP_EXIT_FAIL;
	if (pipe2(sig_pipe, O_CLOEXEC | O_NONBLOCK)) {
		ukp_err("pipe: %s", strerror(errno));
		goto out;
	}
	l.pfd = calloc(2, sizeof(*l.pfd));
	if (!l.pfd) {
		ukp_err("out of memory");
		goto out;
	}
	code = s->npids ? ukp_attach_start(s, &l) : ukp_launch_start(s, &l);
	if (!code) {
		code = drive(s, &l, &relay);
		code = s->npids ? code ? code : ukp_attach_finish(s, &l, &relay_ops, &relay)
				: ukp_launch_finish(s, &l, code != 0, &relay_ops, &relay);
	}
	/* a connection closed here makes its agent detach (one of a traced
	 * process that had not said AUTH yet, a child forked as the session
	 * ended, is not counted as refused) */
	for (i = 0; i < l.nconns; i++)
		if (l.conns[i].fd >= 0)
			close(l.conns[i].fd);
	ukp_attach_refusals(&l);
	/* (an agent still waiting to connect, or for its CONFIG, sees the
	 * socket gone and ends before its unload is waited for) */
	if (l.lfd >= 0) {
		close(l.lfd);
		l.lfd = -1;
	}
	if (s->npids)
		ukp_attach_unload(s, &l);
	ukp_loop_signals_restore(&l);
out:
	if (l.lfd >= 0)
		close(l.lfd);
	if (sig_pipe[0] >= 0) {
		close(sig_pipe[0]);
		close(sig_pipe[1]);
		sig_pipe[0] = sig_pipe[1] = -1;
	}
	if (l.specs_fd >= 0)
		close(l.specs_fd);
	free(l.conns);
	free(l.pfd);
	free(l.config);
	return code;
}
