/* SPDX-License-Identifier: MIT */
/*
 * fetch_types.h - the fetch types a SPEC's :TYPE may give (the kernel's
 * probe_fetch_types table): one row per type name, with everything the
 * parser, the filter and hist compilers and the printers need to know
 * of it, so that none of them keeps a switch over the types of its own.
 *
 * [any] constant data.
 */
#ifndef UKPROBE_FETCH_TYPES_H
#define UKPROBE_FETCH_TYPES_H

#include <stdbool.h>
#include <stddef.h>

#include "spec.h"

/* How a value of the type is shown. */
enum ukp_fetch_print {
	UKP_PRINT_NUMBER,         /* decimal, signed decimal or 0x... (is_signed, hex) */
	UKP_PRINT_CHAR,           /* one character */
	UKP_PRINT_STRING,         /* the string in its slot */
	UKP_PRINT_SYMBOL,         /* an address as sym+0xoff/0xsize */
	UKP_PRINT_FLOAT,          /* a float or double, as few digits as give it back */
};

struct ukp_fetch_type {
	const char *name;         /* as a SPEC writes it, and as it is shown */
	enum ukp_fa_type type;
	unsigned int size;        /* bytes read (a string: its slot) */
	unsigned int slot;        /* bytes it takes in an event's payload */
	bool is_signed;           /* compared and printed signed */
	bool is_string;
	bool hex;                 /* printed as 0x... */
	enum ukp_fetch_print print;
	bool alias;               /* another name of the row before it, shown by
				   * that row's name (ustring: string) */
};

extern const struct ukp_fetch_type ukp_fetch_types[];
extern const size_t ukp_fetch_ntypes;

/* The row of a type name, or NULL. */
const struct ukp_fetch_type *ukp_fetch_type_named(const char *name, size_t len);
/* The row of a type and size (not an alias), or NULL: bitfields use
 * their container's unsigned row. */
const struct ukp_fetch_type *ukp_fetch_type_find(enum ukp_fa_type type, unsigned int size);

/* The row of a parsed argument. */
static inline const struct ukp_fetch_type *ukp_fetch_type_of(const struct ukp_fetcharg *fa)
{
	return &ukp_fetch_types[fa->tidx];
}

#endif /* UKPROBE_FETCH_TYPES_H */
