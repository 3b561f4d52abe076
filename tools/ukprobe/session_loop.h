/* SPDX-License-Identifier: MIT */
/*
 * session_loop.h - the one loop of a session (session_loop.c) and its two
 * ways of starting. A launched program (launch.c) is one connection,
 * admitted before the loop begins, that every image of the program and,
 * with -f, of its descendants shares. Attached processes (attach.c)
 * connect to ukprobe's socket one by one and are admitted only as the
 * agents of traced processes (issue 27: SO_PEERCRED and the session's
 * secret; everything else is refused and counted). The loop polls them
 * all alike and ends when every agent it waits for has come and every
 * connection has closed.
 */
#ifndef UKPROBE_SESSION_LOOP_H
#define UKPROBE_SESSION_LOOP_H

#include <poll.h>
#include <signal.h>

#include "session.h"
#include "target.h"

/* One connection to an agent. */
struct ukp_conn {
	int fd;                   /* -1: closed */
	pid_t pid;                /* attached: the peer (SO_PEERCRED); launched: 0 (every image's) */
	uid_t uid;
	bool agent;               /* admitted: launched, or it sent the secret and got CONFIG */
	long auth_until;          /* not yet: refused after this */
};

/* Connections refused: how many, and who the first one was. */
struct ukp_refusals {
	int n;
	pid_t pid;
	uid_t uid;
};

#define UKP_LOOP_SIGNALS 5

struct ukp_loop {
	struct ukp_conn *conns;
	struct pollfd *pfd;       /* the signal pipe, the listening socket, then conns */
	int nconns, cap;
	int expect;               /* agents to wait for: 1 launched, one per -p PID */
	int nagents;              /* admitted so far */
	int open_conns;           /* admitted and not closed */
	int pending;              /* connected, not admitted nor refused yet */
	int lfd;                  /* attached: the listening socket; else -1 */
	int specs_fd;             /* the parsed SPECs (ukp_specs_memfd), until sent */
	struct ukp_refusals refused;
	bool can_detach;          /* attached: -d, the script's exit() and signals detach */
	bool detaching;           /* DETACH was sent */
	bool timing;              /* UKPROBE_TIMING */
	pid_t child;              /* launched: the program */
	long start_ms, connect_until, deadline, registered_ms, detach_ms, first_event_ms;
	/* attached: the socket's abstract name, CONFIG, the secret */
	char name[64];
	char *config;
	size_t config_len;
	unsigned char secret[UKP_AUTH_SECRET_LEN];
	/* what the signals did before the session (ukp_loop_signals) */
	bool signals;
	struct sigaction old[UKP_LOOP_SIGNALS];
	void *relay;              /* the session's handlers (session_loop.c) */
	/* attached static programs: the freestanding agent as loaded, one per
	 * -p PID (NULL: a dynamic program's), unloaded at the end */
	struct ukp_loaded **loaded;
};

/* session_loop.c: the packets connection i holds now, handled as the
 * loop's own (a static program held at its entry: `ukprobe run`'s
 * "Attaching" and BEGIN before its first instruction). */
void ukp_loop_drain(struct ukp_session *s, struct ukp_loop *l, int i);
/* session_loop.c: milliseconds of CLOCK_MONOTONIC. */
long ukp_now_ms(void);
/* A connection into the loop's set: false when there is no room (the
 * caller still owns c->fd). */
bool ukp_loop_add(struct ukp_loop *l, const struct ukp_conn *c);
/* After s->protocol_error: what came from the agent (in process pid,
 * attached) was not understood (said unless the agent said it is of
 * another build). */
void ukp_loop_protocol_error(const struct ukp_session *s, pid_t pid);
/* The first image's set-up failed (its errors were reported): why, if
 * no error said it. where: the program's path, or "process PID". */
void ukp_setup_failed(const struct ukp_session *s, const char *where);
/* Set what SIGINT, SIGQUIT, SIGTERM, SIGHUP and SIGPIPE do during the
 * session: launched, ^C and ^\ are the program's, termination requests
 * go on to l->child; attached, each of SIGINT, SIGTERM and SIGHUP makes
 * the loop detach. Restored by ukp_loop_signals_restore. */
void ukp_loop_signals(struct ukp_loop *l);
void ukp_loop_signals_restore(struct ukp_loop *l);

/* launch.c: fork and exec the command with the agent, its connection
 * into l (pre-admitted). 0, or ukprobe's exit code after saying why. */
int ukp_launch_start(struct ukp_session *s, struct ukp_loop *l);
/* After the loop (failed: it stopped on an error, said): wait for the
 * program, report. Returns ukprobe's exit code: the program's, unless
 * tracing failed. */
int ukp_launch_finish(struct ukp_session *s, struct ukp_loop *l, bool failed,
		      const struct ukp_session_ops *ops, void *arg);

/* attach.c: listen, then make each process of s->pids load the agent.
 * 0, or ukprobe's exit code after saying why. */
int ukp_attach_start(struct ukp_session *s, struct ukp_loop *l);
/* A connection on the listening socket: refused unless SO_PEERCRED
 * names a traced process, else pending until it says AUTH. */
void ukp_attach_accept(const struct ukp_session *s, struct ukp_loop *l);
/* The pending connection c said something: admitted (CONFIG sent) if
 * it is AUTH with the secret, else refused. */
void ukp_attach_admit(const struct ukp_session *s, struct ukp_loop *l, struct ukp_conn *c);
/* Refuse the pending connections that did not say AUTH in time. */
void ukp_attach_expire(struct ukp_loop *l, long now);
/* A process of s->pids gone before its agent connected, or the time to
 * connect over: UKP_EXIT_FAIL after saying which; else 0. */
int ukp_attach_missing(const struct ukp_session *s, const struct ukp_loop *l, long now);
/* DETACH to every admitted agent. */
void ukp_attach_detach(struct ukp_loop *l);
/* Has every process's agent put its probes in place (READY), or ended
 * trying? */
bool ukp_attach_all_ready(const struct ukp_session *s);
/* Thread own (as the agent in img's process sees it) as ukprobe sees it. */
pid_t ukp_host_tid(const struct ukp_image *img, pid_t own);
/* After the loop: wait for the agents' threads to go, report. 0, or
 * UKP_EXIT_FAIL after saying why. */
/* attach.c: the freestanding agents unmapped (ukp_unload), once their
 * sessions are over (their connections closed). */
void ukp_attach_unload(struct ukp_session *s, struct ukp_loop *l);
int ukp_attach_finish(struct ukp_session *s, struct ukp_loop *l,
		      const struct ukp_session_ops *ops, void *arg);
/* The connections refused during the session, in one warning. */
void ukp_attach_refusals(const struct ukp_loop *l);

#endif /* UKPROBE_SESSION_LOOP_H */
