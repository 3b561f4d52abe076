/* SPDX-License-Identifier: MIT */
/*
 * options.c - the options the commands that run a program share.
 */
#include <errno.h>
#include <getopt.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

enum { OPT_JSON = 256, OPT_NO_OPTIMIZE };

/* The SPECs given so far: -e's words, and the lines of -E files (owned). */
struct spec_texts {
	char **texts;
	int n, cap;
	char **owned;
	int nowned;
};

static int add_text(struct spec_texts *t, char *text, bool owned)
{
	if (t->n == t->cap) {
		int cap = t->cap ? 2 * t->cap : 64;
		char **texts = realloc(t->texts, (size_t)cap * sizeof(*texts));
		char **own = realloc(t->owned, (size_t)cap * sizeof(*own));

		if (texts)
			t->texts = texts;
		if (own)
			t->owned = own;
		if (!texts || !own) {
			if (owned)
				free(text);
			ukp_err("out of memory");
			return -1;
		}
		t->cap = cap;
	}
	t->texts[t->n++] = text;
	if (owned)
		t->owned[t->nowned++] = text;
	return 0;
}

/*
 * -E FILE: one SPEC per line; blank lines and lines starting with '#'
 * are skipped (for thousands of probes, which argv would make unwieldy).
 */
static int add_file(struct spec_texts *t, const char *path)
{
	FILE *f = fopen(path, "r");
	char *line = NULL;
	size_t cap = 0;
	ssize_t len;
	int ret = 0;

	if (!f) {
		ukp_err("%s: %s", path, strerror(errno));
		return -1;
	}
	while (!ret && (len = getline(&line, &cap, f)) >= 0) {
		char *s = line, *e = line + len;

		while (e > s && (e[-1] == '\n' || e[-1] == '\r' || e[-1] == ' ' || e[-1] == '\t'))
			*--e = '\0';
		while (*s == ' ' || *s == '\t')
			s++;
		if (!*s || *s == '#')
			continue;
		s = strdup(s);
		if (!s) {
			ukp_err("out of memory");
			ret = -1;
			break;
		}
		ret = add_text(t, s, true);
	}
	if (!ret && ferror(f)) {
		ukp_err("%s: %s", path, strerror(errno));
		ret = -1;
	}
	free(line);
	fclose(f);
	return ret;
}

static void free_texts(struct spec_texts *t)
{
	int i;

	for (i = 0; i < t->nowned; i++)
		free(t->owned[i]);
	free(t->owned);
	free(t->texts);
}

/*
 * -e SPEC (repeatable), -E FILE (repeatable: a file of SPECs), -o FILE, -f (not for probes), --no-optimize,
 * --json FILE (when json is not NULL), -h. s->mode tells the command.
 */
int ukp_cli_parse_run_options(int argc, char **argv, const char *name, void (*usage)(FILE *),
			      struct ukp_session *s, const char **output, const char **json)
{
	static const struct option opts[] = {
		{ "event", required_argument, NULL, 'e' },
		{ "events-file", required_argument, NULL, 'E' },
		{ "output", required_argument, NULL, 'o' },
		{ "follow", no_argument, NULL, 'f' },
		{ "json", required_argument, NULL, OPT_JSON },
		{ "no-optimize", no_argument, NULL, OPT_NO_OPTIMIZE },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct spec_texts t = { NULL, 0, 0, NULL, 0 };
	const char *bad = NULL;
	int c;

	optind = 1;
	opterr = 0; /* the messages below name ukprobe and the command */
	while ((c = getopt_long(argc, argv, s->mode == UKP_MODE_PROBES ? "+:e:E:o:h" : "+:e:E:o:fh",
				opts, NULL)) != -1) {
		switch (c) {
		case 'e':
			if (add_text(&t, optarg, false))
				goto fail;
			break;
		case 'E':
			if (add_file(&t, optarg))
				goto fail;
			break;
		case 'o':
			*output = optarg;
			break;
		case 'f':
			if (s->mode == UKP_MODE_PROBES) {
				bad = "--follow";
				goto bad_option;
			}
			s->follow = true;
			break;
		case OPT_NO_OPTIMIZE:
			s->no_optimize = true;
			break;
		case OPT_JSON:
			if (!json) {
				bad = "--json";
				goto bad_option;
			}
			*json = optarg;
			break;
		case 'h':
			usage(stdout);
			free_texts(&t);
			return 0;
		case ':':
			/* a short option, or a long one (its argv word) */
			if (optopt > 0 && optopt < 128)
				ukp_err("option -%c needs an argument", optopt);
			else
				ukp_err("option %s needs an argument", argv[optind - 1]);
			goto usage;
		default:
			if (optopt > 0 && optopt < 128)
				ukp_err("unknown option -%c", optopt);
			else
				ukp_err("unknown option %s", argv[optind - 1]);
			goto usage;
		}
	}
	/* probes OBJ [GLOB]: no SPEC; the command makes one */
	if (s->mode == UKP_MODE_PROBES && !t.n) {
		free_texts(&t);
		s->cmd = argv + optind;
		return -1;
	}
	if (ukp_cli_parse_specs(t.texts, t.n, &s->specs)) {
		free_texts(&t);
		return UKP_EXIT_USAGE;
	}
	s->nspecs = t.n;
	free_texts(&t);
	s->cmd = argv + optind;
	return -1;

fail:
	free_texts(&t);
	return UKP_EXIT_USAGE;

bad_option:
	ukp_err("option '%s' is not for ukprobe %s", bad, name);
usage:
	fprintf(stderr, "Try 'ukprobe %s --help'.\n", name);
	free_texts(&t);
	return UKP_EXIT_USAGE;
}
