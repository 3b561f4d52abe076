/* SPDX-License-Identifier: MIT */
/*
 * fuzz_script.c - libFuzzer target for `ukprobe run`'s script compiler
 * (tools/ukprobe/script/): the input is a script's text; it is parsed,
 * checked and, when it checks, translated to C. Nothing may read or write
 * out of bounds, leak (script_free() frees every allocation of the
 * stages, a failed parse's partial tree too), recurse without bound, or
 * hit undefined behaviour, whatever the text.
 * Built and run by scripts/fuzz.sh.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "script.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static FILE *null;
	static char *params[] = { "42", "text" };
	struct script sc = { .file = "fuzz", .params = params, .nparams = 2 };
	char *src = malloc(size + 1);

	if (!src)
		return 0;
	memcpy(src, data, size);
	src[size] = '\0';
	if (!null)
		null = fopen("/dev/null", "w");
	sc.src = src;
	if (!script_parse(&sc) && !script_check(&sc) && null)
		script_gen(&sc, null);
	script_free(&sc);
	free(src);
	return 0;
}
