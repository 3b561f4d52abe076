/* SPDX-License-Identifier: MIT */
/*
 * script.h - `ukprobe run`: bpftrace's language, parsed here (lex.c,
 * parse.c), checked (sema.c), translated to C (gen.c), built with the
 * system's C compiler (build.c) and loaded by the agent
 * (common/script_abi.h); its output formatted here (output.c).
 * doc/scripts.md explains the design.
 */
#ifndef UKPROBE_SCRIPT_H
#define UKPROBE_SCRIPT_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

/* ------------------------------------------------------------ tokens */
enum tok {
	T_EOF, T_INT, T_STR, T_IDENT, T_VAR, T_MAP, T_POS, T_PUNCT,
};

struct token {
	enum tok t;
	int line, col, end;       /* 1-based; end: one past, as bpftrace's columns */
	int64_t ival;
	char text[256];           /* ident, var/map name (without $ @), string, punct */
};

/* ------------------------------------------------------------ types */
enum type { TY_NONE, TY_INT, TY_STR, TY_SYM, TY_PROBE, TY_STACK, TY_USYM, TY_BUF };

/* buf(p, n): a length and 64 bytes */
#define BUF_WORDS 9

/* ustack: a count and this many return addresses (ustack(N): N of them) */
#define USTACK_MAX 32
/* ... in a printf or print() record (a ring slot holds 192 bytes) */
#define USTACK_REC 16

/* how a map holds its values */
enum vkind {
	V_NONE, V_INT, V_STR, V_SYM, V_PROBE, V_USYM, /* assigned: one table for the process */
	V_COUNT, V_SUM, V_MIN, V_MAX, V_AVG, V_STATS, V_HIST, V_LHIST, /* per thread */
};

#define MAX_KEYS 8

struct mapinfo {
	char name[64];            /* "@x", "@" */
	int id;
	enum vkind vk;
	int nkeys;
	enum type keys[MAX_KEYS];
	int kw, vw;               /* key and value words */
	int64_t lmin, lmax, lstep;
	bool global;              /* assigned (V_INT ... V_PROBE) */
};

/* ------------------------------------------------------------ the tree */
enum nkind {
	N_INT, N_STR, N_BUILTIN, N_VAR, N_MAP, N_CALL, N_BINOP, N_UNOP, N_TERNARY,
	N_FETCH,                  /* a value the probe's SPEC fetches: args->NAME, a
				   * usdt probe's argN, uaddr("SYM") (name: the fetch) */
	/* statements */
	S_EXPR, S_ASSIGN, S_IF, S_BLOCK,
};

struct node {
	enum nkind k;
	int line, col, end;
	char op[4];               /* N_BINOP, N_UNOP; S_ASSIGN: "=" or "+=" ... */
	int64_t ival;
	char *name;               /* builtin, var, map ("@x"), function; string literal */
	struct node *a, *b, *c;   /* operands; S_IF: cond, then, else; S_ASSIGN: target, value */
	struct node **args;       /* N_CALL's, N_MAP's keys */
	int nargs;
	struct node *next;        /* statements */
	/* sema */
	enum type ty;
	struct mapinfo *map;
	int fmt;                  /* printf: its format's index */
};

/* P_UPROBE ... P_USDT have a SPEC each; the others run in the agent */
enum ptype { P_UPROBE, P_URETPROBE, P_USDT, P_BEGIN, P_END, P_INTERVAL };

struct probe {
	enum ptype type;
	char *obj, *func;         /* uprobe: object as written, function (glob);
				   * usdt: func is "%PROVIDER:NAME" */
	int line, col, end;
	int block;                /* its action block */
	int spec;                 /* uprobes: its SPEC index */
	uint32_t ms;              /* interval: its period */
	char *text;               /* as written (interval's probe builtin) */
};

struct block {
	struct node *pred;
	struct node *body;        /* S_BLOCK */
	bool ret, entry, init;    /* used in a uretprobe / uprobe / BEGIN, END, interval */
	bool usdt;                /* used in a usdt probe */
	/* what its probes' SPECs fetch for it, in order (N_FETCH's ival):
	 * FETCHARGs in the SPEC syntax (common/spec.h) */
	char **fetch;
	struct node **fetch_at;   /* where each is first written */
	int nfetch;
	char **vars;              /* scratch variables ($x), their types */
	enum type *vtypes;
	int nvars;
};

/* A printf's format, split: each conversion with its argument's type. */
struct fmt {
	char *text;
	int nargs;
	enum type *types;
	bool print;               /* print(value): the value and a newline */
	bool time;                /* time(): text is strftime's format */
};

struct script {
	const char *file;         /* "stdin" for -e */
	char *src;
	char **lines;
	int nlines;
	char **params;            /* $1 ... */
	int nparams;
	struct probe *probes;
	int nprobes;
	struct block *blocks;
	int nblocks;
	struct mapinfo *maps[256];
	int nmaps;
	struct fmt *fmts;
	int nfmts;
	int nspecs;
	/* after the DWARF resolution (a function's inlined copies each get
	 * a SPEC): SPEC k is a copy of SPEC origin[k]; NULL: one each */
	int *origin;
	int norigin;
	int out_max;              /* the longest record */
	bool has_begin, has_end;
	bool has_exit;            /* exit() is called somewhere */
	/* every allocation of the stages (free.c), freed by script_free() */
	void **allocs;
	size_t nallocs, capallocs;
};

/* free.c: the stages' allocations, each on the script's list (a parse
 * that fails keeps a partial tree: script_free() frees it all). They
 * never return NULL: out of memory ends ukprobe. */
void *sc_alloc(struct script *sc, size_t n);                /* zeroed */
void *sc_realloc(struct script *sc, void *p, size_t n);     /* p: NULL or sc_alloc's */
char *sc_strdup(struct script *sc, const char *s);
char *sc_strndup(struct script *sc, const char *s, size_t n);

/* lex.c */
struct lexer {
	struct script *sc;
	const char *p;
	int line, col;
	struct token cur;
	bool err;
};
void lex_init(struct lexer *lx, struct script *sc);
void lex_next(struct lexer *lx);
/* a probe's spec, raw ("uprobe:/bin/x:f*"): up to blank, ',', '{' or a
 * '/' after a blank */
bool lex_probe(struct lexer *lx, char *out, size_t len, int *col, int *end);
bool lex_is(const struct lexer *lx, const char *punct);

/* Errors, bpftrace's way: "FILE:LINE:COL-END: ERROR: msg", the line, and
 * a ~ under the columns. */
void script_error(const struct script *sc, int line, int col, int end, const char *fmt, ...)
	__attribute__((format(printf, 5, 6)));

/* parse.c: 0 or -1 (said why) */
int script_parse(struct script *sc);
/* sema.c: 0 or -1 */
int script_check(struct script *sc);
/* gen.c: the C translation */
int script_gen(const struct script *sc, FILE *out);
/* build.c: the shared object, in a new directory (*dir, to remove with
 * script_cleanup); its path, or NULL (said why) */
char *script_build(const struct script *sc, char **dir);
void script_cleanup(char *dir);

/* free.c: everything the stages allocated (not src, not params) */
void script_free(struct script *sc);

int value_words(const struct mapinfo *m);
int type_words(enum type t);
/* ... in a printf or print() record */
int rec_words(enum type t);

#endif /* UKPROBE_SCRIPT_H */
