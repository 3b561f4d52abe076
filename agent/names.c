/* SPDX-License-Identifier: MIT */
/*
 * names.c - the event names in use in this process image ("group/event"),
 * so that every probe of a glob gets a name of its own, as perf probe
 * gives them. [init], under the probe list's lock (probes.c).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent.h"

/* Names in use in this image ("group/event"): open addressing. */
static char **names;
static size_t names_cap, names_n;

static size_t name_hash(const char *s)
{
	size_t h = 5381;

	while (*s)
		h = h * 33 + (unsigned char)*s++;
	return h;
}

bool ukpa_name_taken(const char *key)
{
	size_t i;

	if (!names_cap)
		return false;
	for (i = name_hash(key) & (names_cap - 1); names[i]; i = (i + 1) & (names_cap - 1))
		if (!strcmp(names[i], key))
			return true;
	return false;
}

int ukpa_name_add(const char *key)
{
	size_t i;

	if ((names_n + 1) * 2 > names_cap) {
		size_t cap = names_cap ? names_cap * 2 : 64, k;
		char **n = calloc(cap, sizeof(*n));

		if (!n)
			return -ENOMEM;
		for (k = 0; k < names_cap; k++) {
			if (!names[k])
				continue;
			for (i = name_hash(names[k]) & (cap - 1); n[i]; i = (i + 1) & (cap - 1))
				;
			n[i] = names[k];
		}
		free(names);
		names = n;
		names_cap = cap;
	}
	for (i = name_hash(key) & (names_cap - 1); names[i]; i = (i + 1) & (names_cap - 1))
		;
	names[i] = strdup(key);
	if (!names[i])
		return -ENOMEM;
	names_n++;
	return 0;
}

void ukpa_names_clear(void)
{
	size_t i;

	for (i = 0; i < names_cap; i++)
		free(names[i]);
	free(names);
	names = NULL;
	names_cap = names_n = 0;
}

/* A free name for one match of a glob SPEC: the SPEC's event (when
 * given) or the function's name, then _1, _2, ... as perf probe does. */
void ukpa_glob_event_name(const struct ukp_spec *spec, const char *func, char *out, size_t len)
{
	char base[UKP_SPEC_NAME_MAX + 1], key[2 * UKP_SPEC_NAME_MAX + 2];
	unsigned int n;

	if (spec->event_given)
		snprintf(base, sizeof(base), "%s", spec->event);
	else
		ukp_spec_match_event(spec, func, base, sizeof(base));
	snprintf(out, len, "%s", base);
	for (n = 1;; n++) {
		snprintf(key, sizeof(key), "%s/%s", spec->group, out);
		if (!ukpa_name_taken(key))
			break;
		snprintf(out, len, "%.*s_%u", UKP_SPEC_NAME_MAX - 11, base, n);
	}
	ukpa_name_add(key);
}
