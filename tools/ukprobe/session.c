/* SPDX-License-Identifier: MIT */
/*
 * session.c - run a command with the agent preloaded, and read what the
 * agent sends (proto.h) until the command ends.
 */
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cli.h"

/* ----------------------------------------------------- address map */

struct ukp_addrmap {
	uint64_t *keys;   /* 0 = empty */
	char **vals;
	size_t cap, n;
};

static size_t slot_of(uint64_t key, size_t cap)
{
	return (size_t)((key * 0x9e3779b97f4a7c15ULL) >> 17) & (cap - 1);
}

static int addrmap_put(struct ukp_session *s, uint64_t key, const char *text)
{
	struct ukp_addrmap *m = s->addrs;
	size_t i;

	if (!key)
		return 0;
	if (!m) {
		m = s->addrs = calloc(1, sizeof(*m));
		if (!m)
			return -1;
	}
	if ((m->n + 1) * 2 > m->cap) {
		struct ukp_addrmap nm = { 0 };
		size_t k;

		nm.cap = m->cap ? m->cap * 2 : 256;
		nm.keys = calloc(nm.cap, sizeof(*nm.keys));
		nm.vals = calloc(nm.cap, sizeof(*nm.vals));
		if (!nm.keys || !nm.vals) {
			free(nm.keys);
			free(nm.vals);
			return -1;
		}
		for (k = 0; k < m->cap; k++) {
			if (!m->keys[k])
				continue;
			for (i = slot_of(m->keys[k], nm.cap); nm.keys[i]; i = (i + 1) & (nm.cap - 1))
				;
			nm.keys[i] = m->keys[k];
			nm.vals[i] = m->vals[k];
		}
		nm.n = m->n;
		free(m->keys);
		free(m->vals);
		*m = nm;
	}
	for (i = slot_of(key, m->cap); m->keys[i]; i = (i + 1) & (m->cap - 1)) {
		if (m->keys[i] == key) {
			char *v = strdup(text);

			if (!v)
				return -1;
			free(m->vals[i]);
			m->vals[i] = v;
			return 0;
		}
	}
	m->vals[i] = strdup(text);
	if (!m->vals[i])
		return -1;
	m->keys[i] = key;
	m->n++;
	return 0;
}

const char *ukp_session_addr(struct ukp_session *s, uint64_t addr, char *buf, size_t len)
{
	struct ukp_addrmap *m = s->addrs;
	size_t i;

	if (m && m->cap)
		for (i = slot_of(addr, m->cap); m->keys[i]; i = (i + 1) & (m->cap - 1))
			if (m->keys[i] == addr)
				return m->vals[i];
	snprintf(buf, len, "0x%lx", (unsigned long)addr);
	return buf;
}

/* ------------------------------------------------------ preparation */

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
static char *find_agent(void)
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

/* The executable execvp() would run. */
static char *find_command(const char *cmd)
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

/*
 * Can the agent be preloaded into path? An ELF executable needs a program
 * interpreter (the dynamic loader): statically linked programs have none.
 * Scripts are run by their interpreter, which gets the agent.
 */
static int check_executable(const char *path)
{
	Elf64_Ehdr eh;
	struct stat st;
	int fd, i, ret = 0;
	bool interp = false;

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
	if (eh.e_ident[EI_CLASS] != ELFCLASS64 || eh.e_machine != EM_X86_64) {
		ukp_err("%s is not an x86-64 program: only x86-64 programs can be traced", path);
		ret = UKP_EXIT_FAIL;
		goto out;
	}
	for (i = 0; i < eh.e_phnum; i++) {
		Elf64_Phdr ph;

		if (pread(fd, &ph, sizeof(ph), (off_t)(eh.e_phoff + (Elf64_Off)i * eh.e_phentsize)) !=
		    (ssize_t)sizeof(ph))
			break;
		if (ph.p_type == PT_INTERP)
			interp = true;
	}
	if (!interp) {
		ukp_err("%s is statically linked: the agent cannot be preloaded into it "
			"(tracing static programs is not supported)", path);
		ret = UKP_EXIT_FAIL;
	}
out:
	close(fd);
	return ret;
}

int ukp_session_prepare(struct ukp_session *s)
{
	int ret;

	if (!s->cmd || !s->cmd[0]) {
		ukp_err("no command to run: ukprobe %s -e SPEC -- CMD [ARGS]",
			s->mode == UKP_MODE_STAT ? "stat" : "trace");
		return UKP_EXIT_USAGE;
	}
	s->info = calloc((size_t)s->nspecs, sizeof(*s->info));
	if (!s->info) {
		ukp_err("out of memory");
		return UKP_EXIT_FAIL;
	}
	s->path = find_command(s->cmd[0]);
	if (!s->path) {
		ukp_err("%s: command not found", s->cmd[0]);
		return UKP_EXIT_NOCMD;
	}
	ret = check_executable(s->path);
	if (ret)
		return ret;
	s->agent = find_agent();
	return s->agent ? 0 : UKP_EXIT_FAIL;
}

/* --------------------------------------------------------- running */

static volatile sig_atomic_t child_pid;

static void forward_signal(int sig)
{
	if (child_pid > 0)
		kill((pid_t)child_pid, sig);
}

static char *join_specs(const struct ukp_session *s)
{
	size_t len = 1;
	char *out;
	int i;

	for (i = 0; i < s->nspecs; i++)
		len += strlen(s->specs[i].text) + 1;
	out = calloc(1, len);
	if (!out)
		return NULL;
	for (i = 0; i < s->nspecs; i++) {
		if (i)
			strcat(out, "\n");
		strcat(out, s->specs[i].text);
	}
	return out;
}

static void run_child(struct ukp_session *s, int fd, const char *events)
{
	const char *old = getenv("LD_PRELOAD");
	char num[16];
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
	if (fcntl(fd, F_SETFD, 0) || setenv("LD_PRELOAD", pre, 1) ||
	    setenv(UKP_ENV_FD, num, 1) || setenv(UKP_ENV_EVENTS, events, 1) ||
	    setenv(UKP_ENV_MODE, s->mode == UKP_MODE_STAT ? "stat" : "trace", 1)) {
		ukp_err("cannot set up the environment: %s", strerror(errno));
		_exit(UKP_EXIT_FAIL);
	}
	execv(s->path, s->cmd);
	ukp_err("cannot run %s: %s", s->path, strerror(errno));
	_exit(errno == ENOENT ? UKP_EXIT_NOCMD : 126);
}

/* Why registering a probe failed, at the part of the SPEC it is about. */
static void report_probe_error(const struct ukp_spec *spec, int err, uint32_t what)
{
	int off_or_sym = spec->offset ? spec->off_col : spec->sym_col;

	switch (-err) {
	case ENOENT:
		if (what == UKP_WHAT_OBJECT)
			ukp_spec_err(spec->text, spec->point_col,
				     "object %s is not loaded in the program", spec->object);
		else if (spec->object)
			ukp_spec_err(spec->text, spec->sym_col, "symbol %s not found in %s",
				     spec->symbol, spec->object);
		else
			ukp_spec_err(spec->text, spec->sym_col,
				     "symbol %s not found in the program or its libraries",
				     spec->symbol);
		break;
	case EILSEQ:
		ukp_spec_err(spec->text, off_or_sym, "probe point is not an instruction boundary");
		break;
	case EINVAL:
		if (spec->is_return)
			ukp_spec_err(spec->text, spec->sym_col,
				     "cannot put a return probe here (blacklisted, or not a function entry)");
		else
			ukp_spec_err(spec->text, off_or_sym,
				     "cannot probe this address (blacklisted, or not code)");
		break;
	case EOPNOTSUPP:
		if (spec->is_return)
			ukp_spec_err(spec->text, spec->sym_col,
				     "return probes are not possible here (the instruction, or a "
				     "shadow stack)");
		else
			ukp_spec_err(spec->text, off_or_sym,
				     "the instruction at the probe point cannot be probed");
		break;
	default:
		ukp_spec_err(spec->text, spec->point_col, "cannot register the probe: %s",
			     strerror(-err));
		break;
	}
}

/* Handle one whole message. Returns -1 on a protocol error. */
static int handle(struct ukp_session *s, const char *p, uint32_t type, uint32_t len,
		  const struct ukp_session_ops *ops, void *arg)
{
	switch (type) {
	case UKPM_HELLO: {
		struct ukp_msg_hello h;

		if (len < sizeof(h))
			return -1;
		memcpy(&h, p, sizeof(h));
		if (h.version != UKP_PROTO_VERSION || (int)h.nevents != s->nspecs)
			return -1;
		s->hello = true;
		return 0;
	}
	case UKPM_PROBE: {
		struct ukp_msg_probe m;
		struct ukp_event_info *ev;
		const char *text = p + sizeof(m);
		size_t fl;

		if (len <= sizeof(m) || p[len - 1] != '\0')
			return -1;
		memcpy(&m, p, sizeof(m));
		if (m.id >= (uint32_t)s->nspecs)
			return -1;
		ev = &s->info[m.id];
		if (m.err) {
			report_probe_error(&s->specs[m.id], m.err, m.what);
			s->probe_errors++;
			return 0;
		}
		ev->registered = true;
		ev->addr = m.addr;
		ev->where = strdup(text);
		/* the function's name: the text up to "+0x" */
		fl = strcspn(text, "+ ");
		ev->func = strndup(text, text[0] == '[' ? strlen(text) : fl);
		if (!ev->where || !ev->func || addrmap_put(s, m.addr, text))
			return -1;
		return 0;
	}
	case UKPM_SYM: {
		struct ukp_msg_sym m;

		if (len <= sizeof(m) || p[len - 1] != '\0')
			return -1;
		memcpy(&m, p, sizeof(m));
		return addrmap_put(s, m.addr, p + sizeof(m));
	}
	case UKPM_EVENT: {
		struct ukp_rec rec;

		if (len != sizeof(rec))
			return -1;
		memcpy(&rec, p, sizeof(rec));
		if (rec.id >= s->nspecs)
			return -1;
		if (ops && ops->event)
			ops->event(s, &rec, arg);
		return 0;
	}
	case UKPM_STAT: {
		struct ukp_msg_stat m;

		if (len < sizeof(m))
			return -1;
		memcpy(&m, p, sizeof(m));
		if (m.id >= (uint32_t)s->nspecs)
			return -1;
		s->info[m.id].have_stat = true;
		s->info[m.id].hits = m.hits;
		s->info[m.id].missed = m.missed;
		return 0;
	}
	case UKPM_END: {
		struct ukp_msg_end m;

		if (len < sizeof(m))
			return -1;
		memcpy(&m, p, sizeof(m));
		s->ended = true;
		s->lost = m.lost;
		s->setup_failed = m.setup_failed;
		return 0;
	}
	default:
		return -1;
	}
}

/* Read messages until the agent's end of the socket is closed. */
static void read_messages(struct ukp_session *s, int fd, const struct ukp_session_ops *ops,
			  void *arg)
{
	size_t cap = 256 * 1024, len = 0, pos;
	char *buf = malloc(cap);

	if (!buf) {
		ukp_err("out of memory");
		return;
	}
	for (;;) {
		ssize_t n = read(fd, buf + len, cap - len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		len += (size_t)n;
		pos = 0;
		while (len - pos >= sizeof(struct ukp_msg)) {
			struct ukp_msg h;

			memcpy(&h, buf + pos, sizeof(h));
			if (h.len < sizeof(h) || h.len > UKP_MSG_MAX || (h.len & 7)) {
				s->protocol_error = true;
				goto out;
			}
			if (len - pos < h.len)
				break;
			if (!s->protocol_error && handle(s, buf + pos, h.type, h.len, ops, arg))
				s->protocol_error = true;
			pos += h.len;
		}
		memmove(buf, buf + pos, len - pos);
		len -= pos;
		if (ops && ops->batch)
			ops->batch(s, arg);
	}
out:
	free(buf);
}

int ukp_session_run(struct ukp_session *s, const struct ukp_session_ops *ops, void *arg)
{
	struct sigaction sa, old_int, old_quit, old_term, old_hup;
	char *events = join_specs(s);
	int sv[2], code;
	pid_t pid;

	if (!events) {
		ukp_err("out of memory");
		return UKP_EXIT_FAIL;
	}
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv)) {
		ukp_err("socketpair: %s", strerror(errno));
		free(events);
		return UKP_EXIT_FAIL;
	}
	fflush(NULL);
	pid = fork();
	if (pid < 0) {
		ukp_err("fork: %s", strerror(errno));
		free(events);
		return UKP_EXIT_FAIL;
	}
	if (pid == 0) {
		close(sv[0]);
		run_child(s, sv[1], events);
	}
	free(events);
	close(sv[1]);
	s->pid = pid;
	child_pid = pid;

	/* ^C and ^\ reach the program from the terminal: ukprobe stays to
	 * report what it got. Termination requests are passed on. */
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = SIG_IGN;
	sigaction(SIGINT, &sa, &old_int);
	sigaction(SIGQUIT, &sa, &old_quit);
	sa.sa_handler = forward_signal;
	sigaction(SIGTERM, &sa, &old_term);
	sigaction(SIGHUP, &sa, &old_hup);

	read_messages(s, sv[0], ops, arg);
	close(sv[0]);
	if (s->protocol_error) {
		ukp_err("unexpected data from the agent (a different ukprobe version?)");
		kill(pid, SIGKILL);
	}
	while (waitpid(pid, &s->wstatus, 0) < 0 && errno == EINTR)
		;
	child_pid = 0;
	sigaction(SIGINT, &old_int, NULL);
	sigaction(SIGQUIT, &old_quit, NULL);
	sigaction(SIGTERM, &old_term, NULL);
	sigaction(SIGHUP, &old_hup, NULL);

	code = WIFEXITED(s->wstatus) ? WEXITSTATUS(s->wstatus) : 128 + WTERMSIG(s->wstatus);
	if (s->protocol_error)
		return UKP_EXIT_FAIL;
	if (s->setup_failed) {
		/* the errors were reported; the program did not run */
		if (!s->probe_errors)
			ukp_err("the agent could not set up tracing in %s", s->path);
		return UKP_EXIT_FAIL;
	}
	if (!s->hello) {
		if (WIFEXITED(s->wstatus) && (code == UKP_EXIT_NOCMD || code == 126))
			return code; /* exec failed, and said so */
		ukp_err("the agent did not start in %s (the program ran untraced)", s->path);
		return UKP_EXIT_FAIL;
	}
	if (!s->ended)
		ukp_warn("%s ended without the agent's final report (%s): events still buffered "
			 "were not delivered", s->cmd[0],
			 WIFSIGNALED(s->wstatus) ? strsignal(WTERMSIG(s->wstatus))
						 : "_exit() or exec");
	if (s->lost)
		ukp_warn("%lu events lost (buffers full)", (unsigned long)s->lost);
	return code;
}

void ukp_session_free(struct ukp_session *s)
{
	int i;

	if (s->info)
		for (i = 0; i < s->nspecs; i++) {
			free(s->info[i].where);
			free(s->info[i].func);
		}
	free(s->info);
	if (s->addrs) {
		size_t k;

		for (k = 0; k < s->addrs->cap; k++)
			free(s->addrs->vals[k]);
		free(s->addrs->keys);
		free(s->addrs->vals);
		free(s->addrs);
	}
	free(s->agent);
	free(s->path);
}

/*
 * The options every running command shares: -e SPEC (repeatable), -o
 * FILE, -h. Fills s->specs/nspecs/cmd and *output. Returns -1 to go on,
 * or the exit code to return now (help printed, or a usage error).
 */
int ukp_cli_parse_run_options(int argc, char **argv, const char *name, void (*usage)(FILE *),
			      struct ukp_session *s, const char **output)
{
	static const struct option opts[] = {
		{ "event", required_argument, NULL, 'e' },
		{ "output", required_argument, NULL, 'o' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	char **texts = calloc((size_t)argc, sizeof(*texts));
	int ntexts = 0, c;

	if (!texts) {
		ukp_err("out of memory");
		return UKP_EXIT_FAIL;
	}
	optind = 1;
	while ((c = getopt_long(argc, argv, "+e:o:h", opts, NULL)) != -1) {
		switch (c) {
		case 'e':
			texts[ntexts++] = optarg;
			break;
		case 'o':
			*output = optarg;
			break;
		case 'h':
			usage(stdout);
			free(texts);
			return 0;
		default:
			fprintf(stderr, "Try 'ukprobe %s --help'.\n", name);
			free(texts);
			return UKP_EXIT_USAGE;
		}
	}
	if (ukp_cli_parse_specs(texts, ntexts, &s->specs)) {
		free(texts);
		return UKP_EXIT_USAGE;
	}
	s->nspecs = ntexts;
	free(texts);
	s->cmd = argv + optind;
	return -1;
}
