/* SPDX-License-Identifier: MIT */
/*
 * dwarf_spec.c - the SPECs that name a source line or a variable,
 * resolved from DWARF into ordinary SPECs (dwarf_cli.h): one per copy of the
 * line or of the function (its out-of-line code, each inlined copy), each
 * with the fetches its variables have at that address. A function probed
 * with variables by name goes past its prologue when its parameters live
 * in stack slots the prologue fills (unoptimized code), as gdb and perf
 * probe do; probes shows the address chosen. An r SPEC's untyped $retval
 * gets its function's return type when the object has DWARF.
 */
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "dwarf_cli.h"
#include "fetch_types.h"

/* An event name made a C identifier (shapes::scale: shapes__scale). */
static void spec_event_identifier(char *s)
{
	for (; *s; s++)
		if (!(*s >= 'a' && *s <= 'z') && !(*s >= 'A' && *s <= 'Z') && !(*s >= '0' && *s <= '9'))
			*s = '_';
}

/* A copy of spec (its strings duplicated), or -1. */
static int spec_copy(const struct ukp_spec *spec, struct ukp_spec *out)
{
	int i;

	*out = *spec;
	out->text = out->object = out->symbol = NULL;
	for (i = 0; i < spec->nargs; i++)
		out->args[i].symbol = NULL;
	out->text = strdup(spec->text);
	out->object = spec->object ? strdup(spec->object) : NULL;
	out->symbol = spec->symbol ? strdup(spec->symbol) : NULL;
	for (i = 0; i < spec->nargs; i++)
		if (spec->args[i].symbol && !(out->args[i].symbol = strdup(spec->args[i].symbol)))
			goto nomem;
	if (!out->text || (spec->object && !out->object) || (spec->symbol && !out->symbol))
		goto nomem;
	return 0;
nomem:
	ukp_spec_free(out);
	return -1;
}

static bool name_taken(const struct ukp_spec *s, const char *name)
{
	int i;

	for (i = 0; i < s->nargs; i++)
		if (!strcmp(s->args[i].name, name))
			return true;
	return false;
}

/* Where each argument goes in an event, and its short path, again: the
 * resolved types (strings) change the payload. */
static int layout(struct ukp_spec *s, struct ukp_dw_err *e)
{
	int i;

	s->payload = 0;
	for (i = 0; i < s->nargs; i++) {
		struct ukp_fetcharg *fa = &s->args[i];
		unsigned int slot = ukp_fetch_type_of(fa)->slot;

		fa->plain_reg = fa->base == UKP_FA_REG && !fa->nderef && !fa->bf_width && !fa->add &&
				!ukp_fetch_type_of(fa)->is_string;
		if (s->payload + slot > UKP_SPEC_PAYLOAD_MAX)
			return ukp_dw_fail(e, fa->col, "too many arguments: an event holds %d bytes "
					   "(8 a number, %d a string)", UKP_SPEC_PAYLOAD_MAX,
					   UKP_SPEC_STR_SLOT);
		fa->off = s->payload;
		s->payload += slot;
	}
	return 0;
}

/* s's arguments at site: the variables' fetches ($params: one per
 * parameter). */
static int site_args(struct ukp_dw *dw, const struct ukp_dw_site *site,
		     const struct ukp_spec *orig, struct ukp_spec *s, struct ukp_dw_err *e)
{
	int i, k = 0;

	/* (s came as a copy of orig: none of its symbols is its own yet) */
	for (i = 0; i < UKP_SPEC_MAX_ARGS; i++)
		s->args[i].symbol = NULL;
	s->nargs = 0;
	for (i = 0; i < orig->nargs; i++, s->nargs = k) {
		const struct ukp_fetcharg *in = &orig->args[i];
		const char *x = orig->text + in->var_col;

		if (in->base != UKP_FA_VAR) {
			s->args[k] = *in;
			s->args[k].symbol = NULL;
			if (in->symbol && !(s->args[k].symbol = strdup(in->symbol)))
				return ukp_dw_fail(e, in->col, "out of memory");
			k++;
			continue;
		}
		if (in->var_len == 7 && !memcmp(x, "$params", 7)) {
			char **names;
			size_t n, j;
			int ret = 0;

			if (ukp_dw_params(dw, site, &names, &n))
				return ukp_dw_fail(e, in->var_col, "no function here to take $params of");
			for (j = 0; j < n; j++) {
				struct ukp_fetcharg *fa = &s->args[k];

				if (ret)
					continue;
				if (k == UKP_SPEC_MAX_ARGS) {
					ret = ukp_dw_fail(e, in->col, "too many arguments (at most %d)",
							  UKP_SPEC_MAX_ARGS);
					continue;
				}
				s->nargs = k;
				if (name_taken(s, names[j])) {
					ret = ukp_dw_fail(e, in->col, "$params: the argument name %s is "
							  "already used", names[j]);
					continue;
				}
				*fa = *in;
				snprintf(fa->name, sizeof(fa->name), "%s", names[j]);
				ret = ukp_dw_var_fetch(dw, site, names[j], strlen(names[j]), in->var_col,
						       fa, e);
				k += !ret;
				s->nargs = k;
			}
			for (j = 0; j < n; j++)
				free(names[j]);
			free(names);
			if (ret)
				return -1;
			continue;
		}
		if (k == UKP_SPEC_MAX_ARGS)
			return ukp_dw_fail(e, in->col, "too many arguments (at most %d)",
					   UKP_SPEC_MAX_ARGS);
		s->args[k] = *in;
		if (ukp_dw_var_fetch(dw, site, x, (size_t)in->var_len, in->var_col, &s->args[k], e))
			return -1;
		k++;
	}
	s->nargs = k;
	for (i = 0; i < k; i++) {
		int j;

		for (j = 0; j < i; j++)
			if (!strcmp(s->args[i].name, s->args[j].name))
				return ukp_dw_fail(e, s->args[i].col, "the argument name %s is already "
						   "used", s->args[i].name);
	}
	return layout(s, e);
}

int ukp_dw_spec_sites(struct ukp_dw *dw, const struct ukp_spec *spec, struct ukp_dw_site **sites,
		      size_t *ns, Dwarf_Addr *sym_pc, char **mangled, struct ukp_dw_err *e)
{
	size_t i;
	int ret;

	*sym_pc = 0;
	*mangled = NULL;
	/* (a name with C++'s characters that the symbol table has as it
	 * is, as Go's main.(*T).m, is that function's) */
	if (spec->cxx_name && !spec->src_line && !ukp_dw_symbol_pc(dw, spec->symbol)) {
		/* a demangled name: the one function it names, its own code */
		if (ukp_dw_cxx_symbol(dw, spec->symbol, sym_pc, mangled, spec->sym_col, e))
			return -1;
		*sites = malloc(sizeof(**sites));
		if (!*sites) {
			free(*mangled);
			*mangled = NULL;
			return ukp_dw_fail(e, spec->sym_col, "out of memory");
		}
		(*sites)[0] = (struct ukp_dw_site){ *sym_pc, *sym_pc, false };
		(*sites)[0].pc = spec->offset ? *sym_pc + spec->offset
					      : ukp_dw_after_prologue(dw, *sym_pc);
		*ns = 1;
		return 0;
	}
	if (spec->src_line && !spec->src_rel) {
		ret = ukp_dw_line_sites(dw, spec->symbol, spec->src_line, NULL, sites, ns,
					spec->sym_col, spec->off_col, e);
	} else if (spec->src_line) {
		const char *file;
		unsigned int line;

		ret = ukp_dw_func_decl(dw, spec->symbol, &file, &line, spec->sym_col, e);
		if (!ret)
			ret = ukp_dw_line_sites(dw, file, line + spec->src_line - 1, spec->symbol,
						sites, ns, spec->sym_col, spec->off_col, e);
	} else {
		ret = ukp_dw_func_sites(dw, spec->symbol, sites, ns, sym_pc, spec->sym_col, e);
		for (i = 0; !ret && i < *ns; i++)
			if (!(*sites)[i].inlined && (*sites)[i].pc == *sym_pc)
				(*sites)[i].pc = spec->offset ? *sym_pc + spec->offset
							   : ukp_dw_after_prologue(dw, *sym_pc);
	}
	return ret;
}

/* spec's copies into *out (n of them): 0 or -1 with *e. */
static int resolve(const struct ukp_spec *spec, const struct ukp_dw_where *w,
		   struct ukp_spec **out, int *n, struct ukp_dw_err *e)
{
	struct ukp_dw_site *sites = NULL;
	struct ukp_spec *v;
	struct ukp_dw *dw;
	Dwarf_Addr sym_pc = 0;
	char *mangled = NULL;
	size_t ns = 0, i;
	int ret = 0;
	bool literal;

	*out = NULL;
	*n = 0;
	if (!spec->object)
		return ukp_dw_fail(e, spec->point_col, "a source line or a variable by name needs "
				   "the object: OBJ:%s", spec->src_line ? "FILE:LINE" : "FUNC");
	/* (a demangled name is a pattern for the agent: here it must name
	 * one function; so may a name with a '*' that names itself, as Go's
	 * methods on pointers do: main.(*T).m, below) */
	literal = spec->is_glob && !spec->is_return && !spec->src_line &&
		  !strpbrk(spec->symbol, "?[");
	if (spec->is_glob && !literal &&
	    (!spec->cxx_name || strpbrk(spec->symbol, "*?") || spec->is_return))
		return ukp_dw_fail(e, spec->sym_col, "variables by name need one function, not a "
				   "pattern");
	if (spec->is_addr)
		return ukp_dw_fail(e, spec->sym_col, "variables by name need a function or a "
				   "source line (OBJ:FUNC, OBJ:FILE:LINE), not an address");
	if (spec->is_return && spec->has_vars)
		return ukp_dw_fail(e, spec->args[0].col, "a return probe has no variables by name "
				   "($retval is typed from the debug information)");
	dw = ukp_dw_open(spec->object, w, spec->point_col, e);
	if (!dw && spec->is_return)
		return 1; /* $retval stays as it is */
	if (!dw)
		return -1;
	if (literal && !ukp_dw_symbol_pc(dw, spec->symbol)) {
		if (!spec->cxx_name || strpbrk(spec->symbol, "*?"))
			return ukp_dw_fail(e, spec->sym_col, "variables by name need one function, "
					   "not a pattern");
		literal = false; /* a demangled name: its one function */
	}
	if (spec->is_return) {
		sym_pc = 0;
		if (ukp_dw_func_sites(dw, spec->symbol, &sites, &ns, &sym_pc, spec->sym_col, e) ||
		    !sym_pc) {
			free(sites);
			return 1;
		}
		free(sites);
		v = calloc(1, sizeof(*v));
		if (!v || spec_copy(spec, v)) {
			free(v);
			return ukp_dw_fail(e, 0, "out of memory");
		}
		for (i = 0; i < (size_t)v->nargs; i++)
			if (v->args[i].base == UKP_FA_RETVAL && !v->args[i].type_given)
				ukp_dw_retval(dw, sym_pc, &v->args[i]);
		if (layout(v, e)) {
			ukp_spec_free(v);
			free(v);
			return -1;
		}
		*out = v;
		*n = 1;
		return 0;
	}
	ret = ukp_dw_spec_sites(dw, spec, &sites, &ns, &sym_pc, &mangled, e);
	if (ret)
		return -1;
	v = calloc(ns, sizeof(*v));
	if (!v) {
		free(sites);
		return ukp_dw_fail(e, 0, "out of memory");
	}
	for (i = 0; i < ns && !ret; i++) {
		struct ukp_spec *s = &v[i];

		*s = *spec;
		s->nargs = 0;
		s->text = s->object = s->symbol = NULL;
		s->text = strdup(spec->text);
		s->object = strdup(spec->object);
		if (!s->text || !s->object) {
			ret = ukp_dw_fail(e, 0, "out of memory");
			break;
		}
		if (mangled) {
			/* the function a demangled name named, by its symbol */
			s->symbol = strdup(mangled);
			s->offset = sites[i].pc - sym_pc;
			s->is_glob = s->cxx_name = false;
			if (!s->event_given) {
				snprintf(s->event, sizeof(s->event), "p_%.*s_%lu",
					 (int)strcspn(spec->symbol, "("), spec->symbol, spec->offset);
				spec_event_identifier(s->event);
			}
			if (!s->symbol)
				ret = ukp_dw_fail(e, 0, "out of memory");
		} else if (!spec->src_line && !sites[i].inlined && sym_pc && sites[i].func_pc == sym_pc) {
			/* the function's own code: by its symbol, as the SPEC said
			 * (a literal name: that one function) */
			s->symbol = strdup(spec->symbol);
			if (literal)
				s->is_glob = false;
			s->offset = sites[i].pc - sym_pc;
			if (!s->symbol)
				ret = ukp_dw_fail(e, 0, "out of memory");
		} else {
			s->is_addr = true;
			s->addr = sites[i].pc;
			s->offset = 0;
		}
		if (!ret)
			ret = site_args(dw, &sites[i], spec, s, e);
		*n = (int)i + 1;
	}
	free(sites);
	free(mangled);
	*out = v;
	if (ret) {
		for (i = 0; i < (size_t)*n; i++)
			ukp_spec_free(&v[i]);
		free(v);
		*out = NULL;
		*n = 0;
		return -1;
	}
	return 0;
}

static bool needs_dwarf(const struct ukp_spec *s)
{
	int i;

	if (s->src_line || s->has_vars)
		return true;
	if (!s->is_return || !s->object || !s->symbol || s->is_glob)
		return false;
	for (i = 0; i < s->nargs; i++)
		if (s->args[i].base == UKP_FA_RETVAL && !s->args[i].type_given)
			return true;
	return false;
}

int ukp_dwarf_resolve_specs(struct ukp_spec **specs, int *n, int **origin,
			    const struct ukp_dw_where *w)
{
	struct ukp_spec *in = *specs, *out = NULL;
	int *orig = NULL, nout = 0, i, k;

	*origin = NULL;
	if (ukp_dw_go_goid(in, *n, w))
		return -1;
	for (i = 0; i < *n && !needs_dwarf(&in[i]); i++)
		;
	if (i == *n) {
		*origin = malloc((size_t)(*n ? *n : 1) * sizeof(int));
		if (!*origin) {
			ukp_err("out of memory");
			return -1;
		}
		for (i = 0; i < *n; i++)
			(*origin)[i] = i;
		return 0;
	}
	for (i = 0; i < *n; i++) {
		struct ukp_dw_err e = { 0, "" };
		struct ukp_spec *got = NULL;
		int ngot = 0, ret = needs_dwarf(&in[i]) ? resolve(&in[i], w, &got, &ngot, &e) : 1;
		struct ukp_spec *no;
		int *nor;

		if (ret < 0) {
			if (w->err)
				w->err(i, e.col, e.msg, w->err_arg);
			else
				ukp_spec_err(in[i].text, e.col, "%s", e.msg);
			goto fail;
		}
		no = realloc(out, (size_t)(nout + (ret ? 1 : ngot)) * sizeof(*out));
		nor = no ? realloc(orig, (size_t)(nout + (ret ? 1 : ngot)) * sizeof(*orig)) : NULL;
		if (no)
			out = no;
		if (!no || !nor) {
			ukp_err("out of memory");
			for (k = 0; k < ngot; k++)
				ukp_spec_free(&got[k]);
			free(got);
			goto fail;
		}
		orig = nor;
		if (ret) {
			/* as it was (moved) */
			out[nout] = in[i];
			memset(&in[i], 0, sizeof(in[i]));
			orig[nout++] = i;
			continue;
		}
		for (k = 0; k < ngot; k++) {
			out[nout] = got[k];
			out[nout].copy_of = k ? nout - k + 1 : 0;
			orig[nout++] = i;
		}
		free(got);
	}
	ukp_cli_free_specs(in, *n);
	ukp_dw_close_all();
	*specs = out;
	*n = nout;
	*origin = orig;
	return 0;
fail:
	ukp_cli_free_specs(out, nout);
	free(orig);
	ukp_dw_close_all();
	return -1;
}
