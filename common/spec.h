/* SPDX-License-Identifier: MIT */
/*
 * spec.h - the probe definition syntax of ukprobe: the kernel's
 * kprobe_events syntax (Documentation/trace/kprobetrace.rst) with loaded
 * objects in place of modules.
 *
 *   p[:[GRP/]EVENT] [OBJ:]SYM[+OFFS]|[OBJ:]0xADDR [FETCHARGS]
 *   r[MAXACTIVE][:[GRP/]EVENT] [OBJ:]SYM[+0]|[OBJ:]0xADDR [FETCHARGS]
 *   w[:[GRP/]EVENT] [OBJ:]SYM[+OFFS]|[OBJ:]0xADDR[/LEN][:r|w|rw] [FETCHARGS]
 *   p[:[GRP/]EVENT] OBJ:FILE:LINE|OBJ:FUNC:+N [FETCHARGS]   (DWARF)
 *   p[:[GRP/]EVENT] [OBJ:]%PROVIDER:NAME [FETCHARGS]
 *
 * The %PROVIDER:NAME form is an SDT probe (<sys/sdt.h>, USDT; perf's
 * form): PROVIDER and NAME may be globs; $argN is its Nth SDT argument
 * (spec_sdt.c). Its event is NAME, in the group sdt_PROVIDER.
 *
 * A w SPEC is a data watchpoint (register_wide_hw_breakpoint): LEN bytes
 * (default: the symbol's size, or 8 for an address or an offset) at the
 * data symbol or address, firing on reads, writes, or both (rw, the
 * default, as perf's mem: events). Its events come after the access;
 * %ip is the next instruction of the accessing code.
 *
 * SYM may be a glob (fnmatch: *, ?, [...]): one probe per matching
 * function; globs match demangled C++ and Rust names too. SYM may be a
 * demangled name (std::vector<int>::push_back*, or quoted when it has
 * blanks, '+' or '-': "operator new(unsigned long)"), matched against
 * the demangled names, one probe per function it names. 0xADDR is an absolute address without OBJ, and an address of
 * the object's ELF file (its virtual addresses, as nm and objdump show
 * them) with OBJ.
 *
 * FETCHARGS: [NAME=]FETCHARG[:TYPE], FETCHARG one of %REG, $argN, $retval,
 * $duration (r only: ns since the entry; named "duration" by default),
 * $stack, $stackN, $comm, @ADDR, @SYM[+|-OFFS], +|-[u]OFFS(FETCHARG), or a
 * variable by name from the debug information (VAR, VAR->FIELD, VAR.FIELD,
 * VAR[N], chains of those, $params); TYPE
 * one of u8..u64, s8..s64, x8..x64, char, string (ustring is the same
 * here), symbol, b<bit-width>@<bit-offset>/<container-size>.
 *
 * Parsed once, by the CLI (which validates every SPEC before running
 * anything); the agent gets the parsed form (spec_wire.h) and does not
 * build the parser. Plain C, malloc only; not for signal context.
 */
#ifndef UKPROBE_SPEC_H
#define UKPROBE_SPEC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define UKP_SPEC_NAME_MAX     63   /* group and event names (kernel: < 64) */
#define UKP_SPEC_ARGNAME_MAX  32   /* argument names (kernel MAX_ARG_NAME_LEN) */
#define UKP_SPEC_ARGSTR_MAX   63   /* one FETCHARG's text (kernel MAX_ARGSTR_LEN) */
#define UKP_SPEC_DEREF_MAX    8    /* nested dereferences */
#define UKP_SPEC_MAXACTIVE_MAX 4096 /* kernel KRETPROBE_MAXACTIVE_MAX */
#define UKP_SPEC_STACK_MAX    2048 /* $stackN/$argN bound (kernel PARAM_MAX_STACK on x86-64) */
#define UKP_SPEC_MAX_ARGS     24
#define UKP_SPEC_STR_SLOT     64   /* bytes a string takes in an event (63 + NUL) */
#define UKP_SPEC_NUM_SLOT     8    /* bytes a number takes in an event */
#define UKP_SPEC_DEFAULT_GROUP "ukprobes"

struct ukp_filter;
struct ukp_hist;

/* Where a fetch argument starts. */
enum ukp_fa_base {
	UKP_FA_REG,     /* %REG: param = word index in struct pt_regs */
	UKP_FA_ARG,     /* $argN: param = N (1-based) */
	UKP_FA_STACK,   /* $stackN: param = N */
	UKP_FA_STACKP,  /* $stack: the stack pointer */
	UKP_FA_RETVAL,  /* $retval */
	UKP_FA_COMM,    /* $comm */
	UKP_FA_DURATION, /* $duration: ns from the function's entry to this
			 * return (r events only) */
	UKP_FA_IMM,     /* @ADDR: param = ADDR, followed by a dereference */
	UKP_FA_SYM,     /* @SYM[+|-OFFS]: symbol and symoff; param = the address
			 * once resolved (by the agent), then as UKP_FA_IMM */
	UKP_FA_UNAVAIL, /* a variable whose value the debug information does not
			 * give at this address: every hit shows it unavailable */
	UKP_FA_GOID,    /* $goid: the current goroutine's id, the word at
			 * param (its offset in the runtime's g, set by the CLI
			 * from the program: tools/ukprobe/dwarf/dwarf_go.c) of
			 * the g register; Go code only (agent/go.c) */
	UKP_FA_VAR,     /* a variable by name (VAR, VAR->F, VAR.F, VAR[N],
			 * $params): the text at var_col, var_len; the CLI
			 * resolves it from DWARF (tools/ukprobe/dwarf/) to
			 * one of the above before anything is sent */
	UKP_FA_ENTRY_REG, /* the agent's own (never on the wire): a register as
			 * it was at the function's entry, param = its word in
			 * struct pt_regs (a Go function's $argN: agent/go.c) */
};

enum ukp_fa_type {
	UKP_TY_U,       /* unsigned, printed in decimal */
	UKP_TY_S,       /* signed, decimal */
	UKP_TY_X,       /* unsigned, hexadecimal */
	UKP_TY_STRING,  /* NUL-terminated string */
	UKP_TY_CHAR,    /* one byte, printed as a character */
	UKP_TY_SYMBOL,  /* an address, printed as sym+0xoff/0xsize */
	UKP_TY_FLOAT,   /* an IEEE 754 binary32 or binary64, printed as a number */
};

struct ukp_fetcharg {
	char name[UKP_SPEC_ARGNAME_MAX + 1];
	int col;                       /* column of the argument in the SPEC */
	enum ukp_fa_base base;
	unsigned long param;
	/*
	 * Dereferences, innermost first: value = *(value + deref[i]). The
	 * last one loads the argument itself (size bytes, or the string at
	 * that address); the others load a pointer.
	 */
	int nderef;
	long deref[UKP_SPEC_DEREF_MAX + 1];
	/* added to the value last (numbers only): a value that is a
	 * register plus a constant, as DWARF's DW_OP_bregN K;
	 * DW_OP_stack_value (tools/ukprobe/dwarf_var.c); 0 otherwise */
	long add;
	enum ukp_fa_type type;
	unsigned int size;             /* 1, 2, 4, 8; UKP_SPEC_STR_SLOT for strings */
	unsigned char tidx;            /* its row in ukp_fetch_types (fetch_types.h):
					* how it is compared, kept and shown */
	unsigned int off;              /* where the value goes in an event's payload */
	/* bitfield (type u, size = the container): bits [bf_offset,
	 * bf_offset + bf_width) of the container; bf_width 0 otherwise */
	unsigned int bf_width, bf_offset;
	bool plain_reg;                /* a register's value as it is (no
					* dereference, bitfield or string): the
					* fetch's short path */
	/* an indexed address (an SDT argument's DISP(%B,%I,S), compiled by
	 * the agent, agent/usdt.c): register word index_reg * index_scale
	 * is added to the base's value before the first dereference;
	 * index_scale 1, 2, 4 or 8, 0 for none */
	unsigned char index_reg, index_scale;
	char *symbol;                  /* UKP_FA_SYM */
	long symoff;
	int var_col, var_len;          /* UKP_FA_VAR: where its expression is */
	bool type_given;               /* :TYPE was written */
	/* at an SDT probe: $argN is the Nth SDT argument (UKP_FA_ARG),
	 * which the agent compiles per probe from the note's spec
	 * (agent/usdt.c); sdt_default: no :TYPE was given (s64, the
	 * value sign- or zero-extended from its size in the note) */
	bool sdt_default;
	/* set by that compilation only (never on the wire): the value
	 * is sign-extended from size bytes (agent/fetch.c) */
	bool sext;
};

struct ukp_spec {
	char *text;                    /* the SPEC as given */
	bool is_return;
	/* w: a data watchpoint of watch_len bytes (0: the symbol's size, or
	 * 8), watch_type HW_BREAKPOINT_R/W/RW (1/2/3) */
	bool is_watch;
	unsigned long watch_len;
	unsigned int watch_type;
	int maxactive;                 /* 0: the library's default */
	char group[UKP_SPEC_NAME_MAX + 1];
	char event[UKP_SPEC_NAME_MAX + 1];
	char *object;                  /* NULL: search every loaded object */
	char *symbol;                  /* NULL for an address */
	unsigned long offset;
	bool is_addr;                  /* [OBJ:]0xADDR */
	unsigned long addr;
	bool is_glob;                  /* symbol is a pattern */
	bool cxx_name;                 /* symbol is a demangled C++/Rust name
					* (an fnmatch pattern; is_glob too) */
	bool is_sdt;                   /* [OBJ:]%PROVIDER:NAME, an SDT probe:
					* symbol is "PROVIDER:NAME" (a pattern
					* when is_glob), spec_sdt.c */
	bool event_given;              /* EVENT was written (else a default) */
	/* OBJ:FILE:LINE (symbol is FILE) or OBJ:FUNC:+N (symbol is FUNC,
	 * src_rel): a source line, resolved from DWARF by the CLI into one
	 * OBJ:0xADDR SPEC per copy of the line; src_line 0 otherwise */
	unsigned int src_line;
	bool src_rel;
	bool has_vars;                 /* an argument is UKP_FA_VAR */
	int copy_of;                   /* 1 + the SPEC this one is a further copy
					* of (a line's or an inlined function's,
					* DWARF), whose hist table it shares; 0 */
	int event_col;                 /* columns, for error reports */
	int point_col;                 /* start of [OBJ:]SYM[+OFFS] */
	int sym_col;
	int off_col;                   /* the '+', or the end of the symbol */
	int nargs;
	struct ukp_fetcharg args[UKP_SPEC_MAX_ARGS];
	unsigned int payload;          /* bytes of payload an event needs */
	bool uses_duration;            /* an argument is $duration */
	/* --filter (filter.h): its text and compiled program, or NULL;
	 * both malloc'ed, freed by ukp_spec_free() */
	char *filter_text;
	struct ukp_filter *filter;
	/* --trigger stacktrace[:N] (filter.h): the stack goes in the
	 * payload at stack_off, a u64 count then up to stack_max addresses;
	 * stack_count N: at most N stacks (0: every hit) */
	char *trigger_text;
	bool stacktrace;
	unsigned long stack_count;
	unsigned int stack_off, stack_max;
	/* --trigger hist:... (hist.h), malloc'ed, or NULL */
	struct ukp_hist *hist;
	/* --trigger traceon|traceoff[:N] [if FILTER]: +1 traceon, -1
	 * traceoff, 0 none; onoff_count N (0: every time); onoff_filter its
	 * own filter (malloc'ed) or NULL */
	int onoff;
	unsigned long onoff_count;
	struct ukp_filter *onoff_filter;
};

/* [any] Bytes of payload an event's record carries: its arguments and,
 * with --trigger stacktrace, the room for its stack. */
static inline unsigned int ukp_spec_record_payload(const struct ukp_spec *s)
{
	return s->stacktrace ? s->stack_off + 8 + 8 * s->stack_max : s->payload;
}

/* Where a SPEC went wrong: a column (0-based, in the SPEC text) and what. */
struct ukp_spec_error {
	int col;
	char msg[192];
};

/* Payload bytes an event record can carry (see proto.h). */
#define UKP_SPEC_PAYLOAD_MAX 192

/*
 * Parse one SPEC. Returns 0, or -1 with *err filled (nothing to free
 * then). On success the spec owns memory: release it with ukp_spec_free().
 */
int ukp_spec_parse(const char *text, struct ukp_spec *spec, struct ukp_spec_error *err);
/* What a parsed (or decoded) SPEC owns, freed (spec_parsed.c). */
void ukp_spec_free(struct ukp_spec *spec);
/* The memory spec owns freed, spec left as it was (not to be used
 * again): for an array freed next. It writes nothing to it: after a
 * fork() each page of a parent's array of SPECs (a few kilobytes each)
 * would fault at its first write. */
void ukp_spec_release(const struct ukp_spec *spec);

/* "probe" or "object:probe" as libukprobes' symbol_name takes it;
 * malloc'ed. For symbols (not addresses) only (spec_parsed.c). */
char *ukp_spec_symbol_name(const struct ukp_spec *spec);

/* The event name a glob match gets when the SPEC names no event:
 * perf probe's, the function's name (SYM_OFFS with an offset,
 * SYM__return for a return probe), made a C identifier of at most
 * UKP_SPEC_NAME_MAX characters. */
void ukp_spec_match_event(const struct ukp_spec *spec, const char *func, char *buf,
			  size_t len);

/* The word index (in struct pt_regs) of a register name of the build's
 * architecture (fetch_regs.h). Returns -1 for an unknown name. */
int ukp_spec_reg_index(const char *name, size_t len);

/* The type name as written in a SPEC ("u32", "x64", "string", "b3@4/8"). */
const char *ukp_spec_type_name(const struct ukp_fetcharg *fa, char *buf, size_t len);

#endif /* UKPROBE_SPEC_H */
