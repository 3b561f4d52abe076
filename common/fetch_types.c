/* SPDX-License-Identifier: MIT */
/*
 * fetch_types.c - the fetch type table (fetch_types.h).
 */
#include <string.h>

#include "fetch_types.h"

#define NUM(n, t, sz, sgn, hx) \
	{ n, t, sz, UKP_SPEC_NUM_SLOT, sgn, false, hx, UKP_PRINT_NUMBER, false }

const struct ukp_fetch_type ukp_fetch_types[] = {
	NUM("u8", UKP_TY_U, 1, false, false), NUM("u16", UKP_TY_U, 2, false, false),
	NUM("u32", UKP_TY_U, 4, false, false), NUM("u64", UKP_TY_U, 8, false, false),
	NUM("s8", UKP_TY_S, 1, true, false), NUM("s16", UKP_TY_S, 2, true, false),
	NUM("s32", UKP_TY_S, 4, true, false), NUM("s64", UKP_TY_S, 8, true, false),
	NUM("x8", UKP_TY_X, 1, false, true), NUM("x16", UKP_TY_X, 2, false, true),
	NUM("x32", UKP_TY_X, 4, false, true), NUM("x64", UKP_TY_X, 8, false, true),
	{ "string", UKP_TY_STRING, UKP_SPEC_STR_SLOT, UKP_SPEC_STR_SLOT, false, true, false,
	  UKP_PRINT_STRING, false },
	{ "ustring", UKP_TY_STRING, UKP_SPEC_STR_SLOT, UKP_SPEC_STR_SLOT, false, true, false,
	  UKP_PRINT_STRING, true },
	{ "char", UKP_TY_CHAR, 1, UKP_SPEC_NUM_SLOT, false, false, false, UKP_PRINT_CHAR, false },
	{ "symbol", UKP_TY_SYMBOL, 8, UKP_SPEC_NUM_SLOT, false, false, true, UKP_PRINT_SYMBOL,
	  false },
	/* floating point: the value's bits, fetched as any number; shown,
	 * never compared (filters and hists refuse them) */
	{ "f32", UKP_TY_FLOAT, 4, UKP_SPEC_NUM_SLOT, false, false, false, UKP_PRINT_FLOAT, false },
	{ "f64", UKP_TY_FLOAT, 8, UKP_SPEC_NUM_SLOT, false, false, false, UKP_PRINT_FLOAT, false },
};

const size_t ukp_fetch_ntypes = sizeof(ukp_fetch_types) / sizeof(ukp_fetch_types[0]);

const struct ukp_fetch_type *ukp_fetch_type_named(const char *name, size_t len)
{
	size_t i;

	for (i = 0; i < ukp_fetch_ntypes; i++)
		if (strlen(ukp_fetch_types[i].name) == len && !memcmp(ukp_fetch_types[i].name, name, len))
			return &ukp_fetch_types[i];
	return NULL;
}

const struct ukp_fetch_type *ukp_fetch_type_find(enum ukp_fa_type type, unsigned int size)
{
	size_t i;

	for (i = 0; i < ukp_fetch_ntypes; i++)
		if (ukp_fetch_types[i].type == type && ukp_fetch_types[i].size == size &&
		    !ukp_fetch_types[i].alias)
			return &ukp_fetch_types[i];
	return NULL;
}
