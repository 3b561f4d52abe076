/* SPDX-License-Identifier: MIT */
/*
 * exec.c - the exec family: the new image gets the signal mask the
 * program believes it has.
 *
 * The kernel keeps a thread's blocked mask across execve. The library
 * keeps its own signals out of the kernel's mask (sigmask.c), so just
 * before the execve the kernel's mask becomes the program's view
 * (ukp_exec_mask_enter), and it is put back if the exec fails. Between
 * the two only the execve system call's wrapper runs (glibc's execve,
 * which the blacklist covers): a breakpoint hit with SIGTRAP blocked
 * for real would kill. For that reason the PATH search of execvp,
 * execlp and execvpe is done here, one execve at a time, when the view
 * blocks one of the library's signals (glibc's search calls string
 * functions that may be probed); otherwise glibc's own runs.
 *
 * Exec notifiers (register_exec_notifier, ukprobes.h) are called around
 * every exec: ukprobe's agent ends its image before one, gives back its
 * environment with -f, and goes on tracing after a failed one. The chain
 * is a list of the callers' blocks (nothing allocated), changed under a
 * mutex and read without one.
 *
 * The interposers carry glibc's version names (libukprobes.map) so that
 * programs' versioned references bind to them.
 * Not covered: glibc's own internal execs (system(), popen() and
 * posix_spawn's child use its internal execve); posix_spawn is covered in
 * sigmask.c by its attributes, and its hook (ukp_spawn_call_hook).
 *
 * Context: [any] on program threads; may run in a vfork() child that
 * shares the parent's memory: nothing here allocates.
 */
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <limits.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/base.h"
#include "base/lock.h"
#include "process/process.h"

extern char **environ;

/* The exec notifiers, highest priority first; links are published with
 * release stores (an exec reads the chain without the lock). */
static struct notifier_block *exec_chain;
static struct ukp_fmutex exec_chain_lock = UKP_FMUTEX_INIT;

/* [reg] */
UKPROBES_API int register_exec_notifier(struct notifier_block *nb)
{
	struct notifier_block **at, *p;

	if (!nb || !nb->notifier_call)
		return -EINVAL;
	ukp_fmutex_lock(&exec_chain_lock);
	for (p = exec_chain; p; p = p->next)
		if (p == nb) {
			ukp_fmutex_unlock(&exec_chain_lock);
			return -EEXIST;
		}
	at = &exec_chain;
	while ((p = *at) && p->priority >= nb->priority)
		at = &p->next;
	nb->next = p;
	__atomic_store_n(at, nb, __ATOMIC_RELEASE);
	ukp_fmutex_unlock(&exec_chain_lock);
	return 0;
}

/* [reg] */
UKPROBES_API int unregister_exec_notifier(struct notifier_block *nb)
{
	struct notifier_block **at = &exec_chain, *p;
	int ret = -ENOENT;

	ukp_fmutex_lock(&exec_chain_lock);
	while ((p = *at)) {
		if (p == nb) {
			__atomic_store_n(at, nb->next, __ATOMIC_RELEASE);
			ret = 0;
			break;
		}
		at = &p->next;
	}
	ukp_fmutex_unlock(&exec_chain_lock);
	return ret;
}

/* [any] (may be a vfork() child) */
static void exec_notify(unsigned long action, void *data)
{
	struct notifier_block *p;

	for (p = __atomic_load_n(&exec_chain, __ATOMIC_ACQUIRE); p;
	     p = __atomic_load_n(&p->next, __ATOMIC_ACQUIRE))
		p->notifier_call(p, action, data);
}

#define ENV_MAX 4096
#define ARGS_MAX 4096

enum exec_kind { BY_PATH, BY_FILE, BY_FD };

static int (*real_execve)(const char *, char *const[], char *const[]);
static int (*real_execvpe)(const char *, char *const[], char *const[]);
static int (*real_fexecve)(int, char *const[], char *const[]);

/* Resolved before main: an exec may run in a vfork() child or a signal
 * handler, where the loader's lock may be taken. */
__attribute__((constructor)) static void exec_init(void)
{
	real_execve = (int (*)(const char *, char *const[], char *const[]))
		dlvsym(RTLD_NEXT, "execve", UKP_GLIBC_BASE);
	real_execvpe = (int (*)(const char *, char *const[], char *const[]))
		dlsym(RTLD_NEXT, "execvpe");
	real_fexecve = (int (*)(int, char *const[], char *const[]))
		dlvsym(RTLD_NEXT, "fexecve", UKP_GLIBC_BASE);
}

void (*ukp_exec_call_hook)(const char *path);

/* One execve with the program's mask. */
static int execve_masked(const char *path, char *const argv[], char *const envp[])
{
	void (*hook)(const char *) = ukp_exec_call_hook;
	uint64_t saved;
	bool swapped;
	int ret, e;

	if (!real_execve) {
		errno = ENOSYS;
		return -1;
	}
	if (hook)
		hook(path);
	swapped = ukp_exec_mask_enter(&saved);
	ret = real_execve(path, argv, envp);
	e = errno;
	if (hook)
		hook(NULL);
	if (swapped)
		ukp_exec_mask_leave(&saved);
	errno = e;
	return ret;
}

/* A file that is not an executable format: run by /bin/sh, as glibc's
 * execvp does. */
static int exec_script(const char *path, char *const argv[], char *const envp[])
{
	size_t argc = 0;

	while (argv[argc] && argc < ARGS_MAX)
		argc++;
	{
		char *sh_argv[argc + 2];
		size_t i;

		sh_argv[0] = (char *)"/bin/sh";
		sh_argv[1] = (char *)path;
		for (i = 1; i < argc; i++)
			sh_argv[i + 1] = argv[i];
		sh_argv[argc < 1 ? 2 : argc + 1] = NULL;
		return execve_masked("/bin/sh", sh_argv, envp);
	}
}

/* execvpe's search of PATH (glibc's rules: an empty entry is the
 * current directory; EACCES is remembered; other errors than "not
 * there" end the search). */
static int exec_search(const char *file, char *const argv[], char *const envp[])
{
	const char *p = getenv("PATH"), *end;
	size_t flen = strlen(file);
	bool eacces = false;
	char buf[PATH_MAX];

	if (!p)
		p = "/bin:/usr/bin";
	if (flen + 2 > sizeof(buf)) {
		errno = ENAMETOOLONG;
		return -1;
	}
	for (;; p = end + 1) {
		size_t dl;

		end = strchrnul(p, ':');
		dl = (size_t)(end - p);
		if (dl + flen + 2 <= sizeof(buf)) {
			memcpy(buf, p, dl);
			if (dl)
				buf[dl++] = '/';
			memcpy(buf + dl, file, flen + 1);
			execve_masked(buf, argv, envp);
			if (errno == ENOEXEC)
				exec_script(buf, argv, envp);
			switch (errno) {
			case EACCES:
				eacces = true;
				break;
			case ENOENT:
			case ESTALE:
			case ENOTDIR:
			case ENODEV:
			case ETIMEDOUT:
				break;
			default:
				return -1;
			}
		}
		if (!*end)
			break;
	}
	errno = eacces ? EACCES : ENOENT;
	return -1;
}

static int exec_kind(enum exec_kind kind, const char *path, int fd, char *const argv[],
		     char *const envp[])
{
	uint64_t saved;
	bool swapped;
	int ret, e;

	if (kind == BY_PATH)
		return execve_masked(path, argv, envp);
	/* (each execve made here when the hook wants to see its path) */
	if (kind == BY_FILE && path && *path && !strchr(path, '/') &&
	    (ukp_vmask_get() || ukp_exec_call_hook))
		return exec_search(path, argv, envp);
	if (kind == BY_FILE && path && strchr(path, '/') && ukp_exec_call_hook) {
		execve_masked(path, argv, envp);
		if (errno == ENOEXEC)
			exec_script(path, argv, envp);
		return -1;
	}
	if (kind == BY_FILE && !real_execvpe)
		return errno = ENOSYS, -1;
	if (kind == BY_FD && !real_fexecve)
		return errno = ENOSYS, -1;
	swapped = ukp_exec_mask_enter(&saved);
	ret = kind == BY_FILE ? real_execvpe(path, argv, envp) : real_fexecve(fd, argv, envp);
	e = errno;
	if (swapped)
		ukp_exec_mask_leave(&saved);
	errno = e;
	return ret;
}

/* Every exec goes through here. */
static int do_exec(enum exec_kind kind, const char *path, int fd, char *const argv[],
		   char *const envp[])
{
	char *env[ENV_MAX];
	struct exec_notify_env ne = { envp, env, ENV_MAX };
	int ret, saved;

	exec_notify(EXEC_NOTIFY_BEFORE, &ne);
	ret = exec_kind(kind, path, fd, argv, ne.envp);
	saved = errno;
	exec_notify(EXEC_NOTIFY_FAILED, NULL);
	errno = saved;
	return ret;
}

__attribute__((visibility("default"))) int execve(const char *path, char *const argv[],
						      char *const envp[])
{
	return do_exec(BY_PATH, path, -1, argv, envp);
}

__attribute__((visibility("default"))) int execv(const char *path, char *const argv[])
{
	return do_exec(BY_PATH, path, -1, argv, environ);
}

__attribute__((visibility("default"))) int execvp(const char *file, char *const argv[])
{
	return do_exec(BY_FILE, file, -1, argv, environ);
}

__attribute__((visibility("default"))) int execvpe(const char *file, char *const argv[],
						       char *const envp[])
{
	return do_exec(BY_FILE, file, -1, argv, envp);
}

__attribute__((visibility("default"))) int fexecve(int fd, char *const argv[],
						       char *const envp[])
{
	return do_exec(BY_FD, NULL, fd, argv, envp);
}

/* The execl family: the arguments into an array (on the stack: may run
 * in a vfork() child). with_env: execle's envp follows the NULL. */
static int execl_common(enum exec_kind kind, const char *path, const char *arg, va_list ap,
			bool with_env)
{
	char *argv[ARGS_MAX];
	char *const *envp = environ;
	size_t n = 0;

	argv[n++] = (char *)arg;
	while (arg && n < ARGS_MAX) {
		arg = va_arg(ap, const char *);
		argv[n++] = (char *)arg;
	}
	if (n == ARGS_MAX && arg) {
		errno = E2BIG;
		return -1;
	}
	if (with_env)
		envp = va_arg(ap, char *const *);
	return do_exec(kind, path, -1, argv, envp);
}

/* execl, execlp, execle: the same but for how they find the program
 * and where the environment comes from */
#define EXECL(fn, kind, with_env)                                                 \
		__attribute__((visibility("default"))) int fn(const char *path,          \
							    const char *arg, ...) \
	{                                                                         \
		va_list ap;                                                       \
		int ret;                                                          \
                                                                                  \
		va_start(ap, arg);                                                \
		ret = execl_common(kind, path, arg, ap, with_env);                \
		va_end(ap);                                                       \
		return ret;                                                       \
	}

EXECL(execl, BY_PATH, false)
EXECL(execlp, BY_FILE, false)
EXECL(execle, BY_PATH, true)
