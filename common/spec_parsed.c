/* SPDX-License-Identifier: MIT */
/*
 * spec_parsed.c - what code holding a parsed SPEC uses, apart from the
 * parser: freeing it, and the names the agent gives the library and a
 * glob's matches. The CLI parses (spec.c); the agent gets its SPECs
 * parsed (spec_wire.h) and builds this file, not the parser. [init]:
 * plain C, malloc; not for signal context.
 */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hist.h"
#include "spec_parse.h"

void spec_make_identifier(char *s)
{
	for (; *s; s++)
		if (!isalnum((unsigned char)*s) && *s != '_')
			*s = '_';
}

void ukp_spec_match_event(const struct ukp_spec *spec, const char *func, char *buf, size_t len)
{
	char suffix[32] = "";
	size_t room;

	if (spec->is_return)
		snprintf(suffix, sizeof(suffix), "__return");
	else if (spec->offset)
		snprintf(suffix, sizeof(suffix), "_%lu", spec->offset);
	if (len > UKP_SPEC_NAME_MAX + 1)
		len = UKP_SPEC_NAME_MAX + 1;
	room = len - 1 - strlen(suffix);
	snprintf(buf, len, "%s%.*s%s", isdigit((unsigned char)func[0]) ? "_" : "", (int)room,
		 func, suffix);
	spec_make_identifier(buf);
}

void ukp_spec_release(const struct ukp_spec *spec)
{
	int i;

	/* also the argument being parsed when a SPEC failed */
	for (i = 0; i < UKP_SPEC_MAX_ARGS; i++)
		free(spec->args[i].symbol);
	free(spec->text);
	free(spec->object);
	free(spec->symbol);
	free(spec->filter_text);
	free(spec->filter);
	free(spec->trigger_text);
	ukp_hist_free(spec->hist);
	free(spec->onoff_filter);
}

void ukp_spec_free(struct ukp_spec *spec)
{
	int i;

	ukp_spec_release(spec);
	for (i = 0; i < UKP_SPEC_MAX_ARGS; i++)
		spec->args[i].symbol = NULL;
	spec->text = spec->object = spec->symbol = spec->filter_text = spec->trigger_text = NULL;
	spec->filter = spec->onoff_filter = NULL;
	spec->hist = NULL;
}

char *ukp_spec_symbol_name(const struct ukp_spec *spec)
{
	size_t len = strlen(spec->symbol) + (spec->object ? strlen(spec->object) + 1 : 0) + 1;
	char *s = malloc(len);

	if (!s)
		return NULL;
	if (spec->object)
		snprintf(s, len, "%s:%s", spec->object, spec->symbol);
	else
		snprintf(s, len, "%s", spec->symbol);
	return s;
}

void ukp_hist_free(struct ukp_hist *h)
{
	if (!h)
		return;
	free(h->filter);
	free(h->info);
	free(h);
}
