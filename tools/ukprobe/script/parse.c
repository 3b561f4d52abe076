/* SPDX-License-Identifier: MIT */
/*
 * parse.c - `ukprobe run`'s parser: probes, predicates, action blocks,
 * statements and C-precedence expressions (bpftrace's grammar, the part
 * doc/scripts.md lists). Recursive descent over lex.c's tokens.
 */
#include <stdlib.h>
#include <string.h>

#include "script.h"

struct parser {
	struct lexer lx;
	struct script *sc;
	bool in_pred;             /* in a predicate, outside parentheses: '/' ends it */
	int depth;                /* nesting of expressions and blocks */
};

/* deeper nesting is refused, so that the recursion's stack stays small */
#define MAX_DEPTH 200

static bool deeper(struct parser *ps);

static struct node *node(struct parser *ps, enum nkind k)
{
	struct node *n = sc_alloc(ps->sc, sizeof(*n));

	n->k = k;
	n->line = ps->lx.cur.line;
	n->col = ps->lx.cur.col;
	n->end = ps->lx.cur.end;
	return n;
}

static bool failed(struct parser *ps)
{
	return ps->lx.err;
}

static void syntax(struct parser *ps, const char *what)
{
	if (!ps->lx.err) {
		const struct token *t = &ps->lx.cur;

		if (t->t == T_EOF)
			script_error(ps->sc, t->line, t->col > 1 ? t->col - 1 : 1, t->col,
				     "syntax error, %s", what);
		else
			script_error(ps->sc, t->line, t->col, t->end, "syntax error, %s", what);
	}
	ps->lx.err = true;
}

static bool expect(struct parser *ps, const char *punct)
{
	char what[64];

	if (lex_is(&ps->lx, punct)) {
		lex_next(&ps->lx);
		return true;
	}
	snprintf(what, sizeof(what), "expected '%s'", punct);
	syntax(ps, what);
	return false;
}

static struct node *expr(struct parser *ps);

static void add_arg(struct parser *ps, struct node *n, struct node *a)
{
	n->args = sc_realloc(ps->sc, n->args, (size_t)(n->nargs + 1) * sizeof(*n->args));
	n->args[n->nargs++] = a;
}

/* "(a, b, ...)" or "[a, b, ...]" */
static void arg_list(struct parser *ps, struct node *n, const char *close)
{
	bool saved = ps->in_pred;

	ps->in_pred = false;
	if (!lex_is(&ps->lx, close))
		for (;;) {
			struct node *a = expr(ps);

			if (!a)
				break;
			add_arg(ps, n, a);
			if (!lex_is(&ps->lx, ","))
				break;
			lex_next(&ps->lx);
		}
	ps->in_pred = saved;
	expect(ps, close);
}

/* args->NAME (or args.NAME, bpftrace's later form), and ->FIELD, .FIELD
 * after it: a parameter by name, which the probe's SPEC fetches through
 * the debug information (tools/ukprobe/dwarf_*.c) */
static struct node *args_field(struct parser *ps, struct node *n)
{
	char text[256] = "";
	size_t len = 0;

	while (lex_is(&ps->lx, "->") || lex_is(&ps->lx, ".")) {
		const char *sep = len ? ps->lx.cur.text : "";

		lex_next(&ps->lx);
		if (ps->lx.cur.t != T_IDENT) {
			syntax(ps, "args: a parameter's name (args->NAME)");
			return NULL;
		}
		if (len + strlen(sep) + strlen(ps->lx.cur.text) + 1 > 200) {
			syntax(ps, "args: the field chain is too long");
			return NULL;
		}
		len += (size_t)snprintf(text + len, sizeof(text) - len, "%s%s", sep, ps->lx.cur.text);
		n->end = ps->lx.cur.end;
		lex_next(&ps->lx);
	}
	n->k = N_FETCH;
	n->name = sc_strdup(ps->sc, text);
	n->op[0] = 'a';               /* from args */
	return n;
}

static struct node *primary(struct parser *ps)
{
	struct token *t = &ps->lx.cur;
	struct node *n;

	if (failed(ps))
		return NULL;
	switch (t->t) {
	case T_INT:
		n = node(ps, N_INT);
		n->ival = t->ival;
		lex_next(&ps->lx);
		return n;
	case T_STR:
		n = node(ps, N_STR);
		n->name = sc_strdup(ps->sc, t->text);
		lex_next(&ps->lx);
		return n;
	case T_POS: {
		/* $N: a number when it reads as one, else a string */
		const char *v = t->ival >= 1 && t->ival <= ps->sc->nparams ? ps->sc->params[t->ival - 1] : "";
		char *e;
		long long x = strtoll(v, &e, 0);

		if (*v && !*e) {
			n = node(ps, N_INT);
			n->ival = x;
		} else if (!*v) {
			n = node(ps, N_INT);
			n->ival = 0;
		} else {
			n = node(ps, N_STR);
			n->name = sc_strdup(ps->sc, v);
		}
		lex_next(&ps->lx);
		return n;
	}
	case T_VAR:
		n = node(ps, N_VAR);
		n->name = sc_strdup(ps->sc, t->text);
		lex_next(&ps->lx);
		return n;
	case T_MAP:
		n = node(ps, N_MAP);
		n->name = sc_alloc(ps->sc, strlen(t->text) + 2);
		sprintf(n->name, "@%s", t->text);
		lex_next(&ps->lx);
		if (lex_is(&ps->lx, "[")) {
			lex_next(&ps->lx);
			arg_list(ps, n, "]");
		}
		return n;
	case T_IDENT:
		n = node(ps, N_BUILTIN);
		n->name = sc_strdup(ps->sc, t->text);
		lex_next(&ps->lx);
		if (!strcmp(n->name, "args") && (lex_is(&ps->lx, "->") || lex_is(&ps->lx, ".")))
			return args_field(ps, n);
		if (lex_is(&ps->lx, "(")) {
			n->k = N_CALL;
			lex_next(&ps->lx);
			arg_list(ps, n, ")");
		}
		return n;
	case T_PUNCT:
		if (lex_is(&ps->lx, "(")) {
			bool saved = ps->in_pred;

			lex_next(&ps->lx);
			ps->in_pred = false;
			n = expr(ps);
			ps->in_pred = saved;
			expect(ps, ")");
			return n;
		}
		/* fall through */
	default:
		syntax(ps, "unexpected token");
		return NULL;
	}
}

static struct node *unary(struct parser *ps)
{
	if (lex_is(&ps->lx, "!") || lex_is(&ps->lx, "-") || lex_is(&ps->lx, "~")) {
		struct node *n = node(ps, N_UNOP);

		strcpy(n->op, ps->lx.cur.text);
		lex_next(&ps->lx);
		if (!deeper(ps))
			return NULL;
		n->a = unary(ps);
		ps->depth--;
		if (!n->a)
			return NULL;
		n->end = n->a->end;
		return n;
	}
	return primary(ps);
}

/* binary operators by level, loosest first */
static const char *const levels[][5] = {
	{ "||" }, { "&&" }, { "|" }, { "^" }, { "&" }, { "==", "!=" },
	{ "<", ">", "<=", ">=" }, { "<<", ">>" }, { "+", "-" }, { "*", "/", "%" },
};
#define NLEVELS ((int)(sizeof(levels) / sizeof(levels[0])))

static struct node *binary(struct parser *ps, int level)
{
	struct node *l;
	int chain = 0;            /* a chain is a tree as deep as it is long */

	if (level == NLEVELS)
		return unary(ps);
	l = binary(ps, level + 1);
	while (l && ps->lx.cur.t == T_PUNCT) {
		const char *op = NULL;
		struct node *n;
		int i;

		for (i = 0; i < 5 && levels[level][i]; i++)
			if (!strcmp(ps->lx.cur.text, levels[level][i]))
				op = levels[level][i];
		/* a predicate's closing '/' */
		if (!op || (ps->in_pred && !strcmp(op, "/")))
			break;
		if (++chain > MAX_DEPTH) {
			syntax(ps, "expression too long");
			return NULL;
		}
		n = node(ps, N_BINOP);
		strcpy(n->op, op);
		n->col = l->col;
		n->line = l->line;
		lex_next(&ps->lx);
		n->a = l;
		n->b = binary(ps, level + 1);
		if (!n->b)
			return NULL;
		n->end = n->b->end;
		l = n;
	}
	return l;
}

static bool deeper(struct parser *ps)
{
	if (++ps->depth <= MAX_DEPTH)
		return true;
	syntax(ps, "nested too deeply");
	return false;
}

static struct node *expr_in(struct parser *ps);

static struct node *expr(struct parser *ps)
{
	struct node *n;

	if (!deeper(ps))
		return NULL;
	n = expr_in(ps);
	ps->depth--;
	return n;
}

static struct node *expr_in(struct parser *ps)
{
	struct node *c = binary(ps, 0), *n;

	if (!c || !lex_is(&ps->lx, "?"))
		return c;
	n = node(ps, N_TERNARY);
	n->line = c->line;
	n->col = c->col;
	lex_next(&ps->lx);
	n->a = c;
	n->b = expr(ps);
	if (!n->b || !expect(ps, ":"))
		return NULL;
	n->c = expr(ps);
	if (!n->c)
		return NULL;
	n->end = n->c->end;
	return n;
}

static struct node *block(struct parser *ps);
static struct node *block_in(struct parser *ps, bool top);

static struct node *statement(struct parser *ps)
{
	struct node *n, *e;

	if (ps->lx.cur.t == T_IDENT && !strcmp(ps->lx.cur.text, "if")) {
		n = node(ps, S_IF);
		lex_next(&ps->lx);
		if (!expect(ps, "("))
			return NULL;
		n->a = expr(ps);
		if (!n->a || !expect(ps, ")"))
			return NULL;
		n->b = block(ps);
		if (!n->b)
			return NULL;
		if (ps->lx.cur.t == T_IDENT && !strcmp(ps->lx.cur.text, "else")) {
			lex_next(&ps->lx);
			if (ps->lx.cur.t == T_IDENT && !strcmp(ps->lx.cur.text, "if")) {
				n->c = node(ps, S_BLOCK);
				n->c->a = statement(ps);
				if (!n->c->a)
					return NULL;
			} else {
				n->c = block(ps);
				if (!n->c)
					return NULL;
			}
		}
		return n;
	}
	if (ps->lx.cur.t == T_IDENT &&
	    (!strcmp(ps->lx.cur.text, "while") || !strcmp(ps->lx.cur.text, "unroll") ||
	     !strcmp(ps->lx.cur.text, "return"))) {
		script_error(ps->sc, ps->lx.cur.line, ps->lx.cur.col, ps->lx.cur.end,
			     "'%s' is not supported by ukprobe run", ps->lx.cur.text);
		ps->lx.err = true;
		return NULL;
	}
	e = expr(ps);
	if (!e)
		return NULL;
	if (ps->lx.cur.t == T_PUNCT &&
	    (!strcmp(ps->lx.cur.text, "=") || !strcmp(ps->lx.cur.text, "+=") ||
	     !strcmp(ps->lx.cur.text, "-=") || !strcmp(ps->lx.cur.text, "*=") ||
	     !strcmp(ps->lx.cur.text, "/=") || !strcmp(ps->lx.cur.text, "%=") ||
	     !strcmp(ps->lx.cur.text, "++") || !strcmp(ps->lx.cur.text, "--"))) {
		n = node(ps, S_ASSIGN);
		n->line = e->line;
		n->col = e->col;
		if (e->k != N_VAR && e->k != N_MAP) {
			script_error(ps->sc, e->line, e->col, e->end,
				     "only a $variable or an @map can be assigned to");
			ps->lx.err = true;
			return NULL;
		}
		n->a = e;
		if (!strcmp(ps->lx.cur.text, "++") || !strcmp(ps->lx.cur.text, "--")) {
			/* x++: x += 1 */
			strcpy(n->op, ps->lx.cur.text[0] == '+' ? "+=" : "-=");
			n->b = node(ps, N_INT);
			n->b->ival = 1;
			lex_next(&ps->lx);
		} else {
			strcpy(n->op, ps->lx.cur.text);
			lex_next(&ps->lx);
			n->b = expr(ps);
			if (!n->b)
				return NULL;
		}
		n->end = n->b->end;
		return n;
	}
	n = node(ps, S_EXPR);
	n->line = e->line;
	n->col = e->col;
	n->end = e->end;
	n->a = e;
	return n;
}

/* top: a probe's block, after whose '}' the next probe's text is read
 * raw (lex_probe), not as a token */
static struct node *block_in(struct parser *ps, bool top)
{
	struct node *b = node(ps, S_BLOCK), **tail = &b->a;

	if (!expect(ps, "{") || !deeper(ps))
		return NULL;
	while (!failed(ps) && !lex_is(&ps->lx, "}")) {
		struct node *s;

		if (lex_is(&ps->lx, ";")) {
			lex_next(&ps->lx);
			continue;
		}
		if (ps->lx.cur.t == T_EOF) {
			syntax(ps, "unexpected end of file, expecting }");
			return NULL;
		}
		s = statement(ps);
		if (!s)
			return NULL;
		*tail = s;
		tail = &s->next;
		if (ps->lx.cur.t == T_EOF) {
			syntax(ps, "unexpected end of file, expecting }");
			return NULL;
		}
		if (!lex_is(&ps->lx, "}") && !lex_is(&ps->lx, ";") && s->k != S_IF) {
			syntax(ps, "expected ';' or '}'");
			return NULL;
		}
	}
	if (failed(ps))
		return NULL;
	ps->depth--;
	if (!top)
		lex_next(&ps->lx);
	return b;
}

static struct node *block(struct parser *ps)
{
	return block_in(ps, false);
}

/* "uprobe:OBJ:FUNC", "uretprobe:...", "BEGIN", "END" (and their short
 * names u:, ur:) */
static int probe_spec(struct parser *ps, const char *text, int col, int end)
{
	struct script *sc = ps->sc;
	struct probe p = { 0 };
	const char *colon = strchr(text, ':'), *last;
	size_t tl = colon ? (size_t)(colon - text) : strlen(text);

	p.line = ps->lx.cur.line;
	p.col = col;
	p.end = end;
	p.block = sc->nblocks;
	if (!strcmp(text, "BEGIN") || !strcmp(text, "END")) {
		p.type = text[0] == 'B' ? P_BEGIN : P_END;
	} else if (!colon) {
		script_error(sc, p.line, col, end,
			     "probe '%s' is not supported: ukprobe run traces user space (uprobe, "
			     "uretprobe, usdt, BEGIN, END, interval)", text);
		return -1;
	} else if ((tl == 8 && !strncmp(text, "interval", 8)) || (tl == 1 && text[0] == 'i')) {
		char unit[8] = "";
		long n = 0;
		int used = 0;

		p.type = P_INTERVAL;
		if (sscanf(colon + 1, "%7[a-z]:%ld%n", unit, &n, &used) != 2 || colon[1 + used] ||
		    n <= 0 || (strcmp(unit, "s") && strcmp(unit, "ms")) ||
		    n > (strcmp(unit, "s") ? 86400000L : 86400L)) {
			script_error(sc, p.line, col, end,
				     "interval probes are interval:s:N or interval:ms:N (N from 1, up "
				     "to a day)");
			return -1;
		}
		p.ms = (uint32_t)(strcmp(unit, "s") ? n : n * 1000);
	} else if ((tl == 6 && !strncmp(text, "uprobe", 6)) || (tl == 1 && text[0] == 'u') ||
		   (tl == 9 && !strncmp(text, "uretprobe", 9)) || (tl == 2 && !strncmp(text, "ur", 2))) {
		p.type = tl == 6 || tl == 1 ? P_UPROBE : P_URETPROBE;
		last = strrchr(text, ':');
		if (last == colon || !last[1] || last == colon + 1) {
			script_error(sc, p.line, col, end,
				     "%s needs an object and a function: %s:OBJ:FUNC",
				     p.type == P_UPROBE ? "uprobe" : "uretprobe",
				     p.type == P_UPROBE ? "uprobe" : "uretprobe");
			return -1;
		}
		p.obj = sc_strndup(sc, colon + 1, (size_t)(last - colon - 1));
		p.func = sc_strdup(sc, last + 1);
	} else if ((tl == 4 && !strncmp(text, "usdt", 4)) || (tl == 1 && text[0] == 'U')) {
		/* usdt:OBJ:PROVIDER:NAME, or usdt:OBJ:NAME (any provider): the
		 * SPEC's OBJ:%PROVIDER:NAME (the SDT work) */
		const char *name = strrchr(text, ':'), *prov = name;

		p.type = P_USDT;
		if (name > colon)
			for (prov = name - 1; prov > colon && *prov != ':'; prov--)
				;
		if (name == colon || !name[1] || prov == colon + 1 || name == prov + 1) {
			script_error(sc, p.line, col, end,
				     "usdt needs an object and a probe: usdt:OBJ:PROVIDER:NAME");
			return -1;
		}
		if (prov == colon) {
			/* usdt:OBJ:NAME */
			p.obj = sc_strndup(sc, colon + 1, (size_t)(name - colon - 1));
			p.func = sc_alloc(sc, strlen(name) + 4);
			sprintf(p.func, "%%*:%s", name + 1);
		} else {
			p.obj = sc_strndup(sc, colon + 1, (size_t)(prov - colon - 1));
			p.func = sc_alloc(sc, strlen(prov) + 2);
			sprintf(p.func, "%%%s", prov + 1);
		}
	} else {
		script_error(sc, p.line, col, end,
			     "probe type '%.*s' is not supported: ukprobe run traces user space "
			     "(uprobe, uretprobe, usdt, BEGIN, END, interval)", (int)tl, text);
		return -1;
	}
	p.text = sc_strdup(sc, text);
	sc->probes = sc_realloc(sc, sc->probes, (size_t)(sc->nprobes + 1) * sizeof(*sc->probes));
	sc->probes[sc->nprobes++] = p;
	return 0;
}

int script_parse(struct script *sc)
{
	struct parser ps = { .sc = sc };

	lex_init(&ps.lx, sc);
	for (;;) {
		struct block blk = { 0 };
		char text[1024];
		int col, end;

		bool first = true;

		/* the probes: raw text up to ',' '{' or a predicate */
		for (;;) {
			if (!lex_probe(&ps.lx, text, sizeof(text), &col, &end)) {
				if (first && !*ps.lx.p)
					goto done;
				lex_next(&ps.lx);
				syntax(&ps, "expected a probe");
				return -1;
			}
			if (probe_spec(&ps, text, col, end))
				return -1;
			first = false;
			lex_next(&ps.lx);
			if (!lex_is(&ps.lx, ","))
				break;
		}
		if (ps.lx.err)
			return -1;
		if (lex_is(&ps.lx, "/")) {
			ps.in_pred = true;
			lex_next(&ps.lx);
			blk.pred = expr(&ps);
			ps.in_pred = false;
			if (!blk.pred || !expect(&ps, "/"))
				return -1;
		}
		blk.body = block_in(&ps, true);
		if (!blk.body)
			return -1;
		sc->blocks = sc_realloc(sc, sc->blocks, (size_t)(sc->nblocks + 1) * sizeof(*sc->blocks));
		sc->blocks[sc->nblocks++] = blk;
	}
done:
	if (!sc->nprobes) {
		script_error(sc, 1, 1, 2, "the script has no probe");
		return -1;
	}
	return 0;
}
