// SPDX-License-Identifier: MIT
/*
 * watch.c - x86-64 half of data watchpoints by page protection: decode
 * the instruction that faulted on a protected page, say which bytes it
 * reads and writes, and run it for the program without unprotecting the
 * page (see src/watch.c for the design).
 *
 * How an instruction runs: its memory operand is rewritten to a
 * rip-relative operand on a scratch copy of the bytes (read through the
 * core's mem->read, i.e. /proc/self/mem), the rewritten instruction
 * runs from an executable slot inside the signal handler
 * (ukp_watch_exec, watch_exec.S: the program's general registers, flags
 * and vector state loaded around it), and the bytes it wrote go back
 * through mem->write. The page stays protected throughout, so no other
 * thread's access is ever missed; the core serializes these steps, which
 * keeps locked instructions atomic with respect to every other access to
 * the watched pages (those all trap too).
 * String instructions (movs, stos, lods, with or without rep) are
 * emulated from their registers; push, pop, call, ret and jmp through
 * memory and leave on a protected page (a watched stack) likewise.
 * Anything else that touches a protected page (gathers/scatters, rep
 * cmps/scas, instructions that name rsp as a register, xsave and other
 * operands over 1 KiB, enter, pushf/popf, ...) returns -EOPNOTSUPP: the core
 * then steps it in place with the page briefly unprotected.
 *
 * [reg] arch_watch_init; every other function here is [trap]:
 * async-signal-safe, no allocation, no lock, only Zydis (pure code) and
 * raw system calls.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>
#include <sys/syscall.h>

#include <Zydis/Zydis.h>

#include "base/base.h"
#include "core/core.h"
#include "process/process.h"
#include "text/text.h"
#include "optimizer/optimizer.h"
#include "decoder.h"

#define SCRATCH_MAX 1024              /* largest memory operand we copy */
#define ARITH_FLAGS 0x8d5UL           /* CF PF AF ZF SF OF */
#define LOAD_FLAGS (ARITH_FLAGS | 0x400UL | 0x40000UL) /* + DF, AC */
#define FP_XSTATE_MAGIC1 0x46505853U

static const ZydisDecoder *wdec;
/* The scratch copy of a memory operand, at the operand's offset modulo 64
 * (so that alignment faults happen, or not, as on the real address). */
static uint8_t scratch[SCRATCH_MAX + 64] __attribute__((aligned(64)));
/* Executable slot within rip reach of scratch: the rewritten
 * instruction and a ret. */
static uintptr_t exec_code;
/* What exec_code holds now (rewritten once per distinct instruction). */
static uint8_t exec_cur[UKP_MAX_INSN_SIZE + 1];
static size_t exec_cur_len;
/* The fault of the last instruction run by ukp_watch_exec. */
static int exec_fault_sig, exec_fault_code;
static uintptr_t exec_fault_addr;

int ukp_watch_exec(struct pt_regs *regs, uintptr_t code, void *xsave, uint64_t mask);
long ukp_watch_probe_write(void *addr);
extern char ukp_watch_exec_fault[], ukp_watch_probe_insn[], ukp_watch_probe_fixup[];

/* [reg] under the registry mutex, once. 0 or -errno. */
int arch_watch_init(void)
{
	if (exec_code)
		return 0;
	wdec = ukp_x86_decoder(false);
	if (!wdec)
		return -ENOMEM;
	exec_code = ukp_slot_alloc((uintptr_t)scratch);
	return exec_code ? 0 : -ENOMEM;
}

/* [trap] A fault inside the code this file runs for the program (or in
 * the write probe): where to resume. The fault is recorded for
 * arch_watch_step. */
UKP_TRAP_TEXT bool arch_watch_fixup(uintptr_t ip, int sig, int code, uintptr_t addr,
				    uintptr_t *fixup_ip)
{
	if (ip == (uintptr_t)ukp_watch_probe_insn) {
		*fixup_ip = (uintptr_t)ukp_watch_probe_fixup;
		return true;
	}
	if (!exec_code || ip < exec_code || ip >= exec_code + UKP_SLOT_SIZE)
		return false;
	exec_fault_sig = sig;
	exec_fault_code = code;
	exec_fault_addr = addr;
	*fixup_ip = (uintptr_t)ukp_watch_exec_fault;
	return true;
}

/* [trap] 0 if the program may write the byte at addr right now. */
UKP_TRAP_TEXT long arch_watch_probe_write(uintptr_t addr)
{
	return ukp_watch_probe_write((void *)addr);
}

static UKP_TRAP_TEXT uint64_t *gpr(struct pt_regs *r, ZydisRegister reg)
{
	switch (reg) {
	case ZYDIS_REGISTER_RAX: return (uint64_t *)&r->ax;
	case ZYDIS_REGISTER_RCX: return (uint64_t *)&r->cx;
	case ZYDIS_REGISTER_RDX: return (uint64_t *)&r->dx;
	case ZYDIS_REGISTER_RBX: return (uint64_t *)&r->bx;
	case ZYDIS_REGISTER_RSP: return (uint64_t *)&r->sp;
	case ZYDIS_REGISTER_RBP: return (uint64_t *)&r->bp;
	case ZYDIS_REGISTER_RSI: return (uint64_t *)&r->si;
	case ZYDIS_REGISTER_RDI: return (uint64_t *)&r->di;
	case ZYDIS_REGISTER_R8: return (uint64_t *)&r->r8;
	case ZYDIS_REGISTER_R9: return (uint64_t *)&r->r9;
	case ZYDIS_REGISTER_R10: return (uint64_t *)&r->r10;
	case ZYDIS_REGISTER_R11: return (uint64_t *)&r->r11;
	case ZYDIS_REGISTER_R12: return (uint64_t *)&r->r12;
	case ZYDIS_REGISTER_R13: return (uint64_t *)&r->r13;
	case ZYDIS_REGISTER_R14: return (uint64_t *)&r->r14;
	case ZYDIS_REGISTER_R15: return (uint64_t *)&r->r15;
	case ZYDIS_REGISTER_RIP: return (uint64_t *)&r->ip;
	default: return NULL;
	}
}

/* [trap] The value of a general register (any width, low byte
 * registers only), or false. */
static UKP_TRAP_TEXT bool reg_value(struct pt_regs *r, ZydisRegister reg, uint64_t *v)
{
	ZydisRegister big = ZydisRegisterGetLargestEnclosing(ZYDIS_MACHINE_MODE_LONG_64, reg);
	unsigned int w = ZydisRegisterGetWidth(ZYDIS_MACHINE_MODE_LONG_64, reg);
	uint64_t *p = gpr(r, big);

	if (!p || (reg >= ZYDIS_REGISTER_AH && reg <= ZYDIS_REGISTER_BH))
		return false;
	*v = w >= 64 ? *p : *p & ((1ULL << w) - 1);
	return true;
}

static UKP_TRAP_TEXT long sys2(long n, long a, long b)
{
	long ret;

	__asm__ volatile("syscall" : "=a"(ret) : "a"(n), "D"(a), "S"(b) : "rcx", "r11", "memory");
	return ret;
}

/* [trap] Effective address of a memory operand of the instruction at ip. */
static UKP_TRAP_TEXT bool mem_address(const ZydisDecodedInstruction *in,
				      const ZydisDecodedOperand *op, struct pt_regs *r,
				      uintptr_t ip, uint64_t *ea)
{
	uint64_t a = (uint64_t)op->mem.disp.value, v;

	if (op->mem.base == ZYDIS_REGISTER_RIP || op->mem.base == ZYDIS_REGISTER_EIP) {
		a += ip + in->length;
	} else if (op->mem.base != ZYDIS_REGISTER_NONE) {
		if (!reg_value(r, op->mem.base, &v))
			return false;
		a += v;
	}
	if (op->mem.index != ZYDIS_REGISTER_NONE) {
		if (!reg_value(r, op->mem.index, &v))
			return false;
		a += v * op->mem.scale;
	}
	if (in->address_width == 32)
		a &= 0xffffffffULL;
	if (op->mem.segment == ZYDIS_REGISTER_FS) {
		a += arch_thread_pointer();
	} else if (op->mem.segment == ZYDIS_REGISTER_GS) {
		uint64_t gs = 0;

		if (sys2(SYS_arch_prctl, 0x1004 /* ARCH_GET_GS */, (long)&gs))
			return false;
		a += gs;
	}
	*ea = a;
	return true;
}

static UKP_TRAP_TEXT void add_acc(struct arch_watch_access *acc, unsigned int *n, uintptr_t addr,
				  size_t len, unsigned int type)
{
	if (*n < ARCH_WATCH_MAX_ACCESS && len) {
		acc[*n].addr = addr;
		acc[*n].len = len;
		acc[*n].type = type;
		(*n)++;
	}
}

/* [trap] The core's mem->check on a range, with the fault recorded. */
static UKP_TRAP_TEXT int check(const struct arch_watch_mem *m, uintptr_t a, size_t len, bool wr,
			       struct arch_watch_fault *f)
{
	uintptr_t fa;

	if (m->check(a, len, wr, &fa) == 0)
		return 0;
	f->sig = SIGSEGV;
	f->code = 0;
	f->addr = fa;
	return -EFAULT;
}

/* ---------------------------------------------------- string ops */

/* [trap] movs/stos/lods (rep or not): emulated with the core's memory
 * access, in chunks. Overlapping movs copies element by element in the
 * instruction's direction, as the CPU does. */
static UKP_TRAP_TEXT int string_op(const struct arch_watch_mem *m, const ZydisDecodedInstruction *in,
				   struct pt_regs *r, struct arch_watch_access *acc,
				   unsigned int *nacc, struct arch_watch_fault *f)
{
	unsigned int sz = in->operand_width / 8;
	bool rep = in->attributes & ZYDIS_ATTRIB_HAS_REP;
	bool down = r->flags & 0x400;
	uint64_t cnt = rep ? r->cx : 1, n;
	uint64_t amask = in->address_width == 32 ? 0xffffffffULL : ~0ULL;
	uintptr_t si = r->si & amask, di = r->di & amask;
	uint8_t buf[512];
	size_t bytes;

	if (in->address_width == 32)
		cnt &= 0xffffffffULL;
	if (!cnt) {
		r->ip += in->length;
		return 0;
	}
	if (cnt > (1ULL << 40) / sz)
		return -EOPNOTSUPP;
	bytes = cnt * sz;
	switch (in->mnemonic) {
	case ZYDIS_MNEMONIC_MOVSB: case ZYDIS_MNEMONIC_MOVSW:
	case ZYDIS_MNEMONIC_MOVSD: case ZYDIS_MNEMONIC_MOVSQ: {
		uintptr_t s0 = down ? si - (bytes - sz) : si, d0 = down ? di - (bytes - sz) : di;
		uint64_t step = sizeof(buf) / sz;
		uint64_t dist = si > di ? si - di : di - si;

		if (check(m, s0, bytes, false, f) || check(m, d0, bytes, true, f))
			return -EFAULT;
		/* Copy in the CPU's order; a chunk never reads what an
		 * earlier element of the same chunk writes. */
		if (dist && dist < step * sz)
			step = dist / sz ? dist / sz : 1;
		for (n = 0; n < cnt;) {
			uint64_t k = cnt - n < step ? cnt - n : step;
			uintptr_t s = down ? si - (n + k - 1) * sz : si + n * sz;
			uintptr_t d = down ? di - (n + k - 1) * sz : di + n * sz;

			if (m->read(buf, s, k * sz) || m->write(d, buf, k * sz)) {
				if (!check(m, s, k * sz, false, f))
					check(m, d, k * sz, true, f);
				return -EFAULT;
			}
			n += k;
		}
		add_acc(acc, nacc, s0, bytes, ARCH_WATCH_R);
		add_acc(acc, nacc, d0, bytes, ARCH_WATCH_W);
		r->si = down ? si - bytes : si + bytes;
		r->di = down ? di - bytes : di + bytes;
		break;
	}
	case ZYDIS_MNEMONIC_STOSB: case ZYDIS_MNEMONIC_STOSW:
	case ZYDIS_MNEMONIC_STOSD: case ZYDIS_MNEMONIC_STOSQ: {
		uintptr_t d0 = down ? di - (bytes - sz) : di;
		size_t i;

		if (check(m, d0, bytes, true, f))
			return -EFAULT;
		for (i = 0; i < sizeof(buf); i += sz)
			__builtin_memcpy(buf + i, &r->ax, sz);
		for (n = 0; n < bytes;) {
			size_t k = bytes - n < sizeof(buf) ? bytes - n : sizeof(buf);

			if (m->write(d0 + n, buf, k)) {
				check(m, d0 + n, k, true, f);
				return -EFAULT;
			}
			n += k;
		}
		add_acc(acc, nacc, d0, bytes, ARCH_WATCH_W);
		r->di = down ? di - bytes : di + bytes;
		break;
	}
	case ZYDIS_MNEMONIC_LODSB: case ZYDIS_MNEMONIC_LODSW:
	case ZYDIS_MNEMONIC_LODSD: case ZYDIS_MNEMONIC_LODSQ: {
		uintptr_t s0 = down ? si - (bytes - sz) : si, last = down ? s0 : si + bytes - sz;
		uint64_t v = 0;

		if (check(m, s0, bytes, false, f) || m->read(&v, last, sz))
			return -EFAULT;
		add_acc(acc, nacc, s0, bytes, ARCH_WATCH_R);
		if (sz == 4)
			r->ax = v; /* a 32-bit destination clears the upper half */
		else if (sz == 8)
			r->ax = v;
		else
			r->ax = (r->ax & ~((1ULL << (sz * 8)) - 1)) | v;
		r->si = down ? si - bytes : si + bytes;
		break;
	}
	default:
		return -EOPNOTSUPP;
	}
	if (rep)
		r->cx = 0;
	r->ip += in->length;
	return 0;
}

/* ------------------------------------------------------ stack ops */

/* [trap] push/pop/call/ret/jmp whose stack slot or pointer operand is on
 * a protected page. */
static UKP_TRAP_TEXT int stack_op(const struct arch_watch_mem *m, const ZydisDecodedInstruction *in,
				  const ZydisDecodedOperand *ops, struct pt_regs *r,
				  struct arch_watch_access *acc, unsigned int *nacc,
				  struct arch_watch_fault *f)
{
	uintptr_t ip = r->ip, next = ip + in->length;
	uint64_t v = 0, ea;
	const ZydisDecodedOperand *o = &ops[0];

	if (in->mnemonic == ZYDIS_MNEMONIC_LEAVE) {
		/* mov %rbp, %rsp; pop %rbp (frame-pointer epilogues) */
		if (in->operand_width != 64)
			return -EOPNOTSUPP;
		if (check(m, r->bp, 8, false, f) || m->read(&v, r->bp, 8))
			return -EFAULT;
		add_acc(acc, nacc, r->bp, 8, ARCH_WATCH_R);
		r->sp = r->bp + 8;
		r->bp = v;
		r->ip = next;
		return 0;
	}
	if (in->operand_width != 64 && in->mnemonic != ZYDIS_MNEMONIC_RET &&
	    in->mnemonic != ZYDIS_MNEMONIC_CALL && in->mnemonic != ZYDIS_MNEMONIC_JMP)
		return -EOPNOTSUPP;
	/* the source of push, call and jmp */
	if (in->mnemonic == ZYDIS_MNEMONIC_PUSH || in->mnemonic == ZYDIS_MNEMONIC_CALL ||
	    in->mnemonic == ZYDIS_MNEMONIC_JMP) {
		if (o->type == ZYDIS_OPERAND_TYPE_REGISTER) {
			if (!reg_value(r, o->reg.value, &v))
				return -EOPNOTSUPP;
		} else if (o->type == ZYDIS_OPERAND_TYPE_IMMEDIATE) {
			v = o->imm.is_relative ? next + (uint64_t)o->imm.value.s
					       : (uint64_t)o->imm.value.s;
		} else if (o->type == ZYDIS_OPERAND_TYPE_MEMORY &&
			   o->mem.type == ZYDIS_MEMOP_TYPE_MEM) {
			if (!mem_address(in, o, r, ip, &ea))
				return -EOPNOTSUPP;
			if (check(m, ea, 8, false, f) || m->read(&v, ea, 8))
				return -EFAULT;
			add_acc(acc, nacc, ea, 8, ARCH_WATCH_R);
		} else {
			return -EOPNOTSUPP;
		}
	}
	switch (in->mnemonic) {
	case ZYDIS_MNEMONIC_JMP:
		r->ip = v;
		return 0;
	case ZYDIS_MNEMONIC_PUSH:
	case ZYDIS_MNEMONIC_CALL: {
		uint64_t w = in->mnemonic == ZYDIS_MNEMONIC_CALL ? next : v;

		if (check(m, r->sp - 8, 8, true, f) || m->write(r->sp - 8, &w, 8))
			return -EFAULT;
		add_acc(acc, nacc, r->sp - 8, 8, ARCH_WATCH_W);
		r->sp -= 8;
		r->ip = in->mnemonic == ZYDIS_MNEMONIC_CALL ? v : next;
		return 0;
	}
	case ZYDIS_MNEMONIC_POP: {
		uint64_t *dst;

		if (o->type != ZYDIS_OPERAND_TYPE_REGISTER ||
		    !(dst = gpr(r, o->reg.value)) || o->reg.value == ZYDIS_REGISTER_RSP)
			return -EOPNOTSUPP;
		if (check(m, r->sp, 8, false, f) || m->read(&v, r->sp, 8))
			return -EFAULT;
		add_acc(acc, nacc, r->sp, 8, ARCH_WATCH_R);
		r->sp += 8;
		*dst = v;
		r->ip = next;
		return 0;
	}
	case ZYDIS_MNEMONIC_RET: {
		uint64_t extra = 0;

		if (in->operand_count_visible &&
		    o->type == ZYDIS_OPERAND_TYPE_IMMEDIATE)
			extra = o->imm.value.u & 0xffff;
		if (check(m, r->sp, 8, false, f) || m->read(&v, r->sp, 8))
			return -EFAULT;
		add_acc(acc, nacc, r->sp, 8, ARCH_WATCH_R);
		r->sp += 8 + extra;
		r->ip = v;
		return 0;
	}
	default:
		return -EOPNOTSUPP;
	}
}

/* ------------------------------------------------ the general case */

/* [trap] Rewrite the instruction so that its memory operand is
 * [rip + disp32] addressing target, for code at exec_code. Segment and
 * address-size prefixes go (the address is absolute now). */
static UKP_TRAP_TEXT size_t rewrite(const uint8_t *code, const ZydisDecodedInstruction *in,
				    uintptr_t target, uint8_t *out)
{
	size_t n = 0, i, rest;
	uint8_t modrm;
	int64_t disp;
	int32_t d32;

	if (!in->raw.modrm.offset || in->raw.modrm.mod == 3)
		return 0;
	for (i = 0; i < in->raw.modrm.offset; i++) {
		if (i < in->raw.prefix_count &&
		    (code[i] == 0x64 || code[i] == 0x65 || code[i] == 0x67 ||
		     code[i] == 0x2e || code[i] == 0x3e || code[i] == 0x26 || code[i] == 0x36))
			continue;
		out[n++] = code[i];
	}
	modrm = (uint8_t)((code[in->raw.modrm.offset] & 0x38) | 0x05);
	out[n++] = modrm;
	rest = in->raw.modrm.offset + 1u + (in->raw.sib.offset ? 1u : 0u);
	if (in->raw.disp.size)
		rest = in->raw.disp.offset + in->raw.disp.size / 8u;
	if (n + 4 + (in->length - rest) > UKP_MAX_INSN_SIZE)
		return 0;
	disp = (int64_t)target - (int64_t)(exec_code + n + 4 + (in->length - rest));
	d32 = (int32_t)disp;
	if (d32 != disp)
		return 0;
	__builtin_memcpy(out + n, &d32, 4);
	n += 4;
	for (i = rest; i < in->length; i++)
		out[n++] = code[i];
	return n;
}

/* [trap] Does the instruction name rsp (other than as its memory
 * operand's base or index) or change ip? */
static UKP_TRAP_TEXT bool uses_sp_or_ip(const ZydisDecodedInstruction *in,
					const ZydisDecodedOperand *ops)
{
	unsigned int i;

	if (in->meta.category == ZYDIS_CATEGORY_COND_BR ||
	    in->meta.category == ZYDIS_CATEGORY_UNCOND_BR || in->meta.category == ZYDIS_CATEGORY_CALL ||
	    in->meta.category == ZYDIS_CATEGORY_RET || in->meta.category == ZYDIS_CATEGORY_SYSCALL ||
	    in->meta.category == ZYDIS_CATEGORY_INTERRUPT)
		return true;
	for (i = 0; i < in->operand_count; i++) {
		ZydisRegister r;

		if (ops[i].type != ZYDIS_OPERAND_TYPE_REGISTER)
			continue;
		r = ZydisRegisterGetLargestEnclosing(ZYDIS_MACHINE_MODE_LONG_64, ops[i].reg.value);
		if (r == ZYDIS_REGISTER_RSP || r == ZYDIS_REGISTER_RIP)
			return true;
	}
	return false;
}

/* [trap] The signal frame's XSAVE area and its feature mask, or NULL. */
static UKP_TRAP_TEXT void *frame_xsave(ucontext_t *uc, uint64_t *mask)
{
	uint8_t *fp = (uint8_t *)uc->uc_mcontext.fpregs;
	uint32_t magic;

	if (!fp || ((uintptr_t)fp & 63))
		return NULL;
	__builtin_memcpy(&magic, fp + 464, 4);
	if (magic != FP_XSTATE_MAGIC1)
		return NULL;
	__builtin_memcpy(mask, fp + 472, 8);
	return fp;
}

/* [trap] One explicit memory operand: run the instruction on a scratch
 * copy (see the top of this file). */
static UKP_TRAP_TEXT int run_on_scratch(const struct arch_watch_mem *m, const uint8_t *code,
					const ZydisDecodedInstruction *in,
					const ZydisDecodedOperand *op, struct pt_regs *r,
					ucontext_t *uc, struct arch_watch_access *acc,
					unsigned int *nacc, struct arch_watch_fault *f)
{
	uint8_t img[UKP_MAX_INSN_SIZE + 1];
	bool rd = op->actions & ZYDIS_OPERAND_ACTION_MASK_READ;
	bool wr = op->actions & ZYDIS_OPERAND_ACTION_MASK_WRITE;
	size_t sz = op->size / 8, len;
	struct pt_regs x;
	uint64_t ea, mask = 0;
	uintptr_t buf;
	void *xs;
	int ret;

	if (!sz || sz > SCRATCH_MAX || !mem_address(in, op, r, r->ip, &ea))
		return -EOPNOTSUPP;
	xs = frame_xsave(uc, &mask);
	if (!xs)
		return -EOPNOTSUPP;
	buf = (uintptr_t)scratch + (ea & 63);
	len = rewrite(code, in, buf, img);
	if (!len)
		return -EOPNOTSUPP;
	img[len++] = 0xc3; /* ret */
	if (check(m, ea, sz, false, f) && (rd || !wr))
		return -EFAULT;
	if (wr && check(m, ea, sz, true, f))
		return -EFAULT;
	/* A write-only operand may be partial (masked stores): the scratch
	 * starts with the current bytes either way. */
	if (m->read((void *)buf, ea, sz)) {
		f->sig = SIGSEGV;
		f->code = 0;
		f->addr = ea;
		return -EFAULT;
	}
	if (len != exec_cur_len || __builtin_memcmp(img, exec_cur, len)) {
		if (m->write(exec_code, img, len))
			return -EOPNOTSUPP;
		__builtin_memcpy(exec_cur, img, len);
		exec_cur_len = len;
	}
	x = *r;
	x.flags &= LOAD_FLAGS;
	ret = ukp_watch_exec(&x, exec_code, xs, mask);
	if (ret) {
		f->sig = exec_fault_sig;
		f->code = exec_fault_code;
		f->addr = exec_fault_sig == SIGSEGV || exec_fault_sig == SIGBUS ? exec_fault_addr
										  : r->ip;
		if (f->sig == SIGSEGV && exec_fault_addr >= buf && exec_fault_addr < buf + sz)
			f->addr = ea + (exec_fault_addr - buf);
		return -EFAULT;
	}
	if (wr && m->write(ea, (void *)buf, sz)) {
		f->sig = SIGSEGV;
		f->code = 0;
		f->addr = ea;
		return -EFAULT;
	}
	x.flags = (r->flags & ~ARITH_FLAGS) | (x.flags & ARITH_FLAGS);
	x.ip = r->ip + in->length;
	x.sp = r->sp;
	*r = x;
	add_acc(acc, nacc, ea, sz, (rd ? ARCH_WATCH_R : 0) | (wr ? ARCH_WATCH_W : 0));
	return 0;
}

/* [trap] The byte range an instruction at ip touches in memory, as far
 * as the decoder tells (for the in-place step). */
static UKP_TRAP_TEXT void guess_accesses(const ZydisDecodedInstruction *in,
					 const ZydisDecodedOperand *ops, struct pt_regs *r,
					 struct arch_watch_access *acc, unsigned int *nacc)
{
	unsigned int i;

	for (i = 0; i < in->operand_count && *nacc < ARCH_WATCH_MAX_ACCESS; i++) {
		uint64_t ea;
		unsigned int t = 0;

		if (ops[i].type != ZYDIS_OPERAND_TYPE_MEMORY || ops[i].mem.type != ZYDIS_MEMOP_TYPE_MEM ||
		    !mem_address(in, &ops[i], r, r->ip, &ea))
			continue;
		if (ops[i].actions & ZYDIS_OPERAND_ACTION_MASK_READ)
			t |= ARCH_WATCH_R;
		if (ops[i].actions & ZYDIS_OPERAND_ACTION_MASK_WRITE)
			t |= ARCH_WATCH_W;
		add_acc(acc, nacc, ea, ops[i].size / 8 ? ops[i].size / 8 : 1, t);
	}
}

/*
 * [trap] Run the instruction at regs->ip for the program, its memory
 * accesses going through m (the caller holds the lock that serializes
 * them). On 0, regs are as after the instruction (ip at the next one)
 * and acc[0..*nacc) say what it read and wrote. -EFAULT: the
 * instruction faults for the program (*f; regs unchanged). -EOPNOTSUPP:
 * it cannot be run this way; acc[] holds what it would access, as far
 * as known.
 */
UKP_TRAP_TEXT int arch_watch_step(const struct arch_watch_mem *m, struct pt_regs *regs,
				  ucontext_t *uc, struct arch_watch_access *acc, unsigned int *nacc,
				  struct arch_watch_fault *f)
{
	ZydisDecodedInstruction in;
	ZydisDecodedOperand ops[ZYDIS_MAX_OPERAND_COUNT];
	uint8_t code[UKP_MAX_INSN_SIZE];
	const ZydisDecodedOperand *mem = NULL;
	size_t avail = UKP_MAX_INSN_SIZE;
	unsigned int i, nmem = 0;
	int ret;

	*nacc = 0;
	while (avail && arch_copy_nofault(code, (void *)regs->ip, avail))
		avail--;
	if (!avail || !wdec ||
	    !ZYAN_SUCCESS(ZydisDecoderDecodeFull(wdec, code, avail, &in, ops)))
		return -EOPNOTSUPP;
	switch (in.mnemonic) {
	case ZYDIS_MNEMONIC_MOVSB: case ZYDIS_MNEMONIC_MOVSW: case ZYDIS_MNEMONIC_MOVSQ:
	case ZYDIS_MNEMONIC_STOSB: case ZYDIS_MNEMONIC_STOSW: case ZYDIS_MNEMONIC_STOSD:
	case ZYDIS_MNEMONIC_STOSQ: case ZYDIS_MNEMONIC_LODSB: case ZYDIS_MNEMONIC_LODSW:
	case ZYDIS_MNEMONIC_LODSD: case ZYDIS_MNEMONIC_LODSQ:
		return string_op(m, &in, regs, acc, nacc, f);
	case ZYDIS_MNEMONIC_MOVSD:
		/* movsd is also the SSE2 scalar move (with a ModRM) */
		if (in.encoding == ZYDIS_INSTRUCTION_ENCODING_LEGACY && !in.raw.modrm.offset &&
		    in.opcode == 0xa5)
			return string_op(m, &in, regs, acc, nacc, f);
		break;
	case ZYDIS_MNEMONIC_PUSH: case ZYDIS_MNEMONIC_POP: case ZYDIS_MNEMONIC_CALL:
	case ZYDIS_MNEMONIC_RET: case ZYDIS_MNEMONIC_JMP: case ZYDIS_MNEMONIC_LEAVE:
		ret = stack_op(m, &in, ops, regs, acc, nacc, f);
		if (ret == -EOPNOTSUPP)
			guess_accesses(&in, ops, regs, acc, nacc);
		return ret;
	default:
		break;
	}
	for (i = 0; i < in.operand_count; i++) {
		if (ops[i].type != ZYDIS_OPERAND_TYPE_MEMORY)
			continue;
		if (ops[i].mem.type == ZYDIS_MEMOP_TYPE_AGEN)
			continue; /* lea, nop: no access */
		if (ops[i].mem.type != ZYDIS_MEMOP_TYPE_MEM) {
			nmem = 99; /* vsib, mib */
			break;
		}
		mem = &ops[i];
		nmem++;
	}
	if (nmem != 1 || uses_sp_or_ip(&in, ops) ||
	    (mem->visibility != ZYDIS_OPERAND_VISIBILITY_EXPLICIT))
		ret = -EOPNOTSUPP;
	else
		ret = run_on_scratch(m, code, &in, mem, regs, uc, acc, nacc, f);
	if (ret == -EOPNOTSUPP) {
		*nacc = 0;
		guess_accesses(&in, ops, regs, acc, nacc);
	}
	return ret;
}

/* [trap] */
UKP_TRAP_TEXT void arch_uc_set_single_step(ucontext_t *uc, bool on)
{
	if (on)
		uc->uc_mcontext.gregs[REG_EFL] |= 0x100;
	else
		uc->uc_mcontext.gregs[REG_EFL] &= ~0x100LL;
}

/* [trap] Was the page fault of uc a write (the page-fault error code's
 * W bit)? */
UKP_TRAP_TEXT bool arch_uc_fault_write(const ucontext_t *uc)
{
	return uc->uc_mcontext.gregs[REG_ERR] & 2;
}
