/* SPDX-License-Identifier: MIT */
/*
 * session.c - a session's preparation, its packets from the agents
 * (proto.h: dispatched to the images, images.c), and the report at its
 * end of what did not go as asked; the loop that reads the packets is
 * session_loop.c.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/wait.h>

#include "cli.h"
#include "session.h"

int ukp_session_prepare(struct ukp_session *s)
{
	bool is_static = false;
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
	ret = ukp_check_executable(s->path, &is_static);
	if (ret)
		return ret;
	s->agent = ukp_find_agent();
	if (s->agent && is_static) {
		/* the freestanding agent, beside the dynamic one */
		const char *slash = strrchr(s->agent, '/');

		if (asprintf(&s->free_agent, "%.*s/libukprobe-agent.bin",
			     (int)(slash ? slash - s->agent : 0), s->agent) < 0) {
			s->free_agent = NULL;
			return UKP_EXIT_FAIL;
		}
		if (access(s->free_agent, R_OK)) {
			ukp_err("%s is statically linked: it needs the freestanding agent, %s, which "
				"is not there (%s)", s->path, s->free_agent, strerror(errno));
			return UKP_EXIT_FAIL;
		}
	}
	return s->agent ? 0 : UKP_EXIT_FAIL;
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
			/* attached, it may be loaded before or after the session:
			 * only the session's time is known */
			ukp_spec_warn(spec->text, spec->point_col,
				      s->npids ? "%s was not loaded while ukprobe was attached: the "
						 "probe waited for it and was not registered"
					       : "%s was never loaded: the probe was not registered",
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

void ukp_session_free(struct ukp_session *s)
{
	ukp_images_free(s);
	ukp_hist_free_rows(s);
	free(s->agent);
	free(s->path);
	free(s->pids);
	free(s->attach_name);
	free(s->attach_key);
}
