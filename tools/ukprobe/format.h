/* SPDX-License-Identifier: MIT */
/*
 * format.h - how ukprobe writes events: an event's arguments, stack and
 * numbers as the kernel's trace does (format.c), and the Chrome
 * trace-event format (json.c).
 */
#ifndef UKPROBE_FORMAT_H
#define UKPROBE_FORMAT_H

#include "session.h"

/* " name=value" of every argument of rec (kernel print formats: u and s
 * in decimal, x in hex, strings quoted, chars in quotes, symbols as
 * sym+0xoff/0xsize, "(fault)" for unreadable). */
void ukp_format_args(FILE *out, const struct ukp_image *img, const struct ukp_spec *spec,
		     const struct ukp_rec *rec);
/* --trigger stacktrace: the frames under the event, as ftrace prints a
 * stack: " => func+0xoff [obj]" lines. */
void ukp_format_stack(FILE *out, const struct ukp_image *img, const struct ukp_spec *spec,
		      const struct ukp_rec *rec);

/* The number in an argument's slot as its type reads it: masked to its
 * size, sign-extended for s types (the bits of a long). */
unsigned long ukp_arg_number(const struct ukp_fetcharg *fa, const unsigned char *slot);
/* A float (size 4) or double (8) from its bits, in as few digits as
 * read back as the same value ("inf", "nan" as printf writes them);
 * returns the length. */
int ukp_format_float(char *buf, size_t len, unsigned long bits, unsigned int size);

/* printf("%*lu") (or "%0*lu" when zero) of v into out, which has room
 * for 24 + width characters; returns the length. */
size_t ukp_fmt_ulong(char *out, unsigned long v, int width, bool zero);

/* json.c: the Chrome trace-event format (--json). */
struct ukp_json;
struct ukp_json *ukp_json_open(const char *path);
void ukp_json_event(struct ukp_json *j, struct ukp_session *s, struct ukp_image *img,
		    const struct ukp_probe_info *pi, const struct ukp_rec *rec);
/* Ends the file (entries whose return never came become instants).
 * 0, or -1 when it could not be written. */
int ukp_json_close(struct ukp_json *j, struct ukp_session *s);
/* s as a JSON string, at most max bytes of it (bytes >= 0x7f as \u00XX) */
void ukp_json_str(FILE *out, const char *s, size_t max);

/* trace_print.c: what trace prints, and report from a recording. */
struct ukp_trace_out {
	FILE *out;                /* the text trace, or NULL */
	struct ukp_json *json;    /* --json, or NULL */
};
/* ops.event / ops.batch of a trace (arg: struct ukp_trace_out) */
void ukp_trace_event(struct ukp_session *s, struct ukp_image *img,
		     const struct ukp_probe_info *pi, const struct ukp_rec *rec, void *arg);
void ukp_trace_batch(struct ukp_session *s, void *arg);
/* The records file the agent wrote (fd): its events through ops. 0, or
 * -1 when it is damaged (said so, after the events before the damage). */
int ukp_trace_format_records(struct ukp_session *s, int fd, const struct ukp_session_ops *ops,
			     void *arg);
/* "+++ killed by SIGKILL +++" when the program ukprobe ran was. */
void ukp_trace_ending(FILE *out, const struct ukp_session *s);
/* After the run (or the replay of a recording): the records file's
 * events (raw: its descriptor, or -1), those of images that ended
 * abruptly, the ending, the hist tables. 0, or UKP_EXIT_FAIL. */
int ukp_trace_finish(struct ukp_session *s, int raw, const struct ukp_session_ops *ops,
		     struct ukp_trace_out *t);
/* trace and report's end: raw closed (if >= 0), the JSON and text
 * outputs closed, the session and its SPECs freed. code, or
 * UKP_EXIT_FAIL when it was 0 and an output could not be written. */
int ukp_trace_close(struct ukp_session *s, struct ukp_trace_out *t, int raw, int code);

#endif /* UKPROBE_FORMAT_H */

