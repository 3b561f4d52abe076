/* SPDX-License-Identifier: MIT */
/*
 * maps_objects_prog.c - the objects of this process twice: as
 * ukp_maps_iterate_phdr() finds them (lines "M ...") and as the C
 * library's dl_iterate_phdr() reports them ("D ..."): its load bias,
 * the address and number of its program headers, its name. Built
 * dynamic, -static and -static-pie (tests/unit/test_maps_objects.c
 * compares the two lists).
 */
#include <link.h>
#include <stdio.h>

#include "symbols/maps_objects.h"

static int show(struct dl_phdr_info *info, size_t size, void *arg)
{
	(void)size;
	printf("%s %#lx %#lx %u %s\n", (const char *)arg, (unsigned long)info->dlpi_addr,
	       (unsigned long)info->dlpi_phdr, (unsigned)info->dlpi_phnum,
	       info->dlpi_name ? info->dlpi_name : "(null)");
	return 0;
}

int main(void)
{
	int ret = ukp_maps_iterate_phdr(show, "M");

	dl_iterate_phdr(show, "D");
	return ret ? 1 : 0;
}
