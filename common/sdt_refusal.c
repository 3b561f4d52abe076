/* SPDX-License-Identifier: MIT */
/*
 * sdt_refusal.c - the reasons for SDT argument forms refused on purpose
 * (sdt_refusal.h). [any]: no allocation, no locks.
 */
#include <string.h>

#include "sdt_refusal.h"

/* Does text[0..len) contain word? */
static bool has(const char *text, size_t len, const char *word)
{
	size_t n = strlen(word), i;

	for (i = 0; i + n <= len; i++)
		if (!memcmp(text + i, word, n))
			return true;
	return false;
}

const char *ukp_sdt_refusal(const char *text, size_t len, bool *known)
{
	*known = true;
	/* x86-64's "%fs:tv@tpoff": an offset from the thread pointer that
	 * the linker computed and the note does not give */
	if (has(text, len, "%fs:") || has(text, len, "%gs:"))
		return "a thread-local variable (a segment-relative address): ukprobe does not "
		       "fetch those";
	/* AArch64's "[x0, w1, sxtw #2]": an index extended from 32 bits */
	if (has(text, len, "sxtw") || has(text, len, "uxtw"))
		return "an index register extended from 32 bits: ukprobe does not decode those";
	/* AArch64's "[x1, #:lo12:.LANCHOR0]": the low bits of a label that
	 * has no symbol */
	if (has(text, len, ":lo12:"))
		return "a global's address relative to a label that has no symbol: ukprobe "
		       "does not decode those";
	*known = false;
	return "a form ukprobe does not decode";
}
