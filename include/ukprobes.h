/* SPDX-License-Identifier: MIT */
/*
 * ukprobes.h - the Linux Kprobes API for probing the calling process.
 *
 * Names and semantics follow the kernel's Documentation/trace/kprobes.rst.
 * "Kernel" there means "this process" here, "CPU" means "thread", "module"
 * means "loaded ELF object", and the debugfs/sysctl knobs are functions.
 *
 * Handler context: pre_handler, post_handler and fault_handler run inside
 * the library's SIGTRAP handler (breakpoint path). They must be
 * async-signal-safe: no malloc, no stdio, no locks the probed code may
 * hold. Asynchronous signals are blocked while they run. (A jprobe's
 * handler runs on the thread, under the same rules: see "Jprobes".)
 */
#ifndef UKPROBES_H
#define UKPROBES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdarg.h>
#include <pthread.h>
#include <string.h>

#ifdef __cplusplus
extern "C" {
#endif

#ifndef UKPROBES_API
#define UKPROBES_API __attribute__((visibility("default")))
#endif

/*
 * struct pt_regs, instruction_pointer(), instruction_pointer_set(),
 * user_stack_pointer(), regs_return_value(), regs_get_kernel_argument(),
 * regs_get_kernel_stack_nth(), kprobe_opcode_t: per architecture.
 */
#if defined(__x86_64__)
#include "ukprobes-arch/x86_64.h"
#elif defined(__aarch64__)
#include "ukprobes-arch/aarch64.h"
#else
#error "ukprobes: unsupported architecture (x86-64 and AArch64 are)"
#endif

struct kprobe;

typedef int (*kprobe_pre_handler_t)(struct kprobe *, struct pt_regs *);
typedef void (*kprobe_post_handler_t)(struct kprobe *, struct pt_regs *,
				      unsigned long flags);
/*
 * Called when a pre or post handler of this probe faults (SIGSEGV, SIGBUS,
 * SIGFPE, SIGILL). trapnr is the hardware trap number (x86-64: 14 page
 * fault, 13 general protection, 0 divide error, 6 invalid opcode, ...;
 * AArch64: the exception class of the syndrome, ESR_ELx.EC); regs are the
 * registers of the faulting handler. The faulting handler is abandoned in
 * every case and the program carries on; the return value is ignored.
 */
typedef int (*kprobe_fault_handler_t)(struct kprobe *, struct pt_regs *,
				      int trapnr);

struct kprobe {
	/* Hits missed because they came while a handler or an out-of-line
	 * step of this thread was running, plus handler faults. */
	unsigned long nmissed;
	/* Probe point: set it, or set symbol_name (+ offset). */
	kprobe_opcode_t *addr;
	/* "sym" (any loaded object) or "object:sym", e.g. "libz.so.1:deflate" */
	const char *symbol_name;
	unsigned int offset;
	kprobe_pre_handler_t pre_handler;
	kprobe_post_handler_t post_handler;
	kprobe_fault_handler_t fault_handler;
	/* Saved first byte of the probed instruction (set on registration). */
	kprobe_opcode_t opcode;
	/* KPROBE_FLAG_*; only KPROBE_FLAG_DISABLED may be passed in. */
	unsigned int flags;
};

#define KPROBE_FLAG_GONE          1  /* the probed object was unloaded */
#define KPROBE_FLAG_DISABLED      2  /* probe is temporarily disabled */
#define KPROBE_FLAG_OPTIMIZED     4  /* probe uses a jump (optprobe) */
#define KPROBE_FLAG_FTRACE        8  /* probe uses a patchable NOP entry */
#define KPROBE_FLAG_ON_FUNC_ENTRY 16 /* probe is on a function entry */

static inline bool kprobe_gone(const struct kprobe *p)
{
	return p->flags & KPROBE_FLAG_GONE;
}

static inline bool kprobe_disabled(const struct kprobe *p)
{
	return p->flags & (KPROBE_FLAG_DISABLED | KPROBE_FLAG_GONE);
}

static inline bool kprobe_optimized(const struct kprobe *p)
{
	return p->flags & KPROBE_FLAG_OPTIMIZED;
}

static inline bool kprobe_ftrace(const struct kprobe *p)
{
	return p->flags & KPROBE_FLAG_FTRACE;
}

/*
 * Registration. Returns 0 or a negative errno:
 *  -EINVAL   both or neither of addr/symbol_name; the struct is already
 *            registered; blacklisted address; not executable code;
 *            the instruction cannot be copied (e.g. a rip-relative
 *            displacement that does not reach the out-of-line slot)
 *  -ENOENT   unknown symbol or object; address inside no symbol
 *  -EILSEQ   not on an instruction boundary of its function, or an
 *            exception instruction (int3, int n, ud2, ...)
 *  -EOPNOTSUPP an instruction that can be neither run out of line nor
 *            emulated (far transfers, iret, ...)
 *  -ENOMEM   no memory, or no executable memory within reach (+-2 GiB)
 *  -EBUSY    called from inside a probe handler
 * These functions may be called from any thread, but not from a handler
 * or from a signal handler.
 */
UKPROBES_API int register_kprobe(struct kprobe *p);
UKPROBES_API void unregister_kprobe(struct kprobe *p);
UKPROBES_API int register_kprobes(struct kprobe **kps, int num);
UKPROBES_API void unregister_kprobes(struct kprobe **kps, int num);
UKPROBES_API int disable_kprobe(struct kprobe *kp);
UKPROBES_API int enable_kprobe(struct kprobe *kp);

/*
 * The probe whose handler this thread is running, or NULL. Outside
 * handlers it is NULL. (The kernel returns its internal aggregate probe
 * for a site with several probes; we return the user's probe whose
 * handler is running.)
 */
UKPROBES_API struct kprobe *kprobe_running(void);

/*
 * Copy size bytes from src without faulting: 0, or -EFAULT if any byte is
 * unreadable (dst may then be partly written). Async-signal-safe; usable in
 * handlers and anywhere else.
 */
UKPROBES_API long copy_from_user_nofault(void *dst, const void *src, size_t size);

/*
 * A chain of n >= 1 dereferences without faulting, as a tracer's fetch
 * argument +OFF2(+OFF1(%reg)) needs it: starting from *val, n times
 * val = *(val + off[i]), reading 8 bytes (a pointer) for all but the
 * last and size bytes (1, 2, 4 or 8, zero-extended) for the last. 0 with
 * the value in *val; -EFAULT with *val unchanged if any read is
 * unreadable; -EINVAL for n 0 or another size. Async-signal-safe, as
 * copy_from_user_nofault(), but one call for the whole chain.
 */
UKPROBES_API long ukprobes_fetch_nofault(uint64_t *val, const long *off, unsigned int n,
					 unsigned int size);

/* What ukprobes_fetch_nofault_value() returns: err 0 and the value in
 * val, or err -EFAULT or -EINVAL as above (val then undefined). */
struct ukprobes_fetched {
	long err;
	uint64_t val;
};

/*
 * ukprobes_fetch_nofault() from base (a register's value, say), the
 * result returned (in the two return registers on x86-64 and AArch64):
 * the value passes through no memory on its way, which a tracer's hit
 * path feels when it compares it at once.
 */
UKPROBES_API struct ukprobes_fetched ukprobes_fetch_nofault_value(uint64_t base, const long *off,
								  unsigned int n, unsigned int size);

/* The debugfs analogs (kprobes.rst, Appendix A). */
/* One line per probe: "ADDR  TYPE  SYM+0xOFF  OBJECT [GONE][DISABLED]..." */
UKPROBES_API int kprobes_show_list(FILE *out);
/* One line per range: "0xSTART-0xEND\tSYMBOL" */
UKPROBES_API int kprobes_show_blacklist(FILE *out);

/*
 * Symbols, with the kernel's kallsyms names: the functions of every
 * loaded object (and of their debug files), as probes see them.
 * kallsyms_lookup_name(): the address of "sym" or "object:sym" (names as
 * symbol_name takes them; an IFUNC gives the implementation the process
 * uses), 0 if none. kallsyms_on_each_symbol(): fn(data, name, addr) for
 * every function, aliases included, the program first; a non-zero return
 * stops the walk and is returned. sprint_symbol(): "sym+0xoff/0xsize
 * [object]" of an address (the program's own without "[object]"), or
 * "0x..." outside every function, into buffer (at least
 * KSYM_SYMBOL_LEN bytes); sprint_symbol_no_offset(): "sym [object]".
 * They return the length written. Not for handlers (they take locks and
 * may allocate).
 */
#define KSYM_SYMBOL_LEN 512
UKPROBES_API unsigned long kallsyms_lookup_name(const char *name);
UKPROBES_API int kallsyms_on_each_symbol(int (*fn)(void *data, const char *name,
						   unsigned long addr),
					 void *data);
UKPROBES_API int sprint_symbol(char *buffer, unsigned long address);
UKPROBES_API int sprint_symbol_no_offset(char *buffer, unsigned long address);

/*
 * Per object, as the kernel's module_kallsyms_on_each_symbol(): the walk
 * of kallsyms_on_each_symbol() over the objects modname names (as the
 * "object:" part of symbol_name does); NULL: every object. -EINVAL
 * without fn, -EBUSY from a handler.
 */
UKPROBES_API int module_kallsyms_on_each_symbol(const char *modname,
						int (*fn)(void *data, const char *name,
							  unsigned long addr),
						void *data);

/*
 * A symbol with what a tool needs beside its name and address: its size,
 * its kind and the loaded object it is in (the kernel's struct module
 * for "module"). The caller of a look-up sets size to
 * sizeof(struct ksym_info) (doc/abi.md: a later version may add fields
 * after these) and gives a buffer that name, modname and modpath are
 * copied into; a walk's callback gets one of the library's, valid during
 * the call.
 */
#define KSYM_FUNC   0x1  /* a sized function: its start follows the calling convention */
#define KSYM_IFUNC  0x2  /* an IFUNC (STT_GNU_IFUNC) */
#define KSYM_GLOBAL 0x4  /* bound GLOBAL, WEAK or UNIQUE */
#define KSYM_DEBUG  0x8  /* named only by the object's debug file or MiniDebugInfo */
#define KSYM_MAIN   0x10 /* in the program itself (the kernel's vmlinux) */
#define KSYM_DATA   0x20 /* a variable (OBJECT, or NOTYPE outside code): symsize
			  * is its st_size, 0 when the file gives none */
struct ksym_info {
	size_t size;             /* sizeof(struct ksym_info), set by the caller */
	const char *name;        /* "" when no symbol holds the address */
	unsigned long addr;      /* the symbol's start; by name, an IFUNC's
				  * implementation that the process uses */
	unsigned long symsize;
	unsigned int flags;      /* KSYM_* */
	const char *modname;     /* the object's file name ("libc.so.6") */
	const char *modpath;     /* its path (the program's: its real path) */
	unsigned long modbase;   /* its load bias: address = ELF address + modbase */
};
/*
 * module_kallsyms_on_each_symbol_info(): the walk of
 * module_kallsyms_on_each_symbol(), with each symbol's ksym_info; an
 * IFUNC (KSYM_IFUNC) comes as its symbol table has it, at its resolver:
 * kallsyms_lookup_ifunc(sym->addr, sym->name, &impl) gives the
 * implementation the process uses (0, -ENOENT, -EINVAL, -EBUSY); each
 * object's data symbols (KSYM_DATA) follow its functions.
 * kallsyms_lookup_info(): the function that holds addr, else the sized
 * data symbol that does: 0; -ENOENT when none does, with the object
 * filled in (modpath NULL outside every object).
 * kallsyms_lookup_name_info(): the function named as for
 * kallsyms_lookup_name(), else the data symbol of that name (found the
 * same way: globals first, in load order): 0 or -ENOENT. The other
 * look-ups and walks give functions only. find_module_info(): the first
 * loaded object modname names (the kernel's find_module()): 0 or
 * -ENOENT, name "". The look-ups return -EINVAL for a bad size or
 * argument, -ERANGE when the names do not fit in buf (PATH_MAX plus
 * KSYM_NAME_LEN always do), -EBUSY from a handler. Not for handlers.
 */
#define KSYM_NAME_LEN 512
UKPROBES_API int module_kallsyms_on_each_symbol_info(const char *modname,
						     int (*fn)(void *data,
							       const struct ksym_info *sym),
						     void *data);
UKPROBES_API int kallsyms_lookup_ifunc(unsigned long resolver, const char *name,
					unsigned long *impl);
UKPROBES_API int kallsyms_lookup_info(unsigned long addr, struct ksym_info *info, char *buf,
				      size_t len);
UKPROBES_API int kallsyms_lookup_name_info(const char *name, struct ksym_info *info, char *buf,
					   size_t len);
UKPROBES_API int find_module_info(const char *modname, struct ksym_info *info, char *buf,
				  size_t len);

/*
 * Object files that are not loaded (yet), read from the file as the
 * kernel reads a module's symbols from its file before it runs it: a
 * library the program will dlopen() later, whose probes a tool checks
 * before the program gets there. modfile is a path (with a '/'), or a
 * file name looked for as dlopen() from the program would look for it
 * (LD_LIBRARY_PATH, the program's RUNPATH or RPATH, the loader's system
 * directories), then next to the loaded objects and in the system's
 * library directories. The file is read whether it is loaded or not.
 * find_module_file(): the real path of that file, into buf: 0, -ENOENT
 * when there is none, -ERANGE when it does not fit (PATH_MAX does).
 * module_file_kallsyms_on_each_symbol_info(): the walk of
 * module_kallsyms_on_each_symbol_info() over the file's symbols: the
 * same symbols with the same flags (its .symtab, else its .dynsym and
 * its debug file's or MiniDebugInfo's, KSYM_DEBUG; its variables,
 * KSYM_DATA, after its functions), at their ELF addresses (modbase 0,
 * modpath the real path); an IFUNC at its resolver (no code of the file
 * runs: kallsyms_lookup_ifunc() wants it loaded).
 * module_file_kallsyms_lookup_name_info(): the function of the file
 * that name names ("foo" also finds "foo@@VERS", the default version
 * first), globals before locals, its own table before its debug file;
 * else the variable of that name: 0 or -ENOENT. An IFUNC (KSYM_IFUNC)
 * gives its resolver's address.
 * module_file_on_each_text(): fn(data, addr, size) for each executable
 * PT_LOAD segment of the file, at its ELF address: where code of the
 * file will be (an address in one is code once the object is loaded at
 * addr + its load bias); a non-zero return stops the walk and is
 * returned.
 * The three return -ENOENT when modfile names no file, -ENOEXEC when it
 * is not an ELF object of this machine's class, -EINVAL for a bad
 * argument, -EBUSY from a handler; a walk's callback gets data valid
 * during the call and must not call the look-ups. Ordinary context
 * only: not for handlers (they take locks, allocate and may call
 * dlopen() and dlclose()).
 */
UKPROBES_API int find_module_file(const char *modname, char *buf, size_t len);
UKPROBES_API int module_file_kallsyms_on_each_symbol_info(const char *modfile,
							  int (*fn)(void *data,
								    const struct ksym_info *sym),
							  void *data);
UKPROBES_API int module_file_kallsyms_lookup_name_info(const char *modfile, const char *name,
						       struct ksym_info *info, char *buf,
						       size_t len);
UKPROBES_API int module_file_on_each_text(const char *modfile,
					  int (*fn)(void *data, unsigned long addr,
						    unsigned long size),
					  void *data);
/*
 * SDT probes (USDT): the static probe points of <sys/sdt.h> (SystemTap's
 * and DTrace's markers: DTRACE_PROBE, STAP_PROBE), which an object
 * describes in its .note.stapsdt notes. Each is a nop in the code with
 * a provider, a name, argument specs ("-4@%eax 8@-16(%rbp)") and maybe
 * a semaphore: an unsigned short the program reads to see whether
 * anyone traces the probe (PROVIDER_NAME_ENABLED()).
 *
 * An SDT probe is a kprobe on the note's address: symbol_name
 * "OBJ:%PROVIDER:NAME" (or "%PROVIDER:NAME": the first loaded object
 * that has it), offset 0, or addr = usdt_find()'s addr. The address
 * needs no function symbol around it (the code is decoded from the
 * start of the function the object's unwind tables say holds it). While
 * a probe is registered at a note's address, however it was named, the
 * note's semaphore counts it (the kernel's ref_ctr_offset for uprobes):
 * raised at registration, lowered at unregistration (not when the
 * object is gone); several probes on one semaphore count each. A
 * semaphore in a page the program cannot write (RELRO, read-only data)
 * is written through /proc/self/mem, as the kernel does. After fork()
 * the child has the parent's probes and semaphores.
 *
 * struct usdt_arg: one argument as the note's spec gives it. kind:
 * USDT_ARG_REG, the value is register reg (a word index of struct
 * pt_regs); USDT_ARG_MEM, it is in memory at register reg + off;
 * USDT_ARG_CONST, it is off; USDT_ARG_ADDR, it is in memory at addr (a
 * symbol's address, "sym(%rip)"; absolute for a loaded object, the
 * file's for a file); USDT_ARG_INDEX, it is in memory at register reg
 * (none when reg is USDT_ARG_NOREG) + register index * scale + addr +
 * off (x86-64's "DISP(%B,%I,S)", "SYM+DISP(,%I,S)": addr a symbol's
 * address as for USDT_ARG_ADDR, else 0); 0, a form the library does not
 * decode (a segment: "%fs:tv@tpoff", a thread-local variable; a symbol
 * the object does not name; AArch64's ":lo12:" of a label). size: its
 * bytes (1, 2, 4, 8), is_signed: "-N@". text: the spec, in the probe's
 * args string (not NUL-terminated: textlen bytes).
 *
 * struct usdt_probe: one note. addr, semaphore: absolute in a loaded
 * object (0: no semaphore); ELF addresses in a file. The caller of
 * usdt_find() sets size to sizeof(struct usdt_probe) and gives buf for
 * the strings (-ERANGE when they do not fit; PATH_MAX + 1024 does); a
 * walk's callback gets the library's, valid during the call.
 *
 * usdt_find(): the probe "OBJ:%PROVIDER:NAME" or "%PROVIDER:NAME" of
 * the loaded objects: 0, -ENOENT. usdt_on_each_probe(): fn for every
 * note of the objects modname names (NULL: every loaded object, in load
 * order); a non-zero return stops the walk and is returned.
 * module_file_usdt_on_each_probe(): the same for a file, loaded or not
 * (modfile as for module_file_kallsyms_on_each_symbol_info(); -ENOENT,
 * -ENOEXEC). All return -EINVAL for a bad argument, -EBUSY from a
 * handler; not for handlers.
 */
#define USDT_ARG_MAX   12
#define USDT_ARG_REG   1
#define USDT_ARG_MEM   2
#define USDT_ARG_CONST 3
#define USDT_ARG_ADDR  4
#define USDT_ARG_INDEX 5
#define USDT_ARG_NOREG (~0u)
struct usdt_arg {
	int kind;
	int size;
	bool is_signed;
	unsigned char index;     /* USDT_ARG_INDEX: the index register's word */
	unsigned char scale;     /* USDT_ARG_INDEX: 1, 2, 4 or 8; 0 otherwise */
	unsigned int reg;
	long off;
	unsigned long addr;
	const char *text;
	size_t textlen;
};
struct usdt_probe {
	size_t size;             /* sizeof(struct usdt_probe), set by the caller */
	const char *provider;
	const char *name;
	const char *args;        /* the note's argument specs, "" for none */
	unsigned long addr;
	unsigned long semaphore;
	int nargs;               /* at most USDT_ARG_MAX */
	struct usdt_arg arg[USDT_ARG_MAX];
	const char *modname;     /* the object's file name */
	const char *modpath;     /* its path */
	unsigned long modbase;   /* its load bias (0 for a file) */
};
UKPROBES_API int usdt_find(const char *name, struct usdt_probe *probe, char *buf, size_t len);
UKPROBES_API int usdt_on_each_probe(const char *modname,
				    int (*fn)(void *data, const struct usdt_probe *probe),
				    void *data);
UKPROBES_API int module_file_usdt_on_each_probe(const char *modfile,
						int (*fn)(void *data,
							  const struct usdt_probe *probe),
						void *data);

/*
 * The user stack of a hit (the kernel's stacktrace API): fill store with
 * at most size return addresses, the first the frame's own address,
 * after skipping skipnr of them; returns how many were stored. Frames
 * are unwound with the objects' .eh_frame call frame information, and
 * with the frame pointer chain where an address has none; a corrupt
 * stack ends the walk, never the program. For handlers (async-signal-
 * safe, allocation-free, vector-free); objects the library has not seen
 * since they were loaded (its next registration or look-up sees them)
 * end the walk.
 *
 * stack_trace_save_regs(): from instruction_pointer(regs), an address
 * inside a function (a pre- or post-handler's registers).
 * stack_trace_save_regs_from(): from ip with regs' stack and frame
 * pointers, where from says what ip is: STACK_TRACE_ENTRY a function's
 * first instruction (nothing pushed yet: a function without call frame
 * information still gives its caller), STACK_TRACE_RET a return address
 * with the caller's registers after the return (a kretprobe handler's).
 */
enum stack_trace_from {
	STACK_TRACE_INSIDE,
	STACK_TRACE_ENTRY,
	STACK_TRACE_RET,
};
UKPROBES_API unsigned int stack_trace_save_regs(struct pt_regs *regs, unsigned long *store,
						unsigned int size, unsigned int skipnr);
UKPROBES_API unsigned int stack_trace_save_regs_from(const struct pt_regs *regs, unsigned long ip,
						     enum stack_trace_from from,
						     unsigned long *store, unsigned int size,
						     unsigned int skipnr);

/*
 * A thread of the tool's own, as the kernel's kthreads are (the program's
 * signal handlers never run on it): pthread_create() with every signal
 * blocked from its first instruction but the library's (SIGTRAP,
 * SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGRTMAX), so that it takes
 * breakpoints in the code it calls and answers the library's thread
 * scans. What the library's own threads are started with. 0 or an errno
 * value (pthread_create's). Not for handlers (UKPROBES_0.6).
 */
UKPROBES_API int ukprobes_kthread_create(pthread_t *thread, const pthread_attr_t *attr,
					 void *(*fn)(void *), void *arg);

/*
 * A thread of the tool's own that borrows nothing of the program's (the
 * kernel's kthread_run()): the raw clone() on a mapping of the library's
 * (a guard page, an 8 MiB stack whose pages are taken as used, a zeroed
 * control block of its own at its thread pointer), with the signal mask
 * of ukprobes_kthread_create(). Nothing of the program's runs to start or
 * end it (pthread_create() gives the new thread's TLS from the program's
 * allocator), and nothing of it is left once it has ended and been
 * joined; a UKPROBES_KTHREAD_DETACHED one unmaps its mapping itself as it
 * exits. The C library's per-thread state (errno, its static TLS) is the
 * thread's own, zeroed at the start; its thread id is the real one (the C
 * library's mutexes work). fn may make system calls through the C
 * library and use its string functions and mutexes; it must not
 * allocate with the program's allocator (a per-thread cache would never
 * be given back) nor use the TLS of a dynamically loaded library.
 * Where the C library's thread descriptor cannot be learned (not glibc
 * nor musl), this is ukprobes_kthread_create()'s pthread. name: the
 * thread's comm (15 bytes), or NULL. 0 or an errno value (UKPROBES_0.6).
 */
struct ukprobes_kthread {
	void *priv[4];
};
#define UKPROBES_KTHREAD_DETACHED 1u
UKPROBES_API int ukprobes_kthread_run(struct ukprobes_kthread *t, void *(*fn)(void *), void *arg,
				      const char *name, unsigned int flags);
/* Wait for a joinable thread's end (its mapping is unmapped): fn's value. */
UKPROBES_API void *ukprobes_kthread_join(struct ukprobes_kthread *t);
/* The thread's id (gettid() in it; 0 when it is a pthread). */
UKPROBES_API int ukprobes_kthread_tid(const struct ukprobes_kthread *t);

/*
 * Exec notifiers (the kernel's notifier chains: register_*_notifier with
 * a caller-owned struct notifier_block). Every exec of the program that
 * goes through the library's exec family (execve, execv, execvp,
 * execvpe, fexecve, execl, execlp, execle) calls each registered
 * notifier_call, highest priority first (equal: the first registered
 * first), with:
 *   EXEC_NOTIFY_BEFORE  data is a struct exec_notify_env: the exec's
 *                       environment, which the notifier may replace
 *                       (with env_out, room for env_max pointers, or a
 *                       block of its own);
 *   EXEC_NOTIFY_FAILED  the exec returned (failed); data is NULL.
 * The return value is not used (NOTIFY_DONE). A notifier may run in a
 * vfork() child sharing the parent's memory: it must not allocate.
 * register_exec_notifier: 0, or -EINVAL (NULL, or no notifier_call);
 * registering a block twice is -EEXIST. unregister_exec_notifier: 0 or
 * -ENOENT; not while an exec of the program may be under way. Not for
 * handlers (UKPROBES_0.6).
 */
struct notifier_block {
	int (*notifier_call)(struct notifier_block *nb, unsigned long action, void *data);
	struct notifier_block *next;   /* the library's */
	int priority;
};
#define NOTIFY_DONE 0x0000
#define NOTIFY_OK   0x0001
#define EXEC_NOTIFY_BEFORE 1
#define EXEC_NOTIFY_FAILED 2
struct exec_notify_env {
	char *const *envp;
	char **env_out;
	size_t env_max;
};
UKPROBES_API int register_exec_notifier(struct notifier_block *nb);
UKPROBES_API int unregister_exec_notifier(struct notifier_block *nb);

/* Disarm (false) or re-arm (true) every probe; per-probe DISABLED flags
 * are kept. Returns 0 or the last arming error. */
UKPROBES_API int kprobes_set_enabled(bool enable);
UKPROBES_API bool kprobes_enabled(void);

/*
 * Jump optimization (kprobes.rst, "How Does Jump Optimization Work?" and
 * Appendix B, debug.kprobes-optimization). A probe with no post_handler
 * whose first instructions may be replaced by a jump is optimized by an
 * optimizer thread a few milliseconds after registration ([OPTIMIZED] in
 * the list): a hit then costs no signal. Its pre_handler's change of
 * regs->ip is ignored (as the kernel's "NOTE for geeks" says). The
 * environment variable UKPROBES_OPTIMIZATION=0 at start-up turns the knob
 * off. Turning it off unoptimizes every probe before returning; turning
 * it on queues them again. Returns 0 or -errno.
 */
UKPROBES_API int kprobes_set_optimization(bool on);
UKPROBES_API bool kprobes_optimization(void);
/* Wait until the optimizer has handled every queued probe (tests, tools). */
UKPROBES_API int ukprobes_wait_optimizer(void);
/*
 * Leave the process as the library found it (a tool that injected the
 * library detaches): with no probe registered, the optimizer thread ends,
 * the program's signal actions go back to the kernel, and the library's
 * descriptor on /proc/self/mem is closed. Code a thread
 * may still run (the return trampoline, slots, detours) stays mapped.
 * The next registration starts the library again. 0, or -EBUSY while a
 * probe is registered or from a handler, or when a thread kept a
 * SIGTRAP of a removed breakpoint (or a request of the library's)
 * pending for seconds: the library's signal actions then stay (under
 * the program's default ones the signal would end the process).
 */
UKPROBES_API int ukprobes_shutdown(void);

#define UKPROBES_OPT_NONE   0  /* a breakpoint probe */
#define UKPROBES_OPT_JUMP   1  /* jump-optimized ([OPTIMIZED]) */
#define UKPROBES_OPT_FTRACE 2  /* uses a patchable NOP entry ([FTRACE]) */
/*
 * What register_kprobe() would make of a probe at addr with no
 * post_handler (an address at a function's endbr64 moves past it, as on
 * registration): UKPROBES_OPT_JUMP, UKPROBES_OPT_FTRACE, or
 * UKPROBES_OPT_NONE with *why (if why is not NULL) pointing to static
 * text that says why not; -errno if no probe can go there at all.
 * Nothing is registered or written.
 */
UKPROBES_API int ukprobes_optimizable(void *addr, const char **why);
/*
 * Where register_kprobe(p) would put its probe, without registering it:
 * *addr is p's symbol_name (or addr) + offset, moved past an endbr64 at a
 * function's entry as on registration, and *on_entry (if not NULL) says
 * whether that is a function's entry (KPROBE_FLAG_ON_FUNC_ENTRY). 0, or
 * -errno as register_kprobe returns it for a point it cannot resolve
 * (-ENOENT: no such symbol, or no known function there; -EINVAL: not code,
 * or both or neither of symbol_name and addr). Nothing else is checked.
 */
UKPROBES_API int ukprobes_probe_addr(const struct kprobe *p, void **addr, bool *on_entry);
/*
 * Would register_kretprobe() take a return probe at p's point (p: the
 * kretprobe's kp, with symbol_name or addr, and offset)? It must be a
 * function's entry (the kernel's kprobe_on_func_entry) that calls reach
 * with the return address on top of the stack: not the ELF entry point,
 * a .cold part, or code the unwind tables say is entered by a jump. 0, or
 * -errno as register_kretprobe returns it (-EINVAL with *why, if why is
 * not NULL, pointing to static text that says why when it can). Whether
 * the instruction there can be probed is ukprobes_optimizable's to say.
 * Nothing is registered.
 */
UKPROBES_API int ukprobes_kretprobe_check(const struct kprobe *p, const char **why);
/*
 * The return instructions of the function that starts at func (a
 * function symbol's address; its end from the symbol's size), for
 * probing each of them where a return probe cannot swap the return
 * address (a Go goroutine's stack, which its runtime walks and copies):
 * their addresses, in address order, in rets[0..max). Returns their
 * number; -ENOENT (no function starts there, or it never returns),
 * -ENOTSUP (it leaves by a direct jump out of it, a tail call: its callee
 * returns for it), -EINVAL (a bad argument, code that does not decode),
 * -E2BIG (more than max), with *why (if why is not NULL) pointing to
 * static text that says why. Indirect jumps are taken to stay in the
 * function (jump tables). Nothing is registered.
 */
UKPROBES_API int ukprobes_func_returns(void *func, unsigned long *rets, size_t max,
				       const char **why);
/*
 * A function's exits: for each return instruction ukprobes_func_returns
 * lists (same order, same errors), the earliest place from which the
 * code runs straight into it and leaves every register the return
 * leaves as it is, but the stack and frame pointers (and the flags):
 * the first instruction of an epilogue that frees the function's frame
 * (x86-64, Go's compiler's: `mov d(%rsp),%rbp; add $N,%rsp; ret`,
 * `add $N,%rsp; pop %rbp; ret`, `pop %rbp; ret`), when no jump lands
 * past that instruction inside it; else the return instruction. A probe
 * at addr sees every return through ret, with the results in their
 * registers; the stack pointer there is sp_adj bytes below the return's
 * (where the return address is on top), and the frame pointer the
 * return leaves is the word at sp + fp_at (fp_at < 0: the register has
 * it). In Go code past a stack check, a probe at an epilogue can be
 * jump-optimized where one on the return instruction cannot
 * (ukprobes_optimizable).
 */
struct ukprobes_func_exit {
	unsigned long addr;     /* where the return is seen */
	unsigned long ret;      /* the return instruction */
	unsigned long sp_adj;   /* sp at addr = sp at ret - sp_adj */
	long fp_at;             /* fp at ret = *(sp at addr + fp_at); < 0: fp itself */
};
UKPROBES_API int ukprobes_func_exits(void *func, struct ukprobes_func_exit *exits, size_t max,
				     const char **why);

/* Faults raised inside probe handlers since start-up (each one abandoned
 * the handler and was counted in that probe's nmissed too). */
UKPROBES_API unsigned long kprobes_handler_faults(void);

/*
 * Library diagnostics (the kernel's pr_err/pr_warn/pr_info). The library
 * never prints on its own: messages go to the callback set here, or are
 * dropped when it is NULL (the default). Returns the previous callback.
 */
enum ukprobes_print_level {
	UKPROBES_WARN,
	UKPROBES_INFO,
	UKPROBES_DEBUG,
};
typedef int (*ukprobes_print_fn_t)(enum ukprobes_print_level level,
				   const char *fmt, va_list ap);
UKPROBES_API ukprobes_print_fn_t ukprobes_set_print(ukprobes_print_fn_t fn);

/*
 * NOKPROBE_SYMBOL(fn): refuse probes anywhere in fn (register_kprobe
 * returns -EINVAL). Use it at file scope in the object that defines fn.
 * The library finds these entries in every loaded object's
 * "ukprobes_blacklist" section.
 */
#define __UKP_CONCAT2(a, b) a##b
#define __UKP_CONCAT(a, b) __UKP_CONCAT2(a, b)
#define NOKPROBE_SYMBOL(fname)                                              \
	static const void *const __UKP_CONCAT(__ukp_blacklist_, fname)          \
	__attribute__((used, section("ukprobes_blacklist"), aligned(8))) =       \
		(const void *)&fname

/* ------------------------------------------------------------------ */
/*
 * Return probes (kprobes.rst, "Return Probes").
 *
 * A kretprobe puts an entry probe (rp->kp) on the first instruction of a
 * function (after an endbr64). When it fires, the return address on the
 * stack is swapped for a trampoline; when the function returns, the
 * trampoline calls rp->handler with regs_return_value(regs) the return
 * value, regs->ip the real return address and regs->sp the stack pointer
 * after the return, then resumes at the real return address. The return
 * values in rax, rdx, xmm0, xmm1 and the x87 stack survive the handler;
 * a change the handler makes to regs->ax (or another general register)
 * takes effect, a change to ip or sp does not.
 *
 * entry_handler runs on the breakpoint path (signal context, same rules
 * as a pre_handler); handler runs on the thread, at the return, in
 * whatever context the function returned in (also async-signal-safe
 * only: the function may return inside a signal handler of the program),
 * with the asynchronous signals blocked. While either runs,
 * kprobe_running() is &rp->kp and probe hits on the same thread are
 * missed (counted in the hit probe's nmissed). A fault in either is
 * handled as in a pre_handler; a faulting entry_handler cancels the
 * return probe of that call.
 *
 * Instances: rp->maxactive of them are allocated at registration (default
 * max(10, 2 * online CPUs), written back to maxactive). A call that finds
 * none free, or that is more than 64 probed returns deep on its thread,
 * is counted in rp->nmissed and gets neither entry_handler nor handler.
 * An entry_handler that returns non-zero cancels the return probe for
 * that call. Each instance has rp->data_size bytes (<= 4096) of private
 * data at ri->data, shared by entry_handler and handler of one call (not
 * zeroed between uses).
 *
 * Several kretprobes on one function all fire: entry handlers newest
 * first, return handlers oldest registered first (as the kernel).
 *
 * Non-local exits: frames left by longjmp, siglongjmp, a C++ exception,
 * pthread_exit() or thread cancellation never see their return handler;
 * their instances are reclaimed (when the thread next enters a probed
 * function or returns through the trampoline at a shallower stack
 * position, or once the thread is found dead). Frames that are not left
 * keep their return probe. Limitations: the frames of one thread must
 * live on one stack (a probed function that runs on a sigaltstack above
 * the thread's stack, or in a makecontext() coroutine, is not
 * supported), and a probed function must return with a plain ret.
 *
 * Unwinding: backtrace() and _Unwind_Backtrace() report the real return
 * addresses and leave the probes armed; C++ exceptions, pthread_exit()
 * and cancellation unwind through pending return probes as if there were
 * none (libgcc's frame lookup, _Unwind_Find_FDE, is interposed for that;
 * a program linked with -static-libgcc does not get this). Frame-pointer
 * walkers and __builtin_return_address() see the trampoline: map it back
 * with kretprobe_find_ret_addr().
 *
 * A thread running with a CET shadow stack cannot have its return
 * addresses rewritten: register_kretprobe() fails with -EOPNOTSUPP in
 * such a process, and such threads' calls are counted as missed.
 */
#define KRETPROBE_MAX_DATA_SIZE 4096

struct kretprobe;
struct kretprobe_holder; /* private: instances and their pool */

struct kretprobe_instance {
	kprobe_opcode_t *ret_addr; /* the real return address */
	struct kretprobe *rp;      /* prefer get_kretprobe(): NULL once unregistered */
	unsigned long task;        /* the thread: pthread_self() of the call */
	char data[] __attribute__((aligned(16)));
};

typedef int (*kretprobe_handler_t)(struct kretprobe_instance *, struct pt_regs *);

struct kretprobe {
	struct kprobe kp;          /* set symbol_name or addr; pre/post handlers are ours */
	kretprobe_handler_t handler;
	kretprobe_handler_t entry_handler;
	int maxactive;
	int nmissed;
	size_t data_size;
	struct kretprobe_holder *rph; /* private */
};

/*
 * Returns 0 or a negative errno: those of register_kprobe(), and
 *  -EINVAL      not at a function entry (offset 0, or 4 after endbr64);
 *               rp already registered
 *  -E2BIG       data_size > KRETPROBE_MAX_DATA_SIZE
 *  -EOPNOTSUPP  the calling thread runs with a CET shadow stack
 *  -ENOMEM      no memory for the instances
 */
UKPROBES_API int register_kretprobe(struct kretprobe *rp);
/* Pending returns still go to the right place; their handlers are
 * skipped. Memory is freed once no thread can use it any more. */
UKPROBES_API void unregister_kretprobe(struct kretprobe *rp);
UKPROBES_API int register_kretprobes(struct kretprobe **rps, int num);
UKPROBES_API void unregister_kretprobes(struct kretprobe **rps, int num);
/* Stop or restart new instances; pending returns still run the handler. */
UKPROBES_API int disable_kretprobe(struct kretprobe *rp);
UKPROBES_API int enable_kretprobe(struct kretprobe *rp);

/* The kretprobe of an instance, or NULL once it has been unregistered. */
UKPROBES_API struct kretprobe *get_kretprobe(struct kretprobe_instance *ri);

static inline unsigned long get_kretprobe_retaddr(struct kretprobe_instance *ri)
{
	return (unsigned long)ri->ret_addr;
}

/* True if addr is the return trampoline (what a hijacked return address
 * on the stack holds). */
UKPROBES_API bool is_kretprobe_trampoline(unsigned long addr);

/*
 * For unwinders (the kernel's kretprobe_find_ret_addr): the real return
 * address of the pending return probe whose return address lives at the
 * stack address fp (the slot that holds the trampoline address), on the
 * thread task (a pthread_t; 0 for the calling thread), or 0 if there is
 * none. *cur (initially NULL) is a cursor: pass it back unchanged to walk
 * outwards from the previous answer. Another thread's answer is only
 * reliable while that thread is stopped.
 */
UKPROBES_API unsigned long kretprobe_find_ret_addr(unsigned long task, void *fp, void **cur);

/* ------------------------------------------------------------------ */
/*
 * Jprobes (kprobes-2.6 "How Does a Jprobe Work?"; deprecated: the kernel
 * disabled them in 4.15 and removed them in 4.18; see doc/jprobes.md for
 * what to use instead). Kept here as a compatibility layer.
 *
 * A jprobe sits on a function's entry (after an endbr64). Its handler,
 * jp->entry, has the probed function's prototype: when the function is
 * called, the handler runs first, on the same thread and stack, with the
 * same registers, so it sees the function's arguments (integer, pointer,
 * floating-point and vector arguments in registers, and those passed on
 * the stack: the seventh integer argument on, structs passed by value).
 * It runs on a copy of the stack top (the return address and up to 504
 * bytes of stack arguments) placed right below the function's stack
 * pointer: it may write over its arguments, the function's own stack is
 * never written. It must end by calling jprobe_return(), which does not
 * return: the registers (general, xmm0-7 and the upper halves of
 * ymm0-7) and the signal mask the handler found are put back, and the
 * probed function runs as if nothing happened.
 *
 * A handler that returns instead of calling jprobe_return() is caught
 * (its return address is a stub of the library, not the caller: what
 * __builtin_return_address(0) and backtrace() see in a handler): its
 * return value is dropped, the probed function runs as after
 * jprobe_return(), and jprobes_missing_returns() counts it.
 *
 * The handler runs outside the library's signal handler, but under the
 * same rules as any handler: async-signal-safe code only (the probed
 * function may be called anywhere), the program's signal handlers are
 * held back until it ends, a probe hit inside it is missed (nmissed),
 * kprobe_running() is &jp->kp, registration functions return -EBUSY, and
 * a fault in it calls jp->kp.fault_handler, is counted in nmissed and in
 * kprobes_handler_faults(), abandons the handler and runs the probed
 * function. It must not leave by longjmp(), an exception or
 * pthread_exit(); unregistering waits for running handlers.
 *
 * With other probes on the same function: the other pre_handlers
 * (newest first) and a kretprobe's entry run before the jprobe handler,
 * post_handlers after it (when the probed instruction has run), the
 * kretprobe's handler at the return. One jprobe per function. The
 * probe is never jump-optimized (each hit costs two or three traps).
 */
struct jprobe {
	struct kprobe kp;   /* set symbol_name or addr; pre_handler is ours */
	void *entry;        /* the handler: the probed function's prototype */
};

/* The kernel's old helper to turn a function into a jprobe entry. */
#define JPROBE_ENTRY(pentry) ((void *)(pentry))

/*
 * Returns 0 or a negative errno: those of register_kprobe(), and
 *  -EINVAL  entry is not the start of a function (a symbol); not at a
 *           function's entry (offset 0, or 4 after endbr64)
 *  -EEXIST  another jprobe is registered on that function
 */
UKPROBES_API int register_jprobe(struct jprobe *jp);
/* Waits for handlers of jp that are running on other threads. */
UKPROBES_API void unregister_jprobe(struct jprobe *jp);
/* All or nothing: on failure, those already registered are unregistered. */
UKPROBES_API int register_jprobes(struct jprobe **jps, int num);
UKPROBES_API void unregister_jprobes(struct jprobe **jps, int num);
/* The end of every jprobe handler. Called while no jprobe handler runs
 * on the thread, it just returns. */
UKPROBES_API void jprobe_return(void);
/* Handlers that returned without calling jprobe_return() since start-up. */
UKPROBES_API unsigned long jprobes_missing_returns(void);

static inline int disable_jprobe(struct jprobe *jp)
{
	return disable_kprobe(&jp->kp);
}

static inline int enable_jprobe(struct jprobe *jp)
{
	return enable_kprobe(&jp->kp);
}

/* ------------------------------------------------------------------ */
/*
 * Data watchpoints (the kernel's hw_breakpoint API, kprobes.rst TODO e:
 * "probes which fire on data references"), for this process. "CPU"
 * means "thread": a wide breakpoint watches every thread, present and
 * future; a user breakpoint watches one thread.
 *
 * struct perf_event_attr and the HW_BREAKPOINT_* constants are the
 * kernel's (<linux/perf_event.h>, <linux/hw_breakpoint.h>). Fill the
 * attr with hw_breakpoint_init(), then set bp_addr, bp_len (any length
 * from 1 byte) and bp_type (HW_BREAKPOINT_R, HW_BREAKPOINT_W or
 * HW_BREAKPOINT_RW); attr.disabled registers it disabled.
 *
 * The handler runs after the access, in the thread that made it, with
 * regs->ip at the next instruction and the new value in memory: inside
 * the library's SIGSEGV handler (page protection) or SIGTRAP handler
 * (debug registers), under the same rules as a kprobe pre_handler
 * (async-signal-safe only). An access while this thread runs a probe
 * handler of any kind is not reported: it is counted in bp->nmissed.
 * See doc/watchpoints.md for the mechanisms and their limits.
 */
#include <linux/perf_event.h>
#include <linux/hw_breakpoint.h>

#ifndef MAX_ERRNO
#define MAX_ERRNO 4095
#endif
#ifndef IS_ERR_VALUE
#define IS_ERR_VALUE(x) ((unsigned long)(void *)(x) >= (unsigned long)-MAX_ERRNO)
static inline void *ERR_PTR(long error) { return (void *)error; }
static inline long PTR_ERR(const void *ptr) { return (long)ptr; }
static inline bool IS_ERR(const void *ptr) { return IS_ERR_VALUE((unsigned long)ptr); }
static inline bool IS_ERR_OR_NULL(const void *ptr)
{
	return !ptr || IS_ERR_VALUE((unsigned long)ptr);
}
#endif

/* What one access that fired a breakpoint was. */
struct perf_sample_data {
	unsigned long addr; /* first byte of the access (the kernel gives bp_addr) */
	unsigned long len;  /* its length in bytes */
	unsigned int type;  /* HW_BREAKPOINT_R and/or HW_BREAKPOINT_W */
	unsigned long ip;   /* the accessing instruction (regs->ip is the next one) */
};

struct perf_event;
typedef void (*perf_overflow_handler_t)(struct perf_event *bp, struct perf_sample_data *data,
					struct pt_regs *regs);

/* A registered breakpoint. Read-only for users, except through
 * modify_user_hw_breakpoint(). */
struct perf_event {
	struct perf_event_attr attr;
	perf_overflow_handler_t overflow_handler;
	void *overflow_handler_context;
	unsigned long nmissed;   /* accesses while a handler of this thread ran */
	int tid;                 /* the watched thread, 0: every thread (wide) */
	int mechanism;           /* UKP_HW_BREAKPOINT_DEBUGREG or _PAGE */
	void *priv;              /* private */
};
#define UKP_HW_BREAKPOINT_DEBUGREG 1 /* a debug register (perf_event_open) */
#define UKP_HW_BREAKPOINT_PAGE     2 /* page protection */

static inline void hw_breakpoint_init(struct perf_event_attr *attr)
{
	memset(attr, 0, sizeof(*attr));
	attr->type = PERF_TYPE_BREAKPOINT;
	attr->size = sizeof(*attr);
	attr->pinned = 1;
	attr->sample_period = 1;
}

static inline struct perf_event_attr *counter_arch_bp(struct perf_event *bp)
{
	return &bp->attr;
}

/*
 * One thread's breakpoint: tid from gettid(), 0 for the calling thread.
 * Returns the breakpoint or an error pointer (IS_ERR, PTR_ERR):
 *  -EINVAL     not a breakpoint attr, bp_type not R, W or RW, bp_len 0,
 *              an address range that wraps, memory that is executable
 *  -EFAULT     the range is not (entirely) mapped
 *  -EOPNOTSUPP shared memory (MAP_SHARED), or no mechanism works
 *  -ESRCH      no such thread in this process
 *  -ENOSPC     too many watched pages or breakpoints
 *  -ENOMEM     no memory
 *  -EBUSY      called from inside a probe handler
 */
UKPROBES_API struct perf_event *register_user_hw_breakpoint(struct perf_event_attr *attr,
		perf_overflow_handler_t triggered, void *context, int tid);
/*
 * Every thread's breakpoint. The kernel returns a per-CPU array of
 * events; here one event watches every thread, and the array has that
 * one element: (*ret)[0] (ret[0]) is the event. Errors as above.
 */
UKPROBES_API struct perf_event **register_wide_hw_breakpoint(struct perf_event_attr *attr,
		perf_overflow_handler_t triggered, void *context);
/* New address, length, type or disabled flag; 0 or -errno (as above).
 * On error the breakpoint keeps its old settings. */
UKPROBES_API int modify_user_hw_breakpoint(struct perf_event *bp, struct perf_event_attr *attr);
/* Handlers running on other threads finish first; the memory is then
 * unprotected as the program had it. */
UKPROBES_API void unregister_hw_breakpoint(struct perf_event *bp);
UKPROBES_API void unregister_wide_hw_breakpoint(struct perf_event **cpu_events);
/* Which mechanism new breakpoints get: UKP_HW_BREAKPOINT_DEBUGREG when
 * the machine's debug registers were seen to fire (checked once, by
 * arming one on a variable and touching it), else
 * UKP_HW_BREAKPOINT_PAGE. UKPROBES_WATCH=page or =debugreg in the
 * environment forces one. */
UKPROBES_API int ukprobes_watch_mechanism(void);

#ifdef __cplusplus
}
#endif

#endif /* UKPROBES_H */
