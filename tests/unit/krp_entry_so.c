// SPDX-License-Identifier: MIT
/*
 * krp_entry_so.c - a shared object with an ELF entry point (linked with
 * -e ukt_so_entry), as libc.so.6 has one: the kernel enters it when the
 * file is run as a program. A return probe there is refused even though
 * it looks like any compiled function; ukt_so_other is an ordinary one.
 */
int ukt_so_entry(int v);
int ukt_so_other(int v);

int ukt_so_entry(int v)
{
	return v * 5;
}

int ukt_so_other(int v)
{
	return v * 3;
}
