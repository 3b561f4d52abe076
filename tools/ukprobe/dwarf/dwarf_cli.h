/* SPDX-License-Identifier: MIT */
/*
 * dwarf_cli.h - source-level probes (issue 29): source lines and variables by
 * name, resolved from an object's DWARF (elfutils' libdw) by the CLI,
 * once, as the SPECs are parsed. What comes out is ordinary parsed SPECs:
 * OBJ:SYM+OFFS or OBJ:0xADDR points, and fetch arguments of the forms
 * %REG, +OFFS(...) chains and @SYM, each typed from DWARF; so the agent
 * and the hit path do no DWARF work, and a named argument costs what the
 * same register or memory fetch costs.
 *
 *   dwarf_obj.c    OBJ's file (a path, the command, a process's mapping, the
 *                  loader's directories) and its DWARF (the separate debug
 *                  file by build-id or .gnu_debuglink, as libdwfl finds it)
 *   dwarf_point.c  where: a function's copies (out-of-line, inlined), a
 *                  source line's copies, the end of a prologue
 *   dwarf_var.c    a variable expression at an address to a fetch argument
 *   dwarf_spec.c   the SPECs: resolution, one SPEC per copy, errors
 *   dwarf_list.c   probes --lines and --vars
 *   dwarf_go.c     $goid: where the Go runtime keeps a goroutine's id
 *
 * Context: the CLI's, plain C with malloc; not for signal context.
 */
#ifndef UKPROBE_DWARF_CLI_H
#define UKPROBE_DWARF_CLI_H

#include <elfutils/libdw.h>
#include <elfutils/libdwfl.h>
#include <stdbool.h>
#include <stdio.h>
#include <sys/types.h>

#include "spec.h"

/* Where an OBJ name is looked for besides a path: the command ukprobe
 * runs, the processes it attaches to. */
struct ukp_dw_where {
	char *const *cmd;
	const pid_t *pids;
	int npids;
	/* ukp_dwarf_resolve_specs()'s error about SPEC i at column col of
	 * its text, said by the caller (ukprobe run, in the script's
	 * terms); NULL: said as a SPEC's error */
	void (*err)(int i, int col, const char *msg, void *arg);
	void *err_arg;
};

/* One object's DWARF, opened once per run (kept until ukp_dw_close_all). */
struct ukp_dw {
	char *name;               /* OBJ as written */
	char *path;               /* its file */
	Dwfl *dwfl;
	Dwfl_Module *mod;
	Dwarf *dbg;
	Dwarf_Addr bias;          /* a dwfl address less a DWARF address */
	Dwarf_CFI *cfi;           /* .eh_frame's, else .debug_frame's, or NULL */
	Dwarf_Addr cfi_bias;      /* a dwfl address less a CFI address */
	void *rows;               /* every line table's rows by line (dwarf_point.c) */
	size_t nrows;
	struct ukp_dw *next;
};

/* What went wrong, and the column of the SPEC it is about. */
struct ukp_dw_err {
	int col;
	char msg[512];
};

int ukp_dw_fail(struct ukp_dw_err *e, int col, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* dwarf_obj.c: OBJ's file (malloc'ed), or NULL. */
char *ukp_dw_object_file(const char *obj, const struct ukp_dw_where *w);
/* dwarf_obj.c: OBJ's DWARF, or NULL with *e (at col). */
struct ukp_dw *ukp_dw_open(const char *obj, const struct ukp_dw_where *w, int col,
			   struct ukp_dw_err *e);
void ukp_dw_close_all(void);

/* One place a probe goes: a DWARF address (= the ELF file's address). */
struct ukp_dw_site {
	Dwarf_Addr pc;
	Dwarf_Addr func_pc;       /* the entry of the out-of-line function the
				   * code is in (inlined copies: their caller's) */
	bool inlined;             /* in an inlined copy of the function */
};

/* dwarf_point.c */
/* The DWARF address of the function the symbol table names name (a
 * version suffix aside), or 0. */
Dwarf_Addr ukp_dw_symbol_pc(struct ukp_dw *dw, const char *name);
/* The copies of function name: its out-of-line entry (*sym_pc, when the
 * symbol table names it; 0 else) and its inlined copies' entries. 0 or
 * -1 with *e. */
int ukp_dw_func_sites(struct ukp_dw *dw, const char *name, struct ukp_dw_site **sites,
		      size_t *n, Dwarf_Addr *sym_pc, int col, struct ukp_dw_err *e);
/* The one function of the symbol table whose demangled C++ or Rust name
 * (whole, or without its parameters) matches pattern: its DWARF address
 * and its mangled name (malloc'ed). 0 or -1 with *e (none, or several:
 * overloads). */
int ukp_dw_cxx_symbol(struct ukp_dw *dw, const char *pattern, Dwarf_Addr *pc, char **mangled,
		      int col, struct ukp_dw_err *e);
/* The first address of every copy of FILE:LINE (func: only copies in
 * that function, or NULL). 0 or -1 with *e (the lines near it that do
 * have code; fcol: FILE's column, col LINE's). */
int ukp_dw_line_sites(struct ukp_dw *dw, const char *file, unsigned int line,
		      const char *func, struct ukp_dw_site **sites, size_t *n, int fcol, int col,
		      struct ukp_dw_err *e);
/* The function's declaration: file and line (FUNC:+N). 0 or -1. */
int ukp_dw_func_decl(struct ukp_dw *dw, const char *name, const char **file,
		     unsigned int *line, int col, struct ukp_dw_err *e);
/* The compilation unit whose code holds pc (aranges, else each unit's
 * ranges), or NULL. */
Dwarf_Die *ukp_dw_cu_of(struct ukp_dw *dw, Dwarf_Addr pc, Dwarf_Die *cu);
/* The scopes at pc, innermost first (free *scopes); their number, or 0. */
int ukp_dw_scopes(struct ukp_dw *dw, Dwarf_Addr pc, Dwarf_Die **scopes);
/* The innermost function (subprogram or inlined copy) of scopes, or -1. */
int ukp_dw_func_scope(Dwarf_Die *scopes, int n);
/* The out-of-line function whose code holds the scopes' address (an
 * inlined copy's scopes name the function inlined, not where: the
 * function it was inlined in). */
bool ukp_dw_code_func(Dwarf_Die *scopes, int n, Dwarf_Die *out);
/* Where the out-of-line function at entry has its parameters in place
 * (past the prologue, as gdb and perf probe put a probe), or entry when
 * they already are (in registers, as optimized code has them). */
Dwarf_Addr ukp_dw_after_prologue(struct ukp_dw *dw, Dwarf_Addr entry);

/* dwarf_var.c: the expression s[0..len) (VAR, VAR->F, VAR.F, VAR[N],
 * chains; at column col) at site into fa's fetch (base, param, deref,
 * type unless fa->type_given). 0 or -1 with *e. */
int ukp_dw_var_fetch(struct ukp_dw *dw, const struct ukp_dw_site *site, const char *s,
		     size_t len, int col, struct ukp_fetcharg *fa, struct ukp_dw_err *e);
/* $retval of the function at entry, typed from its return type. */
int ukp_dw_retval(struct ukp_dw *dw, Dwarf_Addr entry, struct ukp_fetcharg *fa);
/* The names of the parameters of the function (or inlined copy) at
 * site, in order: each of n a malloc'ed string in *names (free them). */
int ukp_dw_params(struct ukp_dw *dw, const struct ukp_dw_site *site, char ***names, size_t *n);
/* A type's name as C writes it ("struct node *"), into buf. */
const char *ukp_dw_type_name(Dwarf_Die *type, char *buf, size_t len);
/* The nearest names to name among cands (up to 3, "a, b, c"), into buf. */
void ukp_dw_nearest(const char *name, char *const *cands, size_t n, char *buf, size_t len);

/* dwarf_spec.c: where a SPEC's copies go (a FUNC's past its prologue
 * unless +OFFS is given); *sym_pc the function's symbol, or 0; *mangled
 * its mangled name when the SPEC gave a demangled one (malloc'ed), else
 * NULL. 0 or -1 with *e. */
int ukp_dw_spec_sites(struct ukp_dw *dw, const struct ukp_spec *spec, struct ukp_dw_site **sites,
		      size_t *ns, Dwarf_Addr *sym_pc, char **mangled, struct ukp_dw_err *e);
/* dwarf_spec.c: resolve every SPEC that names a source line or a
 * variable; *specs grows (one SPEC per copy of a line or an inlined
 * function); (*origin)[i]: the index among the SPECs as given of SPEC i
 * (malloc'ed). 0, or -1 after the error was printed. */
int ukp_dwarf_resolve_specs(struct ukp_spec **specs, int *n, int **origin,
			    const struct ukp_dw_where *w);

/* dwarf_go.c: $goid's offset in the runtime's g (param) for every SPEC
 * that fetches it, from the Go program's DWARF or its Go version. 0, or
 * -1 after the error was said. */
int ukp_dw_go_goid(struct ukp_spec *specs, int n, const struct ukp_dw_where *w);

/* dwarf_list.c: probes --lines OBJ:FUNC, --vars OBJ:FUNC|OBJ:FILE:LINE.
 * ukprobe's exit code. */
int ukp_dwarf_list(bool vars, const char *point, const struct ukp_dw_where *w, FILE *out);

#endif /* UKPROBE_DWARF_CLI_H */
