// SPDX-License-Identifier: MIT
/* srcvals_other.c - the global srcvals.c reads, defined in another file */
long other_total;

void other_add(long v)
{
	other_total += v;
}
