/* SPDX-License-Identifier: MIT */
/* Linked statically: ukprobe must refuse it (no program interpreter). */
#include <stdio.h>

int main(void)
{
	printf("static program ran\n");
	return 0;
}
