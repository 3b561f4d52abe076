/* SPDX-License-Identifier: MIT */
/* script_embed.h - the files a compiled script includes (embed.py makes
 * script_embed.c at build time): runtime.h, common/script_abi.h and the
 * public headers. NULL-terminated. */
#ifndef UKPROBE_SCRIPT_EMBED_H
#define UKPROBE_SCRIPT_EMBED_H

struct script_file {
	const char *name;         /* relative: "ukprobes-arch/x86_64.h" */
	const char *text;
};
extern const struct script_file script_files[];

#endif
