/* SPDX-License-Identifier: MIT */
/*
 * dwarf_var.c - a variable expression at an address, as a fetch argument
 * (dwarf_cli.h): VAR, then ->FIELD, .FIELD, [N] in any chain. The variable's
 * DWARF location at that address (its location list's entry there) gives
 * where its value starts: a register, a stack slot off a register or off
 * the frame base (the CFA, from the call frame information at that
 * address), a global by its symbol, a constant; each access then adds an
 * offset or a dereference, so that the whole becomes the %REG,
 * +OFFS(...) and @SYM forms the agent fetches. A value the debug
 * information does not give at the address (no entry there, a value
 * computed by an expression the fetch cannot follow, split in pieces)
 * becomes UKP_FA_UNAVAIL: every hit shows it unavailable, never a wrong
 * value. The type comes from DWARF unless the SPEC gave one.
 */
#include <ctype.h>
#include <dwarf.h>
#include <stdlib.h>
#include <string.h>

#include "dwarf_cli.h"
#include "fetch_regs.h"
#include "fetch_types.h"

enum lv_kind {
	LV_VAL,                   /* the value is v + off */
	LV_MEM,                   /* the object is in memory at v + off */
	LV_CONST,                 /* the value is cval */
	LV_NONE,                  /* not available here */
};

/* A value being accessed: v is the base's value after the loads in d[]
 * (each v = *(v + d[i])), as struct ukp_fetcharg's chain. */
struct lval {
	enum lv_kind kind;
	enum ukp_fa_base base;    /* UKP_FA_REG or UKP_FA_SYM */
	unsigned long param;
	char *symbol;
	long symoff;
	int nd;
	long d[UKP_SPEC_DEREF_MAX + 2];
	long off;
	unsigned long cval;
	Dwarf_Die type;
	bool have_type;
	unsigned int bf_width, bf_offset, bf_size;
};

/* The register of DWARF number n as a struct pt_regs word, or -1. */
static int dwarf_reg(Dwarf_Word n)
{
	if (n >= ukp_fetch_ndwarf_regs)
		return -1;
	return ukp_spec_reg_index(ukp_fetch_dwarf_regs[n], strlen(ukp_fetch_dwarf_regs[n]));
}

static bool set_reg(struct lval *lv, Dwarf_Word n)
{
	int r = dwarf_reg(n);

	if (r < 0)
		return false;
	lv->base = UKP_FA_REG;
	lv->param = (unsigned long)r;
	return true;
}

/* The CFA at pc as register + offset, from the call frame information. */
static bool cfa_at(struct ukp_dw *dw, Dwarf_Addr pc, Dwarf_Word *reg, long *off)
{
	Dwarf_Frame *frame;
	Dwarf_Op *ops;
	size_t nops;
	bool ok = false;

	if (!dw->cfi || dwarf_cfi_addrframe(dw->cfi, pc + dw->bias - dw->cfi_bias, &frame))
		return false;
	if (!dwarf_frame_cfa(frame, &ops, &nops) && nops == 1 && ops[0].atom == DW_OP_bregx) {
		*reg = ops[0].number;
		*off = (long)ops[0].number2;
		ok = true;
	}
	free(frame);
	return ok;
}

/* The frame base of the out-of-line function pc is in, as register +
 * offset. */
static bool frame_base(struct ukp_dw *dw, Dwarf_Die *scopes, int ns, Dwarf_Addr pc,
		       Dwarf_Word *reg, long *off)
{
	Dwarf_Attribute a;
	Dwarf_Op *expr;
	Dwarf_Die f;
	size_t len;

	if (!ukp_dw_code_func(scopes, ns, &f) || !dwarf_attr_integrate(&f, DW_AT_frame_base, &a) ||
	    dwarf_getlocation_addr(&a, pc, &expr, &len, 1) != 1 || len != 1)
		return false;
	if (expr[0].atom == DW_OP_call_frame_cfa)
		return cfa_at(dw, pc, reg, off);
	if (expr[0].atom >= DW_OP_breg0 && expr[0].atom <= DW_OP_breg31) {
		*reg = expr[0].atom - DW_OP_breg0;
		*off = (long)expr[0].number;
		return true;
	}
	if (expr[0].atom >= DW_OP_reg0 && expr[0].atom <= DW_OP_reg31) {
		*reg = expr[0].atom - DW_OP_reg0;
		*off = 0;
		return true;
	}
	return false;
}

/* The ELF symbol that holds DWARF address a: lv's base. */
static bool set_global(struct ukp_dw *dw, Dwarf_Addr a, struct lval *lv)
{
	GElf_Off off = 0;
	GElf_Sym sym;
	const char *name = dwfl_module_addrinfo(dw->mod, a + dw->bias, &off, &sym, NULL, NULL, NULL);

	if (!name || !(lv->symbol = strndup(name, strcspn(name, "@"))))
		return false;
	lv->base = UKP_FA_SYM;
	lv->symoff = (long)off;
	return true;
}

static bool is_const_op(unsigned int atom)
{
	return (atom >= DW_OP_lit0 && atom <= DW_OP_lit31) || atom == DW_OP_const1u ||
	       atom == DW_OP_const2u || atom == DW_OP_const4u || atom == DW_OP_const8u ||
	       atom == DW_OP_const1s || atom == DW_OP_const2s || atom == DW_OP_const4s ||
	       atom == DW_OP_const8s || atom == DW_OP_constu || atom == DW_OP_consts;
}

/* DW_OP_entry_value(DW_OP_regN): the register's value at the function's
 * entry, which is its value now when pc is that entry. */
static bool entry_value(Dwarf_Attribute *a, Dwarf_Op *op, const struct ukp_dw_site *site,
			struct lval *lv)
{
	Dwarf_Attribute sub;
	Dwarf_Op *e;
	size_t n;

	if (site->inlined || site->pc != site->func_pc || dwarf_getlocation_attr(a, op, &sub) ||
	    dwarf_getlocation(&sub, &e, &n) || n != 1)
		return false;
	if (e[0].atom >= DW_OP_reg0 && e[0].atom <= DW_OP_reg31)
		return set_reg(lv, e[0].atom - DW_OP_reg0);
	if (e[0].atom == DW_OP_regx)
		return set_reg(lv, e[0].number);
	return false;
}

/* var's location at site into lv (LV_NONE when there is none). */
static void locate(struct ukp_dw *dw, const struct ukp_dw_site *site, Dwarf_Die *scopes, int ns,
		   Dwarf_Die *var, struct lval *lv)
{
	Dwarf_Attribute a;
	Dwarf_Op *x;
	size_t n;
	Dwarf_Word reg = 0;
	long k = 0;
	bool sv;

	lv->kind = LV_NONE;
	if (!dwarf_attr(var, DW_AT_location, &a)) {
		Dwarf_Sword sc;
		const char *name = dwarf_diename(var);

		if (dwarf_attr_integrate(var, DW_AT_const_value, &a)) {
			if (dwarf_formsdata(&a, &sc) == 0) {
				lv->kind = LV_CONST;
				lv->cval = (unsigned long)sc;
			}
			return;
		}
		/* a declaration of a global defined elsewhere: by its symbol */
		if (dwarf_hasattr_integrate(var, DW_AT_declaration) && name) {
			lv->symbol = strdup(name);
			if (lv->symbol) {
				lv->base = UKP_FA_SYM;
				lv->kind = LV_MEM;
			}
		}
		return;
	}
	if (dwarf_getlocation_addr(&a, site->pc, &x, &n, 1) != 1 || !n)
		return;
	sv = n == 2 && x[1].atom == DW_OP_stack_value;
	if (n != 1 && !sv)
		return; /* pieces, or an expression the fetch cannot follow */
	if (x[0].atom >= DW_OP_reg0 && x[0].atom <= DW_OP_reg31 && n == 1) {
		if (set_reg(lv, x[0].atom - DW_OP_reg0))
			lv->kind = LV_VAL;
	} else if (x[0].atom == DW_OP_regx && n == 1) {
		if (set_reg(lv, x[0].number))
			lv->kind = LV_VAL;
	} else if ((x[0].atom >= DW_OP_breg0 && x[0].atom <= DW_OP_breg31) ||
		   x[0].atom == DW_OP_bregx) {
		reg = x[0].atom == DW_OP_bregx ? x[0].number : (Dwarf_Word)(x[0].atom - DW_OP_breg0);
		k = (long)(x[0].atom == DW_OP_bregx ? x[0].number2 : x[0].number);
		if (set_reg(lv, reg)) {
			lv->kind = sv ? LV_VAL : LV_MEM;
			lv->off = k;
		}
	} else if (x[0].atom == DW_OP_fbreg) {
		if (frame_base(dw, scopes, ns, site->pc, &reg, &k) && set_reg(lv, reg)) {
			lv->kind = sv ? LV_VAL : LV_MEM;
			lv->off = k + (long)x[0].number;
		}
	} else if (x[0].atom == DW_OP_addr && n == 1) {
		if (set_global(dw, x[0].number, lv))
			lv->kind = LV_MEM;
	} else if ((x[0].atom == DW_OP_addrx || x[0].atom == DW_OP_GNU_addr_index) && n == 1) {
		/* DWARF 5's address by its index in .debug_addr (clang) */
		Dwarf_Attribute ra;
		Dwarf_Addr ad;

		if (dwarf_getlocation_attr(&a, &x[0], &ra) == 0 && dwarf_formaddr(&ra, &ad) == 0 &&
		    set_global(dw, ad, lv))
			lv->kind = LV_MEM;
	} else if (is_const_op(x[0].atom) && sv) {
		lv->kind = LV_CONST;
		lv->cval = x[0].atom >= DW_OP_lit0 && x[0].atom <= DW_OP_lit31
				   ? (unsigned long)(x[0].atom - DW_OP_lit0) : (unsigned long)x[0].number;
	} else if (x[0].atom == DW_OP_implicit_value && n == 1 && x[0].number <= 8) {
		lv->kind = LV_CONST;
		lv->cval = 0;
		memcpy(&lv->cval, (const void *)(uintptr_t)x[0].number2, x[0].number);
	} else if ((x[0].atom == DW_OP_entry_value || x[0].atom == DW_OP_GNU_entry_value) && sv) {
		if (entry_value(&a, &x[0], site, lv))
			lv->kind = LV_VAL;
	}
}

/* ------------------------------------------------------------- types */

static bool type_of(Dwarf_Die *d, Dwarf_Die *t)
{
	Dwarf_Attribute a;

	return dwarf_attr_integrate(d, DW_AT_type, &a) && dwarf_formref_die(&a, t);
}

/* The type without typedefs and qualifiers; false for void. */
static bool peeled(Dwarf_Die *t, Dwarf_Die *out)
{
	return dwarf_peel_type(t, out) == 0;
}

/* The number of elements of an array type (0: unknown). */
static Dwarf_Word array_len(Dwarf_Die *arr)
{
	Dwarf_Die sub;
	Dwarf_Attribute a;
	Dwarf_Word ub;

	if (dwarf_child(arr, &sub) || dwarf_tag(&sub) != DW_TAG_subrange_type)
		return 0;
	if (dwarf_attr_integrate(&sub, DW_AT_count, &a) && !dwarf_formudata(&a, &ub))
		return ub;
	if (dwarf_attr_integrate(&sub, DW_AT_upper_bound, &a) && !dwarf_formudata(&a, &ub))
		return ub + 1;
	return 0;
}

const char *ukp_dw_type_name(Dwarf_Die *type, char *buf, size_t len)
{
	Dwarf_Die t;
	char inner[256];
	const char *nm = dwarf_diename(type);
	Dwarf_Word ub;

	switch (dwarf_tag(type)) {
	case DW_TAG_pointer_type:
	case DW_TAG_reference_type:
		if (!type_of(type, &t))
			snprintf(buf, len, "void *");
		else
			snprintf(buf, len, "%s %s", ukp_dw_type_name(&t, inner, sizeof(inner)),
				 dwarf_tag(type) == DW_TAG_pointer_type ? "*" : "&");
		break;
	case DW_TAG_const_type:
	case DW_TAG_volatile_type:
		/* (a const array: its elements say so) */
		if (type_of(type, &t) && dwarf_tag(&t) == DW_TAG_array_type)
			return ukp_dw_type_name(&t, buf, len);
		/* a const pointer: T *const */
		if (type_of(type, &t) && dwarf_tag(&t) == DW_TAG_pointer_type) {
			snprintf(buf, len, "%s%s", ukp_dw_type_name(&t, inner, sizeof(inner)),
				 dwarf_tag(type) == DW_TAG_const_type ? "const" : "volatile");
			break;
		}
		snprintf(buf, len, "%s %s",
			 dwarf_tag(type) == DW_TAG_const_type ? "const" : "volatile",
			 type_of(type, &t) ? ukp_dw_type_name(&t, inner, sizeof(inner)) : "void");
		break;
	case DW_TAG_structure_type:
	case DW_TAG_union_type:
	case DW_TAG_enumeration_type:
		snprintf(buf, len, "%s %s",
			 dwarf_tag(type) == DW_TAG_structure_type ? "struct"
			 : dwarf_tag(type) == DW_TAG_union_type	  ? "union" : "enum",
			 nm ? nm : "(anonymous)");
		break;
	case DW_TAG_array_type:
		ub = array_len(type);
		snprintf(buf, len, "%s[%lu]",
			 type_of(type, &t) ? ukp_dw_type_name(&t, inner, sizeof(inner)) : "?",
			 (unsigned long)ub);
		break;
	case DW_TAG_subroutine_type:
		snprintf(buf, len, "function");
		break;
	default:
		snprintf(buf, len, "%s", nm ? nm : "?");
	}
	return buf;
}

static bool is_char(Dwarf_Die *t)
{
	Dwarf_Attribute a;
	Dwarf_Word enc;

	return dwarf_tag(t) == DW_TAG_base_type && dwarf_bytesize(t) == 1 &&
	       dwarf_attr(t, DW_AT_encoding, &a) && !dwarf_formudata(&a, &enc) &&
	       (enc == DW_ATE_signed_char || enc == DW_ATE_unsigned_char);
}

/* The fetch type of a scalar DWARF type, or an error. */
static int scalar_type(Dwarf_Die *type, const char *what, int col, struct ukp_fetcharg *fa,
		       struct ukp_dw_err *e)
{
	const struct ukp_fetch_type *row = NULL;
	char tn[256];
	Dwarf_Die t, u;
	Dwarf_Attribute a;
	Dwarf_Word enc = DW_ATE_signed;
	int size;

	if (!peeled(type, &t))
		return ukp_dw_fail(e, col, "%s has no type (void)", what);
	size = dwarf_bytesize(&t);
	switch (dwarf_tag(&t)) {
	case DW_TAG_pointer_type:
	case DW_TAG_reference_type:
	case DW_TAG_rvalue_reference_type:
		row = ukp_fetch_type_find(UKP_TY_X, 8);
		break;
	case DW_TAG_enumeration_type:
		if (type_of(&t, &u) && peeled(&u, &u) && dwarf_attr(&u, DW_AT_encoding, &a))
			dwarf_formudata(&a, &enc);
		/* fall through */
	case DW_TAG_base_type:
		if (dwarf_tag(&t) == DW_TAG_base_type && dwarf_attr(&t, DW_AT_encoding, &a))
			dwarf_formudata(&a, &enc);
		if (enc == DW_ATE_float && (size == 4 || size == 8)) {
			row = ukp_fetch_type_find(UKP_TY_FLOAT, (unsigned int)size);
			break;
		}
		if (enc == DW_ATE_float || enc == DW_ATE_complex_float)
			return ukp_dw_fail(e, col, "%s is a %s: only float and double are "
					   "supported (give a :TYPE for its bits)", what,
					   ukp_dw_type_name(type, tn, sizeof(tn)));
		if (size == 1 || size == 2 || size == 4 || size == 8)
			row = ukp_fetch_type_find(enc == DW_ATE_signed || enc == DW_ATE_signed_char
							  ? UKP_TY_S : UKP_TY_U,
						  (unsigned int)size);
		break;
	case DW_TAG_structure_type:
	case DW_TAG_union_type:
	case DW_TAG_class_type:
		return ukp_dw_fail(e, col, "%s is a %s: name one of its fields (%s.FIELD)", what,
				   ukp_dw_type_name(type, tn, sizeof(tn)), what);
	case DW_TAG_array_type:
		return ukp_dw_fail(e, col, "%s is an array (%s): give an element (%s[N])%s", what,
				   ukp_dw_type_name(type, tn, sizeof(tn)), what,
				   type_of(&t, &u) && peeled(&u, &u) && is_char(&u)
					   ? " or :string" : "");
	default:
		break;
	}
	if (!row)
		return ukp_dw_fail(e, col, "%s is a %s: not a type a probe can show", what,
				   ukp_dw_type_name(type, tn, sizeof(tn)));
	fa->type = row->type;
	fa->size = row->size;
	fa->tidx = (unsigned char)(row - ukp_fetch_types);
	return 0;
}

/* ----------------------------------------------------------- members */

struct names {
	char **v;
	size_t n;
};

static void names_add(struct names *ns, const char *s)
{
	char **v;
	size_t i;

	for (i = 0; i < ns->n; i++)
		if (!strcmp(ns->v[i], s))
			return;
	v = realloc(ns->v, (ns->n + 1) * sizeof(*v));
	if (!v)
		return;
	ns->v = v;
	if ((v[ns->n] = strdup(s)))
		ns->n++;
}

static void names_free(struct names *ns)
{
	size_t i;

	for (i = 0; i < ns->n; i++)
		free(ns->v[i]);
	free(ns->v);
}

/* Levenshtein distance, for suggestions. */
static size_t distance(const char *a, const char *b)
{
	size_t la = strlen(a), lb = strlen(b), i, j, *row, r;

	if (la > 64 || lb > 64)
		return 100;
	row = malloc((lb + 1) * sizeof(*row));
	if (!row)
		return 100;
	for (j = 0; j <= lb; j++)
		row[j] = j;
	for (i = 1; i <= la; i++) {
		size_t prev = row[0];

		row[0] = i;
		for (j = 1; j <= lb; j++) {
			size_t cur = row[j], best = prev + (a[i - 1] != b[j - 1]);

			if (row[j] + 1 < best)
				best = row[j] + 1;
			if (row[j - 1] + 1 < best)
				best = row[j - 1] + 1;
			row[j] = best;
			prev = cur;
		}
	}
	r = row[lb];
	free(row);
	return r;
}

void ukp_dw_nearest(const char *name, char *const *cands, size_t n, char *buf, size_t len)
{
	size_t pick[3] = { 0 }, dist[3] = { (size_t)-1, (size_t)-1, (size_t)-1 }, i, k, m = 0, o = 0;

	buf[0] = '\0';
	for (i = 0; i < n; i++) {
		size_t d = distance(name, cands[i]);

		if (strstr(cands[i], name) || strstr(name, cands[i]))
			d = d > 1 ? d - 1 : d;
		for (k = 0; k < 3; k++)
			if (d < dist[k]) {
				memmove(&dist[k + 1], &dist[k], (2 - k) * sizeof(dist[0]));
				memmove(&pick[k + 1], &pick[k], (2 - k) * sizeof(pick[0]));
				dist[k] = d;
				pick[k] = i;
				break;
			}
	}
	for (k = 0; k < 3 && k < n; k++) {
		if (dist[k] == (size_t)-1)
			break;
		o += (size_t)snprintf(buf + o, o < len ? len - o : 0, "%s%s", m++ ? ", " : "",
				      cands[pick[k]]);
		if (o >= len)
			break;
	}
}

/* The member name of struct or union t (anonymous members' members too):
 * *m and its byte offset. */
static bool find_member(Dwarf_Die *t, const char *name, size_t nlen, Dwarf_Die *m, long *off,
			struct names *all)
{
	Dwarf_Die c;

	if (dwarf_child(t, &c))
		return false;
	do {
		const char *nm = dwarf_diename(&c);
		Dwarf_Attribute a;
		Dwarf_Word o = 0;

		if (dwarf_tag(&c) != DW_TAG_member)
			continue;
		if (dwarf_attr(&c, DW_AT_data_member_location, &a))
			dwarf_formudata(&a, &o);
		if (!nm) {
			Dwarf_Die at;
			long sub;

			if (type_of(&c, &at) && peeled(&at, &at) &&
			    find_member(&at, name, nlen, m, &sub, all)) {
				*off = (long)o + sub;
				return true;
			}
			continue;
		}
		if (all)
			names_add(all, nm);
		if (strlen(nm) == nlen && !memcmp(nm, name, nlen)) {
			*m = c;
			*off = (long)o;
			return true;
		}
	} while (!dwarf_siblingof(&c, &c));
	return false;
}

/* ------------------------------------------------------------ access */

/* The value of a pointer lv holds, loaded: lv becomes the value. */
static bool load_pointer(struct lval *lv)
{
	if (lv->kind == LV_MEM) {
		if (lv->nd > UKP_SPEC_DEREF_MAX)
			return false;
		lv->d[lv->nd++] = lv->off;
		lv->kind = LV_VAL;
		lv->off = 0;
	}
	return true;
}

/* Where the pointer value lv points, plus off: lv becomes that object. */
static bool deref(struct lval *lv, long off)
{
	if (lv->kind != LV_VAL) /* a pointer in memory: load it first */
		return false;
	lv->kind = LV_MEM;
	lv->off += off;
	return true;
}

static int ident_len(const char *s, size_t len)
{
	size_t i = 0;

	while (i < len && (isalnum((unsigned char)s[i]) || s[i] == '_'))
		i++;
	return (int)i;
}

/* The visible variables' names at scopes, for suggestions. */
static void scope_names(Dwarf_Die *scopes, int ns, struct names *all)
{
	int i;

	for (i = 0; i < ns; i++) {
		Dwarf_Die c;

		if (dwarf_child(&scopes[i], &c))
			continue;
		do {
			int t = dwarf_tag(&c);
			const char *nm;

			if ((t == DW_TAG_variable || t == DW_TAG_formal_parameter) &&
			    (nm = dwarf_diename(&c)))
				names_add(all, nm);
		} while (!dwarf_siblingof(&c, &c));
	}
}

/* Is name a member of the struct this points to (a C++ member
 * function's)? */
static bool implicit_member(Dwarf_Die *scopes, int ns, const char *name, size_t len)
{
	Dwarf_Die self, t, m;
	long off;

	return dwarf_getscopevar(scopes, ns, "this", 0, NULL, 0, 0, &self) >= 0 &&
	       type_of(&self, &t) && peeled(&t, &t) && dwarf_tag(&t) == DW_TAG_pointer_type &&
	       type_of(&t, &t) && peeled(&t, &t) && find_member(&t, name, len, &m, &off, NULL);
}

/* A global by name in another unit of the object than the probed code's
 * (one that unit does not declare): an external variable with a
 * location, the first unit defining it. Walks every unit: only for a
 * name the probed scopes do not have. */
static bool global_elsewhere(struct ukp_dw *dw, const char *name, Dwarf_Die *var)
{
	Dwarf_Off off = 0, next;
	size_t hsize;

	while (dwarf_nextcu(dw->dbg, off, &next, &hsize, NULL, NULL, NULL) == 0) {
		Dwarf_Die cu, c;

		if (dwarf_offdie(dw->dbg, off + hsize, &cu) && !dwarf_child(&cu, &c)) {
			do {
				const char *nm;

				if (dwarf_tag(&c) == DW_TAG_variable && dwarf_hasattr(&c, DW_AT_external) &&
				    dwarf_hasattr(&c, DW_AT_location) && (nm = dwarf_diename(&c)) &&
				    !strcmp(nm, name)) {
					*var = c;
					return true;
				}
			} while (!dwarf_siblingof(&c, &c));
		}
		off = next;
	}
	return false;
}

static int too_deep(int col, struct ukp_dw_err *e)
{
	return ukp_dw_fail(e, col, "too many dereferences (at most %d)", UKP_SPEC_DEREF_MAX);
}

int ukp_dw_var_fetch(struct ukp_dw *dw, const struct ukp_dw_site *site, const char *s,
		     size_t len, int col, struct ukp_fetcharg *fa, struct ukp_dw_err *e)
{
	struct lval lv = { 0 };
	struct names all = { 0 };
	Dwarf_Die *scopes, var, t;
	char what[UKP_SPEC_ARGSTR_MAX + 1], near[200], tn[256];
	int ns = ukp_dw_scopes(dw, site->pc, &scopes), n = ident_len(s, len), ret = -1;
	size_t i;
	bool want_string = fa->type_given && ukp_fetch_type_of(fa)->is_string;

	snprintf(what, sizeof(what), "%.*s", n, s);
	if (!ns) {
		ukp_dw_fail(e, col, "no debug information for the code at 0x%lx", (unsigned long)site->pc);
		goto out;
	}
	if (!n || (dwarf_getscopevar(scopes, ns, what, 0, NULL, 0, 0, &var) < 0 &&
		   !global_elsewhere(dw, what, &var))) {
		/* C++: a member of *this by its name alone */
		if (n && implicit_member(scopes, ns, s, (size_t)n)) {
			char buf[UKP_SPEC_ARGSTR_MAX + 8];

			snprintf(buf, sizeof(buf), "this->%.*s", (int)len, s);
			ret = ukp_dw_var_fetch(dw, site, buf, strlen(buf), col - 6, fa, e);
			goto out;
		}
		scope_names(scopes, ns, &all);
		ukp_dw_nearest(what, all.v, all.n, near, sizeof(near));
		ukp_dw_fail(e, col, "no variable %s here%s%s%s", what, near[0] ? " (nearest: " : "",
			    near, near[0] ? ")" : "");
		goto out;
	}
	locate(dw, site, scopes, ns, &var, &lv);
	lv.have_type = type_of(&var, &lv.type);
	i = (size_t)n;
	while (i < len) {
		bool arrow = len - i >= 2 && s[i] == '-' && s[i + 1] == '>';
		int fcol = col + (int)i;

		if (!lv.have_type || !peeled(&lv.type, &t)) {
			ukp_dw_fail(e, fcol, "%s has no type to access", what);
			goto out;
		}
		if (arrow || s[i] == '.') {
			Dwarf_Die m, tt = t;
			long moff;
			size_t start = i + (arrow ? 2 : 1);
			int fl = ident_len(s + start, len - start);
			Dwarf_Attribute a;
			bool ref = dwarf_tag(&t) == DW_TAG_reference_type ||
				   dwarf_tag(&t) == DW_TAG_rvalue_reference_type;

			/* a C++ reference's members: through its pointer */
			if (ref && !arrow && type_of(&t, &tt) && peeled(&tt, &tt))
				arrow = true;
			else if (arrow) {
				if (dwarf_tag(&t) != DW_TAG_pointer_type || !type_of(&t, &tt) ||
				    !peeled(&tt, &tt)) {
					ukp_dw_fail(e, fcol, "%s is not a pointer to a struct (%s): use .",
						    what, ukp_dw_type_name(&lv.type, tn, sizeof(tn)));
					goto out;
				}
			} else if (dwarf_tag(&t) == DW_TAG_pointer_type) {
				ukp_dw_fail(e, fcol, "%s is a pointer (%s): use ->", what,
					    ukp_dw_type_name(&lv.type, tn, sizeof(tn)));
				goto out;
			}
			if (dwarf_tag(&tt) != DW_TAG_structure_type && dwarf_tag(&tt) != DW_TAG_union_type &&
			    dwarf_tag(&tt) != DW_TAG_class_type) {
				ukp_dw_fail(e, fcol, "%s is not a struct or union (%s)", what,
					    ukp_dw_type_name(&lv.type, tn, sizeof(tn)));
				goto out;
			}
			if (!fl) {
				ukp_dw_fail(e, col + (int)start, "a field name must follow");
				goto out;
			}
			if (!find_member(&tt, s + start, (size_t)fl, &m, &moff, &all)) {
				char fname[UKP_SPEC_ARGSTR_MAX + 1];

				snprintf(fname, sizeof(fname), "%.*s", fl, s + start);
				ukp_dw_nearest(fname, all.v, all.n, near, sizeof(near));
				ukp_dw_fail(e, col + (int)start, "%s has no field %s%s%s%s",
					    ukp_dw_type_name(&tt, tn, sizeof(tn)), fname,
					    near[0] ? " (nearest: " : "", near, near[0] ? ")" : "");
				goto out;
			}
			if (lv.kind != LV_NONE) {
				if (arrow && (!load_pointer(&lv) || !deref(&lv, moff))) {
					if (lv.nd > UKP_SPEC_DEREF_MAX) {
						too_deep(fcol, e);
						goto out;
					}
					lv.kind = LV_NONE; /* a computed pointer we cannot follow */
				} else if (!arrow && lv.kind == LV_MEM) {
					lv.off += moff;
				} else if (!arrow) {
					lv.kind = LV_NONE; /* a struct in registers */
				}
			}
			lv.bf_width = 0;
			if (dwarf_attr(&m, DW_AT_bit_size, &a)) {
				Dwarf_Word bs = 0, dbo = 0;
				Dwarf_Die mt;
				int cs = type_of(&m, &mt) && peeled(&mt, &mt) ? dwarf_bytesize(&mt) : 0;
				long byte;

				dwarf_formudata(&a, &bs);
				if (cs <= 0) {
					ukp_dw_fail(e, fcol, "bitfield of unknown size");
					goto out;
				}
				if (dwarf_attr(&m, DW_AT_data_bit_offset, &a)) {
					dwarf_formudata(&a, &dbo);
				} else if (dwarf_attr(&m, DW_AT_bit_offset, &a)) {
					/* DWARF 2's form (clang writes it): bits from the
					 * most significant bit of a storage unit of
					 * DW_AT_byte_size at the member's location, which
					 * lv.off holds already; little-endian machines */
					Dwarf_Word bo = 0, unit = (Dwarf_Word)cs;
					Dwarf_Attribute ua;

					dwarf_formudata(&a, &bo);
					if (dwarf_attr(&m, DW_AT_byte_size, &ua))
						dwarf_formudata(&ua, &unit);
					if (bo + bs > unit * 8) {
						ukp_dw_fail(e, fcol, "bitfield outside its storage unit");
						goto out;
					}
					dbo = unit * 8 - bo - bs;
				}
				byte = (long)(dbo / 8) & ~((long)cs - 1);
				lv.off += byte;
				lv.bf_width = (unsigned int)bs;
				lv.bf_offset = (unsigned int)(dbo - (Dwarf_Word)byte * 8);
				lv.bf_size = (unsigned int)cs;
				if (lv.bf_offset + lv.bf_width > 8u * (unsigned int)cs) {
					ukp_dw_fail(e, fcol, "bitfield across its container: not supported");
					goto out;
				}
			}
			lv.have_type = type_of(&m, &lv.type);
			snprintf(what, sizeof(what), "%.*s", (int)(start + (size_t)fl), s);
			i = start + (size_t)fl;
		} else if (s[i] == '[') {
			const char *close = memchr(s + i, ']', len - i);
			unsigned long idx = 0;
			Dwarf_Die et;
			int es;
			char *end;

			if (!close || close == s + i + 1 || !isdigit((unsigned char)s[i + 1])) {
				ukp_dw_fail(e, fcol, "an index must be [N]");
				goto out;
			}
			idx = strtoul(s + i + 1, &end, 0);
			if (end != close) {
				ukp_dw_fail(e, fcol + 1, "invalid index");
				goto out;
			}
			if ((dwarf_tag(&t) != DW_TAG_array_type && dwarf_tag(&t) != DW_TAG_pointer_type) ||
			    !type_of(&t, &et)) {
				ukp_dw_fail(e, fcol, "%s is not an array or a pointer (%s)", what,
					    ukp_dw_type_name(&lv.type, tn, sizeof(tn)));
				goto out;
			}
			if (dwarf_tag(&t) == DW_TAG_array_type && array_len(&t) && idx >= array_len(&t)) {
				ukp_dw_fail(e, fcol + 1, "index %lu is out of %s (%lu elements)", idx, what,
					    (unsigned long)array_len(&t));
				goto out;
			}
			{
				Dwarf_Die pe;

				es = peeled(&et, &pe) ? dwarf_bytesize(&pe) : -1;
			}
			if (es <= 0) {
				ukp_dw_fail(e, fcol, "elements of %s have no size", what);
				goto out;
			}
			if (lv.kind != LV_NONE) {
				if (dwarf_tag(&t) == DW_TAG_array_type) {
					if (lv.kind == LV_MEM)
						lv.off += (long)idx * es;
					else
						lv.kind = LV_NONE;
				} else if (!load_pointer(&lv) || !deref(&lv, (long)idx * es)) {
					if (lv.nd > UKP_SPEC_DEREF_MAX) {
						too_deep(fcol, e);
						goto out;
					}
					lv.kind = LV_NONE;
				}
			}
			lv.type = et;
			lv.bf_width = 0;
			i = (size_t)(close - s) + 1;
			snprintf(what, sizeof(what), "%.*s", (int)i, s);
		} else {
			ukp_dw_fail(e, fcol, "expected ->FIELD, .FIELD or [N] here");
			goto out;
		}
	}

	/* the value: its type, then its fetch */
	if (!lv.have_type) {
		ukp_dw_fail(e, col, "%s has no type", what);
		goto out;
	}
	if (want_string) {
		Dwarf_Die et;

		if (!peeled(&lv.type, &t) ||
		    (dwarf_tag(&t) != DW_TAG_pointer_type && dwarf_tag(&t) != DW_TAG_array_type) ||
		    !type_of(&t, &et) || !peeled(&et, &et) || !is_char(&et)) {
			ukp_dw_fail(e, col, "%s is not a char * or char[] (%s): no :string", what,
				    ukp_dw_type_name(&lv.type, tn, sizeof(tn)));
			goto out;
		}
		if (dwarf_tag(&t) == DW_TAG_pointer_type && lv.kind != LV_NONE && !load_pointer(&lv)) {
			too_deep(col, e);
			goto out;
		}
		/* the string at v + off */
		if (lv.kind == LV_VAL || lv.kind == LV_MEM)
			lv.kind = LV_MEM;
		else
			lv.kind = LV_NONE;
	} else if (lv.bf_width && !fa->type_given) {
		const struct ukp_fetch_type *row = ukp_fetch_type_find(UKP_TY_U, lv.bf_size);

		fa->type = row->type;
		fa->size = row->size;
		fa->tidx = (unsigned char)(row - ukp_fetch_types);
		fa->bf_width = lv.bf_width;
		fa->bf_offset = lv.bf_offset;
	} else if (!fa->type_given && scalar_type(&lv.type, what, col, fa, e)) {
		goto out;
	}
	fa->base = lv.base;
	fa->param = lv.param;
	fa->nderef = 0;
	switch (lv.kind) {
	case LV_VAL:
		if (lv.base == UKP_FA_SYM && !lv.nd) {
			fa->base = UKP_FA_UNAVAIL;
			break;
		}
		memcpy(fa->deref, lv.d, (size_t)lv.nd * sizeof(long));
		fa->nderef = lv.nd;
		/* reg + k (DW_OP_bregN K; DW_OP_stack_value): a string
		 * has been made LV_MEM above */
		fa->add = lv.off;
		break;
	case LV_MEM:
		if (lv.nd > UKP_SPEC_DEREF_MAX) {
			too_deep(col, e);
			goto out;
		}
		memcpy(fa->deref, lv.d, (size_t)lv.nd * sizeof(long));
		fa->deref[lv.nd] = lv.off;
		fa->nderef = lv.nd + 1;
		break;
	case LV_CONST:
		fa->base = UKP_FA_IMM;
		fa->param = lv.cval;
		break;
	case LV_NONE:
		fa->base = UKP_FA_UNAVAIL;
		break;
	}
	if (fa->base == UKP_FA_SYM) {
		fa->symbol = lv.symbol;
		fa->symoff = lv.symoff;
		lv.symbol = NULL;
	}
	ret = 0;
out:
	free(lv.symbol);
	names_free(&all);
	free(scopes);
	return ret;
}

int ukp_dw_retval(struct ukp_dw *dw, Dwarf_Addr entry, struct ukp_fetcharg *fa)
{
	struct ukp_dw_err e;
	Dwarf_Die *scopes, t;
	int ns = ukp_dw_scopes(dw, entry, &scopes), i, ret = -1;
	Dwarf_Addr lo;

	for (i = ns - 1; i >= 0; i--)
		if (dwarf_tag(&scopes[i]) == DW_TAG_subprogram)
			break;
	if (i >= 0 && !dwarf_entrypc(&scopes[i], &lo) && lo == entry && type_of(&scopes[i], &t))
		ret = scalar_type(&t, "$retval", 0, fa, &e);
	free(scopes);
	return ret;
}

int ukp_dw_params(struct ukp_dw *dw, const struct ukp_dw_site *site, char ***names, size_t *n)
{
	struct names all = { 0 };
	Dwarf_Die *scopes, c;
	int ns = ukp_dw_scopes(dw, site->pc, &scopes), fi = ukp_dw_func_scope(scopes, ns);

	if (fi >= 0 && !dwarf_child(&scopes[fi], &c)) {
		do {
			const char *nm;
			Dwarf_Attribute a;
			bool out;

			/* (Go lists a function's results as parameters marked
			 * DW_AT_variable_parameter, ~r0 when unnamed: not
			 * inputs, and unset at the entry) */
			out = dwarf_attr(&c, DW_AT_variable_parameter, &a) &&
			      dwarf_formflag(&a, &out) == 0 && out;
			if (dwarf_tag(&c) == DW_TAG_formal_parameter && (nm = dwarf_diename(&c)) &&
			    !out) {
				size_t before = all.n;

				names_add(&all, nm);
				if (all.n == before) {
					free(scopes);
					names_free(&all);
					return -1;
				}
			}
		} while (!dwarf_siblingof(&c, &c));
	}
	free(scopes);
	*names = all.v;
	*n = all.n;
	return fi < 0 ? -1 : 0;
}
