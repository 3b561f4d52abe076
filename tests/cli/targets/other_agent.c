/* SPDX-License-Identifier: MIT */
/*
 * An agent of another build, for the test that ukprobe refuses one with
 * a clear error (case spec_wire): preloaded as UKPROBE_AGENT, it says
 * HELLO with a protocol version that is not ukprobe's, as an agent that
 * refused ukprobe's SPECs would (common/proto.h), and ends the program.
 */
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "proto.h"

__attribute__((constructor)) static void other_agent(void)
{
	const char *fd = getenv(UKP_ENV_FD);
	struct {
		struct ukp_msg_from from;
		struct ukp_msg_hello hello;
	} p;

	if (!fd)
		return;
	memset(&p, 0, sizeof(p));
	p.from.h = (struct ukp_msg){ UKPM_FROM, sizeof(p.from) };
	p.from.pid = getpid();
	p.hello.h = (struct ukp_msg){ UKPM_HELLO, sizeof(p.hello) };
	p.hello.pid = getpid();
	p.hello.ppid = getppid();
	p.hello.version = UKP_PROTO_VERSION + 1;
	send(atoi(fd), &p, sizeof(p), MSG_NOSIGNAL);
	_exit(UKP_EXIT_SETUP);
}
