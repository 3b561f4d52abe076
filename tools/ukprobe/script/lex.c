/* SPDX-License-Identifier: MIT */
/*
 * lex.c - `ukprobe run`'s tokens (bpftrace's): numbers, strings,
 * identifiers, $vars, $1 parameters, @maps, punctuation; line and block
 * comments. And the error report every stage uses.
 */
#include <ctype.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "script.h"

void script_error(const struct script *sc, int line, int col, int end, const char *fmt, ...)
{
	va_list ap;
	const char *src;
	int i;

	if (end <= col)
		end = col + 1;
	fprintf(stderr, "%s:%d:%d-%d: ERROR: ", sc->file, line, col, end);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	if (line < 1 || line > sc->nlines)
		return;
	src = sc->lines[line - 1];
	for (i = 0; src[i]; i++)
		fputs(src[i] == '\t' ? "    " : (char[]){ src[i], 0 }, stderr);
	fputc('\n', stderr);
	for (i = 0; src[i] && i < end - 1; i++) {
		char m = i < col - 1 ? ' ' : '~';

		if (src[i] == '\t')
			fprintf(stderr, "%c%c%c%c", m, m, m, m);
		else
			fputc(m, stderr);
	}
	fputc('\n', stderr);
}

void lex_init(struct lexer *lx, struct script *sc)
{
	char *copy, *s, *nl;

	lx->sc = sc;
	lx->p = sc->src;
	lx->line = 1;
	lx->col = 1;
	lx->err = false;
	/* the lines, for error reports */
	copy = sc_strdup(sc, sc->src);
	sc->nlines = 0;
	sc->lines = NULL;
	for (s = copy; s; s = nl ? nl + 1 : NULL) {
		nl = strchr(s, '\n');
		if (nl)
			*nl = '\0';
		sc->lines = sc_realloc(sc, sc->lines, (size_t)(sc->nlines + 1) * sizeof(*sc->lines));
		sc->lines[sc->nlines++] = s;
	}
}

static void adv(struct lexer *lx)
{
	if (*lx->p == '\n') {
		lx->line++;
		lx->col = 1;
	} else {
		lx->col++;
	}
	lx->p++;
}

static void skip_blank(struct lexer *lx)
{
	for (;;) {
		if (isspace((unsigned char)*lx->p)) {
			adv(lx);
		} else if (lx->p[0] == '/' && lx->p[1] == '/') {
			while (*lx->p && *lx->p != '\n')
				adv(lx);
		} else if (lx->p[0] == '/' && lx->p[1] == '*') {
			adv(lx);
			adv(lx);
			while (*lx->p && !(lx->p[0] == '*' && lx->p[1] == '/'))
				adv(lx);
			if (*lx->p) {
				adv(lx);
				adv(lx);
			}
		} else {
			return;
		}
	}
}

static void fail(struct lexer *lx, const char *what)
{
	if (!lx->err)
		script_error(lx->sc, lx->cur.line, lx->cur.col, lx->col, "%s", what);
	lx->err = true;
	lx->cur.t = T_EOF;
}

static const char *const puncts[] = {
	"<<=", ">>=", "==", "!=", "<=", ">=", "&&", "||", "<<", ">>", "++", "--", "+=", "-=",
	"*=", "/=", "%=", "&=", "|=", "^=", "->",
};

void lex_next(struct lexer *lx)
{
	struct token *t = &lx->cur;
	size_t n = 0, i;

	skip_blank(lx);
	t->line = lx->line;
	t->col = lx->col;
	t->text[0] = '\0';
	t->ival = 0;
	if (!*lx->p) {
		t->t = T_EOF;
	} else if (isdigit((unsigned char)*lx->p)) {
		char *e;

		t->t = T_INT;
		t->ival = (int64_t)strtoull(lx->p, &e, 0);
		while (lx->p < e)
			adv(lx);
		if (isalpha((unsigned char)*lx->p) || *lx->p == '_')
			fail(lx, "invalid number");
	} else if (*lx->p == '"') {
		t->t = T_STR;
		adv(lx);
		while (*lx->p && *lx->p != '"' && *lx->p != '\n') {
			char ch = *lx->p;

			if (ch == '\\') {
				adv(lx);
				ch = *lx->p == 'n' ? '\n' : *lx->p == 't' ? '\t' : *lx->p == '0' ? '\0' : *lx->p;
				if (ch == '\0' && *lx->p != '0')
					break;
			}
			if (n + 1 < sizeof(t->text))
				t->text[n++] = ch;
			adv(lx);
		}
		t->text[n] = '\0';
		if (*lx->p != '"') {
			fail(lx, "unterminated string");
			return;
		}
		adv(lx);
	} else if (*lx->p == '$' || *lx->p == '@' || isalpha((unsigned char)*lx->p) ||
		   *lx->p == '_') {
		char sigil = *lx->p;

		if (sigil == '$' || sigil == '@')
			adv(lx);
		while ((isalnum((unsigned char)*lx->p) || *lx->p == '_') && n + 1 < sizeof(t->text)) {
			t->text[n++] = *lx->p;
			adv(lx);
		}
		t->text[n] = '\0';
		if (sigil == '@')
			t->t = T_MAP;
		else if (sigil != '$')
			t->t = T_IDENT;
		else if (n && isdigit((unsigned char)t->text[0])) {
			t->t = T_POS;
			t->ival = atoi(t->text);
		} else if (n) {
			t->t = T_VAR;
		} else {
			fail(lx, "a variable needs a name: $name");
			return;
		}
	} else {
		t->t = T_PUNCT;
		for (i = 0; i < sizeof(puncts) / sizeof(puncts[0]); i++)
			if (!strncmp(lx->p, puncts[i], strlen(puncts[i])))
				break;
		n = i < sizeof(puncts) / sizeof(puncts[0]) ? strlen(puncts[i]) : 1;
		if (n == 1 && !strchr("{}()[],;:/*+-%&|^!~<>=?.", *lx->p)) {
			fail(lx, "unexpected character");
			return;
		}
		memcpy(t->text, lx->p, n);
		t->text[n] = '\0';
		for (i = 0; i < n; i++)
			adv(lx);
	}
	t->end = lx->col;
}

bool lex_probe(struct lexer *lx, char *out, size_t len, int *col, int *end)
{
	size_t n = 0;

	skip_blank(lx);
	*col = lx->col;
	lx->cur.line = lx->line;
	while (*lx->p && !isspace((unsigned char)*lx->p) && *lx->p != ',' && *lx->p != '{' &&
	       n + 1 < len) {
		out[n++] = *lx->p;
		adv(lx);
	}
	out[n] = '\0';
	*end = lx->col;
	return n > 0;
}

bool lex_is(const struct lexer *lx, const char *punct)
{
	return lx->cur.t == T_PUNCT && !strcmp(lx->cur.text, punct);
}
