/* SPDX-License-Identifier: MIT */
/*
 * spec_wire.h - the parsed SPECs as ukprobe sends them to its agent, so
 * that a SPEC, its --filter and its --trigger are parsed once, by the
 * CLI, and the agent builds no parser.
 *
 * The form: a header (a magic, the protocol version, the sizes of the
 * structs below as the writer's build lays them out, the SPEC count and
 * the whole size), then one record per SPEC: its struct ukp_spec without
 * the unused fetch-argument rows, the compiled filters and hist (struct
 * ukp_filter without the unused predicates and instructions, struct
 * ukp_hist), and its strings. Pointers travel as zeros; the decoder
 * gives the structs their own memory. Integers in host order: both ends
 * run on the same machine, and the layout check refuses a build whose
 * structs differ even where nobody bumped the version.
 *
 * It travels in a sealed memfd (no size limit, unlike one environment
 * string; written once, read by every image): a launched program gets
 * its descriptor in UKPROBE_SPECS (kept across exec with -f), an attached
 * one with the CONFIG message (SCM_RIGHTS). proto.h says more.
 *
 * The encoder is the CLI's, the decoder the agent's ([init]: plain C,
 * malloc; not for signal context). The decoder checks everything the hit
 * path indexes with (argument slots, registers, predicates, hist keys),
 * so that a damaged form is refused rather than trusted.
 */
#ifndef UKPROBE_SPEC_WIRE_H
#define UKPROBE_SPEC_WIRE_H

#include <stddef.h>
#include <stdint.h>

#include "spec.h"

#define UKP_SPECS_MAGIC "UKPSPECS"

struct ukp_specs_header {
	char magic[8];            /* UKP_SPECS_MAGIC, without its NUL */
	uint32_t version;         /* UKP_PROTO_VERSION of the writer */
	uint32_t header_size;     /* sizeof(struct ukp_specs_header) */
	/* the writer's struct sizes: the layout check */
	uint32_t spec_size, arg_size, filter_size, pred_size, hist_size;
	uint32_t nspecs;
	uint64_t size;            /* the whole form, header included */
};

/* Why a form was refused (ukp_specs_decode). */
enum ukp_specs_error {
	UKP_SPECS_OK = 0,
	UKP_SPECS_NOT_SPECS,      /* no header, or not the magic: not a form at all */
	UKP_SPECS_VERSION,        /* another protocol version, or another layout */
	UKP_SPECS_DAMAGED,        /* the right version, but the records do not hold */
	UKP_SPECS_NOMEM,
};

/* [init] The form of specs[0..n) (malloc'ed, *len bytes), or NULL (no
 * memory). */
void *ukp_specs_encode(const struct ukp_spec *specs, int n, size_t *len);

/* [any] The header of a form of n SPECs written by this build (magic,
 * version and struct sizes; size left 0). */
void ukp_specs_header_init(struct ukp_specs_header *h, int n);

/*
 * [init] The SPECs of the form buf[0..len): *specs (calloc'ed array of
 * *n; free each with ukp_spec_free(), then the array). nregs: the words
 * of struct pt_regs, the bound of a %REG's index. *version: the writer's
 * version when the header could be read (else 0). UKP_SPECS_OK or why
 * not (nothing to free then).
 */
enum ukp_specs_error ukp_specs_decode(const void *buf, size_t len, unsigned int nregs,
				      struct ukp_spec **specs, int *n, uint32_t *version);
/*
 * [init] The same, into the caller's memory: alloc(n, arg) gives room
 * for n structs of stride bytes (zeroed), each holding a struct ukp_spec
 * off bytes in; it is called once, with the form's count, and what it
 * gave stays the caller's (on failure too: its SPECs are freed, the
 * memory is not). For a caller that keeps each SPEC inside a struct of
 * its own: no array of SPECs to copy from.
 */
enum ukp_specs_error ukp_specs_decode_into(const void *buf, size_t len, unsigned int nregs,
					   void *(*alloc)(size_t n, void *arg), void *arg,
					   size_t stride, size_t off, int *n, uint32_t *version);

#endif /* UKPROBE_SPEC_WIRE_H */
