/* SPDX-License-Identifier: MIT */
/*
 * build.c - `ukprobe run`'s build of a script: the generated C, with
 * runtime.h and the headers it includes (embedded in ukprobe), in a new
 * directory, compiled by the system's C compiler ($UKPROBE_CC, else cc)
 * into the shared object the agent loads (SystemTap's way).
 *
 * Flags: -mgeneral-regs-only and no jump tables, so that libukprobes can
 * prove the handlers vector-free (a jump-optimized hit then saves no
 * vector state); -z now, so that their calls into the agent are bound
 * before the first hit (the proof follows bound GOT slots only).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <spawn.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cli.h"
#include "script.h"
#include "script_embed.h"

extern char **environ;

static int write_file(const char *dir, const char *name, const char *text)
{
	char path[4096];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	if (strchr(name, '/')) {
		char sub[4096];

		snprintf(sub, sizeof(sub), "%s/%.*s", dir, (int)(strrchr(name, '/') - name), name);
		if (mkdir(sub, 0700) && errno != EEXIST)
			return -1;
	}
	f = fopen(path, "w");
	if (!f)
		return -1;
	fputs(text, f);
	return fclose(f);
}

void script_cleanup(char *dir)
{
	char cmd[4200];
	pid_t pid;
	char *argv[] = { "rm", "-rf", dir, NULL };

	if (!dir)
		return;
	(void)cmd;
	if (posix_spawnp(&pid, "rm", NULL, NULL, argv, environ) == 0)
		waitpid(pid, NULL, 0);
	free(dir);
}

char *script_build(const struct script *sc, char **dirp)
{
	const char *tmp = getenv("TMPDIR"), *cc = getenv("UKPROBE_CC");
	char *dir, src[4096], so[4096], log[4096];
	const struct script_file *f;
	posix_spawn_file_actions_t fa;
	pid_t pid;
	int status;
	FILE *out;

	if (asprintf(&dir, "%s/ukprobe-run-XXXXXX", tmp && *tmp ? tmp : "/tmp") < 0 || !mkdtemp(dir)) {
		ukp_err("cannot make a directory for the script's build: %s", strerror(errno));
		return NULL;
	}
	*dirp = dir;
	for (f = script_files; f->name; f++)
		if (write_file(dir, f->name, f->text)) {
			ukp_err("cannot write %s/%s: %s", dir, f->name, strerror(errno));
			return NULL;
		}
	snprintf(src, sizeof(src), "%s/script.c", dir);
	snprintf(so, sizeof(so), "%s/script.so", dir);
	snprintf(log, sizeof(log), "%s/cc.log", dir);
	out = fopen(src, "w");
	if (!out || script_gen(sc, out) || fclose(out)) {
		ukp_err("cannot write %s", src);
		return NULL;
	}
	{
		char *argv[] = { (char *)(cc && *cc ? cc : "cc"), "-O2", "-pipe", "-fPIC", "-shared", "-w",
				 "-mgeneral-regs-only", "-fno-jump-tables", "-fno-stack-protector",
				 "-fno-strict-aliasing",
				 "-fcf-protection=none", "-I", dir, "-Wl,-z,now", "-o", so, src, NULL };

		posix_spawn_file_actions_init(&fa);
		posix_spawn_file_actions_addopen(&fa, 2, log, O_WRONLY | O_CREAT | O_TRUNC, 0600);
		posix_spawn_file_actions_adddup2(&fa, 2, 1);
		if (posix_spawnp(&pid, argv[0], &fa, NULL, argv, environ)) {
			ukp_err("cannot run the C compiler %s (ukprobe run builds the script with it; "
				"set UKPROBE_CC): %s", argv[0], strerror(errno));
			posix_spawn_file_actions_destroy(&fa);
			return NULL;
		}
		posix_spawn_file_actions_destroy(&fa);
		if (waitpid(pid, &status, 0) < 0 || !WIFEXITED(status) || WEXITSTATUS(status)) {
			FILE *l = fopen(log, "r");
			char line[512];

			ukp_err("the C compiler %s failed on the script's translation (%s): an internal "
				"error of ukprobe run; its output:", argv[0], src);
			while (l && fgets(line, sizeof(line), l))
				fputs(line, stderr);
			if (l)
				fclose(l);
			/* kept for the report */
			*dirp = NULL;
			free(dir);
			return NULL;
		}
	}
	return strdup(so);
}
