// SPDX-License-Identifier: MIT
/*
 * test_usdt_notes.c - every SDT note of the machine parsed: each ELF
 * object of the machine's own architecture under /usr/lib, /usr/bin,
 * /usr/sbin (PostgreSQL's /usr/lib/postgresql among them, when
 * installed) read with module_file_usdt_on_each_probe(), and each of its
 * notes' arguments decoded, or refused on purpose with its reason
 * (common/sdt_refusal.c: the forms ukprobe cannot fetch right). An
 * argument the decoder does not know fails the test, named with its
 * object, probe and text. Directories that are absent are skipped.
 * UKP_CLI_TARGETS (the build's tests/cli) adds ukprobe's own SDT
 * targets, whose notes have the index forms and a refused one
 * (tgt_sdt_index's thread-local, "%fs:tls_v@tpoff" on x86-64; tgt_sdt's
 * global on AArch64, "[x1, #:lo12:.LANCHOR0]").
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <criterion/criterion.h>

#include "sdt_refusal.h"
#include "ukprobes.h"

#define MAX_BAD 20

struct tally {
	const char *path;
	unsigned long objects, notes, args, decoded, refused, pg_notes, index, pg_objects;
	unsigned long bad;
	char bad_text[MAX_BAD][512];
	char refusals[8][256];
	unsigned long nrefusals;
};

static bool decoded_ok(const struct usdt_arg *a)
{
	if (a->size != 1 && a->size != 2 && a->size != 4 && a->size != 8)
		return false;
	if (a->kind == USDT_ARG_INDEX)
		return a->scale == 1 || a->scale == 2 || a->scale == 4 || a->scale == 8;
	return a->kind >= USDT_ARG_REG && a->kind <= USDT_ARG_ADDR;
}

/* Does the argument's text name an index register ("(%B,%I,S)",
 * "(,%I,S)", "[xB, xI]")? Those must come back as USDT_ARG_INDEX. */
static bool index_syntax(const char *t, size_t len)
{
	const char *open = memchr(t, '(', len), *comma;

	if (!open)
		open = memchr(t, '[', len);
	if (!open)
		return false;
	comma = memchr(open, ',', len - (size_t)(open - t));
	if (!comma)
		return false;
	while (++comma < t + len && *comma == ' ')
		;
	return comma < t + len && (*comma == '%' || *comma == 'x');
}

static int note_cb(void *data, const struct usdt_probe *p)
{
	struct tally *t = data;
	int i;

	t->notes++;
	if (strstr(t->path, "/postgresql/"))
		t->pg_notes++;
	for (i = 0; i < p->nargs; i++) {
		const struct usdt_arg *a = &p->arg[i];
		bool known;
		const char *why;

		t->args++;
		if (a->kind) {
			if (decoded_ok(a) &&
			    index_syntax(a->text, a->textlen) == (a->kind == USDT_ARG_INDEX)) {
				t->decoded++;
				t->index += a->kind == USDT_ARG_INDEX;
				continue;
			}
			why = "decoded out of bounds, or not as the index register its text names";
			known = false;
		} else {
			why = ukp_sdt_refusal(a->text, a->textlen, &known);
		}
		if (known) {
			t->refused++;
			if (t->nrefusals < 8)
				snprintf(t->refusals[t->nrefusals++], sizeof(t->refusals[0]),
					 "%s %s:%s \"%.*s\": %s", t->path, p->provider, p->name,
					 (int)a->textlen, a->text, why);
			continue;
		}
		if (t->bad < MAX_BAD)
			snprintf(t->bad_text[t->bad], sizeof(t->bad_text[0]), "%s %s:%s $arg%d \"%.*s\": %s",
				 t->path, p->provider, p->name, i + 1, (int)a->textlen, a->text, why);
		t->bad++;
	}
	/* as many arguments as the note's text has (at most 12) */
	if (p->nargs == 0 && p->args[0] && p->args[strspn(p->args, " ")]) {
		if (t->bad < MAX_BAD)
			snprintf(t->bad_text[t->bad], sizeof(t->bad_text[0]), "%s %s:%s: no argument of \"%s\"",
				 t->path, p->provider, p->name, p->args);
		t->bad++;
	}
	return 0;
}

/* An ELF file (by its magic; symbolic links are walked where they lead
 * to, once, as the regular file they name). */
static bool is_elf(const char *path)
{
	char m[4];
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
	bool yes;

	if (fd < 0)
		return false;
	yes = read(fd, m, 4) == 4 && !memcmp(m, "\177ELF", 4);
	close(fd);
	return yes;
}

static void walk(const char *dir, struct tally *t, int depth)
{
	DIR *d = opendir(dir);
	struct dirent *e;

	if (!d || depth > 12) {
		if (d)
			closedir(d);
		return;
	}
	while ((e = readdir(d))) {
		char path[4096];
		struct stat st;
		int ret;

		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
			continue;
		if ((size_t)snprintf(path, sizeof(path), "%s/%s", dir, e->d_name) >= sizeof(path))
			continue;
		if (lstat(path, &st))
			continue;
		if (S_ISDIR(st.st_mode)) {
			walk(path, t, depth + 1);
			continue;
		}
		if (!S_ISREG(st.st_mode) || st.st_size < 64 || !is_elf(path))
			continue;
		t->path = path;
		unsigned long before = t->notes;

		ret = module_file_usdt_on_each_probe(path, note_cb, t);
		/* -ENOEXEC: another architecture's object, or no ELF the
		 * library reads (an object file, a core) */
		cr_assert(ret == 0 || ret == -ENOEXEC || ret == -ENOENT, "%s: %d", path, ret);
		if (t->notes > before)
			t->objects++;
		/* PostgreSQL's, of this machine's architecture */
		if (!ret && strstr(path, "/postgresql/"))
			t->pg_objects++;
	}
	closedir(d);
}

Test(usdt_notes, every_note_of_the_machine, .timeout = 600)
{
	static struct tally t;
	static const char *const roots[] = { "/usr/lib", "/usr/bin", "/usr/sbin" };
	struct stat st;
	unsigned long i;

	const char *own = getenv("UKP_CLI_TARGETS");

	for (i = 0; i < sizeof(roots) / sizeof(roots[0]); i++)
		walk(roots[i], &t, 0);
	if (own)
		walk(own, &t, 0);
	fprintf(stderr, "usdt_notes: %lu objects with SDT notes, %lu notes, %lu arguments: "
		"%lu decoded (%lu with an index register), %lu refused on purpose, %lu not decoded; "
		"%lu notes of PostgreSQL\n", t.objects, t.notes, t.args, t.decoded, t.index, t.refused,
		t.bad, t.pg_notes);
	for (i = 0; i < t.nrefusals; i++)
		fprintf(stderr, "usdt_notes: refused: %s\n", t.refusals[i]);
	for (i = 0; i < t.bad && i < MAX_BAD; i++)
		fprintf(stderr, "usdt_notes: NOT DECODED: %s\n", t.bad_text[i]);
	cr_assert_eq(t.bad, 0, "%lu arguments not decoded (listed above)", t.bad);
	cr_assert_eq(t.decoded + t.refused, t.args);
	/* PostgreSQL's server has its notes (DTrace probes), when installed
	 * for this architecture */
	if (!stat("/usr/lib/postgresql", &st) && t.pg_objects)
		cr_assert_gt(t.pg_notes, 0);
	/* (the build's own targets: which forms they have is the compiler's
	 * choice; GCC writes index forms and, on x86-64, a "%fs:" one that
	 * is refused; cli_usdt_index requires them of GCC's build) */
}
