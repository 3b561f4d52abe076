/* SPDX-License-Identifier: MIT */
/*
 * cli.h - the ukprobe command: its commands, exit codes, error reports,
 * the SPECs' check, the options the commands that run a program share,
 * and how a program to run is found (launch.c). The session that runs
 * it is session.h's; output formats are format.h's.
 *
 * Each command lives in its own file (cmd_<name>.c) and is listed in
 * main.c's table. A command parses its options, checks every SPEC with
 * ukp_cli_parse_specs() (nothing runs when one is wrong), prepares a
 * session, and runs it with callbacks for the messages it cares about.
 */
#ifndef UKPROBE_CLI_H
#define UKPROBE_CLI_H

#include <elf.h>
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

/* launch.c: the agent, the command, the program that hosts an object
 * (probes OBJ). Print why not and return NULL. */
char *ukp_find_agent(void);
char *ukp_find_command(const char *cmd);
char *ukp_find_host(void);
/* 0, or ukprobe's exit code after saying why path cannot be traced. */
int ukp_check_executable(const char *path, bool *is_static);
/* Has the 64-bit ELF file fd (header eh) a program interpreter? */
bool ukp_elf_has_interp(int fd, const Elf64_Ehdr *eh);
/* launch_static.c: a static child stopped at its execve gets the
 * freestanding agent at agent; held(arg), unless NULL, runs once the
 * agent's thread has ended, before the program runs. 0 or -1 (said). */
int ukp_launch_static(const char *path, const char *agent, pid_t pid, void (*held)(void *),
		      void *arg);
/* The same for a process stopped after its execve already. */
int ukp_launch_static_stopped(const char *path, const char *agent, pid_t pid,
			      void (*held)(void *), void *arg);
/* Attached, -f: a program stopped at its exec gets the freestanding
 * agent with the attach's socket name and key: 0 with *out (load.h),
 * the program held, 1 (it ended), or -1 (said). It goes on once
 * ready(arg) (or its agent ended): ukp_follow_hold. */
struct ukp_loaded;
int ukp_follow_load(const char *path, const char *agent, pid_t pid, bool is_static,
		    const char *name, const char *key, struct ukp_loaded **out);
void ukp_follow_hold(struct ukp_loaded *ld, bool (*ready)(void *), void *arg);
/* The process an agent was loaded into. */
pid_t ukp_loaded_pid(const struct ukp_loaded *ld);
/* Is the ELF file at path a program (rather than a shared library)? */
bool ukp_is_program(const char *path);

/* Opens -o FILE (or returns stdout for NULL). Prints why not. */
FILE *ukp_open_output(const char *path);

struct ukp_session;

/* options.c: the options every running command shares: -e SPEC, -o
 * FILE, -f, --no-optimize, --json FILE (when json is not NULL), -h.
 * Fills s and *output. Returns -1 to go on, or the exit code to return
 * now (help printed, or a usage error). */
int ukp_cli_parse_run_options(int argc, char **argv, const char *name, void (*usage)(FILE *),
			      struct ukp_session *s, const char **output, const char **json);

#endif /* UKPROBE_CLI_H */
