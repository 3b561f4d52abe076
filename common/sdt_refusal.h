/* SPDX-License-Identifier: MIT */
/*
 * sdt_refusal.h - why an SDT argument's operand is refused (the library
 * leaves it undecoded, kind 0 of struct usdt_arg): the forms ukprobe
 * does not fetch on purpose, because it cannot fetch them right, each
 * with its reason, for the agent's error (agent/usdt.c) and the test
 * that parses every note of the machine (tests/usdt_notes.c).
 */
#ifndef UKPROBE_SDT_REFUSAL_H
#define UKPROBE_SDT_REFUSAL_H

#include <stdbool.h>
#include <stddef.h>

/* [any] The reason for the argument text[0..len) ("-8@%fs:tv@tpoff"),
 * a phrase that follows its quoted text; *known: a form refused on
 * purpose (false: one the decoder does not know, the generic reason). */
const char *ukp_sdt_refusal(const char *text, size_t len, bool *known);

#endif /* UKPROBE_SDT_REFUSAL_H */
