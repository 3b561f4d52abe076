/* SPDX-License-Identifier: MIT */
/*
 * The fetch type table (common/fetch_types.c) as the SPEC parser uses
 * it: every type name parses to its row and is shown by it (an alias by
 * the name it stands for), with the payload room, signedness and form
 * the row gives; the defaults ($comm, $duration, a register) and
 * bitfields land on their rows.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>

#include "fetch_types.h"
#include "spec.h"

static void parse_ok(const char *text, struct ukp_spec *spec)
{
	struct ukp_spec_error err;

	cr_assert_eq(ukp_spec_parse(text, spec, &err), 0, "%s: %s at %d", text, err.msg, err.col);
}

Test(fetch_types, every_name_round_trips)
{
	size_t i;

	for (i = 0; i < ukp_fetch_ntypes; i++) {
		const struct ukp_fetch_type *t = &ukp_fetch_types[i];
		char text[128], name[32];
		struct ukp_spec spec;

		/* strings need memory to point at */
		snprintf(text, sizeof(text), "p:e libc.so.6:malloc a=%s:%s",
			 t->is_string ? "+0(%di)" : "%di", t->name);
		parse_ok(text, &spec);
		cr_assert_eq(ukp_fetch_type_of(&spec.args[0]), t->alias ? t - 1 : t, "%s", t->name);
		cr_assert_str_eq(ukp_spec_type_name(&spec.args[0], name, sizeof(name)),
				 t->alias ? (t - 1)->name : t->name);
		cr_assert_eq(spec.payload, t->slot, "%s", t->name);
		cr_assert_eq(spec.args[0].size, t->size);
		ukp_spec_free(&spec);
	}
	cr_assert_null(ukp_fetch_type_named("u128", 4));
}

Test(fetch_types, rows)
{
	cr_assert(ukp_fetch_type_named("s16", 3)->is_signed);
	cr_assert(!ukp_fetch_type_named("u16", 3)->is_signed);
	cr_assert(ukp_fetch_type_named("x32", 3)->hex);
	cr_assert(ukp_fetch_type_named("ustring", 7)->alias);
	cr_assert_eq(ukp_fetch_type_find(UKP_TY_STRING, UKP_SPEC_STR_SLOT),
		     ukp_fetch_type_named("string", 6));
	cr_assert_eq(ukp_fetch_type_named("char", 4)->print, UKP_PRINT_CHAR);
	cr_assert_eq(ukp_fetch_type_named("symbol", 6)->print, UKP_PRINT_SYMBOL);
	cr_assert_null(ukp_fetch_type_find(UKP_TY_U, 3));
}

Test(fetch_types, defaults_and_bitfields)
{
	struct ukp_spec spec;
	char name[32];

	parse_ok("r:e libc.so.6:malloc c=$comm d=$duration r=%ax f=+0(%di):b3@4/16", &spec);
	cr_assert_str_eq(ukp_spec_type_name(&spec.args[0], name, sizeof(name)), "string");
	cr_assert_str_eq(ukp_spec_type_name(&spec.args[1], name, sizeof(name)), "u64");
	cr_assert_str_eq(ukp_spec_type_name(&spec.args[2], name, sizeof(name)), "x64");
	cr_assert_str_eq(ukp_spec_type_name(&spec.args[3], name, sizeof(name)), "b3@4/16");
	cr_assert_eq(ukp_fetch_type_of(&spec.args[3]), ukp_fetch_type_named("u16", 3));
	cr_assert_eq(spec.payload, UKP_SPEC_STR_SLOT + 3 * UKP_SPEC_NUM_SLOT);
	ukp_spec_free(&spec);
}
