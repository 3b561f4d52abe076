/* SPDX-License-Identifier: MIT */
/* script_out.h - `ukprobe run`'s output (output.c). */
#ifndef UKPROBE_SCRIPT_OUT_H
#define UKPROBE_SCRIPT_OUT_H

#include "cli.h"
#include "session.h"
#include "script.h"
#include "script_abi.h"

struct script_out;
struct script_out *script_out_new(const struct script *sc, FILE *out);
/* a printf/print record (an event's payload, or BEGIN/END's) */
void script_out_record(struct script_out *o, const struct ukp_image *img,
		       const unsigned char *data, size_t len);
/* a UKPM_SCRIPT message: 0, or -1 when malformed */
int script_out_msg(struct script_out *o, const struct ukp_image *img, const char *p, size_t len);
/* did the probes attach (START came)? */
bool script_out_started(const struct script_out *o);
/* the end: two newlines and every map, as bpftrace ends */
void script_out_end(struct script_out *o, const struct ukp_image *img);

#endif
