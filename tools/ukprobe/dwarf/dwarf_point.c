/* SPDX-License-Identifier: MIT */
/*
 * dwarf_point.c - where source-level probes go (dwarf_cli.h): the copies of
 * a function (its out-of-line code, which the symbol table names, and
 * each inlined copy), the copies of a source line (the first address of
 * each: a line in an inlined function has one per place it was inlined,
 * optimized code may duplicate one), and the end of a function's
 * prologue (where gdb and perf probe put a probe on a function whose
 * parameters live in stack slots the prologue fills).
 */
#include <dwarf.h>
#include <fnmatch.h>
#include <gelf.h>
#include <libiberty/demangle.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dwarf_cli.h"

struct sites {
	struct ukp_dw_site *v;
	size_t n, cap;
};

static int sites_add(struct sites *s, Dwarf_Addr pc, Dwarf_Addr func_pc, bool inlined)
{
	size_t i;

	for (i = 0; i < s->n; i++)
		if (s->v[i].pc == pc)
			return 0;
	if (s->n == s->cap) {
		size_t cap = s->cap ? 2 * s->cap : 8;
		struct ukp_dw_site *v = realloc(s->v, cap * sizeof(*v));

		if (!v)
			return -1;
		s->v = v;
		s->cap = cap;
	}
	s->v[s->n++] = (struct ukp_dw_site){ pc, func_pc, inlined };
	return 0;
}

static bool is_func(Dwarf_Die *d)
{
	int t = dwarf_tag(d);

	return t == DW_TAG_subprogram || t == DW_TAG_inlined_subroutine;
}

/*
 * The compilation unit whose code holds pc: by .debug_aranges where the
 * object has them (GCC writes them), else by each unit's own ranges
 * (clang writes no .debug_aranges by default, and this libdw does not
 * fall back by itself). Returns cu, or NULL.
 */
Dwarf_Die *ukp_dw_cu_of(struct ukp_dw *dw, Dwarf_Addr pc, Dwarf_Die *cu)
{
	Dwarf_Off off = 0, next;
	size_t hsize;

	if (dwarf_addrdie(dw->dbg, pc, cu))
		return cu;
	while (dwarf_nextcu(dw->dbg, off, &next, &hsize, NULL, NULL, NULL) == 0) {
		if (dwarf_offdie(dw->dbg, off + hsize, cu) && dwarf_haspc(cu, pc) > 0)
			return cu;
		off = next;
	}
	return NULL;
}

/* The function (subprogram) whose code holds pc, below d: in namespaces
 * and classes too. */
static bool func_at(Dwarf_Die *d, Dwarf_Addr pc, Dwarf_Die *out)
{
	Dwarf_Die c;

	if (dwarf_child(d, &c))
		return false;
	do {
		switch (dwarf_tag(&c)) {
		case DW_TAG_subprogram:
			if (dwarf_haspc(&c, pc) > 0) {
				*out = c;
				return true;
			}
			break;
		case DW_TAG_namespace:
		case DW_TAG_class_type:
		case DW_TAG_structure_type:
		case DW_TAG_union_type:
			if (func_at(&c, pc, out))
				return true;
			break;
		default:
			break;
		}
	} while (dwarf_siblingof(&c, &c) == 0);
	return false;
}

/*
 * The scopes at pc, innermost first, found by hand: this libdw's
 * dwarf_getscopes does not look into namespaces, where clang puts the
 * definitions of a namespace's functions (GCC puts them at the unit's
 * level). The function's blocks and inlined copies holding pc, the
 * function, then its parents.
 */
static int scopes_by_hand(Dwarf_Die *cu, Dwarf_Addr pc, Dwarf_Die **scopes)
{
	Dwarf_Die chain[64], cur, c, *up = NULL;
	int n = 0, nu, i;

	if (!func_at(cu, pc, &chain[0]))
		return 0;
	n = 1;
	cur = chain[0];
	while (n < 64 && dwarf_child(&cur, &c) == 0) {
		bool in = false;

		do {
			int t = dwarf_tag(&c);

			if ((t == DW_TAG_lexical_block || t == DW_TAG_inlined_subroutine) &&
			    dwarf_haspc(&c, pc) > 0) {
				in = true;
				break;
			}
		} while (dwarf_siblingof(&c, &c) == 0);
		if (!in)
			break;
		chain[n++] = c;
		cur = c;
	}
	nu = dwarf_getscopes_die(&chain[0], &up); /* the function, then its parents */
	if (nu < 1)
		nu = 1;
	*scopes = malloc(sizeof(**scopes) * (size_t)(n + nu - 1));
	if (!*scopes) {
		free(up);
		return 0;
	}
	for (i = 0; i < n; i++)
		(*scopes)[i] = chain[n - 1 - i];
	for (i = 1; i < nu; i++)
		(*scopes)[n + i - 1] = up[i];
	free(up);
	return n + nu - 1;
}

int ukp_dw_scopes(struct ukp_dw *dw, Dwarf_Addr pc, Dwarf_Die **scopes)
{
	Dwarf_Die cu;
	int n;

	*scopes = NULL;
	if (!ukp_dw_cu_of(dw, pc, &cu))
		return 0;
	n = dwarf_getscopes(&cu, pc, scopes);
	if (n > 0 && ukp_dw_func_scope(*scopes, n) >= 0)
		return n;
	free(*scopes);
	*scopes = NULL;
	return scopes_by_hand(&cu, pc, scopes);
}

int ukp_dw_func_scope(Dwarf_Die *scopes, int n)
{
	int i;

	for (i = 0; i < n; i++)
		if (is_func(&scopes[i]))
			return i;
	return -1;
}

bool ukp_dw_code_func(Dwarf_Die *scopes, int n, Dwarf_Die *out)
{
	Dwarf_Die *phys;
	int fi = ukp_dw_func_scope(scopes, n), np, i;
	bool ok = false;

	if (fi < 0)
		return false;
	if (dwarf_tag(&scopes[fi]) == DW_TAG_subprogram) {
		*out = scopes[fi];
		return true;
	}
	/* the DIEs that hold the inlined copy: the outermost subprogram */
	np = dwarf_getscopes_die(&scopes[fi], &phys);
	for (i = np - 1; i >= 0 && !ok; i--)
		if (dwarf_tag(&phys[i]) == DW_TAG_subprogram) {
			*out = phys[i];
			ok = true;
		}
	if (np > 0)
		free(phys);
	return ok;
}

/* The symbol table's function name (without a version): its DWARF
 * address, or 0. */
Dwarf_Addr ukp_dw_symbol_pc(struct ukp_dw *dw, const char *name)
{
	int n = dwfl_module_getsymtab(dw->mod), i;
	size_t len = strlen(name);

	for (i = 1; i < n; i++) {
		GElf_Sym sym;
		GElf_Addr addr;
		const char *s = dwfl_module_getsym_info(dw->mod, i, &sym, &addr, NULL, NULL, NULL);

		if (!s || GELF_ST_TYPE(sym.st_info) != STT_FUNC || !sym.st_value)
			continue;
		if (!strncmp(s, name, len) && (s[len] == '\0' || s[len] == '@'))
			return addr - dw->bias;
	}
	return 0;
}

/* A demangled name after its return type ("int ns::f<int>(int)": from
 * "ns::"): the last blank outside <> and () before the parameters. */
static const char *after_return_type(const char *d)
{
	const char *c, *start = d;
	int depth = 0;

	for (c = d; *c && !(depth == 0 && *c == '('); c++) {
		if (*c == '<')
			depth++;
		else if (*c == '>')
			depth--;
		else if (*c == ' ' && depth == 0)
			start = c + 1;
	}
	return start;
}

int ukp_dw_cxx_symbol(struct ukp_dw *dw, const char *pattern, Dwarf_Addr *pc, char **mangled,
		      int col, struct ukp_dw_err *e)
{
	int n = dwfl_module_getsymtab(dw->mod), i, found = 0;
	char first[256] = "", second[256] = "";

	*mangled = NULL;
	for (i = 1; i < n; i++) {
		GElf_Sym sym;
		GElf_Addr addr;
		const char *s = dwfl_module_getsym_info(dw->mod, i, &sym, &addr, NULL, NULL, NULL);
		char *d, *paren;
		bool match;

		if (!s || GELF_ST_TYPE(sym.st_info) != STT_FUNC || !sym.st_value || s[0] != '_' ||
		    (s[1] != 'Z' && s[1] != 'R'))
			continue;
		d = cplus_demangle(s, DMGL_PARAMS | DMGL_ANSI | DMGL_AUTO);
		if (!d)
			continue;
		/* the whole name, or without its parameters (every overload),
		 * each without a template's return type too */
		paren = strchr(d, '(');
		match = !fnmatch(pattern, d, 0) || !fnmatch(pattern, after_return_type(d), 0);
		if (!match && paren) {
			*paren = '\0';
			match = !fnmatch(pattern, d, 0) || !fnmatch(pattern, after_return_type(d), 0);
			*paren = '(';
		}
		if (match && (!found || addr - dw->bias != *pc)) {
			if (!found++) {
				*pc = addr - dw->bias;
				*mangled = strndup(s, strcspn(s, "@"));
				snprintf(first, sizeof(first), "%s", d);
			} else if (found == 2) {
				snprintf(second, sizeof(second), "%s", d);
			}
		}
		free(d);
	}
	if (found == 1 && *mangled)
		return 0;
	free(*mangled);
	*mangled = NULL;
	if (!found)
		return ukp_dw_fail(e, col, "no function %s in %s", pattern, dw->path);
	return ukp_dw_fail(e, col, "%s names %d functions (%s, %s%s): variables by name need one "
			   "(give its parameters: \"%s\")", pattern, found, first, second,
			   found > 2 ? ", ..." : "", first);
}

struct inl_walk {
	const char *name;
	struct sites *s;
	bool nomem;
};

/* Every inlined copy of w->name below d; entry: the out-of-line
 * function's entry they are in. */
static void walk_inlined(Dwarf_Die *d, Dwarf_Addr entry, struct inl_walk *w)
{
	Dwarf_Die child;

	if (dwarf_child(d, &child))
		return;
	do {
		int tag = dwarf_tag(&child);
		Dwarf_Addr pc, e = entry;
		const char *nm;

		if (tag == DW_TAG_subprogram && dwarf_entrypc(&child, &e))
			continue; /* an abstract or declared one: no code */
		if (tag == DW_TAG_inlined_subroutine && (nm = dwarf_diename(&child)) &&
		    !strcmp(nm, w->name) && !dwarf_entrypc(&child, &pc) &&
		    sites_add(w->s, pc, entry, true))
			w->nomem = true;
		if (dwarf_haschildren(&child))
			walk_inlined(&child, e, w);
	} while (!dwarf_siblingof(&child, &child));
}

struct name_find {
	const char *name;
	bool found;
	Dwarf_Addr pc;            /* an out-of-line copy's entry, or 0 */
};

static int func_named(Dwarf_Die *f, void *arg)
{
	struct name_find *nf = arg;
	const char *nm = dwarf_diename(f);
	Dwarf_Addr pc;

	if (!nm || strcmp(nm, nf->name))
		return DWARF_CB_OK;
	nf->found = true;
	if (!nf->pc && !dwarf_entrypc(f, &pc))
		nf->pc = pc;
	return DWARF_CB_OK;
}

int ukp_dw_func_sites(struct ukp_dw *dw, const char *name, struct ukp_dw_site **out,
		      size_t *n, Dwarf_Addr *sym_pc, int col, struct ukp_dw_err *e)
{
	struct sites s = { 0 };
	struct inl_walk w = { name, &s, false };
	Dwarf_Off off = 0, next;
	size_t hsize;
	Dwarf_Die cu;

	*sym_pc = ukp_dw_symbol_pc(dw, name);
	if (*sym_pc && sites_add(&s, *sym_pc, *sym_pc, false))
		return ukp_dw_fail(e, col, "out of memory");
	/* inlined copies: in the CUs that define the function */
	while (!dwarf_nextcu(dw->dbg, off, &next, &hsize, NULL, NULL, NULL)) {
		struct name_find nf = { name, false, 0 };

		if (dwarf_offdie(dw->dbg, off + hsize, &cu)) {
			dwarf_getfuncs(&cu, func_named, &nf, 0);
			if (nf.found) {
				if (!*sym_pc && nf.pc && sites_add(&s, nf.pc, nf.pc, false))
					w.nomem = true;
				walk_inlined(&cu, 0, &w);
			}
		}
		off = next;
	}
	if (w.nomem) {
		free(s.v);
		return ukp_dw_fail(e, col, "out of memory");
	}
	if (!s.n)
		return ukp_dw_fail(e, col, "no function %s in the debug information of %s", name,
				   dw->path);
	*out = s.v;
	*n = s.n;
	return 0;
}

/*
 * The file a DIE was declared in. DWARF 5 numbers files from 0 (the
 * unit's primary file: clang writes DW_AT_decl_file 0), which this libdw's
 * dwarf_decl_file takes for "no file".
 */
static const char *decl_file(Dwarf_Die *d)
{
	const char *f = dwarf_decl_file(d);
	Dwarf_Attribute a;
	Dwarf_Word idx;
	Dwarf_Die cu;
	Dwarf_Files *files;
	size_t nf;

	if (f || !dwarf_attr_integrate(d, DW_AT_decl_file, &a) || dwarf_formudata(&a, &idx) ||
	    idx != 0 || !dwarf_diecu(d, &cu, NULL, NULL) || dwarf_getsrcfiles(&cu, &files, &nf) ||
	    !nf)
		return f;
	return dwarf_filesrc(files, 0, NULL, NULL);
}

int ukp_dw_func_decl(struct ukp_dw *dw, const char *name, const char **file,
		     unsigned int *line, int col, struct ukp_dw_err *e)
{
	Dwarf_Off off = 0, next;
	size_t hsize;
	Dwarf_Die cu;

	while (!dwarf_nextcu(dw->dbg, off, &next, &hsize, NULL, NULL, NULL)) {
		struct name_find nf = { name, false, 0 };

		if (dwarf_offdie(dw->dbg, off + hsize, &cu)) {
			dwarf_getfuncs(&cu, func_named, &nf, 0);
			if (nf.found) {
				Dwarf_Die *scopes = NULL;
				int ns, fi, l = 0;

				/* the function's own DIE: by the scopes at one of
				 * its addresses, else the first one named so */
				ns = nf.pc ? ukp_dw_scopes(dw, nf.pc, &scopes) : 0;
				fi = ukp_dw_func_scope(scopes, ns);
				if (fi >= 0 && dwarf_decl_line(&scopes[fi], &l) == 0 &&
				    (*file = decl_file(&scopes[fi]))) {
					*line = (unsigned int)l;
					free(scopes);
					return 0;
				}
				free(scopes);
			}
		}
		off = next;
	}
	return ukp_dw_fail(e, col, "no function %s with code in the debug information of %s", name,
			   dw->path);
}

/* Does path name file (the same, or ending in "/file")? */
static bool file_matches(const char *path, const char *file)
{
	size_t pl = strlen(path), fl = strlen(file);

	if (pl < fl || strcmp(path + pl - fl, file))
		return false;
	return pl == fl || path[pl - fl - 1] == '/' || file[0] == '/';
}

/* Can the line be the function's, which f is a copy of? Optimized code
 * has rows of an inlined function's lines outside the ranges of its
 * inlined copy, in its caller: not a copy of the line. */
static bool line_in_func(Dwarf_Die *f, const char *file, unsigned int line)
{
	const char *df = decl_file(f);
	int dl = 0;

	if (!df || dwarf_decl_line(f, &dl))
		return true; /* nothing to tell by */
	return file_matches(df, file) && (unsigned int)dl <= line;
}

/* Every row of every line table, by line number: made once per object,
 * so that each FILE:LINE looks at its own rows only. */
struct line_row {
	unsigned int line;
	const char *src;          /* the table's file name (libdw's) */
	Dwarf_Addr pc;
};

static int row_cmp(const void *pa, const void *pb)
{
	const struct line_row *a = pa, *b = pb;

	if (a->line != b->line)
		return a->line < b->line ? -1 : 1;
	return (a->pc > b->pc) - (a->pc < b->pc);
}

static int line_index(struct ukp_dw *dw)
{
	struct line_row *v = NULL;
	size_t n = 0, cap = 0;
	Dwarf_Off off = 0, next;
	size_t hsize;
	Dwarf_Die cu;

	if (dw->rows)
		return 0;
	while (!dwarf_nextcu(dw->dbg, off, &next, &hsize, NULL, NULL, NULL)) {
		Dwarf_Lines *lines;
		size_t nl, i;

		if (dwarf_offdie(dw->dbg, off + hsize, &cu) && !dwarf_getsrclines(&cu, &lines, &nl))
			for (i = 0; i < nl; i++) {
				Dwarf_Line *l = dwarf_onesrcline(lines, i);
				const char *src = l ? dwarf_linesrc(l, NULL, NULL) : NULL;
				bool end = false;
				Dwarf_Addr pc;
				int lno = 0;

				dwarf_lineendsequence(l, &end);
				if (!src || end || dwarf_lineno(l, &lno) || lno <= 0 || dwarf_lineaddr(l, &pc))
					continue;
				if (n == cap) {
					struct line_row *nv;

					cap = cap ? 2 * cap : 4096;
					nv = realloc(v, cap * sizeof(*v));
					if (!nv) {
						free(v);
						return -1;
					}
					v = nv;
				}
				v[n++] = (struct line_row){ (unsigned int)lno, src, pc };
			}
		off = next;
	}
	if (!v && !(v = malloc(sizeof(*v))))
		return -1;
	if (n)
		qsort(v, n, sizeof(*v), row_cmp);
	dw->rows = v;
	dw->nrows = n;
	return 0;
}

/* Where line's rows start in the index. */
static size_t rows_from(const struct ukp_dw *dw, unsigned int line)
{
	const struct line_row *v = dw->rows;
	size_t lo = 0, hi = dw->nrows;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (v[mid].line < line)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* The copy (function scope) row pc is in, into s unless it has one with a
 * lower address already; keys: the copies' DIEs. strict: only a function
 * that can hold the line. 0, or -1 (no memory). */
static int add_copy(struct ukp_dw *dw, Dwarf_Addr pc, const char *file, unsigned int line,
		    const char *func, bool strict, struct sites *s, Dwarf_Off **keys)
{
	Dwarf_Die *scopes, fd;
	int ns = ukp_dw_scopes(dw, pc, &scopes), fi = ukp_dw_func_scope(scopes, ns);
	Dwarf_Off key;
	Dwarf_Addr entry = 0;
	size_t k;

	if ((fi < 0 && (strict || func)) || (fi >= 0 && strict && !line_in_func(&scopes[fi], file, line)) ||
	    (func && (!dwarf_diename(&scopes[fi]) || strcmp(dwarf_diename(&scopes[fi]), func)))) {
		free(scopes);
		return 0;
	}
	/* (code outside any function's DIE: one copy per address) */
	key = fi >= 0 ? dwarf_dieoffset(&scopes[fi]) : ~(Dwarf_Off)pc;
	for (k = 0; k < s->n && (*keys)[k] != key; k++)
		;
	if (k < s->n) {
		if (pc < s->v[k].pc)
			s->v[k].pc = pc;
		free(scopes);
		return 0;
	}
	{
		Dwarf_Off *nk = realloc(*keys, (s->n + 1) * sizeof(**keys));

		if (!nk) {
			free(scopes);
			return -1;
		}
		*keys = nk;
	}
	if (sites_add(s, pc, 0, fi >= 0 && dwarf_tag(&scopes[fi]) == DW_TAG_inlined_subroutine)) {
		free(scopes);
		return -1;
	}
	(*keys)[s->n - 1] = key;
	if (ukp_dw_code_func(scopes, ns, &fd))
		dwarf_entrypc(&fd, &entry);
	s->v[s->n - 1].func_pc = entry;
	free(scopes);
	return 0;
}

int ukp_dw_line_sites(struct ukp_dw *dw, const char *file, unsigned int line,
		      const char *func, struct ukp_dw_site **out, size_t *n, int fcol, int col,
		      struct ukp_dw_err *e)
{
	struct sites s = { 0 };
	Dwarf_Off *keys = NULL;
	unsigned int below = 0, above = 0;
	const struct line_row *v;
	bool file_seen = false, any = false;
	size_t i, first;
	int pass;

	if (line_index(dw))
		return ukp_dw_fail(e, col, "out of memory");
	v = dw->rows;
	first = rows_from(dw, line);
	/* the rows of copies that can hold the line; failing that, any */
	for (pass = 0; pass < 2 && !s.n; pass++)
		for (i = first; i < dw->nrows && v[i].line == line; i++) {
			if (!file_matches(v[i].src, file))
				continue;
			any = true;
			if (add_copy(dw, v[i].pc, file, line, func, pass == 0, &s, &keys)) {
				free(keys);
				free(s.v);
				return ukp_dw_fail(e, col, "out of memory");
			}
		}
	free(keys);
	if (s.n) {
		*out = s.v;
		*n = s.n;
		return 0;
	}
	/* the nearest lines of the file that do have code */
	for (i = 0; i < dw->nrows; i++) {
		if (!file_matches(v[i].src, file))
			continue;
		file_seen = true;
		if (v[i].line < line && v[i].line > below)
			below = v[i].line;
		if (v[i].line > line && (!above || v[i].line < above))
			above = v[i].line;
	}
	if (!file_seen)
		return ukp_dw_fail(e, fcol, "no source file %s in the debug information of %s", file,
				   dw->path);
	if (any || !below || !above)
		return ukp_dw_fail(e, col, "line %u of %s has no code%s (line %u does)", line, file,
				   func || any ? " in this function" : "",
				   below && (!above || line - below <= above - line) ? below : above);
	return ukp_dw_fail(e, col, "line %u of %s has no code%s (lines %u and %u do)", line, file,
			   func ? " in this function" : "", below, above);
}

/* Is d's location at pc a stack slot of the frame (DW_OP_fbreg), as an
 * unoptimized function keeps its parameters? */
static bool in_frame_slot(Dwarf_Die *d, Dwarf_Addr pc)
{
	Dwarf_Attribute a;
	Dwarf_Op *expr;
	size_t len;

	if (!dwarf_attr(d, DW_AT_location, &a) ||
	    dwarf_getlocation_addr(&a, pc, &expr, &len, 1) != 1)
		return false;
	return len && expr[0].atom == DW_OP_fbreg;
}

Dwarf_Addr ukp_dw_after_prologue(struct ukp_dw *dw, Dwarf_Addr entry)
{
	Dwarf_Die *scopes, child, cu;
	Dwarf_Lines *lines;
	Dwarf_Addr lo, hi = 0, best = entry;
	bool skip = false, any_param = false;
	int ns = ukp_dw_scopes(dw, entry, &scopes), fi, l0 = -1, pass;
	size_t nl, i;

	fi = ns ? ns - 1 : -1;
	while (fi >= 0 && dwarf_tag(&scopes[fi]) != DW_TAG_subprogram)
		fi--;
	if (fi < 0 || dwarf_entrypc(&scopes[fi], &lo) || lo != entry ||
	    dwarf_highpc(&scopes[fi], &hi) || !dwarf_diecu(&scopes[fi], &cu, NULL, NULL)) {
		free(scopes);
		return entry;
	}
	/* parameters first; a function without any: its locals */
	for (pass = 0; pass < 2 && !skip && !(pass && any_param); pass++) {
		if (dwarf_child(&scopes[fi], &child))
			break;
		do {
			int t = dwarf_tag(&child);

			if (t == DW_TAG_formal_parameter)
				any_param = true;
			if (t == (pass ? DW_TAG_variable : DW_TAG_formal_parameter) &&
			    in_frame_slot(&child, entry))
				skip = true;
		} while (!skip && !dwarf_siblingof(&child, &child));
	}
	free(scopes);
	if (!skip || dwarf_getsrclines(&cu, &lines, &nl))
		return entry;
	/* the line table's prologue_end, else the row after the entry's */
	for (pass = 0; pass < 2 && best == entry; pass++)
		for (i = 0; i < nl; i++) {
			Dwarf_Line *l = dwarf_onesrcline(lines, i);
			Dwarf_Addr pc;
			bool pe = false;
			int lno = 0;

			if (!l || dwarf_lineaddr(l, &pc) || pc < entry || pc >= hi || dwarf_lineno(l, &lno))
				continue;
			if (!pass) {
				if (!dwarf_lineprologueend(l, &pe) && pe && pc > entry) {
					best = pc;
					break;
				}
				continue;
			}
			/* the next row: the first statement, or the function's
			 * line again past the prologue (a one-line function) */
			if (pc == entry && l0 < 0)
				l0 = lno;
			else if (pc > entry && lno > 0 && l0 >= 0) {
				best = pc;
				break;
			}
		}
	return best;
}
