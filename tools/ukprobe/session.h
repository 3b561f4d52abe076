/* SPDX-License-Identifier: MIT */
/*
 * session.h - a session: the images an agent reports (images.c), what
 * became of each SPEC, the callbacks a command gives (events, probes),
 * the packets read (session.c), their regions (region.c), the hist
 * tables (hist_print.c), and running it (session_loop.c).
 */
#ifndef UKPROBE_SESSION_H
#define UKPROBE_SESSION_H

#include "cli.h"

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
	/* -o FILE: where that packet's RECS messages of each ring end
	 * (ring positions; bit i of seq_ends_set: ring i had one) */
	uint64_t *seq_ends;
	uint64_t seq_ends_set[2];
	bool detached;            /* attached: DETACHED came */
	int32_t agent_tid;        /* the agent's thread that was still running then */
	uint64_t agent_blocks;    /* DETACHED's: its blocks to unmap (load.h), or 0 */
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
	char *free_agent;         /* a static program's: the freestanding agent (launch.c) */
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
	/* -f: an agent's UKPM_EXEC (follow_exec.c); NULL elsewhere (a
	 * recording read back) */
	void (*exec_msg)(struct ukp_session *s, pid_t tid, int kind);
	struct ukp_follows *follows;
	/* attached: the socket's name and the key (attach.c), for the agent
	 * an exec'd program gets (follow_exec.c); NULL launched */
	char *attach_name, *attach_key;
};

/* follow_exec.c: -f: a thread about to exec a program (launched: a
 * static one) is seized, and the freestanding agent loaded into the
 * program at its exec (agent/exec_follow.c); kind 1: that exec failed,
 * the thread is let go; kind 2: a set-ID program, not followed (said); kind 3: a thread about to posix_spawn() a static
 * program is traced for the call, its child from its vfork to its exec;
 * kind 4: that call returned. */
void ukp_follow_exec(struct ukp_session *s, pid_t tid, int kind);
/* An image's READY (attached: an exec'd program's agent is in place,
 * the program may go on). */
void ukp_follow_exec_ready(struct ukp_session *s, pid_t pid);
/* Is a follow still under way (the session waits for it)? */
bool ukp_follow_exec_busy(const struct ukp_session *s);
/* Attached: did pid exec a program that got an agent (the agent loaded
 * into it before went with the exec)? */
bool ukp_follow_exec_reloaded(const struct ukp_session *s, pid_t pid);
/* At the session's end: every follow done (the agents loaded stay). */
void ukp_follow_exec_end(struct ukp_session *s);
/* Attached, after the detach: the agents loaded into exec'd programs
 * unmapped (as ukp_attach_unload's), and forgotten. */
void ukp_follow_exec_unload(struct ukp_session *s, int timeout_ms);

/* hist_print.c: an UKPM_HIST message (0, or -1: malformed), the tables
 * in the kernel's hist format at the end, and their memory. */
int ukp_hist_take(struct ukp_session *s, struct ukp_image *img, const char *p, size_t len);
void ukp_hist_print(FILE *out, struct ukp_session *s);
/* ,"histograms":[...] (nothing without a hist trigger), for a JSON
 * object being written */
void ukp_hist_json(FILE *out, struct ukp_session *s);
void ukp_hist_free_rows(struct ukp_session *s);

/* Find the agent and the command (launched), and check that the
 * command can take a preloaded library. Prints why not and returns an
 * exit code, or 0. */
int ukp_session_prepare(struct ukp_session *s);
/* session_loop.c: run the command, or attach to the processes s->pids
 * (ukprobe -p), and dispatch messages until every traced process ends;
 * attached, also until ukprobe is told to stop or s->duration runs
 * out, then detach. Returns ukprobe's exit code (launched: the
 * program's, unless tracing failed). */
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

/* region.c: recvmsg() of one packet from an agent, keeping the region
 * memfd that may come with it (for the packet's HELLO); *truncated: the
 * packet did not fit. */
ssize_t ukp_region_recvmsg(struct ukp_session *s, int fd, void *buf, size_t cap, int flags,
			   bool *truncated);
/* After a packet: close a memfd no HELLO took. */
void ukp_region_unclaimed(struct ukp_session *s);
/* A HELLO: img takes the packet's memfd. */
void ukp_region_take(struct ukp_session *s, struct ukp_image *img);
/* ukprobe run: img's launched agent may let its program start. */
void ukp_region_begun(struct ukp_image *img);
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
/* An event of img (an EVENT message's record, or a RECS message's
 * record made one: the bytes past its payload zero): to ops->event.
 * 0, or -1 when it names no probe of img. */
/* The ip of the events of img's probe id: its PROBE message's addr, or
 * func for a probe flagged UKP_PROBE_AT_FUNC; 0 when img has no such
 * probe. A compact record's ip (common/region.h). */
uint64_t ukp_image_event_ip(const struct ukp_image *img, uint32_t id);
int ukp_images_event(struct ukp_session *s, struct ukp_image *img, const struct ukp_rec *rec,
		     const struct ukp_session_ops *ops, void *arg);
int ukp_images_handle(struct ukp_session *s, struct ukp_image **img, const char *p,
		      uint32_t type, uint32_t len, const struct ukp_session_ops *ops, void *arg);
void ukp_images_free(struct ukp_session *s);

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

#endif /* UKPROBE_SESSION_H */
