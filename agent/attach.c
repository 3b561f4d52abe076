/* SPDX-License-Identifier: MIT */
/*
 * attach.c - the agent in a running process (ukprobe -p PID).
 *
 * ukprobe makes one thread of the process call dlopen() on the agent
 * and then ukprobe_agent_attach(NAME, KEY), with that thread's registers
 * saved (tools/ukprobe/inject.c). The constructors find no UKPROBE_*
 * variables and do nothing; ukprobe_agent_attach() only starts the
 * agent's thread and returns, so the program's thread is back to what
 * it was doing at once. The agent's thread connects to ukprobe's
 * abstract socket NAME, presents KEY (AUTH: ukprobe answers nobody
 * else, proto.h), reads its settings (CONFIG, with the parsed
 * SPECs' memfd), registers the
 * probes and traces; on DETACH (or when ukprobe is gone: the socket
 * closes) it undoes everything (ukpa_attach_end) and returns.
 *
 * The object stays loaded after a detach (a thread may still return
 * through the return trampoline): the next attach finds it, dlopen()
 * returns the same handle, and this starts a new session.
 *
 * Not in an attached process: the interposers (the program's own
 * references bound to libc before the agent came); probes on objects the
 * program dlopen()s later are registered all the same before dlopen()
 * returns (loader.c), but an exec ends the image without its final
 * report.
 */
#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/prctl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "agent.h"

static struct sockaddr_un peer;
static socklen_t peer_len;
/* what ukprobe gave ukprobe_agent_attach(): every connection presents it
 * (a forked child's too: it has this memory) */
static unsigned char secret[UKP_AUTH_SECRET_LEN];
static _Atomic bool session;          /* a session is running (one at a time) */
/* A forked child's connection: 1 while ukprobe has not answered it yet
 * (forked_main waits for CONFIG), 0 once answered or refused. */
static _Atomic int admission;

int ukpa_attach_connect(void)
{
	int fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0), sndbuf = 1 << 20;

	if (fd < 0)
		return -1;
	struct ukp_msg_auth auth = { .h = { UKPM_AUTH, sizeof(auth) } };
	struct ucred cred;
	socklen_t clen = sizeof(cred);

	setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &sndbuf, sizeof(sndbuf));
	while (connect(fd, (struct sockaddr *)&peer, peer_len)) {
		if (errno != EINTR) {
			close(fd);
			return -1;
		}
	}
	/* The secret goes only to a peer that could have ptraced us
	 * anyway (root, or our user): not to one that took the name over
	 * after ukprobe went away. */
	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &clen) ||
	    (cred.uid != 0 && cred.uid != geteuid())) {
		close(fd);
		return -1;
	}
	/* ukprobe answers nothing before it */
	memcpy(auth.secret, secret, sizeof(secret));
	while (send(fd, &auth, sizeof(auth), MSG_NOSIGNAL) != (ssize_t)sizeof(auth)) {
		if (errno != EINTR) {
			close(fd);
			return -1;
		}
	}
	return fd;
}

/* The secret as ukprobe wrote it: UKP_AUTH_SECRET_LEN bytes in hex. */
static bool take_secret(const char *hex)
{
	size_t i;

	if (!hex || strlen(hex) != 2 * sizeof(secret))
		return false;
	for (i = 0; i < 2 * sizeof(secret); i++) {
		char c = hex[i];
		int v = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;

		if (v < 0)
			return false;
		secret[i / 2] = (unsigned char)(i % 2 ? secret[i / 2] | v : v << 4);
	}
	return true;
}

/* The CONFIG packet (ukprobe sends it as soon as it accepts us), and
 * with it the parsed SPECs' memfd (*specs) and, for trace -o FILE, the
 * records file (*raw: the descriptor, or -1). Returns the object to look
 * at (malloc'ed; "" for none) or NULL, with no descriptor open. */
static char *read_config(int fd, struct ukp_msg_config *c, int *specs, int *raw)
{
	size_t cap = UKP_PACKET_MAX;
	char *buf = malloc(cap + 1);
	struct pollfd pfd = { fd, POLLIN, 0 };
	union {
		struct cmsghdr h;
		char space[CMSG_SPACE(2 * sizeof(int))];
	} ctl;
	struct iovec iov;
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1,
			     .msg_control = &ctl, .msg_controllen = sizeof(ctl) };
	struct cmsghdr *cm;
	ssize_t n;
	char *text;

	*specs = *raw = -1;
	if (!buf)
		return NULL;
	iov.iov_base = buf;
	iov.iov_len = cap;
	/* ukprobe answers at once; do not wait for ever on a stale one */
	if (poll(&pfd, 1, 10000) != 1)
		goto bad;
	n = recvmsg(fd, &mh, MSG_CMSG_CLOEXEC);
	for (cm = n >= 0 ? CMSG_FIRSTHDR(&mh) : NULL; cm; cm = CMSG_NXTHDR(&mh, cm)) {
		size_t nfds = (cm->cmsg_len - CMSG_LEN(0)) / sizeof(int), i;

		if (cm->cmsg_level != SOL_SOCKET || cm->cmsg_type != SCM_RIGHTS)
			continue;
		/* the SPECs' memfd, then trace -o's file; any other is not ours */
		for (i = 0; i < nfds; i++) {
			int d;

			memcpy(&d, CMSG_DATA(cm) + i * sizeof(int), sizeof(int));
			if (i < 2 && (i ? *raw : *specs) < 0)
				*(i ? raw : specs) = d;
			else
				close(d);
		}
	}
	if (n < (ssize_t)sizeof(*c) || (mh.msg_flags & (MSG_TRUNC | MSG_CTRUNC)) || *specs < 0)
		goto bad;
	buf[n] = '\0';
	memcpy(c, buf, sizeof(*c));
	/* (another version's agent: CONFIG's version field is where it was;
	 * the SPECs' form says so to ukprobe, ukpa_attach_begin) */
	if (c->h.type != UKPM_CONFIG || c->h.len != (size_t)n)
		goto bad;
	text = buf + sizeof(*c);
	if (!memchr(text, '\0', (size_t)n - sizeof(*c)))
		goto bad;
	memmove(buf, text, strlen(text) + 1);
	return buf;
bad:
	if (*raw >= 0)
		close(*raw);
	if (*specs >= 0)
		close(*specs);
	*specs = *raw = -1;
	free(buf);
	return NULL;
}

/* Block until ukprobe says DETACH or goes away. */
static void wait_detach(int fd)
{
	struct ukp_msg m;

	for (;;) {
		ssize_t n = recv(fd, &m, sizeof(m), 0);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0 || m.type == UKPM_DETACH)
			return;
	}
}

static void *agent_main(void *arg)
{
	struct ukp_msg_config c;
	char *load;
	int fd, raw, specs, ret = -1;

	(void)arg;
	ukpa_busy = 1;
	prctl(PR_SET_NAME, "ukprobe-attach", 0, 0, 0);
	fd = ukpa_attach_connect();
	if (fd < 0)
		goto out;
	load = read_config(fd, &c, &specs, &raw);
	if (!load) {
		close(fd);
		goto out;
	}
	/* ukprobe run: a compiled script (script.c), loaded with the SPECs */
	if (c.flags & UKP_CONFIG_SCRIPT)
		ukpa_script_set_path(load);
	ret = ukpa_attach_begin(fd, (enum ukp_mode)c.mode, c.flags & UKP_CONFIG_FOLLOW,
				c.flags & UKP_CONFIG_NO_OPTIMIZE, specs,
				c.flags & UKP_CONFIG_SCRIPT ? "" : load, raw,
				c.flags & UKP_CONFIG_TRACING_OFF);
	if (ret == 0)
		wait_detach(fd);
	ukpa_attach_end(ret == 0);
	free(load);
	atomic_store(&session, false);
	return NULL;
out:
#ifdef UKP_FREE
	/* no session (ukprobe went away, or failed to attach another
	 * process): what the constructors took goes back, so that the loader
	 * can unmap the agent (free/entry.c, give_back) */
	ukprobes_shutdown();
#endif
	atomic_store(&session, false);
	return NULL;
}

/* A forked child's thread (-f): its connection is set up; ukprobe
 * sends CONFIG on it too (not needed: the child has its parent's). */
static void *forked_main(void *arg)
{
	int fd = (int)(intptr_t)arg;
	struct ukp_msg_config c;
	char *load;
	int raw, specs;

	ukpa_busy = 1;
	/* the child writes its records to the file it has from its parent,
	 * and has its SPECs in memory */
	load = read_config(fd, &c, &specs, &raw);
	atomic_store(&admission, 0);
	if (raw >= 0)
		close(raw);
	if (specs >= 0)
		close(specs);
	free(load);
	wait_detach(fd);
	ukpa_attach_end(true);
	atomic_store(&session, false);
	return NULL;
}

/* A detached pthread. Not a raw one (ukprobes_kthread_run(), as the
 * reader is): the session thread may load `ukprobe run`'s compiled script
 * with the program's dlopen(), which allocates with the program's
 * allocator on this thread, and an allocator keeps per-thread state
 * (jemalloc's tcache, in its TLS) in its lists: a raw thread's TLS is
 * unmapped when it ends, and redis-server's next statistics walk crashed
 * on it. The freestanding agent has neither pthreads nor dlopen(): a raw
 * thread there. */
static int start_thread(void *(*fn)(void *), void *arg)
{
#ifdef UKP_FREE
	struct ukprobes_kthread k;

	return ukprobes_kthread_run(&k, fn, arg, "ukprobe-attach", UKPROBES_KTHREAD_DETACHED);
#else
	pthread_attr_t attr;
	pthread_t t;
	int ret;

	pthread_attr_init(&attr);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	ret = ukprobes_kthread_create(&t, &attr, fn, arg);
	pthread_attr_destroy(&attr);
	return ret;
#endif
}

int ukpa_attach_forked(int fd)
{
	atomic_store(&admission, 1);
	if (start_thread(forked_main, (void *)(intptr_t)fd)) {
		atomic_store(&admission, 0);
		return -1;
	}
	return 0;
}

/*
 * ukprobe admits a forked child's connection by the child's parent link
 * in /proc (SO_PEERCRED's pid, checked when it accepts): a child that
 * ended and was reaped before that (a server's short-lived worker, while
 * ukprobe was busy) would be refused and its counts and last events
 * lost. So the child's end waits until ukprobe has answered, or refused
 * it (the socket closes), or ms have passed.
 */
void ukpa_attach_wait_admitted(int ms)
{
	for (int i = 0; i < ms && atomic_load(&admission); i++) {
		struct timespec d = { 0, 1000000 };

		nanosleep(&d, NULL);
	}
}

/* [init] The session's peer and secret (see ukprobe_agent_attach()). 0,
 * or a negative errno. */
static int take_session(const char *name, char *key)
{
	bool expected = false;
	size_t len = strlen(name);

	if (len + 1 > sizeof(peer.sun_path))
		return -EINVAL;
	if (!key)
		return -EINVAL; /* a ukprobe of another build: it says so */
	/* a program ukprobe started (the agent preloaded) is traced already */
	if (ukpa_active())
		return -EBUSY;
	if (!atomic_compare_exchange_strong(&session, &expected, true))
		return -EBUSY;
	if (!take_secret(key)) {
		atomic_store(&session, false);
		return -EINVAL;
	}
	explicit_bzero(key, strlen(key));
	memset(&peer, 0, sizeof(peer));
	peer.sun_family = AF_UNIX;
	/* abstract: sun_path starts with a NUL */
	memcpy(peer.sun_path + 1, name, len);
	peer_len = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + len);
	return 0;
}

/*
 * Called by ukprobe in a thread it stopped (tools/ukprobe/inject.c):
 * start the agent's thread and return at once. name: the abstract
 * socket ukprobe listens on; key: the secret to present there, in hex
 * (ukprobe wrote it below the thread's stack: it is wiped once taken).
 * 0, or a negative errno (-EBUSY: another ukprobe is attached).
 */
__attribute__((visibility("default"))) int ukprobe_agent_attach(const char *name, char *key)
{
	int ret = take_session(name, key);

	if (ret)
		return ret;
	ret = start_thread(agent_main, NULL);
	if (ret) {
		atomic_store(&session, false);
		return -ret;
	}
	return 0;
}

/* The freestanding agent's session (agent/free/entry.c), on the thread
 * ukprobe's loader started: the same as the attach thread's. 0, or a
 * negative errno. */
int ukpa_free_session(const char *name, char *key)
{
	int ret = take_session(name, key);

	if (ret)
		return ret;
	agent_main(NULL);
	return 0;
}
