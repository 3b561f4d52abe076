/* SPDX-License-Identifier: MIT */
/*
 * cmd_stat.c - "ukprobe stat": run a command with probes that only count,
 * and print hits and misses per event when it ends (the kernel's
 * kprobe_profile, with a header).
 */
#include <stdlib.h>
#include <string.h>

#include "cli.h"

static void usage(FILE *out)
{
	fputs("Usage: ukprobe stat -e SPEC [-e SPEC]... [-o FILE] [--] CMD [ARGS]...\n"
	      "\n"
	      "Run CMD with probes that only count, and print hits and misses per\n"
	      "event when it ends.\n"
	      "\n"
	      "  -e, --event SPEC   a probe (see ukprobe trace --help); its fetch\n"
	      "                     arguments are checked but not fetched\n"
	      "  -o, --output FILE  write the table to FILE instead of standard output\n"
	      "  -h, --help         show this help\n"
	      "\n"
	      "MISSED counts hits that ran no handler: inside another probe's handler\n"
	      "on the same thread, or (return probes) with no free instance.\n"
	      "See ukprobe(1).\n",
	      out);
}

static void print_table(FILE *out, const struct ukp_session *s)
{
	int i;

	fprintf(out, "%-44s %15s %15s\n", "EVENT", "HITS", "MISSED");
	for (i = 0; i < s->nspecs; i++) {
		const struct ukp_spec *spec = &s->specs[i];
		const struct ukp_event_info *info = &s->info[i];
		char name[2 * UKP_SPEC_NAME_MAX + 2];

		snprintf(name, sizeof(name), "%s/%s", spec->group, spec->event);
		if (info->have_stat)
			fprintf(out, "%-44s %15lu %15lu\n", name, (unsigned long)info->hits,
				(unsigned long)info->missed);
		else
			fprintf(out, "%-44s %15s %15s\n", name, "<not counted>", "-");
	}
}

int ukp_cmd_stat(int argc, char **argv)
{
	struct ukp_session s = { .mode = UKP_MODE_STAT };
	const char *output = NULL;
	FILE *out = NULL;
	int code;

	code = ukp_cli_parse_run_options(argc, argv, "stat", usage, &s, &output);
	if (code >= 0)
		return code;
	code = ukp_session_prepare(&s);
	if (!code) {
		out = ukp_open_output(output);
		code = out ? ukp_session_run(&s, NULL, NULL) : UKP_EXIT_FAIL;
		/* a table only when the probes were in place */
		if (out && s.hello && !s.setup_failed)
			print_table(out, &s);
	}
	if (out && out != stdout && fclose(out))
		code = code ? code : UKP_EXIT_FAIL;
	else if (out == stdout)
		fflush(stdout);
	ukp_session_free(&s);
	ukp_cli_free_specs(s.specs, s.nspecs);
	return code;
}
