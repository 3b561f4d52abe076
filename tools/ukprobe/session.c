/* SPDX-License-Identifier: MIT */
/*
 * session.c - run a command with the agent preloaded, read what the
 * agent sends (proto.h) until every traced image is done, and report
 * what did not go as asked.
 */
#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cli.h"

int ukp_session_prepare(struct ukp_session *s)
{
	int ret;

	if (s->npids) {
		s->agent = ukp_find_agent();
		return s->agent ? 0 : UKP_EXIT_FAIL;
	}
	if (!s->cmd || !s->cmd[0]) {
		ukp_err("no command to run: ukprobe %s -e SPEC -- CMD [ARGS]",
			s->mode == UKP_MODE_STAT ? "stat" : s->mode == UKP_MODE_PROBES ? "probes"
											: "trace");
		return UKP_EXIT_USAGE;
	}
	s->path = ukp_find_command(s->cmd[0]);
	if (!s->path) {
		ukp_err("%s: command not found", s->cmd[0]);
		return UKP_EXIT_NOCMD;
	}
	ret = ukp_check_executable(s->path);
	if (ret)
		return ret;
	s->agent = ukp_find_agent();
	return s->agent ? 0 : UKP_EXIT_FAIL;
}

/* --------------------------------------------------------- running */

static volatile sig_atomic_t child_pid;

static void forward_signal(int sig)
{
	if (child_pid > 0)
		kill((pid_t)child_pid, sig);
}

/* Read packets until every holder of the agent's end has closed it (the
 * program, and with -f its traced descendants). */
static void read_messages(struct ukp_session *s, int fd, const struct ukp_session_ops *ops,
			  void *arg)
{
	size_t cap = 2 * UKP_PACKET_MAX;
	char *buf = malloc(cap);

	if (!buf) {
		ukp_err("out of memory");
		return;
	}
	for (;;) {
		bool trunc;
		ssize_t n = ukp_region_recvmsg(s, fd, buf, cap, 0, &trunc);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		if (trunc)
			s->protocol_error = true;
		ukp_session_packet(s, buf, (size_t)n, ops, arg);
		if (s->protocol_error)
			break;
	}
	free(buf);
}

void ukp_session_packet(struct ukp_session *s, const char *buf, size_t n,
			const struct ukp_session_ops *ops, void *arg)
{
	struct ukp_image *img = NULL;
	size_t pos;

	if (s->record)
		ukp_record_packet(s->record, s, buf, n);
	/* a packet: FROM, then whole messages of that image */
	for (pos = 0; pos < n && !s->protocol_error;) {
		struct ukp_msg h;

		if (n - pos < sizeof(h)) {
			s->protocol_error = true;
			break;
		}
		memcpy(&h, buf + pos, sizeof(h));
		if (h.len < sizeof(h) || h.len > UKP_PACKET_MAX || (h.len & 7) || h.len > n - pos ||
		    (pos == 0) != (h.type == UKPM_FROM) ||
		    ukp_images_handle(s, &img, buf + pos, h.type, h.len, ops, arg)) {
			s->protocol_error = true;
			break;
		}
		pos += h.len;
	}
	ukp_region_unclaimed(s);
	if (!s->protocol_error && ops && ops->batch)
		ops->batch(s, arg);
}

/* ------------------------------------------------------ end of run */

static const char *image_name(const struct ukp_image *img, char *buf, size_t len)
{
	snprintf(buf, len, "process %d (%s)", img->pid, img->comm);
	return buf;
}

/* SPECs that no image registered, glob matches that could not be
 * probed, images that ended abruptly, events lost. */
/* The first image whose agent went away before it ended or detached
 * (killed, or _exit()), or NULL. */
static const struct ukp_image *cut_short(const struct ukp_session *s)
{
	size_t i;

	for (i = 0; i < s->nimages; i++)
		if (s->images[i]->hello && !s->images[i]->ended && !s->images[i]->detached)
			return s->images[i];
	return NULL;
}

void ukp_report_end(struct ukp_session *s)
{
	const struct ukp_image *cut = cut_short(s);
	uint64_t lost = 0;
	size_t i;
	int k;

	for (k = 0; k < s->nspecs && s->states && s->mode != UKP_MODE_PROBES; k++) {
		const struct ukp_spec *spec = &s->specs[k];
		struct ukp_spec_state *st = &s->states[k];
		char msg[512];
		int col;

		if (!st->registered && st->failed && !st->reported) {
			col = ukp_explain_failure(spec, &st->fail, msg, sizeof(msg));
			ukp_spec_warn(spec->text, col, "%s (in every traced process)", msg);
		} else if (!st->registered && st->pending && !st->failed) {
			ukp_spec_warn(spec->text, spec->point_col,
				      "%s was never loaded: the probe was not registered",
				      spec->object);
		} else if (!st->registered && !st->pending && !st->failed && !st->glob_failed) {
			char name[64];

			/* no agent got to it: the only way is an image cut short */
			ukp_spec_warn(spec->text, spec->point_col,
				      "the probe was not registered: %s ended before its agent "
				      "registered it (killed, or it exited)",
				      cut ? image_name(cut, name, sizeof(name)) : "the traced process");
		}
		if (st->glob_failed)
			ukp_spec_warn(spec->text, spec->sym_col,
				      "%d of the %d functions matching %s cannot be probed "
				      "(ukprobe probes shows why)",
				      st->glob_failed, st->glob_failed + st->glob_ok, spec->symbol);
	}
	for (i = 0; i < s->nimages; i++) {
		const struct ukp_image *img = s->images[i];
		bool last_of_pid = true;
		char name[64];
		size_t j;

		lost += img->lost;
		if (img->end_reason == UKP_END_SPECS && img != s->first)
			ukp_warn("%s was not traced: the agent could not read the SPECs (the "
				 "program closed their descriptor?)",
				 image_name(img, name, sizeof(name)));
		/* nothing could be lost where no probe was in place */
		for (j = 0; j < img->nprobes && !img->probes[j].used; j++)
			;
		if (img->ended || img->recovered || img->setup_failed || s->mode == UKP_MODE_PROBES ||
		    j == img->nprobes)
			continue;
		if (j == img->nprobes) {
			if (img->origin == UKP_ORIGIN_ATTACH && !img->detached)
				ukp_warn("%s ended during the attach, before its probes were in "
					 "place (killed, or it exited)",
					 image_name(img, name, sizeof(name)));
			continue;
		}
		for (j = i + 1; j < s->nimages; j++)
			if (s->images[j]->pid == img->pid)
				last_of_pid = false;
		if (img->pid == s->pid && last_of_pid)
			ukp_warn("%s ended without the agent's final report (%s): events still "
				 "buffered were not delivered",
				 s->cmd[0],
				 WIFSIGNALED(s->wstatus) ? strsignal(WTERMSIG(s->wstatus)) : "_exit()");
		else
			ukp_warn("%s ended without the agent's final report (killed, or _exit()): "
				 "events still buffered were not delivered",
				 image_name(img, name, sizeof(name)));
	}
	if (lost)
		ukp_warn("%lu events lost (buffers full)", (unsigned long)lost);
}

int ukp_session_run(struct ukp_session *s, const struct ukp_session_ops *ops, void *arg)
{
	struct sigaction sa, old_int, old_quit, old_term, old_hup;
	/* parsed here, once: the agent in every image reads this form */
	int specs_fd = ukp_specs_memfd(s);
	int sv[2], code, sndbuf = 1 << 20;
	pid_t pid;

	if (specs_fd < 0)
		return UKP_EXIT_FAIL;
	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv)) {
		ukp_err("socketpair: %s", strerror(errno));
		close(specs_fd);
		return UKP_EXIT_FAIL;
	}
	/* room for whole packets (the agent's end is shared by every image) */
	setsockopt(sv[1], SOL_SOCKET, SO_SNDBUF, &sndbuf, sizeof(sndbuf));
	fflush(NULL);
	pid = fork();
	if (pid < 0) {
		ukp_err("fork: %s", strerror(errno));
		close(specs_fd);
		close(sv[0]);
		close(sv[1]);
		return UKP_EXIT_FAIL;
	}
	if (pid == 0) {
		close(sv[0]);
		ukp_launch(s, sv[1], specs_fd);
	}
	close(specs_fd);
	close(sv[1]);
	s->pid = pid;
	child_pid = pid;

	/* ^C and ^\ reach the program from the terminal: ukprobe stays to
	 * report what it got. Termination requests are passed on. */
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = SIG_IGN;
	sigaction(SIGINT, &sa, &old_int);
	sigaction(SIGQUIT, &sa, &old_quit);
	sa.sa_handler = forward_signal;
	sigaction(SIGTERM, &sa, &old_term);
	sigaction(SIGHUP, &sa, &old_hup);

	read_messages(s, sv[0], ops, arg);
	close(sv[0]);
	/* every image is gone: what those that ended abruptly left */
	if (!s->protocol_error)
		ukp_region_recover(s, ops, arg);
	if (s->protocol_error) {
		if (!s->version_mismatch)
			ukp_err("unexpected data from the agent (a different ukprobe version?)");
		kill(pid, SIGKILL);
	}
	while (waitpid(pid, &s->wstatus, 0) < 0 && errno == EINTR)
		;
	child_pid = 0;
	sigaction(SIGINT, &old_int, NULL);
	sigaction(SIGQUIT, &old_quit, NULL);
	sigaction(SIGTERM, &old_term, NULL);
	sigaction(SIGHUP, &old_hup, NULL);

	code = WIFEXITED(s->wstatus) ? WEXITSTATUS(s->wstatus) : 128 + WTERMSIG(s->wstatus);
	if (s->protocol_error)
		return UKP_EXIT_FAIL;
	if (s->first && s->first->setup_failed) {
		/* the errors were reported; the program did not run */
		if (s->first->end_reason == UKP_END_SPECS)
			ukp_err("the agent could not read the SPECs ukprobe sent it (an agent of "
				"another build?)");
		else if (!s->probe_errors)
			ukp_err("the agent could not set up tracing in %s", s->path);
		return UKP_EXIT_FAIL;
	}
	if (!s->first) {
		if (WIFEXITED(s->wstatus) && (code == UKP_EXIT_NOCMD || code == 126))
			return code; /* exec failed, and said so */
		ukp_err("the agent did not start in %s (the program ran untraced)", s->path);
		return UKP_EXIT_FAIL;
	}
	ukp_report_end(s);
	return code;
}

void ukp_session_free(struct ukp_session *s)
{
	ukp_images_free(s);
	ukp_hist_free_rows(s);
	free(s->agent);
	free(s->path);
	free(s->pids);
}
