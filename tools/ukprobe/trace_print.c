/* SPDX-License-Identifier: MIT */
/*
 * trace_print.c - the trace's text (ftrace's trace_pipe lines) and
 * Perfetto events of each event, the formatting of a records file the
 * agent wrote (proto.h packets), and the line saying how the program
 * ended: what "ukprobe trace" prints and "ukprobe report" prints from a
 * recording, the one code for both (their outputs are the same bytes).
 */
#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cli.h"
#include "format.h"
#include "session.h"
#include "trace_recs.h"

void ukp_trace_event(struct ukp_session *s, struct ukp_image *img,
			const struct ukp_probe_info *pi, const struct ukp_rec *rec, void *arg)
{
	struct ukp_trace_out *t = arg;
	const struct ukp_spec *spec = &s->specs[pi->spec];
	char comm[sizeof(rec->comm) + 1], buf[32];

	if (t->json)
		ukp_json_event(t->json, s, img, pi, rec);
	if (!t->out)
		return;
	memcpy(comm, rec->comm, sizeof(rec->comm));
	comm[sizeof(rec->comm)] = '\0';
	if (rec->tid >= 0 && rec->cpu >= 0) {
		/* "%16s-%-7d [%03d] %5lu.%06lu: ", by hand (millions of lines) */
		char line[128];
		size_t n = strlen(comm), len = 0, k;

		for (k = n; k < 16; k++)
			line[len++] = ' ';
		memcpy(line + len, comm, n);
		len += n;
		line[len++] = '-';
		k = ukp_fmt_ulong(line + len, (unsigned long)rec->tid, 0, false);
		len += k;
		for (; k < 7; k++)
			line[len++] = ' ';
		memcpy(line + len, " [", 2);
		len += 2;
		len += ukp_fmt_ulong(line + len, (unsigned long)rec->cpu, 3, true);
		memcpy(line + len, "] ", 2);
		len += 2;
		len += ukp_fmt_ulong(line + len, (unsigned long)(rec->ts / 1000000000ULL), 5, false);
		line[len++] = '.';
		len += ukp_fmt_ulong(line + len, (unsigned long)(rec->ts % 1000000000ULL / 1000), 6,
				     true);
		memcpy(line + len, ": ", 2);
		len += 2;
		fwrite(line, 1, len, t->out);
	} else {
		fprintf(t->out, "%16s-%-7d [%03d] %5lu.%06lu: ", comm, rec->tid, rec->cpu,
			(unsigned long)(rec->ts / 1000000000ULL),
			(unsigned long)(rec->ts % 1000000000ULL / 1000));
	}
	fputs(pi->event, t->out);
	fputs(": (", t->out);
	if (spec->is_return) {
		fputs(ukp_image_addr(img, rec->caller, buf, sizeof(buf)), t->out);
		fputs(" <- ", t->out);
		fputs(pi->func_name, t->out);
	} else {
		fputs(pi->where_code, t->out);
	}
	fputc(')', t->out);
	ukp_format_args(t->out, img, spec, rec);
	fputc('\n', t->out);
	if (spec->stacktrace)
		ukp_format_stack(t->out, img, spec, rec);
}

/* the trace streams: whatever arrived together is written out */
void ukp_trace_batch(struct ukp_session *s, void *arg)
{
	struct ukp_trace_out *t = arg;

	(void)s;
	if (t->out)
		fflush(t->out);
}

/*
 * Format the records the agent wrote (proto.h: packets of a FROM message
 * and whole messages of its image: SYM, RECS, and EVENT as the socket
 * carries them, which its reader does not write there but which read
 * the same), now that every image has described its probes. 0, or -1
 * when the file is damaged (said so).
 */
int ukp_trace_format_records(struct ukp_session *s, int fd, const struct ukp_session_ops *ops,
		      void *arg)
{
	struct ukp_image *img = NULL;
	struct ukp_recs_group *g;
	struct stat st;
	const char *p;
	size_t pos = 0, gpos = 0, size;
	void *map;
	int ret = 0;

	if (fstat(fd, &st)) {
		ukp_err("the trace's records: %s", strerror(errno));
		return -1;
	}
	size = (size_t)st.st_size;
	if (!size)
		return 0;
	map = mmap(NULL, size, PROT_READ, MAP_PRIVATE, fd, 0);
	if (map == MAP_FAILED) {
		ukp_err("the trace's records: %s", strerror(errno));
		return -1;
	}
	g = malloc(sizeof(*g));
	if (!g) {
		munmap(map, size);
		ukp_err("the trace's records: %s", strerror(ENOMEM));
		return -1;
	}
	g->n = 0;
	madvise(map, size, MADV_SEQUENTIAL);
	p = map;
	/* the whole packets only (proto.h, RECORDS_HEAD) */
	ukp_records_whole(p, &size, &pos);
	while (pos < size) {
		struct ukp_msg h;

		if (size - pos < sizeof(h))
			break;
		memcpy(&h, p + pos, sizeof(h));
		/* (a RECS message is a span of a ring: bounded by the file) */
		if (h.len < sizeof(h) || (h.len & 7) || h.len > size - pos ||
		    (h.len > UKP_MSG_MAX && h.type != UKPM_RECS) || (!img && h.type != UKPM_FROM) ||
		    (h.type != UKPM_FROM && h.type != UKPM_SYM && h.type != UKPM_RECS &&
		     h.type != UKPM_EVENT))
			break;
		if (h.type == UKPM_RECS) {
			if (!g->n)
				gpos = pos;
			if (ukp_recs_take(g, s, img, p + pos, h.len, ops, arg))
				break;
		} else if (g->n && ukp_recs_flush(g, s, ops, arg)) {
			pos = gpos; /* a damaged record: the rest is not shown */
			break;
		} else if (ukp_images_handle(s, &img, p + pos, h.type, h.len, ops, arg)) {
			break;
		}
		pos += h.len;
	}
	if (g->n && ukp_recs_flush(g, s, ops, arg))
		pos = gpos;
	free(g);
	/* the last write of an image that ended abruptly, cut short (a
	 * file without RECORDS_HEAD, of format 3: one with it ends at its
	 * whole packets): its events come from its region
	 * (ukp_region_recover_events) */
	if (pos < size && img && img->recovered && size - pos >= sizeof(struct ukp_msg)) {
		struct ukp_msg h;

		memcpy(&h, p + pos, sizeof(h));
		if (h.len > size - pos && !(h.len & 7) &&
		    (h.len <= UKP_MSG_MAX || h.type == UKPM_RECS))
			pos = size;
	}
	if (pos < size) {
		ukp_warn("the trace's records are damaged after %zu of %zu bytes: the rest is not "
			 "shown", pos, size);
		ret = -1;
	}
	munmap(map, size);
	return ret;
}

/* How the program ukprobe ran ended when a signal killed it, as strace
 * says it, after its events: a trace that stops at a crash says so. (An
 * exit status is ukprobe's own.) */
void ukp_trace_ending(FILE *out, const struct ukp_session *s)
{
	int sig;

	if (s->npids || !s->pid || !WIFSIGNALED(s->wstatus))
		return;
	sig = WTERMSIG(s->wstatus);
	if (sigabbrev_np(sig))
		fprintf(out, "+++ killed by SIG%s%s +++\n", sigabbrev_np(sig),
			WCOREDUMP(s->wstatus) ? " (core dumped)" : "");
	else
		fprintf(out, "+++ killed by signal %d%s +++\n", sig,
			WCOREDUMP(s->wstatus) ? " (core dumped)" : "");
}


int ukp_trace_finish(struct ukp_session *s, int raw, const struct ukp_session_ops *ops,
		     struct ukp_trace_out *t)
{
	int code = 0;

	if (raw >= 0) {
		if (s->first && !s->first->setup_failed &&
		    ukp_trace_format_records(s, raw, ops, t))
			code = UKP_EXIT_FAIL;
		ukp_region_recover_events(s, ops, t);
	}
	if (t->out && s->first && !s->first->setup_failed)
		ukp_trace_ending(t->out, s);
	/* the hist triggers' tables after the events, as the kernel's hist files */
	if (t->out && s->first && !s->first->setup_failed)
		ukp_hist_print(t->out, s);
	return code;
}

int ukp_trace_close(struct ukp_session *s, struct ukp_trace_out *t, int raw, int code)
{
	if (raw >= 0)
		close(raw);
	if (t->json && ukp_json_close(t->json, s))
		code = code ? code : UKP_EXIT_FAIL;
	if (t->out && fclose(t->out))
		code = code ? code : UKP_EXIT_FAIL;
	ukp_session_free(s);
	ukp_cli_free_specs(s->specs, s->nspecs);
	return code;
}
