/* SPDX-License-Identifier: MIT */
/*
 * trigger.c - --trigger, in the kernel's event trigger syntax
 * (Documentation/trace/events.rst, "Event triggers"): stacktrace,
 * stacktrace:N, hist (hist.c), traceon and traceoff. Plain C; not for
 * signal context.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "filter.h"
#include "hist.h"

static int fail(struct ukp_spec_error *err, size_t col, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static int fail(struct ukp_spec_error *err, size_t col, const char *fmt, ...)
{
	va_list ap;

	err->col = (int)col;
	va_start(ap, fmt);
	vsnprintf(err->msg, sizeof(err->msg), fmt, ap);
	va_end(ap);
	return -1;
}

/* traceon|traceoff[:N] [if FILTER], the name in [b, e). */
static int parse_onoff(const char *text, size_t b, size_t e, struct ukp_spec *spec,
		       struct ukp_spec_error *err)
{
	spec->onoff = e - b == 7 ? 1 : -1;
	spec->onoff_count = 0;
	if (text[e] == ':') {
		size_t nb = e + 1;
		char *end;

		for (e = nb; text[e] >= '0' && text[e] <= '9'; e++)
			;
		if (e == nb || e - nb > 9 || !(spec->onoff_count = strtoul(text + nb, &end, 10)))
			return fail(err, nb, "invalid count (%s:N, N from 1)",
				    spec->onoff > 0 ? "traceon" : "traceoff");
	}
	while (text[e] == ' ' || text[e] == '\t')
		e++;
	if (!text[e])
		return 0;
	if (strncmp(text + e, "if", 2) || (text[e + 2] != ' ' && text[e + 2] != '\t'))
		return fail(err, e, "unexpected text after the trigger (if FILTER?)");
	for (e += 3; text[e] == ' ' || text[e] == '\t'; e++)
		;
	if (ukp_filter_compile(text + e, spec, &spec->onoff_filter, err)) {
		err->col += (int)e;
		return -1;
	}
	return 0;
}

int ukp_trigger_parse(const char *text, struct ukp_spec *spec, struct ukp_spec_error *err)
{
	static const char *const later[] = { "snapshot",
					     "enable_event", "disable_event", "enable_hist",
					     "disable_hist" };
	size_t b = 0, e, i, len = strlen(text);
	unsigned int room;

	memset(err, 0, sizeof(*err));
	for (i = 0; i < len; i++) {
		unsigned char c = (unsigned char)text[i];

		if (c != '\t' && (c < 0x20 || c == 0x7f))
			return fail(err, i, "control character in the trigger");
	}
	while (text[b] == ' ' || text[b] == '\t')
		b++;
	for (e = b; text[e] && text[e] != ':' && text[e] != ' ' && text[e] != '\t'; e++)
		;
	if (e == b)
		return fail(err, b, "empty trigger");
	if (e - b == 4 && !strncmp(text + b, "hist", 4))
		return ukp_hist_parse(text + e, (int)e, spec, err);
	if ((e - b == 7 && !strncmp(text + b, "traceon", 7)) ||
	    (e - b == 8 && !strncmp(text + b, "traceoff", 8)))
		return parse_onoff(text, b, e, spec, err);
	if (e - b != 10 || strncmp(text + b, "stacktrace", 10)) {
		for (i = 0; i < sizeof(later) / sizeof(later[0]); i++)
			if (strlen(later[i]) == e - b && !strncmp(text + b, later[i], e - b))
				return fail(err, b, "the %s trigger is not supported (stacktrace[:N], hist:..., "
					    "traceon, traceoff)",
					    later[i]);
		return fail(err, b, "unknown trigger (stacktrace[:N], hist:..., traceon, traceoff)");
	}
	if (spec->stacktrace)
		return fail(err, b, "this event has a stacktrace trigger already");
	spec->stack_count = 0;
	if (text[e] == ':') {
		size_t nb = e + 1;
		char *end;

		for (e = nb; text[e] >= '0' && text[e] <= '9'; e++)
			;
		if (e == nb || e - nb > 9)
			return fail(err, nb, "invalid count (stacktrace:N, N from 1)");
		spec->stack_count = strtoul(text + nb, &end, 10);
		if (!spec->stack_count)
			return fail(err, nb, "invalid count (stacktrace:N, N from 1)");
	}
	while (text[e] == ' ' || text[e] == '\t')
		e++;
	if (text[e])
		return fail(err, e, text[e] == 'i' && text[e + 1] == 'f' ?
			    "a trigger's own filter is not supported: use --filter" :
			    "unexpected text after the trigger");
	/* the stack follows the arguments in the event's payload */
	room = UKP_SPEC_PAYLOAD_MAX - spec->payload;
	if (room < 8 + 4 * 8)
		return fail(err, b, "the event's arguments leave no room for a stack (%u of %d bytes "
			    "used, a stack needs 40)", spec->payload, UKP_SPEC_PAYLOAD_MAX);
	spec->stacktrace = true;
	spec->stack_off = spec->payload;
	spec->stack_max = (room - 8) / 8;
	return 0;
}
