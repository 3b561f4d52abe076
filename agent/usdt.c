/* SPDX-License-Identifier: MIT */
/*
 * usdt.c - SDT SPECs ([OBJ:]%PROVIDER:NAME): the notes that match, from
 * the library (usdt_on_each_probe; module_file_usdt_on_each_probe for
 * an object not loaded yet), and each probe's fetch arguments, $argN
 * compiled from its note's argument spec into the forms the fetch
 * already has (a register, memory at a register + offset or at an
 * address, a constant; memory at base + index * scale + offset, the
 * fetch's index_reg), with the sign of an untyped argument. The library decodes the note; nothing is parsed
 * here.
 *
 * Context: [init] (probes.c's, under its lock).
 */
#include <errno.h>
#include <fnmatch.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent.h"
#include "fetch_types.h"
#include "sdt_refusal.h"

/* "PROVIDER:NAME" matches the SPEC's pattern (or name). */
static bool note_matches(const struct ukp_spec *spec, const struct usdt_probe *p)
{
	char key[512];

	snprintf(key, sizeof(key), "%s:%s", p->provider, p->name);
	return spec->is_glob ? fnmatch(spec->symbol, key, 0) == 0 : !strcmp(spec->symbol, key);
}

struct collect {
	const struct ukp_spec *spec;
	struct ukpa_sdt *v;
	size_t n, cap;
	bool nomem;
};

/* [init] inside the library's walk: keep a copy of a matching note */
static int collect_cb(void *data, const struct usdt_probe *p)
{
	struct collect *c = data;
	struct ukpa_sdt *m;
	int i;

	if (!note_matches(c->spec, p))
		return 0;
	if (c->n == c->cap) {
		size_t cap = c->cap ? 2 * c->cap : 8;
		struct ukpa_sdt *v = realloc(c->v, cap * sizeof(*v));

		if (!v) {
			c->nomem = true;
			return 1;
		}
		c->v = v;
		c->cap = cap;
	}
	m = &c->v[c->n];
	m->p = *p;
	m->provider = strdup(p->provider);
	m->name = strdup(p->name);
	m->args = strdup(p->args);
	if (!m->provider || !m->name || !m->args) {
		free(m->provider);
		free(m->name);
		free(m->args);
		c->nomem = true;
		return 1;
	}
	m->p.provider = m->provider;
	m->p.name = m->name;
	m->p.args = m->args;
	m->modpath = p->modpath ? strdup(p->modpath) : NULL;
	m->p.modname = m->p.modpath = NULL; /* the library's, gone after the walk */
	for (i = 0; i < m->p.nargs; i++)
		m->p.arg[i].text = m->args + (p->arg[i].text - p->args);
	c->n++;
	return 0;
}

int ukpa_usdt_matches(const struct ukp_spec *spec, struct ukpa_sdt **out, size_t *n)
{
	struct collect c = { .spec = spec };
	int ret = usdt_on_each_probe(spec->object, collect_cb, &c);

	if (c.nomem)
		ret = -ENOMEM;
	if (ret) {
		ukpa_usdt_matches_free(c.v, c.n);
		return ret;
	}
	*out = c.v;
	*n = c.n;
	return c.n ? 0 : -ENOENT;
}

void ukpa_usdt_matches_free(struct ukpa_sdt *v, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++) {
		free(v[i].provider);
		free(v[i].name);
		free(v[i].args);
		free(v[i].modpath);
	}
	free(v);
}

struct file_any {
	const struct ukp_spec *spec;
	bool found;
};

static int file_any_cb(void *data, const struct usdt_probe *p)
{
	struct file_any *f = data;

	f->found = note_matches(f->spec, p);
	return f->found;
}

bool ukpa_usdt_file_has(const char *path, const struct ukp_spec *spec, uint32_t *what)
{
	struct file_any f = { spec, false };
	int ret = module_file_usdt_on_each_probe(path, file_any_cb, &f);

	*what = ret < 0 ? UKP_WHAT_OBJECT : spec->is_glob ? UKP_WHAT_NOMATCH : UKP_WHAT_SYMBOL;
	return f.found;
}

/* fa's dereferences with x first (the SDT argument's own memory
 * access, before those the SPEC adds). false when there is no room. */
static bool deref_first(struct ukp_fetcharg *fa, long x)
{
	int i;

	if (fa->nderef >= UKP_SPEC_DEREF_MAX + 1)
		return false;
	for (i = fa->nderef; i > 0; i--)
		fa->deref[i] = fa->deref[i - 1];
	fa->deref[0] = x;
	fa->nderef++;
	return true;
}

int ukpa_usdt_compile(const struct ukp_spec *spec, const struct usdt_probe *p,
		      struct ukp_spec **out, uint32_t *argi, char *why, size_t len)
{
	struct ukp_spec *c;
	int i;

	*out = NULL;
	for (i = 0; i < spec->nargs && spec->args[i].base != UKP_FA_ARG; i++)
		;
	if (i == spec->nargs)
		return 0; /* no $argN: the SPEC's own arguments do */
	c = malloc(sizeof(*c));
	if (!c)
		return -ENOMEM;
	/* (a shallow copy: the fetch reads its arguments only) */
	memcpy(c, spec, sizeof(*c));
	for (i = 0; i < c->nargs; i++) {
		struct ukp_fetcharg *fa = &c->args[i];
		const struct usdt_arg *a;
		unsigned long n = fa->param;
		bool ok = true, known;

		if (fa->base != UKP_FA_ARG)
			continue;
		*argi = (uint32_t)i;
		if (n > (unsigned long)p->nargs) {
			snprintf(why, len, "SDT probe %s:%s has %d argument%s, not $arg%lu", p->provider,
				 p->name, p->nargs, p->nargs == 1 ? "" : "s", n);
			free(c);
			return -EINVAL;
		}
		a = &p->arg[n - 1];
		switch (a->kind) {
		case USDT_ARG_REG:
			fa->base = UKP_FA_REG;
			fa->param = a->reg;
			break;
		case USDT_ARG_MEM:
			fa->base = UKP_FA_REG;
			fa->param = a->reg;
			ok = deref_first(fa, a->off);
			break;
		case USDT_ARG_CONST:
			fa->base = UKP_FA_IMM;
			fa->param = (unsigned long)a->off;
			break;
		case USDT_ARG_ADDR:
			fa->base = UKP_FA_IMM;
			fa->param = a->addr;
			ok = deref_first(fa, 0);
			break;
		case USDT_ARG_INDEX:
			/* base (a register, or the symbol's address) +
			 * index * scale, then the displacement */
			if (a->reg == USDT_ARG_NOREG) {
				fa->base = UKP_FA_IMM;
				fa->param = a->addr;
			} else {
				fa->base = UKP_FA_REG;
				fa->param = a->reg;
			}
			fa->index_reg = a->index;
			fa->index_scale = a->scale;
			ok = deref_first(fa, (long)((unsigned long)a->off +
						 (a->reg == USDT_ARG_NOREG ? 0 : a->addr)));
			break;
		default:
			snprintf(why, len, "$arg%lu of SDT probe %s:%s is \"%.*s\", %s", n, p->provider,
				 p->name, (int)a->textlen, a->text,
				 ukp_sdt_refusal(a->text, a->textlen, &known));
			free(c);
			return -EINVAL;
		}
		if (!ok) {
			snprintf(why, len, "$arg%lu of SDT probe %s:%s: too many dereferences", n,
				 p->provider, p->name);
			free(c);
			return -EINVAL;
		}
		/* untyped: as the note types it (the slot and the shown type
		 * stay s64's) */
		if (fa->sdt_default) {
			fa->size = (unsigned int)a->size;
			fa->sext = a->is_signed && a->size < 8;
		}
		fa->plain_reg = fa->base == UKP_FA_REG && !fa->nderef && !fa->bf_width && !fa->sext &&
				!ukp_fetch_type_of(fa)->is_string;
	}
	*out = c;
	return 0;
}

struct addrs {
	const char *provider, *name;
	unsigned long *v;
	size_t n;
	bool nomem;
};

static int addrs_cb(void *data, const struct usdt_probe *p)
{
	struct addrs *a = data;
	unsigned long *v;

	if (strcmp(p->provider, a->provider) || strcmp(p->name, a->name))
		return 0;
	v = realloc(a->v, (a->n + 1) * sizeof(*v));
	if (!v) {
		a->nomem = true;
		return 1;
	}
	a->v = v;
	a->v[a->n++] = p->addr;
	return 0;
}

int ukpa_usdt_addrs(const char *modpath, const char *provider, const char *name,
		    unsigned long **out, size_t *n)
{
	struct addrs a = { provider, name, NULL, 0, false };
	int ret = usdt_on_each_probe(modpath, addrs_cb, &a);

	if (!ret && a.nomem)
		ret = -ENOMEM;
	if (!ret && !a.n)
		ret = -ENOENT;
	if (ret) {
		free(a.v);
		return ret;
	}
	*out = a.v;
	*n = a.n;
	return 0;
}
