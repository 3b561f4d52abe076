/* SPDX-License-Identifier: MIT */
/*
 * elf_reloc.h - AArch64's ELF machine and the relocations the
 * freestanding agent's script loader applies (free/script_map.c).
 */
#ifndef UKPA_ELF_RELOC_H
#define UKPA_ELF_RELOC_H

#include <elf.h>

#define UKPA_EM EM_AARCH64
#define UKPA_R_RELATIVE R_AARCH64_RELATIVE
#define UKPA_R_ABS64 R_AARCH64_ABS64
#define UKPA_R_GLOB_DAT R_AARCH64_GLOB_DAT
#define UKPA_R_JUMP_SLOT R_AARCH64_JUMP_SLOT

#endif /* UKPA_ELF_RELOC_H */
