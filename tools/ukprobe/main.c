/* SPDX-License-Identifier: MIT */
/*
 * main.c - ukprobe: trace any program with kprobe-event syntax, built on
 * libukprobes. "ukprobe COMMAND ...": the commands are in the table
 * below, one file each (cmd_<name>.c).
 */
#include <stdio.h>
#include <string.h>

#include "cli.h"

static const struct ukp_command commands[] = {
	{ "trace", "run a command and print every probe hit as it happens", ukp_cmd_trace },
	{ "stat", "run a command and count probe hits and misses per event", ukp_cmd_stat },
	{ "probes", "show what SPECs resolve to, or list an object's functions", ukp_cmd_probes },
	{ "record", "run a command and record its probe hits, in binary, for report",
	  ukp_cmd_record },
	{ "report", "print a recording's events, as trace does", ukp_cmd_report },
	{ "run", "run a command under a bpftrace-language script, compiled", ukp_cmd_run },
};
#define NCOMMANDS (sizeof(commands) / sizeof(commands[0]))

static void usage(FILE *out)
{
	size_t i;

	fputs("Usage: ukprobe COMMAND [OPTIONS] -e SPEC... [--] CMD [ARGS]...\n"
	      "       ukprobe probes OBJ [GLOB]\n"
	      "       ukprobe COMMAND -p PID[,PID]... [OPTIONS] -e SPEC...\n"
	      "       ukprobe COMMAND --help\n"
	      "\n"
	      "Probe any function of a program and of its libraries with the kernel's\n"
	      "kprobe_events syntax.\n"
	      "\n"
	      "Commands:\n",
	      out);
	for (i = 0; i < NCOMMANDS; i++)
		fprintf(out, "  %-8s %s\n", commands[i].name, commands[i].summary);
	fputs("\n"
	      "Options:\n"
	      "  -h, --help     show this help\n"
	      "  -V, --version  show the version\n"
	      "\n"
	      "See ukprobe(1).\n",
	      out);
}

static const struct ukp_command *find(const char *name)
{
	size_t i;

	for (i = 0; i < NCOMMANDS; i++)
		if (!strcmp(commands[i].name, name))
			return &commands[i];
	return NULL;
}

int main(int argc, char **argv)
{
	const struct ukp_command *cmd;

	if (argc < 2) {
		usage(stderr);
		return UKP_EXIT_USAGE;
	}
	if (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help")) {
		usage(stdout);
		return 0;
	}
	if (!strcmp(argv[1], "help")) {
		/* "ukprobe help trace" is "ukprobe trace --help" */
		char *help_argv[] = { argv[2], "--help", NULL };

		if (argc < 3) {
			usage(stdout);
			return 0;
		}
		cmd = find(argv[2]);
		if (cmd)
			return cmd->run(2, help_argv);
	} else if (!strcmp(argv[1], "-V") || !strcmp(argv[1], "--version")) {
		printf("ukprobe %s\n", UKPROBE_VERSION);
		return 0;
	} else {
		cmd = find(argv[1]);
		if (cmd)
			return cmd->run(argc - 1, argv + 1);
	}
	ukp_err("unknown command '%s'", argc > 2 && !strcmp(argv[1], "help") ? argv[2] : argv[1]);
	fputs("Try 'ukprobe --help'.\n", stderr);
	return UKP_EXIT_USAGE;
}
