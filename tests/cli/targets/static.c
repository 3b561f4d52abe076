/* SPDX-License-Identifier: MIT */
/* Linked statically: ukprobe must refuse it (no program interpreter).
 * "static wait" then waits for its standard input to close (ukprobe -p). */
#include <stdio.h>
#include <string.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	char c;

	printf("static program ran\n");
	fflush(stdout);
	if (argc > 1 && !strcmp(argv[1], "wait"))
		while (read(0, &c, 1) > 0)
			;
	return 0;
}
