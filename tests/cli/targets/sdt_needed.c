/* SPDX-License-Identifier: MIT */
/*
 * A program linked with libukp_sdtplug.so (DT_NEEDED: loaded at start,
 * before main), whose SDT probe plug:fire has a semaphore there.
 *
 *   tgt_sdt_needed N   N calls of plug_fire; prints how many saw the
 *                      semaphore raised: "enabled=K"
 */
#include <stdio.h>
#include <stdlib.h>

int plug_fire(int v);
int plug_enabled(void);

int main(int argc, char **argv)
{
	int n = argc > 1 ? atoi(argv[1]) : 1, i, sum = 0;

	for (i = 0; i < n; i++)
		sum += plug_fire(i);
	printf("enabled=%d sum=%d\n", plug_enabled(), sum);
	return 0;
}
