/* SPDX-License-Identifier: MIT */
/*
 * launch.c - how ukprobe starts a program: it finds the agent and the
 * command, checks that the command can take a preloaded library, execs
 * it with the agent and its variables (proto.h) in the environment, its
 * connection one the session loop has admitted already
 * (session_loop.h), and exits as it did.
 */
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/ptrace.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "ptrace_arch.h"
#include "session_loop.h"

static char *exe_dir(void)
{
	char buf[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", buf, sizeof(buf) - 1);
	char *slash;

	if (n <= 0)
		return NULL;
	buf[n] = '\0';
	slash = strrchr(buf, '/');
	if (!slash)
		return NULL;
	*slash = '\0';
	return strdup(buf);
}

/* $UKPROBE_AGENT, else the agent next to a ukprobe run from its build
 * directory, else the installed one. */
char *ukp_find_agent(void)
{
	const char *env = getenv("UKPROBE_AGENT");
	char *dir, real[PATH_MAX];
	const char *cand = NULL;

	if (env && *env) {
		cand = env;
	} else {
		dir = exe_dir();
		if (dir && realpath(UKPROBE_BUILD_DIR, real) && !strcmp(dir, real))
			cand = UKPROBE_AGENT_BUILD;
		else
			cand = UKPROBE_AGENT_INSTALLED;
		free(dir);
	}
	if (!realpath(cand, real) || access(real, R_OK)) {
		ukp_err("cannot find the agent %s: %s%s", cand, strerror(errno),
			env ? "" : " (set UKPROBE_AGENT to its path)");
		return NULL;
	}
	return strdup(real);
}

/* The program that hosts an object for "ukprobe probes OBJ": next to
 * the agent. */
char *ukp_find_host(void)
{
	char *agent = ukp_find_agent(), *slash, *host;

	if (!agent)
		return NULL;
	slash = strrchr(agent, '/');
	*slash = '\0';
	if (asprintf(&host, "%s/ukprobe-host", agent) < 0)
		host = NULL;
	free(agent);
	if (host && access(host, X_OK)) {
		ukp_err("cannot find %s: %s", host, strerror(errno));
		free(host);
		host = NULL;
	}
	return host;
}

/* The executable execvp() would run. */
char *ukp_find_command(const char *cmd)
{
	const char *path = getenv("PATH");
	const char *p, *end;
	char buf[PATH_MAX];
	struct stat st;

	if (strchr(cmd, '/'))
		return strdup(cmd);
	if (!path)
		path = "/usr/local/bin:/usr/bin:/bin";
	for (p = path; ; p = end + 1) {
		size_t dlen;

		end = strchr(p, ':');
		if (!end)
			end = p + strlen(p);
		dlen = (size_t)(end - p);
		if (snprintf(buf, sizeof(buf), "%.*s%s%s", (int)dlen, p, dlen ? "/" : "",
			     cmd) < (int)sizeof(buf) &&
		    !stat(buf, &st) && S_ISREG(st.st_mode) && !access(buf, X_OK))
			return strdup(buf);
		if (!*end)
			break;
	}
	return NULL;
}

bool ukp_elf_has_interp(int fd, const Elf64_Ehdr *eh)
{
	int i;

	for (i = 0; i < eh->e_phnum; i++) {
		Elf64_Phdr ph;

		if (pread(fd, &ph, sizeof(ph), (off_t)(eh->e_phoff + (Elf64_Off)i * eh->e_phentsize)) !=
		    (ssize_t)sizeof(ph))
			break;
		if (ph.p_type == PT_INTERP)
			return true;
	}
	return false;
}

/*
 * Can the agent be preloaded into path? An ELF executable needs a program
 * interpreter (the dynamic loader): statically linked programs have none
 * (*is_static: the freestanding agent's, session.c decides). Scripts are
 * run by their interpreter, which gets the agent.
 */
int ukp_check_executable(const char *path, bool *is_static)
{
	Elf64_Ehdr eh;
	struct stat st;
	int fd, ret = 0;

	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0 || fstat(fd, &st)) {
		ukp_err("cannot run %s: %s", path, strerror(errno));
		if (fd >= 0)
			close(fd);
		return errno == ENOENT ? UKP_EXIT_NOCMD : UKP_EXIT_FAIL;
	}
	if ((st.st_mode & (S_ISUID | S_ISGID)) && geteuid() != 0) {
		ukp_err("%s is set-user-ID or set-group-ID: the loader ignores LD_PRELOAD for it, "
			"so it cannot be traced", path);
		ret = UKP_EXIT_FAIL;
		goto out;
	}
	if (pread(fd, &eh, sizeof(eh), 0) != (ssize_t)sizeof(eh) ||
	    memcmp(eh.e_ident, ELFMAG, SELFMAG))
		goto out; /* not ELF: a script, or exec will say */
	if (eh.e_ident[EI_CLASS] != ELFCLASS64 || eh.e_machine != UKP_ELF_MACHINE) {
		ukp_err("%s is not an " UKP_ARCH_NAME " program: only " UKP_ARCH_NAME
			" programs can be traced", path);
		ret = UKP_EXIT_FAIL;
		goto out;
	}
	*is_static = !ukp_elf_has_interp(fd, &eh);
	/* (a static Go program gets the freestanding agent, which runs in
	 * Go's own threads: launch_static.c) */
	if (ukp_go_without_cgo(fd) && !*is_static) {
		ukp_err("%s is a Go program built without cgo: its threads are the Go runtime's "
			"own, where the agent preloaded into a dynamically linked program cannot "
			"run (build it with CGO_ENABLED=1, or without -linkmode=external: Go's "
			"default static program is traced)", path);
		ret = UKP_EXIT_FAIL;
	} else if (ukp_go_without_cgo(fd) && !ukp_go_threads_ok()) {
		ukp_err("%s is a static Go program: its threads are keyed by their FS base, which "
			"needs the FSGSBASE instructions this machine does not allow", path);
		ret = UKP_EXIT_FAIL;
	}
out:
	close(fd);
	return ret;
}

/* A program: ET_EXEC, or a position-independent executable (DF_1_PIE in
 * its dynamic section); shared libraries are neither, even those that
 * can be run (libc.so.6). */
bool ukp_is_program(const char *path)
{
	Elf64_Ehdr eh;
	bool pie = false;
	int fd = open(path, O_RDONLY | O_CLOEXEC), i;

	if (fd < 0)
		return false;
	if (pread(fd, &eh, sizeof(eh), 0) != (ssize_t)sizeof(eh) ||
	    memcmp(eh.e_ident, ELFMAG, SELFMAG) || eh.e_ident[EI_CLASS] != ELFCLASS64) {
		close(fd);
		return false;
	}
	if (eh.e_type == ET_EXEC) {
		close(fd);
		return true;
	}
	for (i = 0; i < eh.e_phnum && !pie; i++) {
		Elf64_Phdr ph;
		Elf64_Dyn d;
		Elf64_Off off;

		if (pread(fd, &ph, sizeof(ph), (off_t)(eh.e_phoff + (Elf64_Off)i * eh.e_phentsize)) !=
			    (ssize_t)sizeof(ph) ||
		    ph.p_type != PT_DYNAMIC)
			continue;
		for (off = 0; off + sizeof(d) <= ph.p_filesz; off += sizeof(d)) {
			if (pread(fd, &d, sizeof(d), (off_t)(ph.p_offset + off)) != (ssize_t)sizeof(d) ||
			    d.d_tag == DT_NULL)
				break;
			if (d.d_tag == DT_FLAGS_1 && (d.d_un.d_val & DF_1_PIE))
				pie = true;
		}
	}
	close(fd);
	return pie;
}

/* [child] exec the command with the agent: fd its socket, specs_fd the
 * parsed SPECs (ukp_specs_memfd). Does not return. */
static void launch(const struct ukp_session *s, int fd, int specs_fd)
{
	static const char *const modes[] = {
		[UKP_MODE_TRACE] = "trace", [UKP_MODE_STAT] = "stat", [UKP_MODE_PROBES] = "probes",
	};
	const char *old = getenv("LD_PRELOAD");
	char num[16], specs_num[16];
	char *pre;

	if (old && *old) {
		pre = malloc(strlen(s->agent) + strlen(old) + 2);
		if (!pre)
			_exit(UKP_EXIT_FAIL);
		sprintf(pre, "%s:%s", s->agent, old);
	} else {
		pre = s->agent;
	}
	snprintf(num, sizeof(num), "%d", fd);
	snprintf(specs_num, sizeof(specs_num), "%d", specs_fd);
	/* a variable left over from an outer ukprobe must not confuse the
	 * agent: every one is set or removed */
	unsetenv(UKP_ENV_FOLLOWED);
	if (fcntl(fd, F_SETFD, 0) || fcntl(specs_fd, F_SETFD, 0) ||
	    setenv("LD_PRELOAD", pre, 1) || setenv(UKP_ENV_FD, num, 1) ||
	    setenv(UKP_ENV_SPECS, specs_num, 1) ||
	    setenv(UKP_ENV_MODE, modes[s->mode], 1) ||
	    (s->follow ? setenv(UKP_ENV_FOLLOW, "1", 1) : unsetenv(UKP_ENV_FOLLOW)) ||
	    (s->no_optimize ? setenv(UKP_ENV_NO_OPTIMIZE, "1", 1) : unsetenv(UKP_ENV_NO_OPTIMIZE)) ||
	    (s->tracing_off ? setenv(UKP_ENV_TRACING_OFF, "1", 1) : unsetenv(UKP_ENV_TRACING_OFF)) ||
	    (s->load ? setenv(UKP_ENV_DLOPEN, s->load, 1) : unsetenv(UKP_ENV_DLOPEN))) {
		ukp_err("cannot set up the environment: %s", strerror(errno));
		_exit(UKP_EXIT_FAIL);
	}
	execv(s->path, s->cmd);
	ukp_err("cannot run %s: %s", s->path, strerror(errno));
	_exit(errno == ENOENT ? UKP_EXIT_NOCMD : 126);
}

struct held {
	struct ukp_session *s;
	struct ukp_loop *l;
	int conn;
};

/* A static program held at its entry, its agent's set-up done: `ukprobe
 * run`'s "Attaching" and BEGIN's output are printed before the program
 * runs (a dynamic program's agent waits for that itself: script.c's
 * wait_begun; this one's thread must end first). */
static void held_drain(void *arg)
{
	struct held *h = arg;

	ukp_loop_drain(h->s, h->l, h->conn);
}

int ukp_launch_start(struct ukp_session *s, struct ukp_loop *l)
{
	int sv[2], sndbuf = 1 << 20;
	pid_t pid;

	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv)) {
		ukp_err("socketpair: %s", strerror(errno));
		return UKP_EXIT_FAIL;
	}
	/* room for whole packets (the agent's end is shared by every image) */
	setsockopt(sv[1], SOL_SOCKET, SO_SNDBUF, &sndbuf, sizeof(sndbuf));
	if (!ukp_loop_add(l, &(struct ukp_conn){ .fd = sv[0], .agent = true })) {
		ukp_err("out of memory");
		close(sv[0]);
		close(sv[1]);
		return UKP_EXIT_FAIL;
	}
	/* -f: static programs exec'd (follow_exec.c) */
	s->exec_msg = s->follow ? ukp_follow_exec : NULL;
	fflush(NULL);
	pid = fork();
	if (pid < 0) {
		ukp_err("fork: %s", strerror(errno));
		close(sv[1]);
		return UKP_EXIT_FAIL; /* (sv[0] is the loop's, closed with it) */
	}
	if (pid == 0) {
		close(sv[0]);
		/* a static program stops at its exec for the loader */
		if (s->free_agent && ptrace(PTRACE_TRACEME, 0, NULL, NULL))
			_exit(UKP_EXIT_FAIL);
		launch(s, sv[1], l->specs_fd);
	}
	if (s->free_agent) {
		/* (set before: held_drain reads the agent's first packets) */
		s->pid = l->child = pid;
		l->nagents = l->open_conns = 1;
	}
	if (s->free_agent &&
	    ukp_launch_static(s->path, s->free_agent, pid, s->script_msg ? held_drain : NULL,
			      &(struct held){ s, l, l->nconns - 1 })) {
		close(sv[1]);
		kill(pid, SIGKILL);
		while (waitpid(pid, NULL, 0) < 0 && errno == EINTR)
			;
		return UKP_EXIT_FAIL;
	}
	close(l->specs_fd);
	l->specs_fd = -1;
	close(sv[1]);
	s->pid = l->child = pid;
	l->nagents = l->open_conns = 1;
	ukp_loop_signals(l);
	return 0;
}

int ukp_launch_finish(struct ukp_session *s, struct ukp_loop *l, bool failed,
		      const struct ukp_session_ops *ops, void *arg)
{
	int code;

	/* every image is gone: what those that ended abruptly left */
	if (!failed) {
		ukp_region_recover(s, ops, arg);
		/* (a packet an image left in its region) */
		failed = s->protocol_error;
		if (failed)
			ukp_loop_protocol_error(s, 0);
	}
	if (failed)
		kill(l->child, SIGKILL);
	ukp_follow_exec_end(s);
	while (waitpid(l->child, &s->wstatus, 0) < 0 && errno == EINTR)
		;
	/* reaped: its pid is no longer one to send signals to */
	ukp_loop_signals_restore(l);
	code = WIFEXITED(s->wstatus) ? WEXITSTATUS(s->wstatus) : 128 + WTERMSIG(s->wstatus);
	if (failed)
		return UKP_EXIT_FAIL;
	if (s->first && s->first->setup_failed) {
		/* the errors were reported; the program did not run */
		ukp_setup_failed(s, s->path);
		return UKP_EXIT_FAIL;
	}
	if (!s->first) {
		if (WIFEXITED(s->wstatus) && (code == UKP_EXIT_NOCMD || code == 126))
			return code; /* exec failed, and said so */
		ukp_err("the agent did not start in %s (the program ran untraced)", s->path);
		return UKP_EXIT_FAIL;
	}
	ukp_report_end(s);
	return code;
}
