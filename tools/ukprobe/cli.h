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

struct ukp_command {
	const char *name;
	const char *summary;
	int (*run)(int argc, char **argv);
};

int ukp_cmd_trace(int argc, char **argv);
int ukp_cmd_stat(int argc, char **argv);

/* ------------------------------------------------------- reporting */

void ukp_err(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void ukp_warn(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/*
 * One error about a SPEC, pointing at a column, the way the kernel's
 * error_log does:
 *   ukprobe: error: p:grp/ev libz.so.1:deflate+0x%: invalid offset
 *                                              ^
 */
void ukp_spec_err(const char *spec, int col, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* Parse the -e SPECs (texts[0..n)). Prints the first error and returns
 * -1; else 0 and *out (free with ukp_cli_free_specs). */
int ukp_cli_parse_specs(char **texts, int n, struct ukp_spec **out);
void ukp_cli_free_specs(struct ukp_spec *specs, int n);

/* -------------------------------------------------------- sessions */

struct ukp_session;

struct ukp_session_ops {
	void (*event)(struct ukp_session *s, const struct ukp_rec *rec, void *arg);
	/* after the messages of one read: a chance to flush */
	void (*batch)(struct ukp_session *s, void *arg);
};

/* What the agent said about one event. */
struct ukp_event_info {
	bool registered;
	uint64_t addr;
	char *where;          /* "sym+0xoff/0xsize [obj]" of the probed address */
	char *func;           /* the function's name ("sym"), for return events */
	bool have_stat;
	uint64_t hits, missed;
};

struct ukp_session {
	/* set by the command */
	struct ukp_spec *specs;
	int nspecs;
	enum ukp_mode mode;
	char **cmd;           /* the command and its arguments (NULL-terminated) */

	/* filled by the session */
	char *agent;          /* absolute path of the agent */
	char *path;           /* the command's executable */
	pid_t pid;
	struct ukp_event_info *info;
	bool hello, ended, setup_failed, protocol_error;
	int probe_errors;     /* probes the agent could not register */
	uint64_t lost;
	int wstatus;
	struct ukp_addrmap *addrs;
};

/* Find the agent and the command, and check that the command can take a
 * preloaded library. Prints why not and returns an exit code, or 0. */
int ukp_session_prepare(struct ukp_session *s);
/* Run the command, dispatch messages until it ends, wait for it.
 * Returns ukprobe's exit code. */
int ukp_session_run(struct ukp_session *s, const struct ukp_session_ops *ops, void *arg);
/* The text of an address the agent announced, or "0x..." */
const char *ukp_session_addr(struct ukp_session *s, uint64_t addr, char *buf, size_t len);
void ukp_session_free(struct ukp_session *s);
int ukp_cli_parse_run_options(int argc, char **argv, const char *name, void (*usage)(FILE *),
			      struct ukp_session *s, const char **output);

/* ------------------------------------------------------ formatting */

/* " name=value" of every argument of rec (kernel print formats: u and s
 * in decimal, x in hex, strings quoted, "(fault)" for unreadable). */
void ukp_format_args(FILE *out, const struct ukp_spec *spec, const struct ukp_rec *rec);

/* Opens -o FILE (or returns stdout for NULL). Prints why not. */
FILE *ukp_open_output(const char *path);

#endif /* UKPROBE_CLI_H */
