/* SPDX-License-Identifier: MIT */
/*
 * specs_memfd.c - the parsed SPECs (common/spec_wire.h) in a sealed
 * memfd, the one way they reach an agent: a launched program inherits the
 * descriptor (UKPROBE_SPECS), an attached one gets it with CONFIG.
 *
 * Sealed (no write, no resize): whatever a traced program does with the
 * descriptor, every image after it reads what ukprobe wrote, and the
 * agent can map it for its size.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "cli.h"
#include "session.h"
#include "spec_wire.h"

int ukp_specs_memfd(const struct ukp_session *s)
{
	size_t len = 0, done = 0;
	void *form = ukp_specs_encode(s->specs, s->nspecs, &len);
	int fd;

	if (!form) {
		ukp_err("out of memory");
		return -1;
	}
	fd = memfd_create("ukprobe-specs", MFD_CLOEXEC | MFD_ALLOW_SEALING);
	if (fd < 0) {
		ukp_err("memfd_create: %s", strerror(errno));
		free(form);
		return -1;
	}
	while (done < len) {
		ssize_t n = write(fd, (const char *)form + done, len - done);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		done += (size_t)n;
	}
	free(form);
	if (done < len ||
	    fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE | F_SEAL_SEAL)) {
		ukp_err("cannot write the SPECs for the agent: %s", strerror(errno));
		close(fd);
		return -1;
	}
	return fd;
}
