/* SPDX-License-Identifier: MIT */
/*
 * detour.h - where a detour resumes after its template (the end of
 * optprobe.c's entry_code: lea, push site, call common), for the C code
 * that writes the template and the assembly that returns past it.
 */
#ifndef UKP_X86_DETOUR_H
#define UKP_X86_DETOUR_H

#define DETOUR_RESUME 17

#endif
