/* SPDX-License-Identifier: MIT */
/*
 * cli.h - the ukprobe command: commands, error reports, and the session
 * that runs a program with the agent and reads what it sends.
 *
 * Each command lives in its own file (cmd_<name>.c) and is listed in
 * main.c's table. A command parses its options, checks every SPEC with
 * ukp_cli_parse_specs() (nothing runs when one is wrong), prepares a
 * session, and runs it with callbacks for the messages it cares about.
 */
#ifndef UKPROBE_CLI_H
#define UKPROBE_CLI_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

#include "proto.h"
#include "spec.h"

/* Exit codes of ukprobe itself (otherwise it exits as the program did,
 * 128 + N when the program was killed by signal N). */
#define UKP_EXIT_FAIL  1    /* could not trace: static program, a probe failed, ... */
#define UKP_EXIT_USAGE 2    /* bad options or a malformed SPEC */
#define UKP_EXIT_NOCMD 127  /* the command was not found */

/* The programs this build traces: its own architecture's (the agent is
 * preloaded into them). Attaching to a running process (-p, inject.c)
 * is ported to x86-64 only: it calls functions in the process through
 * ptrace's register state (doc/arch.md). */
#if defined(__x86_64__)
#define UKP_ELF_MACHINE EM_X86_64
#define UKP_ARCH_NAME "x86-64"
#define UKP_CAN_ATTACH 1
#elif defined(__aarch64__)
#define UKP_ELF_MACHINE EM_AARCH64
#define UKP_ARCH_NAME "AArch64"
#define UKP_CAN_ATTACH 0
#else
#error "ukprobe: an architecture of its own (doc/arch.md)"
#endif

struct ukp_command {
	const char *name;
	const char *summary;
	int (*run)(int argc, char **argv);
};

int ukp_cmd_trace(int argc, char **argv);
int ukp_cmd_stat(int argc, char **argv);
int ukp_cmd_probes(int argc, char **argv);
int ukp_cmd_run(int argc, char **argv);
int ukp_cmd_record(int argc, char **argv);
int ukp_cmd_report(int argc, char **argv);

/* ------------------------------------------------------- reporting */

void ukp_err(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void ukp_warn(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/*
 * One error about a SPEC, pointing at a column, the way the kernel's
 * error_log does:
 *   ukprobe: error: p:grp/ev libz.so.1:deflate+0x%: invalid offset
 *                                              ^
 * ukp_spec_warn() is the same as a warning.
 */
void ukp_spec_err(const char *spec, int col, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
void ukp_spec_warn(const char *spec, int col, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* Parse the -e SPECs (texts[0..n)). Prints the first error and returns
 * -1; else 0 and *out (free with ukp_cli_free_specs). */
int ukp_cli_parse_specs(char **texts, int n, struct ukp_spec **out);
void ukp_cli_free_specs(struct ukp_spec *specs, int n);

/* Why a SPEC (or a glob's match) could not be registered: the message,
 * and the column it is about. */
struct ukp_failure {
	int err;                  /* negative errno */
	uint32_t what;            /* enum ukp_probe_what */
	uint32_t argi;
	uint64_t addr;
	const char *object;       /* the object's path, or "" */
	const char *why;          /* the library's or the loader's words, or "" */
};
int ukp_explain_failure(const struct ukp_spec *spec, const struct ukp_failure *f, char *buf,
			size_t len);

/* -------------------------------------------------------- sessions */

struct ukp_session;

/* One probe of one image, as its PROBE message described it. */
struct ukp_probe_info {
	bool used;
	uint32_t spec;
	uint16_t flags;           /* UKP_PROBE_* */
	int opt;                  /* UKPROBES_OPT_* or -1 */
	uint64_t addr, func, base;
	char *event;
	char *where;              /* "sym+0xoff/0xsize [obj]" */
	const char *where_code;   /* ukp_where_code(where): in where, looked up once */
	char *func_name;          /* "sym" */
	char *object;             /* the object's path */
	char *why;                /* why not optimized */
	bool have_stat;
	uint64_t hits, missed;
};

/* A PROBE message, for commands that show every one (probes). */
struct ukp_probe_report {
	const struct ukp_msg_probe *m;
	const char *event, *where, *object, *why;
};

struct ukp_addrmap;

/* One process image (proto.h). */
struct ukp_image {
	/* as ukprobe sees them; own_pid: as the agent does (they differ in
	 * another PID namespace, attached) */
	int32_t pid, ppid, own_pid;
	uint64_t id;
	uint32_t origin;          /* enum ukp_origin */
	char comm[17];
	bool hello;               /* its HELLO came */
	bool ended;
	uint32_t end_reason;      /* enum ukp_end_reason */
	bool setup_failed;
	uint64_t lost;
	struct ukp_probe_info *probes;   /* by probe id */
	size_t nprobes;
	uint32_t ids;             /* one past the highest probe id announced */
	struct ukp_addrmap *addrs;
	bool ready;               /* attached: READY came (probes in place) */
	bool has_region;          /* its region's memfd (region.c), until it ends */
	int region_fd;
	bool recovered;           /* ended without END: its region was read */
	/* the last packet of its reader's handled (FROM's pad, region.h),
	 * and how many of its messages: region.c takes only the rest */
	uint32_t seq;
	uint64_t seq_msgs;
	bool in_seq;              /* the packet being handled is that one */
	bool detached;            /* attached: DETACHED came */
	int32_t agent_tid;        /* the agent's thread that was still running then */
};

/* What became of each SPEC, over every image. */
struct ukp_spec_state {
	int registered;           /* probes registered in any image */
	bool pending;             /* waited for its object somewhere */
	bool failed, reported;    /* a failure, and whether it was printed */
	struct ukp_failure fail;  /* the first failure (strings owned here) */
	const struct ukp_image *glob_image; /* the image whose glob counts are kept */
	int glob_ok, glob_failed;
};

struct ukp_session_ops {
	void (*event)(struct ukp_session *s, struct ukp_image *img, const struct ukp_probe_info *pi,
		      const struct ukp_rec *rec, void *arg);
	/* every PROBE message */
	void (*probe)(struct ukp_session *s, struct ukp_image *img,
		      const struct ukp_probe_report *r, void *arg);
	/* after the messages of one read: a chance to flush */
	void (*batch)(struct ukp_session *s, void *arg);
};

struct ukp_session {
	/* set by the command */
	struct ukp_spec *specs;
	int nspecs;
	enum ukp_mode mode;
	bool follow;              /* -f */
	bool no_optimize;         /* --no-optimize */
	bool usdt;                /* probes --usdt OBJ: its SDT probes */
	bool tracing_off;         /* trace --tracing-off: until a traceon trigger */
	const char *load;         /* probes mode: an object for the agent to dlopen */
	bool load_script;         /* run -p: load is the compiled script */
	bool made_spec;           /* the SPEC is ukprobe's (probes OBJ): errors without it */
	char **cmd;               /* the command and its arguments (NULL-terminated) */
	pid_t *pids;              /* -p: the processes to attach to (npids) */
	int npids;
	double duration;          /* -d SECONDS (attached: 0 is none) */
	bool stop;                /* attached: detach now (run: the script's exit()) */
	bool send_raw;            /* -p with trace -o: agents get raw_fd with CONFIG */
	int raw_fd;               /* the records file (proto.h), when send_raw or raw_file */
	bool raw_file;            /* trace -o: raw_fd is the records file */
	/* run: a compiled script's message (UKPM_SCRIPT, common/script_abi.h),
	 * whole; -1 when malformed */
	int (*script_msg)(struct ukp_session *s, struct ukp_image *img, const char *p, size_t len,
			  void *arg);
	void *script_arg;
	/* run: says why SPEC spec could not be registered, in the script's
	 * terms (instead of the SPEC's error) */
	void (*spec_error)(struct ukp_session *s, int spec, const char *msg, void *arg);

	/* filled by the session */
	char *agent;              /* absolute path of the agent */
	char *path;               /* the command's executable */
	pid_t pid;
	struct ukp_spec_state *states;
	struct ukp_image **images;
	size_t nimages;
	struct ukp_image *first;  /* the program ukprobe ran */
	bool protocol_error;
	bool version_mismatch;    /* the agent is of another build (said already) */
	int probe_errors;         /* SPECs reported as errors */
	/* attached: the process the packet being handled came from, as
	 * SO_PEERCRED names it in ukprobe's PID namespace; 0 otherwise */
	pid_t peer_pid;
	bool region_in;           /* a packet came with a region's memfd (region.c) */
	int region_in_fd;
	int wstatus;
	struct ukp_hist_rows *hists; /* hist triggers' tables, per SPEC (hist_print.c) */
	/* record: every packet handled goes into the recording too
	 * (record_dir.c), before it is handled */
	struct ukp_record *record;
};

/* hist_print.c: an UKPM_HIST message (0, or -1: malformed), the tables
 * in the kernel's hist format at the end, and their memory. */
int ukp_hist_take(struct ukp_session *s, struct ukp_image *img, const char *p, size_t len);
void ukp_hist_print(FILE *out, struct ukp_session *s);
/* ,"histograms":[...] (nothing without a hist trigger), for a JSON
 * object being written */
void ukp_hist_json(FILE *out, struct ukp_session *s);
void ukp_hist_free_rows(struct ukp_session *s);

/* Find the agent and the command, and check that the command can take a
 * preloaded library. Prints why not and returns an exit code, or 0. */
int ukp_session_prepare(struct ukp_session *s);
/* Run the command, dispatch messages until it ends, wait for it.
 * Returns ukprobe's exit code. */
int ukp_session_run(struct ukp_session *s, const struct ukp_session_ops *ops, void *arg);
/* The text of an address an image announced, or "0x..." */
const char *ukp_image_addr(const struct ukp_image *img, uint64_t addr, char *buf, size_t len);
/* The code part of a probe's where: "strlen -> __strlen_avx2+0x0/..." (an
 * IFUNC and the implementation probed) gives "__strlen_avx2+0x0/...", as
 * trace lines show the probed code only. */
const char *ukp_where_code(const char *where);
void ukp_session_free(struct ukp_session *s);

/* One packet from the agent: dispatch its messages (sets
 * s->protocol_error on a malformed one). */
void ukp_session_packet(struct ukp_session *s, const char *buf, size_t n,
			const struct ukp_session_ops *ops, void *arg);
/* specs_memfd.c: the parsed SPECs (common/spec_wire.h) in a sealed
 * memfd (close-on-exec), or -1 after saying why. */
int ukp_specs_memfd(const struct ukp_session *s);
/* Warnings at the end of a run: SPECs never registered, lost events. */
void ukp_report_end(struct ukp_session *s);

/* attach.c: trace the running processes s->pids (ukprobe -p) until
 * they exit, ukprobe is told to stop, or s->duration runs out; then
 * detach. Returns ukprobe's exit code. */
int ukp_session_attach(struct ukp_session *s, const struct ukp_session_ops *ops, void *arg);
/* pid's parent as ukprobe sees it (/proc/PID/stat), or 0. */
pid_t ukp_parent_of(pid_t pid);

/* inject.c: make process pid load the agent and connect back to the
 * abstract socket name, presenting key (the session's secret, in hex). 0, or ukprobe's exit code after one line that
 * says why (the process is left as it was). */
struct ukp_inject_times {
	long stop_us;             /* the chosen thread was stopped this long */
	long inject_us;           /* ukp_inject() took this long */
	pid_t tid;                /* the thread */
};
int ukp_inject(pid_t pid, const char *agent, const char *name, const char *key,
	       struct ukp_inject_times *times);

/* launch.c: the agent, the command, the program that hosts an object
 * (probes OBJ). Print why not and return NULL. */
char *ukp_find_agent(void);
char *ukp_find_command(const char *cmd);
char *ukp_find_host(void);
/* 0, or ukprobe's exit code after saying why path cannot be traced. */
int ukp_check_executable(const char *path);
/* Is the ELF file at path a program (rather than a shared library)? */
bool ukp_is_program(const char *path);
/* [child] exec the command with the agent: fd its socket, specs_fd the
 * parsed SPECs (ukp_specs_memfd). Does not return. */
void ukp_launch(const struct ukp_session *s, int fd, int specs_fd);

/* region.c: recvmsg() of one packet from an agent, keeping the region
 * memfd that may come with it (for the packet's HELLO); *truncated: the
 * packet did not fit. */
ssize_t ukp_region_recvmsg(struct ukp_session *s, int fd, void *buf, size_t cap, int flags,
			   bool *truncated);
/* After a packet: close a memfd no HELLO took. */
void ukp_region_unclaimed(struct ukp_session *s);
/* A HELLO: img takes the packet's memfd. */
void ukp_region_take(struct ukp_session *s, struct ukp_image *img);
/* img ended with END (or is freed): its region is not needed. */
void ukp_region_drop(struct ukp_image *img);
/* Every image that ended without END, its process gone: its counts and
 * the events not yet delivered, from its region, as if its agent had
 * sent them. */
void ukp_region_recover(struct ukp_session *s, const struct ukp_session_ops *ops, void *arg);
/* trace -o: the recovered images' events, once the records file is
 * formatted (ukp_region_recover() took their counts). */
void ukp_region_recover_events(struct ukp_session *s, const struct ukp_session_ops *ops,
			       void *arg);

/* images.c: handle one message from img's packet; -1 on a protocol
 * error. *img is the image of the packet (set by FROM). */
int ukp_images_handle(struct ukp_session *s, struct ukp_image **img, const char *p,
		      uint32_t type, uint32_t len, const struct ukp_session_ops *ops, void *arg);
void ukp_images_free(struct ukp_session *s);

/* options.c: the options every running command shares: -e SPEC, -o
 * FILE, -f, --no-optimize, --json FILE (when json is not NULL), -h.
 * Fills s and *output. Returns -1 to go on, or the exit code to return
 * now (help printed, or a usage error). */
int ukp_cli_parse_run_options(int argc, char **argv, const char *name, void (*usage)(FILE *),
			      struct ukp_session *s, const char **output, const char **json);

/* ------------------------------------------------------ formatting */

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

/* record_dir.c: a recording (ukprobe record, ukprobe report), a
 * directory: the agent's records file, the session's packets, what the
 * regions of images that ended abruptly held. */
#define UKP_RECORD_DEFAULT "ukprobe.data"
struct ukp_record;
/* [record] Make (or empty) dir and start its session file with the
 * SPECs; *records: the records file for the agent. NULL: said why. */
struct ukp_record *ukp_record_create(const char *dir, const struct ukp_session *s,
				     int *records);
/* [record] One packet ukprobe handled (ukp_session_packet). */
void ukp_record_packet(struct ukp_record *r, const struct ukp_session *s, const char *buf,
		       size_t n);
/* [record] After the run: the regions of images that ended abruptly,
 * how the program ended; closes. 0, or -1 (said why). */
int ukp_record_finish(struct ukp_record *r, struct ukp_session *s);
/* [report] Rebuild the session of the recording in dir: its SPECs,
 * images and their messages through ops (*records: the records file).
 * 0; UKP_EXIT_FAIL when the recording cannot be read at all; -1 when it
 * is damaged (said where, and s holds what came before). */
int ukp_record_replay(const char *dir, struct ukp_session *s, const struct ukp_session_ops *ops,
		      void *arg, int *records);

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

/* Opens -o FILE (or returns stdout for NULL). Prints why not. */
FILE *ukp_open_output(const char *path);

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

#endif /* UKPROBE_CLI_H */
