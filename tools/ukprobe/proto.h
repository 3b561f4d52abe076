/* SPDX-License-Identifier: MIT */
/*
 * proto.h - what ukprobe and its agent say to each other.
 *
 * ukprobe runs the command with LD_PRELOAD=<agent> and these variables:
 *   UKPROBE_FD      the agent's end of a SOCK_STREAM socketpair (a number)
 *   UKPROBE_EVENTS  the SPECs, one per line, in -e order (event id = line)
 *   UKPROBE_MODE    "trace" (send every hit) or "stat" (count only)
 * The agent removes them (and itself from LD_PRELOAD) from the
 * environment at start-up, so that programs the command runs are not
 * traced.
 *
 * The agent then sends a stream of messages, each starting with struct
 * ukp_msg; len is the whole message's size, a multiple of 8:
 *   HELLO                 once, first
 *   PROBE                 one per event, in id order, after registration
 *   (if a PROBE failed: END with setup_failed set, and the program exits)
 *   SYM and EVENT         while the program runs; a SYM comes before the
 *                         first EVENT that needs its address
 *   STAT                  one per event, at exit
 *   END                   last (missing if the program died abruptly)
 * Integers are in host order: both ends run on the same machine.
 */
#ifndef UKPROBE_PROTO_H
#define UKPROBE_PROTO_H

#include <stdint.h>

#define UKP_PROTO_VERSION 1

#define UKP_ENV_FD     "UKPROBE_FD"
#define UKP_ENV_EVENTS "UKPROBE_EVENTS"
#define UKP_ENV_MODE   "UKPROBE_MODE"

/* Exit status of a program whose probes could not be registered (the
 * agent ends it before main runs). */
#define UKP_EXIT_SETUP 127

enum ukp_msg_type {
	UKPM_HELLO = 1,
	UKPM_PROBE,
	UKPM_SYM,
	UKPM_EVENT,
	UKPM_STAT,
	UKPM_END,
};

struct ukp_msg {
	uint32_t type;
	uint32_t len;
};

enum ukp_mode {
	UKP_MODE_TRACE = 0,
	UKP_MODE_STAT = 1,
};

struct ukp_msg_hello {
	struct ukp_msg h;
	int32_t pid;
	uint32_t version;
	uint32_t nevents;
	uint32_t mode;
};

/* What a failed registration could not find. */
enum ukp_probe_what {
	UKP_WHAT_NONE = 0,
	UKP_WHAT_OBJECT,   /* no loaded object of that name */
	UKP_WHAT_SYMBOL,   /* the object(s) have no such function */
};

/* Followed by text: "sym+0xoff/0xsize [object]" of addr, NUL-terminated
 * (empty when err). */
struct ukp_msg_probe {
	struct ukp_msg h;
	uint32_t id;
	int32_t err;       /* 0 or the negative errno of registration */
	uint32_t what;     /* enum ukp_probe_what, for -ENOENT */
	uint32_t pad;
	uint64_t addr;     /* the probed address */
	uint64_t func;     /* start of the function that contains it */
	char text[];
};

/* An address first seen in an event, symbolized: followed by text,
 * NUL-terminated: "sym+0xoff/0xsize [object]" or "[object]+0xoff". */
struct ukp_msg_sym {
	struct ukp_msg h;
	uint64_t addr;
	char text[];
};

/*
 * One probe hit: a fixed-size record, written by the probe handler into
 * its thread's ring buffer and sent as it is.
 */
#define UKP_REC_SIZE 256
#define UKP_REC_HEADER 64
#define UKP_REC_PAYLOAD (UKP_REC_SIZE - UKP_REC_HEADER)

struct ukp_rec {
	struct ukp_msg h;          /* UKPM_EVENT, UKP_REC_SIZE */
	uint64_t ts;               /* CLOCK_MONOTONIC, nanoseconds */
	uint64_t ip;               /* the probed address */
	uint64_t caller;           /* return probes: where the function returned to */
	int32_t tid;
	int32_t cpu;
	uint16_t id;               /* event: index of its SPEC */
	uint16_t pad;
	uint32_t faults;           /* bit i: argument i could not be read */
	char comm[16];             /* the thread's name */
	/* Argument values at their struct ukp_fetcharg offsets: numbers as
	 * 8 bytes, strings as UKP_SPEC_STR_SLOT bytes (not NUL-terminated
	 * when the string was longer: cut). */
	unsigned char data[UKP_REC_PAYLOAD];
};

struct ukp_msg_stat {
	struct ukp_msg h;
	uint32_t id;
	uint32_t pad;
	uint64_t hits;             /* handler runs that counted */
	uint64_t missed;           /* the probe's nmissed (reentrant hits, no instance, faults) */
};

struct ukp_msg_end {
	struct ukp_msg h;
	uint64_t lost;             /* events dropped: ring full, or no ring for the thread */
	uint32_t setup_failed;     /* a probe could not be registered; the program did not run */
	uint32_t pad;
};

#define UKP_MSG_MAX 4096           /* no message is longer */

#endif /* UKPROBE_PROTO_H */
