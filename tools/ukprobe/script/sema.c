/* SPDX-License-Identifier: MIT */
/*
 * sema.c - `ukprobe run`'s checks: the type of every expression, every
 * map's key and value kinds (fixed by its first use), scratch variables,
 * printf formats against their arguments, and what each probe type may
 * use (argN in uprobes, retval in uretprobes). Errors as bpftrace says
 * them, with the line and a caret.
 */
#include <ctype.h>
#include <stdlib.h>
#include <string.h>

#include "proto.h"
#include "script.h"

struct checker {
	struct script *sc;
	struct block *blk;
	bool err;
};

static void err(struct checker *ck, const struct node *n, const char *fmt, const char *a,
		const char *b)
{
	char msg[512];

	if (ck->err)
		return;
	snprintf(msg, sizeof(msg), fmt, a ? a : "", b ? b : "");
	script_error(ck->sc, n->line, n->col, n->end, "%s", msg);
	ck->err = true;
}

int type_words(enum type t)
{
	return t == TY_STR ? 8 : t == TY_STACK ? 1 + USTACK_MAX : t == TY_BUF ? BUF_WORDS : 1;
}

int rec_words(enum type t)
{
	return t == TY_STACK ? 1 + USTACK_REC : type_words(t);
}

int value_words(const struct mapinfo *m)
{
	switch (m->vk) {
	case V_STR:
		return 8;
	case V_MIN:
	case V_MAX:
	case V_AVG:
	case V_STATS:
		return 2;
	case V_HIST:
		return 65;
	case V_LHIST:
		return (int)((m->lmax - m->lmin) / m->lstep) + 2;
	default:
		return 1;
	}
}

static const char *const vk_names[] = {
	"none", "int64", "string", "usym", "probe", "usym", "count", "sum", "min", "max", "avg", "stats",
	"hist", "lhist",
};

static const char *const type_names[] = { "none", "int64", "string", "usym", "probe", "ustack",
					   "usym", "buffer" };

static struct mapinfo *map_of(struct checker *ck, const char *name)
{
	struct script *sc = ck->sc;
	struct mapinfo *m;
	int i;

	for (i = 0; i < sc->nmaps; i++)
		if (!strcmp(sc->maps[i]->name, name))
			return sc->maps[i];
	if (sc->nmaps == 256)
		return NULL;
	m = sc_alloc(sc, sizeof(*m));
	snprintf(m->name, sizeof(m->name), "%s", name);
	m->id = sc->nmaps;
	m->nkeys = -1;
	sc->maps[sc->nmaps++] = m;
	return m;
}

static enum type expr(struct checker *ck, struct node *n);

/* @m[keys]: its keys' types, the same at every use */
static struct mapinfo *map_use(struct checker *ck, struct node *n)
{
	struct mapinfo *m = map_of(ck, n->name);
	int i;

	if (!m) {
		err(ck, n, "too many maps%s%s", NULL, NULL);
		return NULL;
	}
	n->map = m;
	if (n->nargs > MAX_KEYS) {
		err(ck, n, "a map key has at most 8 parts%s%s", NULL, NULL);
		return NULL;
	}
	for (i = 0; i < n->nargs; i++) {
		enum type t = expr(ck, n->args[i]);

		if (ck->err)
			return NULL;
		if (m->nkeys >= 0 && i < m->nkeys && m->keys[i] != t) {
			err(ck, n->args[i], "Argument mismatch for %s: trying to access with arguments "
				"of another type (%s)", n->name, type_names[t]);
			return NULL;
		}
		if (m->nkeys < 0)
			m->keys[i] = t;
	}
	if (m->nkeys >= 0 && m->nkeys != n->nargs) {
		err(ck, n, "Argument mismatch for %s: trying to access with %s keys", n->name,
		    n->nargs ? "another number of" : "no");
		return NULL;
	}
	if (m->nkeys < 0) {
		m->nkeys = n->nargs;
		m->kw = 0;
		for (i = 0; i < n->nargs; i++)
			m->kw += type_words(m->keys[i]);
	}
	return m;
}

/* The index of FETCHARG f in the block's fetch list (added once); kind
 * 'f' a value, 'u' an address (uaddr: the SPEC's @SYM, not what is at
 * it). The list's entries are "KIND:FETCHARG". */
static int fetch_index(struct checker *ck, const struct node *at, const char *f, char kind)
{
	struct block *blk = ck->blk;
	char *e = sc_alloc(ck->sc, strlen(f) + 3);
	int i;

	sprintf(e, "%c:%s", kind, f);
	for (i = 0; i < blk->nfetch; i++)
		if (!strcmp(blk->fetch[i], e))
			return i;
	blk->fetch = sc_realloc(ck->sc, blk->fetch, (size_t)(blk->nfetch + 1) * sizeof(*blk->fetch));
	blk->fetch_at = sc_realloc(ck->sc, blk->fetch_at,
				   (size_t)(blk->nfetch + 1) * sizeof(*blk->fetch_at));
	blk->fetch[blk->nfetch] = e;
	blk->fetch_at[blk->nfetch] = (struct node *)at;
	return blk->nfetch++;
}

/* what the builtins are: their type, and where they may be used */
static enum type builtin(struct checker *ck, struct node *n)
{
	static const char *const kernel[] = {
		"kstack", "ksym", "kaddr", "curtask", "cgroup", "ctx", "jiffies", "sarg0",
		"sarg1", "sarg2", "sarg3", "sarg4", "sarg5", "username", "rand",
	};
	const char *b = n->name;
	size_t i;

	if (!strcmp(b, "pid") || !strcmp(b, "tid") || !strcmp(b, "nsecs") ||
	    !strcmp(b, "elapsed") || !strcmp(b, "cpu") || !strcmp(b, "uid") || !strcmp(b, "gid"))
		return TY_INT;
	if (!strcmp(b, "comm"))
		return TY_STR;
	if (!strcmp(b, "retval")) {
		if (ck->blk->entry || ck->blk->init || ck->blk->usdt)
			err(ck, n, "The retval builtin can only be used with 'uretprobe' probes%s%s",
			    NULL, NULL);
		return TY_INT;
	}
	if (!strncmp(b, "arg", 3) && isdigit((unsigned char)b[3])) {
		int k = atoi(b + 3);

		if (ck->blk->ret || ck->blk->init)
			err(ck, n, "The %s builtin can only be used with 'uprobe' and 'usdt' probes%s",
			    b, NULL);
		else if (ck->blk->usdt && ck->blk->entry)
			err(ck, n, "%s is a register in a uprobe and the marker's argument in a usdt "
				"probe: give them separate blocks%s", b, NULL);
		else if (ck->blk->usdt && (k > 11 || strlen(b) > 5))
			err(ck, n, "%s: a usdt probe has arg0 to arg11 at most%s", b, NULL);
		else if (!ck->blk->usdt && (k > 5 || strlen(b) > 4))
			err(ck, n, "%s: ukprobe run reads arg0 to arg5 (the registers' arguments)%s",
			    b, NULL);
		else if (ck->blk->usdt) {
			/* the SDT note's argument, as the SPEC's $argN
			 * (1-based) fetches it */
			char f[16];

			snprintf(f, sizeof(f), "$arg%d", k + 1);
			n->k = N_FETCH;
			n->name = sc_strdup(ck->sc, f);
			n->ival = fetch_index(ck, n, n->name, 'f');
		}
		return TY_INT;
	}
	if (!strcmp(b, "args")) {
		err(ck, n, "args: name a parameter, args->NAME (its value through the debug "
			"information)%s%s", NULL, NULL);
		return TY_NONE;
	}
	if (!strcmp(b, "func")) {
		if (ck->blk->init)
			err(ck, n, "The func builtin can not be used with BEGIN or END probes%s%s",
			    NULL, NULL);
		return TY_SYM;
	}
	if (!strcmp(b, "probe"))
		return TY_PROBE;
	if (!strcmp(b, "ustack")) {
		if (ck->blk->init)
			err(ck, n, "ustack can only be used in uprobes and uretprobes%s%s", NULL, NULL);
		n->ival = USTACK_MAX;
		return TY_STACK;
	}
	for (i = 0; i < sizeof(kernel) / sizeof(kernel[0]); i++)
		if (!strcmp(b, kernel[i])) {
			err(ck, n, "the %s builtin is not available in ukprobe run: it traces user "
				"space, without BPF%s", b, NULL);
			return TY_NONE;
		}
	err(ck, n, "Unknown identifier: '%s'%s", b, NULL);
	return TY_NONE;
}

static bool is_agg(const char *f)
{
	static const char *const aggs[] = { "count", "sum", "avg", "min", "max", "stats",
					    "hist", "lhist" };
	size_t i;

	for (i = 0; i < sizeof(aggs) / sizeof(aggs[0]); i++)
		if (!strcmp(f, aggs[i]))
			return true;
	return false;
}

static enum type call_expr(struct checker *ck, struct node *n)
{
	if (!strcmp(n->name, "buf")) {
		/* buf(p, n): n bytes at p (n a literal, 1 to 64) */
		if (n->nargs != 2 || n->args[1]->k != N_INT || n->args[1]->ival < 1 ||
		    n->args[1]->ival > 64) {
			err(ck, n, "buf(p, n): n an integer literal from 1 to 64 in ukprobe run%s%s",
			    NULL, NULL);
			return TY_NONE;
		}
		if (expr(ck, n->args[0]) != TY_INT && !ck->err)
			err(ck, n, "buf() expects an address%s%s", NULL, NULL);
		n->ival = n->args[1]->ival;
		return TY_BUF;
	}
	if (!strcmp(n->name, "usym")) {
		/* named by ukprobe when the map is printed */
		if (n->nargs != 1 || expr(ck, n->args[0]) != TY_INT) {
			if (!ck->err)
				err(ck, n, "usym() takes an address%s%s", NULL, NULL);
			return TY_NONE;
		}
		return TY_USYM;
	}
	if (!strcmp(n->name, "ustack")) {
		/* ustack(N): N frames at most */
		if (n->nargs != 1 || n->args[0]->k != N_INT || n->args[0]->ival < 1 ||
		    n->args[0]->ival > USTACK_MAX) {
			err(ck, n, "ustack(N): N from 1 to 32 in ukprobe run (no perf mode)%s%s",
			    NULL, NULL);
			return TY_NONE;
		}
		if (ck->blk->init)
			err(ck, n, "ustack can only be used in uprobes and uretprobes%s%s", NULL, NULL);
		n->ival = n->args[0]->ival;
		return TY_STACK;
	}
	if (!strcmp(n->name, "uaddr")) {
		/* the symbol's address in the probe's object, which the
		 * agent resolves when it places the probe (the SPEC's @SYM) */
		if (n->nargs != 1 || n->args[0]->k != N_STR || !n->args[0]->name[0]) {
			err(ck, n, "uaddr() expects a symbol's name, a string literal%s%s", NULL, NULL);
			return TY_NONE;
		}
		if (ck->blk->init) {
			err(ck, n, "uaddr can only be used with uprobes, uretprobes and usdt probes%s%s",
			    NULL, NULL);
			return TY_NONE;
		}
		{
			char f[80];
			const char *q;

			for (q = n->args[0]->name; *q; q++)
				if (!isalnum((unsigned char)*q) && *q != '_' && *q != '.') {
					err(ck, n->args[0], "uaddr(): '%s' is not a symbol's name%s",
					    n->args[0]->name, NULL);
					return TY_NONE;
				}
			snprintf(f, sizeof(f), "@%s:u64", n->args[0]->name);
			n->k = N_FETCH;
			n->ival = fetch_index(ck, n, f, 'u');
			n->name = sc_strdup(ck->sc, f);
		}
		return TY_INT;
	}
	if (!strcmp(n->name, "str")) {
		if (n->nargs < 1 || n->nargs > 2) {
			err(ck, n, "str() takes one or two arguments%s%s", NULL, NULL);
			return TY_NONE;
		}
		if (expr(ck, n->args[0]) != TY_INT ||
		    (n->nargs == 2 && expr(ck, n->args[1]) != TY_INT))
			err(ck, n, "str() expects an integer or a pointer type as first argument%s%s",
			    NULL, NULL);
		return TY_STR;
	}
	if (is_agg(n->name)) {
		err(ck, n, "%s() should be directly assigned to a map%s", n->name, NULL);
		return TY_NONE;
	}
	if (!strcmp(n->name, "printf") || !strcmp(n->name, "print") || !strcmp(n->name, "exit") ||
	    !strcmp(n->name, "time") ||
	    !strcmp(n->name, "delete") || !strcmp(n->name, "clear") || !strcmp(n->name, "zero")) {
		err(ck, n, "%s() is a statement: it has no value%s", n->name, NULL);
		return TY_NONE;
	}
	if (!strcmp(n->name, "kstack") ||
	    !strcmp(n->name, "ksym") ||
	    !strcmp(n->name, "kaddr") ||
	    !strcmp(n->name, "system") || !strcmp(n->name, "cat") ||
	    !strcmp(n->name, "signal") || !strcmp(n->name, "override")) {
		err(ck, n, "%s() is not supported by ukprobe run%s", n->name, NULL);
		return TY_NONE;
	}
	err(ck, n, "Unknown function: '%s'%s", n->name, NULL);
	return TY_NONE;
}

static enum type expr(struct checker *ck, struct node *n)
{
	enum type a, b, c;
	int i;

	if (ck->err)
		return TY_NONE;
	switch (n->k) {
	case N_INT:
		return n->ty = TY_INT;
	case N_STR:
		if (strlen(n->name) > 63)
			err(ck, n, "a string literal has at most 63 characters%s%s", NULL, NULL);
		return n->ty = TY_STR;
	case N_BUILTIN:
		return n->ty = builtin(ck, n);
	case N_VAR:
		for (i = 0; i < ck->blk->nvars; i++)
			if (!strcmp(ck->blk->vars[i], n->name))
				return n->ty = ck->blk->vtypes[i];
		err(ck, n, "Undefined or undeclared variable: $%s%s", n->name, NULL);
		return TY_NONE;
	case N_MAP: {
		struct mapinfo *m = map_use(ck, n);

		if (!m)
			return TY_NONE;
		if (m->vk == V_NONE) {
			err(ck, n, "Undefined map: %s (read before anything is assigned to it)",
			    n->name, NULL);
			return TY_NONE;
		}
		if (!m->global) {
			err(ck, n, "%s holds %s() values: they are kept per thread and can only be "
				"printed, not read in an expression", n->name, vk_names[m->vk]);
			return TY_NONE;
		}
		return n->ty = m->vk == V_STR ? TY_STR : m->vk == V_SYM ? TY_SYM
						 : m->vk == V_PROBE ? TY_PROBE
						 : m->vk == V_USYM ? TY_USYM : TY_INT;
	}
	case N_CALL:
		return n->ty = call_expr(ck, n);
	case N_FETCH:
		if (n->op[0] != 'a')      /* argN of usdt, uaddr(): checked */
			return n->ty = TY_INT;
		/* args->NAME */
		if (ck->blk->ret || ck->blk->init || ck->blk->usdt) {
			err(ck, n, "The args builtin can only be used with 'uprobe' probes in ukprobe "
				"run%s%s", NULL, NULL);
			return TY_NONE;
		}
		n->ival = fetch_index(ck, n, n->name, 'f');
		return n->ty = TY_INT;
	case N_UNOP:
		if (expr(ck, n->a) != TY_INT)
			err(ck, n, "The %s operator needs an integer%s", n->op, NULL);
		return n->ty = TY_INT;
	case N_BINOP:
		a = expr(ck, n->a);
		b = expr(ck, n->b);
		if (ck->err)
			return TY_NONE;
		if ((!strcmp(n->op, "==") || !strcmp(n->op, "!=")) && a == b && a != TY_NONE &&
		    a != TY_STACK && a != TY_BUF)
			return n->ty = TY_INT;
		if (a != TY_INT || b != TY_INT)
			err(ck, n, "Type mismatch for '%s': comparing '%s' with another type", n->op,
			    type_names[a != TY_INT ? a : b]);
		return n->ty = TY_INT;
	case N_TERNARY:
		a = expr(ck, n->a);
		b = expr(ck, n->b);
		c = expr(ck, n->c);
		if (!ck->err && (a != TY_INT || b != c || b == TY_STACK || b == TY_BUF))
			err(ck, n, "Ternary operator: the condition is an integer and both branches "
				"have one type%s%s", NULL, NULL);
		return n->ty = b;
	default:
		return TY_NONE;
	}
}

/* the format's conversions, checked against the arguments' types */
static void printf_check(struct checker *ck, struct node *n, int first, bool print)
{
	struct script *sc = ck->sc;
	struct fmt f = { 0 };
	const char *p;
	int bytes = 8;

	if (print) {
		f.text = sc_strdup(sc, "");
		f.nargs = 1;
		f.types = sc_alloc(sc, sizeof(*f.types));
		f.types[0] = n->args[0]->ty;
		f.print = true;
		bytes += 8 * rec_words(f.types[0]);
	} else {
		if (n->nargs < 1 || n->args[0]->k != N_STR) {
			err(ck, n, "printf() requires at least one argument: a format string%s%s",
			    NULL, NULL);
			return;
		}
		f.text = sc_strdup(sc, n->args[0]->name);
		for (p = f.text; *p; p++) {
			if (*p != '%')
				continue;
			if (p[1] == '%') {
				p++;
				continue;
			}
			for (p++; *p && strchr("-+ #0", *p); p++)
				;
			while (isdigit((unsigned char)*p) || *p == '.')
				p++;
			while (*p && strchr("hlzjt", *p))
				p++;
			if (!*p || !strchr("diouxXcspr", *p)) {
				err(ck, n->args[0], "printf: Unknown format string token: '%%%s'",
				    *p ? (char[]){ *p, 0 } : "", NULL);
				return;
			}
			f.types = sc_realloc(sc, f.types, (size_t)(f.nargs + 1) * sizeof(*f.types));
			f.types[f.nargs] = *p == 's' ? TY_STR : *p == 'r' ? TY_BUF : TY_INT;
			if (f.nargs + first >= n->nargs) {
				err(ck, n, "printf: Not enough arguments for format string%s%s", NULL,
				    NULL);
				return;
			}
			if (n->args[f.nargs + first]->ty == TY_STACK &&
			    n->args[f.nargs + first]->ival > USTACK_REC &&
			    n->args[f.nargs + first]->k == N_CALL) {
				err(ck, n->args[f.nargs + first], "ustack(N) in a printf: N from 1 to "
				    "16 in ukprobe run (a record holds 192 bytes)%s%s", NULL, NULL);
				return;
			}
			if (*p == 's' && n->args[f.nargs + first]->ty != TY_INT)
				f.types[f.nargs] = n->args[f.nargs + first]->ty;
			if (n->args[f.nargs + first]->ty != f.types[f.nargs]) {
				err(ck, n->args[f.nargs + first],
				    "printf: %%%s specifier expects %s", *p == 's' ? "s" : *p == 'r' ? "r" : "d",
				    *p == 's' ? "a string (or func, probe)" : *p == 'r' ? "a buf()"
									    : "an integer");
				return;
			}
			bytes += 8 * rec_words(f.types[f.nargs]);
			f.nargs++;
		}
		if (f.nargs + first < n->nargs) {
			err(ck, n, "printf: Too many arguments for format string%s%s", NULL, NULL);
			return;
		}
	}
	/* a hit's record goes into a ring slot; BEGIN, END and interval
	 * blocks send theirs in a message */
	if (bytes > (ck->blk->init ? 4000 : UKP_REC_PAYLOAD)) {
		char b[32];

		snprintf(b, sizeof(b), "%d", bytes);
		err(ck, n, "printf: its record would take %s bytes; one holds %s (strings take 64)",
		    b, ck->blk->init ? "4000" : "192");
		return;
	}
	if (!ck->blk->init && bytes > sc->out_max)
		sc->out_max = bytes;
	sc->fmts = sc_realloc(sc, sc->fmts, (size_t)(sc->nfmts + 1) * sizeof(*sc->fmts));
	n->fmt = sc->nfmts;
	sc->fmts[sc->nfmts++] = f;
}

/* an integer literal, or a negated one */
static bool const_int(const struct node *n, int64_t *v)
{
	if (n->k == N_INT) {
		*v = n->ival;
		return true;
	}
	if (n->k == N_UNOP && !strcmp(n->op, "-") && n->a->k == N_INT && n->a->ival >= 0) {
		*v = -n->a->ival;
		return true;
	}
	return false;
}

static void map_kind(struct checker *ck, struct node *at, struct mapinfo *m, enum vkind vk)
{
	if (m->vk != V_NONE && m->vk != vk) {
		err(ck, at, "Type mismatch for %s: trying to assign value of type '%s' when map "
			"already contains a value of another type", m->name, vk_names[vk]);
		return;
	}
	m->vk = vk;
	m->global = vk <= V_USYM;
}

static void assign(struct checker *ck, struct node *s)
{
	struct node *t = s->a, *v = s->b;
	struct block *blk = ck->blk;
	enum type ty;
	int i;

	if (t->k == N_MAP && v->k == N_CALL && is_agg(v->name)) {
		struct mapinfo *m = map_use(ck, t);
		static const struct { const char *f; enum vkind vk; int nargs; } aggs[] = {
			{ "count", V_COUNT, 0 }, { "sum", V_SUM, 1 }, { "avg", V_AVG, 1 },
			{ "min", V_MIN, 1 }, { "max", V_MAX, 1 }, { "stats", V_STATS, 1 },
			{ "hist", V_HIST, 1 }, { "lhist", V_LHIST, 4 },
		};
		size_t k;

		if (!m)
			return;
		if (strcmp(s->op, "=")) {
			err(ck, s, "%s() is assigned with '=' only%s", v->name, NULL);
			return;
		}
		for (k = 0; strcmp(aggs[k].f, v->name); k++)
			;
		if (v->nargs != aggs[k].nargs) {
			err(ck, v, "%s() takes %s argument(s)", v->name,
			    aggs[k].nargs == 0 ? "no" : aggs[k].nargs == 1 ? "one" : "four");
			return;
		}
		for (i = 0; i < v->nargs; i++)
			if (expr(ck, v->args[i]) != TY_INT && !ck->err)
				err(ck, v->args[i], "%s() expects an integer argument%s", v->name, NULL);
		if (aggs[k].vk == V_LHIST) {
			int64_t b[4];

			for (i = 1; i < 4; i++)
				if (!const_int(v->args[i], &b[i]) || b[i] < -(INT64_C(1) << 40) ||
				    b[i] > (INT64_C(1) << 40)) {
					err(ck, v->args[i], "lhist(): min, max and step must be integer "
						"literals (within 2^40)%s%s", NULL, NULL);
					return;
				}
			if (m->vk == V_LHIST && (m->lmin != b[1] || m->lmax != b[2] || m->lstep != b[3])) {
				err(ck, v, "lhist(): %s is used with other bounds elsewhere%s", m->name,
				    NULL);
				return;
			}
			m->lmin = b[1];
			m->lmax = b[2];
			m->lstep = b[3];
			if (m->lstep <= 0 || m->lmax <= m->lmin) {
				err(ck, v, "lhist() step must be >= 1 and max > min%s%s", NULL, NULL);
				return;
			}
			if ((m->lmax - m->lmin) / m->lstep > 400) {
				err(ck, v, "lhist(): at most 400 buckets in ukprobe run%s%s", NULL, NULL);
				return;
			}
		}
		map_kind(ck, v, m, aggs[k].vk);
		m->vw = value_words(m);
		return;
	}
	ty = expr(ck, v);
	if (ck->err)
		return;
	if (ty == TY_STACK || ty == TY_BUF) {
		err(ck, v, "%s is a map key or a printf argument in ukprobe run, not a value",
		    ty == TY_STACK ? "ustack" : "buf()", NULL);
		return;
	}
	if (strcmp(s->op, "=") && ty != TY_INT) {
		err(ck, s, "'%s' needs integers%s", s->op, NULL);
		return;
	}
	if (t->k == N_VAR) {
		for (i = 0; i < blk->nvars && strcmp(blk->vars[i], t->name); i++)
			;
		if (i == blk->nvars) {
			if (strcmp(s->op, "=")) {
				err(ck, t, "Undefined or undeclared variable: $%s%s", t->name, NULL);
				return;
			}
			blk->vars = sc_realloc(ck->sc, blk->vars, (size_t)(i + 1) * sizeof(*blk->vars));
			blk->vtypes = sc_realloc(ck->sc, blk->vtypes, (size_t)(i + 1) * sizeof(*blk->vtypes));
			blk->vars[i] = t->name;
			blk->vtypes[i] = ty;
			blk->nvars++;
		} else if (blk->vtypes[i] != ty) {
			err(ck, s, "Type mismatch for $%s: trying to assign value of type '%s' when "
				"variable already has another type", t->name, type_names[ty]);
			return;
		}
		t->ty = ty;
		return;
	}
	{
		struct mapinfo *m = map_use(ck, t);

		if (!m)
			return;
		map_kind(ck, s, m, ty == TY_STR ? V_STR : ty == TY_SYM ? V_SYM
							   : ty == TY_PROBE ? V_PROBE
							   : ty == TY_USYM ? V_USYM : V_INT);
		m->vw = value_words(m);
	}
}

static void stmt_call(struct checker *ck, struct node *n)
{
	const char *f = n->name;
	int i;

	if (!strcmp(f, "printf")) {
		for (i = 1; i < n->nargs; i++)
			expr(ck, n->args[i]);
		if (!ck->err)
			printf_check(ck, n, 1, false);
	} else if (!strcmp(f, "time")) {
		/* formatted by ukprobe when it prints the record, as bpftrace
		 * does: the time then */
		struct fmt t = { 0 };

		if (n->nargs > 1 || (n->nargs == 1 && n->args[0]->k != N_STR)) {
			err(ck, n, "time() takes a strftime format string, or nothing%s%s", NULL, NULL);
			return;
		}
		t.text = sc_strdup(ck->sc, n->nargs ? n->args[0]->name : "%H:%M:%S\n");
		t.time = true;
		ck->sc->fmts = sc_realloc(ck->sc, ck->sc->fmts, (size_t)(ck->sc->nfmts + 1) * sizeof(*ck->sc->fmts));
		n->fmt = ck->sc->nfmts;
		ck->sc->fmts[ck->sc->nfmts++] = t;
		if (!ck->blk->init && ck->sc->out_max < 8)
			ck->sc->out_max = 8;
	} else if (!strcmp(f, "exit")) {
		if (n->nargs)
			err(ck, n, "exit() takes no argument%s%s", NULL, NULL);
		ck->sc->has_exit = true;
	} else if (!strcmp(f, "print") && n->nargs == 1 && n->args[0]->k == N_MAP &&
		   !n->args[0]->nargs) {
		/* the whole map: its keys are not checked */
		n->args[0]->map = map_of(ck, n->args[0]->name);
		if (!n->args[0]->map)
			return;
		if (!ck->blk->init)
			err(ck, n, "print() of a map is supported in BEGIN, END and interval blocks%s%s", NULL,
			    NULL);
	} else if (!strcmp(f, "print")) {
		if (n->nargs != 1) {
			err(ck, n, "print() takes one argument%s%s", NULL, NULL);
			return;
		}
		if (expr(ck, n->args[0]) == TY_BUF && !ck->err)
			err(ck, n, "print() of a buf() is not supported by ukprobe run: printf(\"%%r\", "
			    "...) it%s%s", NULL, NULL);
		if (n->args[0]->ty == TY_STACK && n->args[0]->ival > USTACK_REC &&
		    n->args[0]->k == N_CALL && !ck->err)
			err(ck, n->args[0], "ustack(N) in a print(): N from 1 to 16 in ukprobe run%s%s",
			    NULL, NULL);
		if (!ck->err)
			printf_check(ck, n, 0, true);
	} else if (!strcmp(f, "delete")) {
		if (n->nargs != 1 || n->args[0]->k != N_MAP) {
			err(ck, n, "delete() expects a map element: delete(@m[key])%s%s", NULL, NULL);
			return;
		}
		if (!map_use(ck, n->args[0]))
			return;
		if (!n->args[0]->map->global && n->args[0]->map->vk != V_NONE)
			err(ck, n, "delete(): %s holds per-thread aggregations; clear() it in END%s",
			    n->args[0]->name, NULL);
	} else if (!strcmp(f, "clear") || !strcmp(f, "zero")) {
		if (n->nargs != 1 || n->args[0]->k != N_MAP || n->args[0]->nargs) {
			err(ck, n, "%s() expects a map: %s(@m)", f, f);
			return;
		}
		n->args[0]->map = map_of(ck, n->args[0]->name);
		if (!n->args[0]->map)
			return;
		if (!ck->blk->init)
			err(ck, n, "%s() is supported in BEGIN, END and interval blocks%s", f, NULL);
	} else {
		expr(ck, n);
	}
}

static void stmts(struct checker *ck, struct node *s)
{
	for (; s && !ck->err; s = s->next) {
		switch (s->k) {
		case S_EXPR:
			if (s->a->k == N_CALL)
				stmt_call(ck, s->a);
			else
				expr(ck, s->a);
			break;
		case S_ASSIGN:
			assign(ck, s);
			break;
		case S_IF:
			if (expr(ck, s->a) != TY_INT && !ck->err)
				err(ck, s->a, "if: the condition must be an integer%s%s", NULL, NULL);
			stmts(ck, s->b->a);
			if (s->c)
				stmts(ck, s->c->a);
			break;
		case S_BLOCK:
			stmts(ck, s->a);
			break;
		default:
			break;
		}
	}
}

int script_check(struct script *sc)
{
	struct checker ck = { .sc = sc };
	int i;

	sc->out_max = 0;
	for (i = 0; i < sc->nprobes; i++) {
		struct probe *p = &sc->probes[i];
		struct block *b = &sc->blocks[p->block];

		if (p->type == P_UPROBE)
			b->entry = true;
		else if (p->type == P_URETPROBE)
			b->ret = true;
		else if (p->type == P_USDT)
			b->usdt = true;
		else
			b->init = true;
		if (p->type == P_BEGIN)
			sc->has_begin = true;
		if (p->type == P_END)
			sc->has_end = true;
		p->spec = p->type <= P_USDT ? sc->nspecs++ : -1;
	}
	for (i = 0; i < sc->nblocks && !ck.err; i++) {
		struct block *b = &sc->blocks[i];

		ck.blk = b;
		if (b->init && (b->entry || b->ret || b->usdt)) {
			err(&ck, b->body, "BEGIN, END and interval probes cannot share a block with uprobes%s%s", NULL,
			    NULL);
			break;
		}
		if (b->pred && expr(&ck, b->pred) != TY_INT && !ck.err)
			err(&ck, b->pred, "the predicate must be an integer%s%s", NULL, NULL);
		stmts(&ck, b->body->a);
	}
	for (i = 0; i < sc->nmaps && !ck.err; i++)
		if (sc->maps[i]->vk == V_NONE) {
			struct node at = { .line = 1, .col = 1, .end = 2 };

			err(&ck, &at, "%s is never assigned a value%s", sc->maps[i]->name, NULL);
		}
	return ck.err ? -1 : 0;
}
