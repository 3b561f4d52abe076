/* SPDX-License-Identifier: MIT */
/*
 * cmd_stat.c - "ukprobe stat": run a command with probes that only count,
 * and print hits and misses per event when it ends (the kernel's
 * kprobe_profile, with a header).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "session.h"
#include "format.h"

static void usage(FILE *out)
{
	fputs("Usage: ukprobe stat -e SPEC [-e SPEC]... [OPTIONS] [--] CMD [ARGS]...\n"
	      "       ukprobe stat -p PID[,PID]... [-d SECONDS] -e SPEC... [OPTIONS]\n"
	      "\n"
	      "Run CMD with probes that only count, and print hits and misses per\n"
	      "event when it ends.\n"
	      "\n"
	      "  -e, --event SPEC   a probe (see ukprobe trace --help); its fetch\n"
	      "                     arguments are checked, and fetched only for --filter\n"
	      "      --filter EXPR  count only the hits of the -e before it that pass EXPR\n"
	      "                     (see ukprobe trace --help)\n"
	      "      --trigger 'hist:keys=FIELD[.MOD][,...][:vals=...][:sort=...][:size=N] [if EXPR]'\n"
	      "                     a histogram of the hits of the -e before it, made in\n"
	      "                     the program, printed after the table (the kernel's\n"
	      "                     hist trigger; see ukprobe-stat(1))\n"
	      "  -E, --events-file FILE  SPECs, one per line (# comments)\n"
	      "  -o, --output FILE  write the table to FILE instead of standard output\n"
	      "      --json FILE    write the counts and the hists to FILE as JSON too\n"
	      "  -p, --pid PID[,PID]...\n"
	      "                     attach to running processes instead of running CMD;\n"
	      "                     ends on Ctrl-C, SIGTERM, -d, or when they exit\n"
	      "  -d, --duration SECONDS\n"
	      "                     with -p: detach SECONDS after the probes are in place\n"
	      "  -f, --follow       count in forked children and exec'd programs too\n"
	      "      --no-optimize  breakpoint probes only: no jump optimization\n"
	      "  -h, --help         show this help\n"
	      "\n"
	      "MISSED counts hits that ran no handler: inside another probe's handler\n"
	      "on the same thread, or (return probes) with no free instance.\n"
	      "See ukprobe-stat(1).\n",
	      out);
}

struct row {
	uint32_t spec;
	const char *group, *event;
	bool counted;
	uint64_t hits, missed;
};

struct table {
	struct row *rows;
	size_t n, cap;
	/* rows by SPEC and event: index + 1, or 0 (a glob has thousands) */
	size_t *idx, mask;
};

static size_t row_hash(uint32_t spec, const char *event)
{
	size_t h = 1469598103934665603ULL ^ spec;

	for (; *event; event++)
		h = (h ^ (unsigned char)*event) * 1099511628211ULL;
	return h;
}

/* Where the row of (spec, event) is, or would go, in t->idx. */
static size_t *idx_slot(const struct table *t, uint32_t spec, const char *event)
{
	size_t h = row_hash(spec, event) & t->mask;

	while (t->idx[h] && (t->rows[t->idx[h] - 1].spec != spec ||
			     strcmp(t->rows[t->idx[h] - 1].event, event)))
		h = (h + 1) & t->mask;
	return &t->idx[h];
}

static struct row *row_of(struct table *t, uint32_t spec, const char *group, const char *event)
{
	size_t *slot, i;

	if (t->idx && *(slot = idx_slot(t, spec, event)))
		return &t->rows[*slot - 1];
	if (t->n == t->cap) {
		size_t cap = t->cap ? t->cap * 2 : 32, *idx = calloc(2 * cap, sizeof(*idx));
		struct row *r = realloc(t->rows, cap * sizeof(*r));

		if (r)
			t->rows = r;
		if (!r || !idx) {
			free(idx);
			return NULL;
		}
		t->cap = cap;
		free(t->idx);
		t->idx = idx;
		t->mask = 2 * cap - 1;
		for (i = 0; i < t->n; i++)
			*idx_slot(t, t->rows[i].spec, t->rows[i].event) = i + 1;
	}
	t->rows[t->n] = (struct row){ spec, group, event, false, 0, 0 };
	*idx_slot(t, spec, event) = ++t->n;
	return &t->rows[t->n - 1];
}

static int row_cmp(const void *pa, const void *pb)
{
	const struct row *a = pa, *b = pb;

	return (a->spec > b->spec) - (a->spec < b->spec);
}

/*
 * One row per event, summed over every image (-f): SPECs in -e order, a
 * glob's functions in the order they were registered; a SPEC that was
 * never registered anywhere is shown as such.
 */
static int print_table(FILE *out, FILE *json, struct ukp_session *s)
{
	struct table t = { 0 };
	size_t i, k;
	int j;

	for (i = 0; i < s->nimages; i++) {
		const struct ukp_image *img = s->images[i];

		for (k = 0; k < img->nprobes; k++) {
			const struct ukp_probe_info *pi = &img->probes[k];
			struct row *r;

			if (!pi->used)
				continue;
			r = row_of(&t, pi->spec, s->specs[pi->spec].group, pi->event);
			if (!r)
				goto nomem;
			if (pi->have_stat) {
				r->counted = true;
				r->hits += pi->hits;
				r->missed += pi->missed;
			}
		}
	}
	for (j = 0; j < s->nspecs; j++)
		if (!s->specs[j].is_glob && !s->states[j].registered &&
		    !row_of(&t, (uint32_t)j, s->specs[j].group, s->specs[j].event))
			goto nomem;
	/* stable: a SPEC's rows keep their order */
	for (i = 1; i < t.n; i++) {
		struct row r = t.rows[i];

		for (k = i; k > 0 && row_cmp(&t.rows[k - 1], &r) > 0; k--)
			t.rows[k] = t.rows[k - 1];
		t.rows[k] = r;
	}
	fprintf(out, "%-44s %15s %15s\n", "EVENT", "HITS", "MISSED");
	for (i = 0; i < t.n; i++) {
		const struct row *r = &t.rows[i];
		char name[2 * UKP_SPEC_NAME_MAX + 2];

		snprintf(name, sizeof(name), "%s/%s", r->group, r->event);
		if (r->counted)
			fprintf(out, "%-44s %15lu %15lu\n", name, (unsigned long)r->hits,
				(unsigned long)r->missed);
		else
			fprintf(out, "%-44s %15s %15s\n", name,
				s->states[r->spec].registered ? "<not counted>" : "<not registered>",
				"-");
	}
	if (json) {
		fputs("{\"events\":[", json);
		for (i = 0; i < t.n; i++) {
			const struct row *r = &t.rows[i];
			char name[2 * UKP_SPEC_NAME_MAX + 2];

			snprintf(name, sizeof(name), "%s/%s", r->group, r->event);
			fputs(i ? ",\n{\"event\":" : "\n{\"event\":", json);
			ukp_json_str(json, name, sizeof(name));
			if (r->counted)
				fprintf(json, ",\"hits\":%lu,\"missed\":%lu}", (unsigned long)r->hits,
					(unsigned long)r->missed);
			else
				fprintf(json, ",\"registered\":%s}",
					s->states[r->spec].registered ? "true" : "false");
		}
		fputs("]", json);
		ukp_hist_json(json, s);
		fputs("}\n", json);
	}
	free(t.rows);
	free(t.idx);
	return 0;
nomem:
	free(t.rows);
	free(t.idx);
	ukp_err("out of memory");
	return -1;
}

int ukp_cmd_stat(int argc, char **argv)
{
	struct ukp_session s = { .mode = UKP_MODE_STAT };
	const char *output = NULL, *json = NULL;
	FILE *out = NULL, *jf = NULL;
	int code;

	code = ukp_cli_parse_run_options(argc, argv, "stat", usage, &s, &output, &json);
	if (code >= 0)
		return code;
	code = ukp_session_prepare(&s);
	if (!code && json) {
		jf = fopen(json, "w");
		if (!jf) {
			ukp_err("cannot write %s: %s", json, strerror(errno));
			code = UKP_EXIT_FAIL;
		}
	}
	if (!code) {
		out = ukp_open_output(output);
		code = out ? ukp_session_run(&s, NULL, NULL) : UKP_EXIT_FAIL;
		/* a table only when the probes were in place */
		if (out && s.first && !s.first->setup_failed && s.states && print_table(out, jf, &s))
			code = code ? code : UKP_EXIT_FAIL;
		/* the hist triggers' tables after it, as the kernel's hist files */
		if (out && s.first && !s.first->setup_failed && s.states)
			ukp_hist_print(out, &s);
	}
	if (jf && (ferror(jf) | fclose(jf))) {
		ukp_err("cannot write %s", json);
		code = code ? code : UKP_EXIT_FAIL;
	}
	if (out && fclose(out))
		code = code ? code : UKP_EXIT_FAIL;
	ukp_session_free(&s);
	ukp_cli_free_specs(s.specs, s.nspecs);
	return code;
}
