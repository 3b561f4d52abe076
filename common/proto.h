/* SPDX-License-Identifier: MIT */
/*
 * proto.h - what ukprobe and its agent say to each other.
 *
 * ukprobe runs the command with LD_PRELOAD=<agent> and these variables:
 *   UKPROBE_FD      the agent's end of a SOCK_SEQPACKET socketpair
 *   UKPROBE_SPECS   a sealed memfd (its descriptor number) holding the
 *                   SPECs, parsed, in -e order (spec_wire.h): the
 *                   agent parses nothing. With -f it stays open across
 *                   exec, as the socket does; every image reads it.
 *   UKPROBE_MODE    "trace" (send every hit), "stat" (count only) or
 *                   "probes" (resolve every SPEC, report, and _exit(0)
 *                   before main() runs)
 *   UKPROBE_FOLLOW  "1": follow forks and execs (ukprobe -f)
 *   UKPROBE_DLOPEN  (probes mode) an object to dlopen() before resolving
 *   UKPROBE_NO_OPTIMIZE "1": kprobes_set_optimization(false) first
 *   UKPROBE_FOLLOWED    set by the first image with -f: the images after
 *                       it know they are followed ones
 *   UKPROBE_RAW_FD  (trace -o FILE) a regular file (the records file):
 *                   the agent writes its SYM and EVENT messages there
 *                   instead of to the socket, as packets (each a FROM
 *                   message, then whole messages of that image, in one
 *                   write); ukprobe formats them after the run. The
 *                   events go there as RECS messages (struct
 *                   ukp_msg_recs), not EVENT: the ring's records as
 *                   they are, written straight from the ring. Its first
 *                   message, ukprobe's, is RECORDS_HEAD: where the whole
 *                   packets end. Every image with -f writes there: each
 *                   writes a packet at that end under a lock on the
 *                   file's first byte (fcntl F_SETLKW) and moves the end
 *                   past it once the write is whole, so that a packet
 *                   cut short by its process's end (exit_group or a
 *                   kill ends a write between two pages) is written
 *                   over by the next and never read
 * Without UKPROBE_FOLLOW the agent removes them (and itself from
 * LD_PRELOAD) from the environment at start-up, closes the memfd, and a
 * forked child stops tracing: only the first process is traced. With it
 * they stay, so that children and exec'd programs are traced too.
 *
 * Builds: the memfd's header and HELLO carry UKP_PROTO_VERSION (and the
 * memfd the layout of the parsed structs). An agent that finds another
 * version (or layout) says HELLO and END with reason UKP_END_SPECS and
 * goes no further; ukprobe, seeing another version in HELLO, says that
 * the two are of different builds. FROM and HELLO keep their layout
 * across versions, so that this can be told.
 *
 * Every process image the agent runs in (the first program, each forked
 * child, each exec'd program, a process whose exec failed) is an "image":
 * it says HELLO, describes its probes, sends events, and ends with END.
 * Several images share the socket, so each packet (one send) starts with
 * a FROM message naming its image, followed by whole messages of it.
 * Each message starts with struct ukp_msg; len is the whole message's
 * size, a multiple of 8:
 *   FROM                  first in every packet
 *   HELLO                 once, first message of an image
 *   PROBE                 one per probe (and per SPEC that failed), after
 *                         registration, before any event of the probe;
 *                         more when an object is dlopen()ed later
 *   (if a SPEC failed in the first image: END with setup_failed set, and
 *   the program exits before main)
 *   SYM and EVENT         while the program runs; a SYM comes before the
 *                         first EVENT that needs its address
 *   STAT                  one per probe, at exit or exec
 *   END                   last (missing if the image died abruptly)
 * Integers are in host order: both ends run on the same machine.
 *
 * Attached to a running process (ukprobe -p PID), there is no
 * environment: ukprobe listens on an abstract socket and makes the
 * process dlopen() the agent and call ukprobe_agent_attach(NAME, SECRET)
 * (see tools/ukprobe/inject.c; SECRET: UKP_AUTH_SECRET_LEN random bytes
 * in hex, made for this session). The agent's thread connects to NAME
 * and sends AUTH with the secret first (so does a forked child's, -f,
 * which has it from its parent's memory). Anyone can connect to an
 * abstract socket: ukprobe admits a peer only when SO_PEERCRED names a
 * process it attached to (with -f, or a descendant of one) and AUTH
 * carries the secret; it closes every other connection unanswered and
 * counts it. Then ukprobe sends CONFIG (the same settings as the variables above, with
 * the SPECs' memfd, and trace -o's file, as SCM_RIGHTS descriptors); the
 * image (origin ATTACH) goes as above, with READY (a bare struct
 * ukp_msg) once every probe is in place and hits count (-d starts
 * then), until ukprobe sends DETACH (or
 * closes the socket): the agent sends its STATs and END (reason
 * DETACH), unregisters every probe, ends its threads, gives the program
 * its signal actions back, and sends DETACHED with the id of the one
 * thread still running, which then closes the socket and returns.
 * Messages from ukprobe to the agent have no FROM: one per packet.
 */
#ifndef UKPROBE_PROTO_H
#define UKPROBE_PROTO_H

#include <stdint.h>

#define UKP_PROTO_VERSION 8

#define UKP_ENV_FD          "UKPROBE_FD"
#define UKP_ENV_SPECS       "UKPROBE_SPECS"
#define UKP_ENV_MODE        "UKPROBE_MODE"
#define UKP_ENV_FOLLOW      "UKPROBE_FOLLOW"
#define UKP_ENV_DLOPEN      "UKPROBE_DLOPEN"
#define UKP_ENV_NO_OPTIMIZE "UKPROBE_NO_OPTIMIZE"
#define UKP_ENV_FOLLOWED    "UKPROBE_FOLLOWED" /* set by the agent: images after the first */
#define UKP_ENV_RAW_FD      "UKPROBE_RAW_FD"
#define UKP_ENV_TRACING_OFF "UKPROBE_TRACING_OFF" /* trace --tracing-off */

/* Exit status of a program whose probes could not be registered (the
 * agent ends it before main runs). */
#define UKP_EXIT_SETUP 127

enum ukp_msg_type {
	UKPM_FROM = 1,
	UKPM_HELLO,
	UKPM_PROBE,
	UKPM_SYM,
	UKPM_EVENT,
	UKPM_STAT,
	UKPM_END,
	UKPM_CONFIG,            /* ukprobe -> agent, attached */
	UKPM_DETACH,            /* ukprobe -> agent, attached */
	UKPM_DETACHED,
	UKPM_HIST,
	UKPM_AUTH,              /* agent -> ukprobe, attached: first */
	UKPM_READY,             /* attached: every probe in place, hits count from here */
	UKPM_SCRIPT,            /* a script's output (script_abi.h) */
	UKPM_RECS,              /* -o FILE only: a span of a thread's ring, as it is */
	UKPM_RECORDS_HEAD,      /* -o FILE only: the file's first message (ukprobe's) */
	UKPM_EXEC,              /* -f: a thread about to exec a program no agent can be preloaded into */
};

struct ukp_msg {
	uint32_t type;
	uint32_t len;
};

enum ukp_mode {
	UKP_MODE_TRACE = 0,
	UKP_MODE_STAT = 1,
	UKP_MODE_PROBES = 2,
};

/* The image that sent the packet: a process id, and a number unique
 * among the images of that process. */
struct ukp_msg_from {
	struct ukp_msg h;
	int32_t pid;
	uint32_t pad;              /* the reader's packets: their number (region.h), else 0 */
	uint64_t image;
};

/* How an image began. */
enum ukp_origin {
	UKP_ORIGIN_START = 0,   /* the program ukprobe ran */
	UKP_ORIGIN_FORK,        /* a forked child (-f) */
	UKP_ORIGIN_EXEC,        /* a program exec'd by a traced one (-f) */
	UKP_ORIGIN_EXEC_FAILED, /* the same process after a failed exec */
	UKP_ORIGIN_ATTACH,      /* a running process ukprobe attached to (-p) */
};

struct ukp_msg_hello {
	struct ukp_msg h;
	int32_t pid;
	int32_t ppid;
	uint32_t version;
	uint32_t nspecs;
	uint32_t mode;
	uint32_t origin;        /* enum ukp_origin */
	char comm[16];
};

/* What a failed SPEC (or glob match) could not find or do. */
enum ukp_probe_what {
	UKP_WHAT_NONE = 0,      /* registration failed: see err and why */
	UKP_WHAT_OBJECT,        /* no loaded object of that name, and no such file */
	UKP_WHAT_SYMBOL,        /* the object(s) have no such function */
	UKP_WHAT_NOMATCH,       /* a glob matched no function */
	UKP_WHAT_DATASYM,       /* fetch argument argi: no such data symbol */
	UKP_WHAT_ADDR,          /* OBJ:0xADDR outside the object's code */
	UKP_WHAT_SDT_ARG,       /* fetch argument argi: the SDT probe has no
				 * such argument, or one not decoded (why) */
};

/* ukp_msg_probe.flags */
#define UKP_PROBE_ENTRY   0x1 /* on a function's entry (offset 0, or after endbr64) */
#define UKP_PROBE_GLOB    0x2 /* one match of a glob SPEC */
#define UKP_PROBE_PENDING 0x4 /* its object is not loaded yet: registered when it is */
#define UKP_PROBE_AGAIN   0x8 /* registered again: its object was unloaded and loaded */
#define UKP_PROBE_AT_FUNC 0x10 /* its events' ip is func, not addr (a Go function's r
				  * event, probed at one of its returns) */

/*
 * One probe, or one SPEC (or glob match) that failed (err != 0). Followed
 * by four NUL-terminated texts: the event name, "sym+0xoff/0xsize
 * [object]" of addr (empty when unknown), the object's path, and why it
 * failed or why it is not optimized (may be empty).
 */
struct ukp_msg_probe {
	struct ukp_msg h;
	uint32_t id;            /* probe id (struct ukp_rec.id); ~0 when err */
	uint32_t spec;          /* index of its SPEC */
	int32_t err;            /* 0 or the negative errno of registration */
	uint16_t what;          /* enum ukp_probe_what, when err */
	uint16_t flags;         /* UKP_PROBE_* */
	int32_t opt;            /* UKPROBES_OPT_* (0 none, 1 jump, 2 ftrace); -1 unknown */
	uint32_t argi;          /* UKP_WHAT_DATASYM: the fetch argument */
	uint64_t addr;          /* the probed address (pending: the ELF address) */
	uint64_t func;          /* start of the function that contains it */
	uint64_t base;          /* load base of its object (0: not loaded) */
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
 * One probe hit, as it leaves the process: the agent's reader makes it of
 * a record its thread wrote into its ring (common/region.h, struct
 * ukp_region_rec). It goes out with the payload its event needs: h.len is
 * UKP_REC_HEADER plus the SPEC's payload rounded up to 8 (at most
 * UKP_REC_SIZE); the bytes after it read as zeros.
 */
#define UKP_REC_SIZE 256
#define UKP_COMM_LEN 16            /* bytes of a thread's name, with its NUL */
#define UKP_REC_HEADER 64
#define UKP_REC_PAYLOAD (UKP_REC_SIZE - UKP_REC_HEADER)

struct ukp_rec {
	struct ukp_msg h;          /* UKPM_EVENT, UKP_REC_SIZE */
	uint64_t ts;               /* CLOCK_MONOTONIC, nanoseconds */
	uint64_t ip;               /* the probed address */
	uint64_t caller;           /* return probes: where the function returned to */
	int32_t tid;
	int32_t cpu;
	uint32_t id;               /* the probe (ukp_msg_probe.id) */
	uint32_t faults;           /* bit i: argument i could not be read */
	char comm[UKP_COMM_LEN];   /* the thread's name */
	/* Argument values at their struct ukp_fetcharg offsets: numbers as
	 * 8 bytes, strings as UKP_SPEC_STR_SLOT bytes (not NUL-terminated
	 * when the string was longer: cut). */
	unsigned char data[UKP_REC_PAYLOAD];
};

/*
 * -o FILE: n records of one thread's ring, as the ring holds them
 * (common/region.h, struct ukp_region_rec and its payload, in slots of
 * rec_size bytes), after this header; h.len is the whole message's size
 * (it may exceed UKP_MSG_MAX: the records file's reader bounds it by the
 * file). Each record is the EVENT whose tid and comm are the message's
 * and whose ts is ts_ns() of its counter with the message's clock line.
 * The RECS messages of one packet are one pass of the reader: ukprobe
 * merges them by timestamp as the reader merges the rings for the
 * socket (lowest ts first; of equal ones, the first in act order, where
 * an exhausted span's place goes to the last one), so that the events
 * come out in the order a live trace shows them.
 */
struct ukp_msg_recs {
	struct ukp_msg h;          /* UKPM_RECS */
	int32_t tid;               /* the ring's thread */
	uint32_t ring_no;          /* the ring's index in the region (recovery) */
	uint64_t pos;              /* the first record's position in the ring */
	uint32_t n;                /* records */
	uint32_t rec_size;         /* bytes of a slot: 16 (compact records, region.h), or a
				    * multiple of 8, at least 40 */
	uint32_t use_counter;      /* ts are counter readings: the line below applies */
	uint32_t pad;
	uint64_t cal_cnt0, cal_ns0, cal_mult; /* ns = cal_ns0 + (ts - cal_cnt0) * cal_mult / 2^32 */
	char comm[UKP_COMM_LEN];   /* the thread's name when the span was written */
};

/* The records file's first message (UKPROBE_RAW_FD): the packets in
 * [sizeof(this), end) are whole. An agent moves end past its packet
 * (an 8-byte write within a page, which a kill does not cut) after the
 * packet's write, under the lock; bytes past end are a packet cut short
 * (or none), which the next writer writes over. */
struct ukp_msg_records_head {
	struct ukp_msg h;          /* UKPM_RECORDS_HEAD */
	uint64_t end;
};
#define UKP_RECORDS_END_OFF 8  /* end's offset in the file */

struct ukp_msg_stat {
	struct ukp_msg h;
	uint32_t id;               /* the probe */
	uint32_t pad;
	uint64_t hits;             /* handler runs that counted */
	uint64_t missed;           /* the probe's nmissed (reentrant hits, no instance, faults) */
};

enum ukp_end_reason {
	UKP_END_EXIT = 0,          /* exit(), or return from main */
	UKP_END_EXEC,              /* about to exec another program */
	UKP_END_PROBES,            /* probes mode: everything was reported */
	UKP_END_DETACH,            /* attached: ukprobe detached */
	UKP_END_SPECS,             /* the SPECs' memfd could not be read (missing, of
				    * another version, damaged): nothing was set up */
};

/* -f: a thread (its id as the agent sees it) is about to exec a program
 * (failed 0; launched: a static one), which ukprobe loads the
 * freestanding agent into at its exec (PTRACE_SEIZE, PTRACE_EVENT_EXEC;
 * attached, with the attach's socket and key): the thread waits until
 * it is traced. failed 1: that exec failed, the thread goes on (ukprobe
 * lets it go, the thread waits until it is untraced). failed 2: the
 * program is set-user-ID or set-group-ID, not followed (ukprobe says
 * so). failed 3:
 * the thread is about to posix_spawn() a static program (glibc's child
 * makes its execve unseen): ukprobe traces the thread, takes the child
 * at its vfork and loads the agent at the child's exec, then lets the
 * thread go; failed 4: that posix_spawn() returned (the thread waits
 * until it is let go). */
struct ukp_msg_exec {
	struct ukp_msg h;
	int32_t tid;
	uint32_t failed;
};

struct ukp_msg_end {
	struct ukp_msg h;
	uint64_t lost;             /* events dropped: ring full, or no ring for the thread */
	uint32_t setup_failed;     /* a SPEC could not be registered; the program did not run */
	uint32_t reason;           /* enum ukp_end_reason */
};

/* ukprobe's settings for an attached agent, followed by the object to
 * look at (probes OBJ, or empty; NUL-terminated). With it, as SCM_RIGHTS:
 * the SPECs' memfd (spec_wire.h), then trace -o's records file if any. */
#define UKP_CONFIG_FOLLOW      0x1
#define UKP_CONFIG_NO_OPTIMIZE 0x2
#define UKP_CONFIG_TRACING_OFF 0x4
#define UKP_CONFIG_SCRIPT      0x8 /* the text is a compiled script to load (run) */
struct ukp_msg_config {
	struct ukp_msg h;
	uint32_t version;          /* UKP_PROTO_VERSION */
	uint32_t mode;             /* enum ukp_mode */
	uint32_t flags;            /* UKP_CONFIG_* */
	uint32_t pad;
	char text[];
};

/*
 * A hist trigger's table (common/hist.h), at the end of an image:
 * n entries of entry_size bytes follow (ukp_hist_entry_size). A table
 * takes one message or more; the first (first != 0) carries its totals.
 */
struct ukp_msg_hist {
	struct ukp_msg h;
	uint32_t spec;             /* the SPEC's index */
	uint32_t n;
	uint32_t entry_size;
	uint32_t first;
	uint64_t hits;             /* every hit that reached the hist */
	uint64_t dropped;          /* hits that found no free entry */
	unsigned char data[];
};

/* An attached agent's first message (no FROM before it): the secret
 * ukprobe handed it at injection. */
#define UKP_AUTH_SECRET_LEN 32
struct ukp_msg_auth {
	struct ukp_msg h;
	unsigned char secret[UKP_AUTH_SECRET_LEN];
};

/* The agent is gone but for the thread tid, which is about to return. */
struct ukp_msg_detached {
	struct ukp_msg h;
	int32_t tid;
	uint32_t pad;
	/* the library's struct ukp_tb_unload in the process (the dynamic
	 * agent's: ukprobe unmaps the blocks once tid is gone, load.c); 0:
	 * none */
	uint64_t blocks;
};

#define UKP_PROBES_MAX (1u << 22)  /* probes of one image, at most (ids below) */
#define UKP_MSG_MAX 4096           /* no message is longer */
#define UKP_PACKET_MAX (64 * 1024) /* no packet is longer */

#endif /* UKPROBE_PROTO_H */
