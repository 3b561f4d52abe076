/* SPDX-License-Identifier: MIT */
/*
 * dwarf_list.c - ukprobe probes --lines and --vars (dwarf_cli.h), as perf
 * probe's -L and -V: the source lines of a function that have code (each
 * numbered as in its file: OBJ:FILE:LINE probes it), and the variables a
 * probe at a function or a line can name, with their types, at each copy.
 */
#include <dwarf.h>
#include <libiberty/demangle.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "dwarf_cli.h"

/* The file a line table names, as a path to open (relative to the CU's
 * compilation directory). */
static void source_path(Dwarf_Die *cu, const char *src, char *buf, size_t len)
{
	Dwarf_Attribute a;
	const char *dir = dwarf_attr(cu, DW_AT_comp_dir, &a) ? dwarf_formstring(&a) : NULL;

	if (src[0] == '/' || !dir)
		snprintf(buf, len, "%s", src);
	else
		snprintf(buf, len, "%s/%s", dir, src);
}

/* Is pc in one of the ranges of the DIE? */
static bool die_has(Dwarf_Die *d, Dwarf_Addr pc)
{
	Dwarf_Addr base, lo, hi;
	ptrdiff_t off = 0;

	while ((off = dwarf_ranges(d, off, &base, &lo, &hi)) > 0)
		if (pc >= lo && pc < hi)
			return true;
	return false;
}

static int list_lines(struct ukp_dw *dw, const struct ukp_spec *spec, FILE *out)
{
	struct ukp_dw_err e;
	struct ukp_dw_site *sites;
	size_t ns, nl, i, k;
	Dwarf_Addr sym_pc;
	const char *file;
	unsigned int decl, last = 0, l;
	Dwarf_Die cu, *scopes;
	Dwarf_Lines *lines;
	unsigned char *has;
	char path[PATH_MAX], text[1024];
	const char *fsrc = NULL;
	FILE *src;

	if (ukp_dw_func_decl(dw, spec->symbol, &file, &decl, spec->sym_col, &e) ||
	    ukp_dw_func_sites(dw, spec->symbol, &sites, &ns, &sym_pc, spec->sym_col, &e)) {
		ukp_spec_err(spec->text, e.col, "%s", e.msg);
		return UKP_EXIT_USAGE;
	}
	has = calloc(1u << 16, 1);
	if (!has || !ukp_dw_cu_of(dw, sites[0].pc, &cu) || dwarf_getsrclines(&cu, &lines, &nl)) {
		free(has);
		free(sites);
		ukp_err("no line table for %s", spec->symbol);
		return UKP_EXIT_FAIL;
	}
	/* the function's DIE at each copy: its rows are the lines it has */
	for (k = 0; k < ns; k++) {
		int n = ukp_dw_scopes(dw, sites[k].pc, &scopes), fi = ukp_dw_func_scope(scopes, n);

		for (i = 0; fi >= 0 && i < nl; i++) {
			Dwarf_Line *ln = dwarf_onesrcline(lines, i);
			Dwarf_Addr pc;
			Dwarf_Die *s2;
			int lno = 0, n2, f2;
			const char *src_name = ln ? dwarf_linesrc(ln, NULL, NULL) : NULL;

			if (!src_name || strcmp(src_name, file) || dwarf_lineaddr(ln, &pc) ||
			    dwarf_lineno(ln, &lno) || lno <= 0 || lno >= (1 << 16) ||
			    !die_has(&scopes[fi], pc))
				continue;
			/* (not a line of a function inlined into it) */
			n2 = ukp_dw_scopes(dw, pc, &s2);
			f2 = ukp_dw_func_scope(s2, n2);
			if (f2 >= 0 && dwarf_diename(&s2[f2]) && !strcmp(dwarf_diename(&s2[f2]), spec->symbol)) {
				has[lno] = 1;
				if ((unsigned int)lno > last)
					last = (unsigned int)lno;
				fsrc = src_name;
			}
			free(s2);
		}
		free(scopes);
	}
	free(sites);
	source_path(&cu, fsrc ? fsrc : file, path, sizeof(path));
	fprintf(out, "<%s@%s:%u>\n", spec->symbol, path, decl);
	src = fopen(path, "r");
	for (l = 1; l <= last; l++) {
		bool got = src && fgets(text, sizeof(text), src);

		if (l < decl)
			continue;
		if (got)
			text[strcspn(text, "\n")] = '\0';
		if (has[l])
			fprintf(out, "%7u  %s\n", l, got ? text : "");
		else if (got)
			fprintf(out, "         %s\n", text);
	}
	if (src)
		fclose(src);
	free(has);
	return 0;
}

/* The variables of the scopes at pc (not the CU's globals), innermost
 * first, with their types, and whether they have a value there. */
static void list_scope_vars(struct ukp_dw *dw, const struct ukp_dw_site *site, FILE *out)
{
	Dwarf_Die *scopes, c;
	int n = ukp_dw_scopes(dw, site->pc, &scopes), i;

	for (i = 0; i < n; i++) {
		int tag = dwarf_tag(&scopes[i]);

		if (tag == DW_TAG_compile_unit || dwarf_child(&scopes[i], &c))
			continue;
		do {
			int t = dwarf_tag(&c);
			const char *nm = dwarf_diename(&c);
			Dwarf_Attribute a, ta;
			Dwarf_Die type;
			Dwarf_Op *x;
			size_t len;
			char tn[256];
			struct ukp_fetcharg fa;
			struct ukp_dw_err e;
			bool avail, entry = false;

			if ((t != DW_TAG_variable && t != DW_TAG_formal_parameter) || !nm)
				continue;
			if (!dwarf_attr_integrate(&c, DW_AT_type, &ta) || !dwarf_formref_die(&ta, &type))
				snprintf(tn, sizeof(tn), "?");
			else
				ukp_dw_type_name(&type, tn, sizeof(tn));
			/* what a probe would get (a struct: whether it has a place) */
			memset(&fa, 0, sizeof(fa));
			if (!ukp_dw_var_fetch(dw, site, nm, strlen(nm), 0, &fa, &e))
				avail = fa.base != UKP_FA_UNAVAIL;
			else
				avail = dwarf_hasattr(&c, DW_AT_const_value) ||
					(dwarf_attr(&c, DW_AT_location, &a) &&
					 dwarf_getlocation_addr(&a, site->pc, &x, &len, 1) == 1 && len);
			free(fa.symbol);
			/* DW_OP_entry_value away from the entry: the value the
			 * parameter had at the function's entry, which no
			 * register or memory keeps here (dwarf_var.c) */
			if (!avail && dwarf_attr(&c, DW_AT_location, &a) &&
			    dwarf_getlocation_addr(&a, site->pc, &x, &len, 1) == 1 && len)
				entry = x[0].atom == DW_OP_entry_value ||
					x[0].atom == DW_OP_GNU_entry_value;
			fprintf(out, "\t%-24s %s%s%s\n", tn, nm, t == DW_TAG_formal_parameter ? " (parameter)" : "",
				avail ? "" : entry ? " (unavailable here: its value at the function's "
						     "entry, which nothing keeps here)"
					   : " (unavailable here)");
		} while (!dwarf_siblingof(&c, &c));
		/* an inlined copy's scopes go on with the function inlined, not
		 * the caller's: stop at the function */
		if (tag == DW_TAG_subprogram || tag == DW_TAG_inlined_subroutine)
			break;
	}
	free(scopes);
}

static int list_vars(struct ukp_dw *dw, const struct ukp_spec *spec, FILE *out)
{
	struct ukp_dw_err e;
	struct ukp_dw_site *sites;
	size_t ns, i;
	Dwarf_Addr sym_pc;
	char *mangled;

	if (ukp_dw_spec_sites(dw, spec, &sites, &ns, &sym_pc, &mangled, &e)) {
		ukp_spec_err(spec->text, e.col, "%s", e.msg);
		return UKP_EXIT_USAGE;
	}
	for (i = 0; i < ns; i++) {
		GElf_Off off = 0;
		GElf_Sym sym;
		const char *fn = dwfl_module_addrinfo(dw->mod, sites[i].pc + dw->bias, &off, &sym, NULL,
						      NULL, NULL);

		char *d = fn ? cplus_demangle(fn, DMGL_PARAMS | DMGL_ANSI | DMGL_AUTO) : NULL;

		fprintf(out, "Variables at %s+0x%lx (%s:0x%lx)%s:\n", d ? d : fn ? fn : "?",
			(unsigned long)off,
			strrchr(dw->path, '/') ? strrchr(dw->path, '/') + 1 : dw->path,
			(unsigned long)sites[i].pc, sites[i].inlined ? ", an inlined copy" : "");
		free(d);
		list_scope_vars(dw, &sites[i], out);
	}
	free(mangled);
	free(sites);
	return 0;
}

int ukp_dwarf_list(bool vars, const char *point, const struct ukp_dw_where *w, FILE *out)
{
	struct ukp_spec_error perr;
	struct ukp_spec spec;
	struct ukp_dw_err e;
	struct ukp_dw *dw;
	char *text;
	int code;

	/* the point as a SPEC's: "p " is two columns the report leaves out */
	if (asprintf(&text, "p %s", point) < 0)
		return UKP_EXIT_FAIL;
	if (ukp_spec_parse(text, &spec, &perr)) {
		ukp_spec_err(text, perr.col, "%s", perr.msg);
		free(text);
		return UKP_EXIT_USAGE;
	}
	code = UKP_EXIT_USAGE;
	if (!spec.object || spec.is_addr || (spec.is_glob && !spec.cxx_name) ||
	    (!vars && (spec.src_line || spec.cxx_name)))
		ukp_spec_err(text, spec.point_col, "%s takes %s", vars ? "--vars" : "--lines",
			     vars ? "OBJ:FUNC, OBJ:FILE:LINE or OBJ:FUNC:+N" : "OBJ:FUNC");
	else if (!(dw = ukp_dw_open(spec.object, w, spec.point_col, &e)))
		ukp_spec_err(text, e.col, "%s", e.msg);
	else
		code = vars ? list_vars(dw, &spec, out) : list_lines(dw, &spec, out);
	ukp_dw_close_all();
	ukp_spec_free(&spec);
	free(text);
	return code;
}
