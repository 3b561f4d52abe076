/* SPDX-License-Identifier: MIT */
/*
 * demangle.c - C++ and Rust symbol names as people read them, with
 * libiberty's demangler (GNU v3 C++, Rust legacy and v0), for what the
 * agent shows (probe and address texts) and for globs and SPEC symbols
 * that name functions that way.
 *
 * [init]/[reader] only (allocates): never in the hit path.
 */
#include <fnmatch.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <libiberty/demangle.h>

#include "agent.h"

/* libiberty's demanglers allocate with xmalloc/xrealloc: these take the
 * place of its xmalloc.c, which says an allocation failure with stdio
 * (fprintf to stderr) and reads sbrk(); malloc here is the agent's own
 * (mem.c). Failing, the demangler has no way back: stop there. */
void *xmalloc(size_t n)
{
	void *p = malloc(n ? n : 1);

	if (!p) {
		dprintf(2, "ukprobe-agent: out of memory demangling a name (%zu bytes)\n", n);
		abort();
	}
	return p;
}

void *xrealloc(void *old, size_t n)
{
	void *p = realloc(old, n ? n : 1);

	if (!p) {
		dprintf(2, "ukprobe-agent: out of memory demangling a name (%zu bytes)\n", n);
		abort();
	}
	return p;
}

bool ukpa_mangled(const char *name)
{
	/* _Z: the Itanium C++ ABI (and legacy Rust); _R: Rust v0 */
	return name[0] == '_' && (name[1] == 'Z' || name[1] == 'R');
}

char *ukpa_demangle(const char *name)
{
	if (!ukpa_mangled(name))
		return NULL;
	return cplus_demangle(name, DMGL_PARAMS | DMGL_ANSI | DMGL_AUTO);
}

void ukpa_demangled_base(const char *d, char *out, size_t len)
{
	const char *b = d, *e = NULL, *c;
	bool lead = false, as = false;
	int depth = 0;
	size_t n = 0;

	/* the qualified name: after a return type ("int ns::f<int>(int)"),
	 * before the parameters; "operator new" keeps its blank */
	for (c = d; *c && !e; c++) {
		if (*c == '<')
			depth++;
		else if (*c == '>' && depth > 0)
			depth--;
		else if (!depth && *c == ' ' && !(c - d >= 8 && !strncmp(c - 8, "operator", 8)))
			b = c + 1;
		else if (!depth && *c == '(' && c > d && !(c - d >= 8 && !strncmp(c - 8, "operator", 8)))
			e = c;
	}
	if (!e)
		e = d + strlen(d);
	/* without template arguments; but a leading <TYPE> (Rust's v0 name
	 * of a method, "<shapes::Circle>::area", or "<T as Trait>::f") is
	 * the type's path: kept, without its " as Trait" */
	for (c = b, depth = 0; c < e && n + 1 < len; c++) {
		if (*c == '<') {
			lead = lead || c == b;
			depth++;
		} else if (*c == '>' && depth > 0) {
			if (!--depth)
				lead = as = false;
		} else if (!depth || (lead && depth == 1 && !as)) {
			if (depth && !strncmp(c, " as ", 4))
				as = true;
			else
				out[n++] = *c;
		}
	}
	out[n] = '\0';
}

bool ukpa_glob_matches(const char *pattern, const char *name)
{
	char buf[512];
	size_t len = strcspn(name, "@");
	char *d;
	bool match;

	if (len >= sizeof(buf))
		return false;
	memcpy(buf, name, len);
	buf[len] = '\0';
	if (!fnmatch(pattern, buf, 0))
		return true;
	/* a C++ or Rust function: its demangled name may match */
	d = ukpa_demangle(buf);
	match = d && !fnmatch(pattern, d, 0);
	free(d);
	return match;
}
