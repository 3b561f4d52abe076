/* SPDX-License-Identifier: MIT */
/*
 * gen.c - `ukprobe run`'s translation of a checked script to C: one
 * handler per uprobe/uretprobe SPEC that calls its action block (inlined,
 * straight-line code: no interpreter), BEGIN and END, the map tables'
 * places, the dump of every map at the end, and `ukp_script`
 * (common/script_abi.h). runtime.h has what the generated code calls.
 */
#include <stdlib.h>
#include <string.h>

#include "script.h"

#define CAP 4096                  /* entries of a map table (bpftrace's default) */
#define HDR_BYTES 64              /* a thread block's header (struct ukp_script_thread) */

struct gen {
	const struct script *sc;
	FILE *out;
	bool init;                /* in a BEGIN, END or interval block */
	int tmp;                  /* names of temporaries */
};

static int esz(const struct mapinfo *m)
{
	return 1 + m->kw + m->vw;
}

/* a per-thread map's offset in the thread block */
static uint64_t map_off(const struct script *sc, int id)
{
	uint64_t off = HDR_BYTES;
	int i;

	for (i = 0; i < id; i++)
		if (!sc->maps[i]->global)
			off += (uint64_t)CAP * (uint64_t)esz(sc->maps[i]) * 8;
	return off;
}

static uint64_t thread_bytes(const struct script *sc)
{
	return map_off(sc, sc->nmaps);
}

static void expr(struct gen *g, const struct node *n);

static void tab(struct gen *g, const struct mapinfo *m)
{
	if (m->global)
		fprintf(g->out, "g_map%d", m->id);
	else
		fprintf(g->out, "((uint64_t *)(void *)(c->T + %llu))",
			(unsigned long long)map_off(g->sc, m->id));
}

/* declares uint64_t k<N>[] holding the key of n (an N_MAP); returns N */
static int key(struct gen *g, const struct node *n)
{
	const struct mapinfo *m = n->map;
	int t = g->tmp++, i, o = 0;

	/* zeroed by a loop: an initializer may become a call of libc's
	 * memset, which uses the vector registers (runtime.h) */
	fprintf(g->out, "uint64_t k%d[%d]; rt_clear_words(k%d, %d); ", t, m->kw ? m->kw : 1, t,
		m->kw ? m->kw : 1);
	for (i = 0; i < n->nargs; i++) {
		if (m->keys[i] == TY_BUF) {
			fprintf(g->out, "rt_read_buf(k%d + %d, ", t, o);
			expr(g, n->args[i]->args[0]);
			fprintf(g->out, ", %d); ", (int)n->args[i]->ival);
		} else if (m->keys[i] == TY_STACK) {
			/* [count, frames...] */
			fprintf(g->out, "k%d[%d] = (uint64_t)ukpa_script_ustack(c->kp, c->ret, c->retaddr, "
				"c->regs, k%d + %d, %d); ", t, o, t, o + 1, (int)n->args[i]->ival);
		} else if (m->keys[i] == TY_STR) {
			fprintf(g->out, "rt_put_str(k%d + %d, ", t, o);
			expr(g, n->args[i]);
			fputs("); ", g->out);
		} else {
			fprintf(g->out, "k%d[%d] = (uint64_t)(", t, o);
			expr(g, n->args[i]);
			fputs("); ", g->out);
		}
		o += type_words(m->keys[i]);
	}
	return t;
}

/* uint64_t *p<N>: the value words of n's entry (insert: a new one) */
static int lookup(struct gen *g, const struct node *n, bool insert)
{
	const struct mapinfo *m = n->map;
	int k, p;

	if (!m->kw) {
		/* @x: the table's first entry */
		p = g->tmp++;
		fprintf(g->out, "uint64_t *p%d = rt_single(", p);
		tab(g, m);
		fprintf(g->out, ", %d, %d); ", esz(m), insert);
		return p;
	}
	k = key(g, n);
	p = g->tmp++;
	fprintf(g->out, "uint64_t *p%d = rt_find(", p);
	tab(g, m);
	fprintf(g->out, ", %d, %d, k%d, %d, %d, %s); ", CAP, esz(m), k, m->kw, insert,
		insert ? "rt_drops(c)" : "0");
	return p;
}

static void c_string(FILE *out, const char *s)
{
	fputc('"', out);
	for (; *s; s++) {
		if (*s == '"' || *s == '\\')
			fprintf(out, "\\%c", *s);
		else if ((unsigned char)*s < 0x20 || (unsigned char)*s >= 0x7f)
			fprintf(out, "\\%03o", (unsigned char)*s);
		else
			fputc(*s, out);
	}
	fputc('"', out);
}

static void builtin(struct gen *g, const struct node *n)
{
	const char *b = n->name;
	FILE *o = g->out;

	if (!strcmp(b, "pid"))
		fputs("rt_pid", o);
	else if (!strcmp(b, "tid"))
		fputs("(int64_t)((struct ukp_script_thread *)(void *)c->T)->tid", o);
	else if (!strcmp(b, "comm"))
		fputs("rt_comm(c)", o);
	else if (!strcmp(b, "nsecs"))
		fputs("rt_nsecs()", o);
	else if (!strcmp(b, "elapsed"))
		fputs("(rt_nsecs() - rt_t0)", o);
	else if (!strcmp(b, "cpu"))
		fputs("rt_cpu()", o);
	else if (!strcmp(b, "uid"))
		fputs("(int64_t)rt_sys(SYS_getuid, 0, 0, 0)", o);
	else if (!strcmp(b, "gid"))
		fputs("(int64_t)rt_sys(SYS_getgid, 0, 0, 0)", o);
	else if (!strcmp(b, "retval"))
		fputs("(int64_t)regs_return_value(c->regs)", o);
	else if (!strncmp(b, "arg", 3))
		fprintf(o, "(int64_t)regs_get_kernel_argument(c->regs, %d)", atoi(b + 3));
	else if (!strcmp(b, "func"))
		fputs("(int64_t)(uintptr_t)c->kp->addr", o);
	else if (!strcmp(b, "probe"))
		/* the probe's index and its address: ukprobe names it */
		fputs("((((int64_t)c->probe + 1) << 48) | (c->kp ? (int64_t)(uintptr_t)c->kp->addr & "
		      "0xffffffffffffLL : 0))", o);
}

static void expr(struct gen *g, const struct node *n)
{
	FILE *o = g->out;

	switch (n->k) {
	case N_INT:
		fprintf(o, "((int64_t)%lldLL)", (long long)n->ival);
		break;
	case N_STR:
		fputs("rt_lit(", o);
		c_string(o, n->name);
		fputc(')', o);
		break;
	case N_BUILTIN:
		builtin(g, n);
		break;
	case N_FETCH:
		/* what the probe's SPEC fetches for it: the agent's fetch */
		fprintf(o, "ukpa_script_arg(c->kp, c->ret, c->regs, %d)", (int)n->ival);
		break;
	case N_VAR:
		fprintf(o, "v_%s", n->name);
		break;
	case N_MAP: {
		int p;

		fputs("({ ", o);
		p = lookup(g, n, false);
		if (n->ty == TY_STR)
			fprintf(o, "rt_get_str(p%d); })", p);
		else
			fprintf(o, "p%d ? (int64_t)p%d[0] : 0; })", p, p);
		break;
	}
	case N_CALL:
		if (!strcmp(n->name, "usym")) {
			/* the address: ukprobe names it */
			fputs("(int64_t)(", o);
			expr(g, n->args[0]);
			fputc(')', o);
			break;
		}
		/* str() */
		fputs("rt_read_str(", o);
		expr(g, n->args[0]);
		fputs(", ", o);
		/* bpftrace's: str(x, n) reads n characters (and the NUL) */
		if (n->nargs > 1) {
			fputs("(", o);
			expr(g, n->args[1]);
			fputs(") + 1", o);
		} else {
			fputs("64", o);
		}
		fputc(')', o);
		break;
	case N_UNOP:
		fprintf(o, "(%s", n->op);
		expr(g, n->a);
		fputc(')', o);
		break;
	case N_BINOP:
		if (n->a->ty == TY_STR) {
			fprintf(o, "(%srt_str_eq(", !strcmp(n->op, "!=") ? "!" : "");
			expr(g, n->a);
			fputs(", ", o);
			expr(g, n->b);
			fputs("))", o);
		} else if (!strcmp(n->op, "/") || !strcmp(n->op, "%")) {
			fprintf(o, "rt_%s(", n->op[0] == '/' ? "div" : "mod");
			expr(g, n->a);
			fputs(", ", o);
			expr(g, n->b);
			fputc(')', o);
		} else {
			fputs("((int64_t)(", o);
			expr(g, n->a);
			fprintf(o, " %s ", n->op);
			expr(g, n->b);
			fputs("))", o);
		}
		break;
	case N_TERNARY:
		fputs("((", o);
		expr(g, n->a);
		fputs(") ? (", o);
		expr(g, n->b);
		fputs(") : (", o);
		expr(g, n->c);
		fputs("))", o);
		break;
	default:
		break;
	}
}

static void value(struct gen *g, const struct node *v, const char *fmt, int p)
{
	fprintf(g->out, fmt, p);
	expr(g, v);
	fputs("); ", g->out);
}

static void aggregate(struct gen *g, const struct node *s)
{
	const struct node *v = s->b;
	const struct mapinfo *m = s->a->map;
	FILE *o = g->out;
	int p;

	fputs("{ ", o);
	p = lookup(g, s->a, true);
	fprintf(o, "if (p%d) { ", p);
	switch (m->vk) {
	case V_COUNT:
		fprintf(o, "p%d[0]++; ", p);
		break;
	case V_SUM:
		value(g, v->args[0], "p%d[0] += (uint64_t)(", p);
		break;
	case V_MIN:
	case V_MAX:
		fputs("int64_t x_ = ", o);
		expr(g, v->args[0]);
		fprintf(o, "; if (!p%d[1] || x_ %s (int64_t)p%d[0]) { p%d[0] = (uint64_t)x_; p%d[1] = 1; } ",
			p, m->vk == V_MIN ? "<" : ">", p, p, p);
		break;
	case V_AVG:
	case V_STATS:
		fprintf(o, "p%d[0]++; ", p);
		value(g, v->args[0], "p%d[1] += (uint64_t)(", p);
		break;
	case V_HIST:
		fprintf(o, "p%d[rt_hist_bucket(", p);
		expr(g, v->args[0]);
		fputs(")]++; ", o);
		break;
	case V_LHIST:
		fprintf(o, "p%d[rt_lhist_bucket(", p);
		expr(g, v->args[0]);
		fprintf(o, ", %lldLL, %lldLL, %lldLL)]++; ", (long long)m->lmin, (long long)m->lmax,
			(long long)m->lstep);
		break;
	default:
		break;
	}
	fputs("} }\n", o);
}

static void assign(struct gen *g, const struct node *s)
{
	const struct node *t = s->a, *v = s->b;
	FILE *o = g->out;
	char op = s->op[0];

	if (t->k == N_MAP && !t->map->global) {
		aggregate(g, s);
		return;
	}
	if (t->k == N_VAR) {
		if (op == '/' || op == '%') {
			fprintf(o, "v_%s = rt_%s(v_%s, ", t->name, op == '/' ? "div" : "mod", t->name);
			expr(g, v);
			fputs(");\n", o);
		} else {
			fprintf(o, "v_%s %s ", t->name, s->op);
			expr(g, v);
			fputs(";\n", o);
		}
		return;
	}
	{
		int p;

		fputs("{ ", o);
		p = lookup(g, t, true);
		fprintf(o, "if (p%d) { ", p);
		if (t->map->vk == V_STR) {
			fprintf(o, "rt_put_str(p%d, ", p);
			expr(g, v);
			fputs("); ", o);
		} else if (op == '=') {
			value(g, v, "p%d[0] = (uint64_t)(", p);
		} else if (op == '/' || op == '%') {
			fprintf(o, "p%d[0] = (uint64_t)rt_%s((int64_t)p%d[0], ", p,
				op == '/' ? "div" : "mod", p);
			expr(g, v);
			fputs("); ", o);
		} else {
			fprintf(o, "p%d[0] = (uint64_t)((int64_t)p%d[0] %c ", p, p, op);
			expr(g, v);
			fputs("); ", o);
		}
		fputs("} }\n", o);
	}
}

/* a printf or print(value) record: [format, 0][arguments] */
static void record(struct gen *g, const struct node *n, int first)
{
	const struct fmt *f = &g->sc->fmts[n->fmt];
	FILE *o = g->out;
	int i, w = 1, t = g->tmp++;

	uint64_t names = 0;       /* the words that are addresses to name */

	for (i = 0; i < f->nargs; i++) {
		if (f->types[i] == TY_USYM)
			names |= 1ull << w;
		else if (f->types[i] == TY_STACK)
			names |= ((1ull << USTACK_REC) - 1) << (w + 1);
		w += rec_words(f->types[i]);
	}
	/* [format | the address words' mask << 32][arguments]: the agent's
	 * reader names those words' addresses for ukprobe (ring.c) */
	fprintf(o, "{ uint64_t r%d[%d]; r%d[0] = %d | (%lluULL << 32); ", t, w, t, n->fmt,
		(unsigned long long)names);
	for (i = 0, w = 1; i < f->nargs; i++) {
		if (f->types[i] == TY_STACK) {
			const struct node *a = n->args[first + i];
			int max = (int)a->ival < USTACK_REC ? (int)a->ival : USTACK_REC;

			/* [count, frames...]; the frames past count are zeros */
			fprintf(o, "rt_rec_stack(c, r%d + %d, %d); ", t, w, max);
		} else if (f->types[i] == TY_USYM) {
			fprintf(o, "r%d[%d] = (uint64_t)(", t, w);
			expr(g, n->args[first + i]);
			fputs("); ", o);
			/* BEGIN, END, interval: named here (no reader) */
			if (g->init)
				fprintf(o, "ukpa_script_sym(r%d[%d]); ", t, w);
		} else if (f->types[i] == TY_BUF) {
			fprintf(o, "rt_read_buf(r%d + %d, ", t, w);
			expr(g, n->args[first + i]->args[0]);
			fprintf(o, ", %d); ", (int)n->args[first + i]->ival);
		} else if (f->types[i] == TY_STR) {
			fprintf(o, "rt_put_str(r%d + %d, ", t, w);
			expr(g, n->args[first + i]);
			fputs("); ", o);
		} else {
			fprintf(o, "r%d[%d] = (uint64_t)(", t, w);
			expr(g, n->args[first + i]);
			fputs("); ", o);
		}
		w += rec_words(f->types[i]);
	}
	fprintf(o, "rt_out(c, r%d, %d); }\n", t, w * 8);
}

static void stmts(struct gen *g, const struct node *s);

static void call(struct gen *g, const struct node *n)
{
	FILE *o = g->out;

	if (!strcmp(n->name, "printf")) {
		record(g, n, 1);
	} else if (!strcmp(n->name, "print") && n->args[0]->k == N_MAP && !n->args[0]->nargs) {
		fprintf(o, "rt_print_map%d();\n", n->args[0]->map->id);
	} else if (!strcmp(n->name, "print")) {
		record(g, n, 0);
	} else if (!strcmp(n->name, "time")) {
		record(g, n, 0);
	} else if (!strcmp(n->name, "exit")) {
		fputs("rt_stopped = 1;\nukpa_script_exit();\n", o);
	} else if (!strcmp(n->name, "delete")) {
		const struct node *m = n->args[0];
		int k;

		if (!m->map->global)
			return;
		fputs("{ ", o);
		k = key(g, m);
		fputs("rt_delete(", o);
		tab(g, m->map);
		fprintf(o, ", %d, %d, k%d, %d); }\n", CAP, esz(m->map), k, m->map->kw);
	} else if (!strcmp(n->name, "clear") || !strcmp(n->name, "zero")) {
		fprintf(o, "rt_clear_map%d(%d);\n", n->args[0]->map->id, n->name[0] == 'z');
	}
}

static void stmts(struct gen *g, const struct node *s)
{
	for (; s; s = s->next) {
		switch (s->k) {
		case S_EXPR:
			if (s->a->k == N_CALL)
				call(g, s->a);
			break;
		case S_ASSIGN:
			assign(g, s);
			break;
		case S_IF:
			fputs("if (", g->out);
			expr(g, s->a);
			fputs(") {\n", g->out);
			stmts(g, s->b->a);
			fputs("}", g->out);
			if (s->c) {
				fputs(" else {\n", g->out);
				stmts(g, s->c->a);
				fputs("}", g->out);
			}
			fputc('\n', g->out);
			break;
		case S_BLOCK:
			stmts(g, s->a);
			break;
		default:
			break;
		}
	}
}

static void maps(struct gen *g)
{
	const struct script *sc = g->sc;
	FILE *o = g->out;
	int i;

	for (i = 0; i < sc->nmaps; i++) {
		const struct mapinfo *m = sc->maps[i];

		if (m->global)
			fprintf(o, "static uint64_t g_map%d[%d * %d];\n", i, CAP, esz(m));
	}
	fprintf(o, "#define THREAD_BYTES %lluULL\n", (unsigned long long)thread_bytes(sc));
	/* BEGIN and END's thread block */
	fputs("static uint64_t rt_init_block[THREAD_BYTES / 8];\n", o);
	for (i = 0; i < sc->nmaps; i++) {
		const struct mapinfo *m = sc->maps[i];

		/* [init] every table of the map: the process's, or each thread's */
		fprintf(o, "static void rt_each_map%d(void (*fn)(uint64_t *, int), int arg)\n{\n", i);
		if (m->global) {
			fprintf(o, "\tfn(g_map%d, arg);\n}\n", i);
		} else {
			fprintf(o, "\tuint32_t i;\n\tfn((uint64_t *)(void *)((char *)rt_init_block + %llu), arg);\n"
				   "\tfor (i = 0; i < UKP_SCRIPT_THREADS; i++) {\n"
				   "\t\tchar *b = ukpa_script_block(i);\n"
				   "\t\tif (b)\n\t\t\tfn((uint64_t *)(void *)(b + %llu), arg);\n\t}\n}\n",
				(unsigned long long)map_off(sc, i), (unsigned long long)map_off(sc, i));
		}
		fprintf(o, "static void rt_dump%d(uint64_t *t, int arg)\n{\n\t(void)arg;\n", i);
		{
			/* ustack keys: their frames' symbols go to ukprobe first */
			int k, at = 0;

			for (k = 0; k < m->nkeys; at += type_words(m->keys[k]), k++)
				if (m->keys[k] == TY_STACK)
					fprintf(o, "\trt_stack_syms(t, %d, %d, %d);\n", CAP, esz(m), 1 + at);
				else if (m->keys[k] == TY_USYM)
					fprintf(o, "\trt_addr_syms(t, %d, %d, %d);\n", CAP, esz(m), 1 + at);
			if (m->vk == V_USYM)
				fprintf(o, "\trt_addr_syms(t, %d, %d, %d);\n", CAP, esz(m), 1 + m->kw);
		}
		fprintf(o, "\trt_dump_table(%d, t, %d, %d);\n}\n", i, CAP, esz(m));
		fprintf(o, "static void rt_clear%d(uint64_t *t, int zero)\n{\n"
			   "\trt_clear_table(t, %d, %d, %d, zero);\n}\n", i, CAP, esz(m), m->kw);
		fprintf(o, "static void rt_send_map%d(void)\n{\n"
			   "\tukpa_script_send(UKP_SCRIPT_CLEAR, %d, 0, 0);\n"
			   "\trt_each_map%d(rt_dump%d, 0);\n}\n", i, i, i, i);
		fprintf(o, "static void __attribute__((unused)) rt_print_map%d(void)\n{\n"
			   "\trt_send_map%d();\n\tukpa_script_send(UKP_SCRIPT_PRINT, %d, 0, 0);\n}\n",
			i, i, i);
		fprintf(o, "static void __attribute__((unused)) rt_clear_map%d(int zero)\n{\n"
			   "\trt_each_map%d(rt_clear%d, zero);\n}\n", i, i, i);
	}
}

static void blocks(struct gen *g)
{
	const struct script *sc = g->sc;
	FILE *o = g->out;
	int i, j;

	for (i = 0; i < sc->nblocks; i++) {
		const struct block *b = &sc->blocks[i];

		g->init = b->init;
		fprintf(o, "static inline __attribute__((always_inline)) void blk%d(struct rt_ctx *c)\n{\n", i);
		for (j = 0; j < b->nvars; j++)
			if (b->vtypes[j] == TY_STR)
				fprintf(o, "\tstruct rt_str v_%s = rt_lit(\"\");\n", b->vars[j]);
			else
				fprintf(o, "\tint64_t v_%s = 0;\n", b->vars[j]);
		fputs("\t(void)c;\n", o);
		if (b->pred) {
			fputs("\tif (!(", o);
			expr(g, b->pred);
			fputs("))\n\t\treturn;\n", o);
		}
		stmts(g, b->body->a);
		fputs("}\n", o);
	}
}

static void handlers(struct gen *g)
{
	const struct script *sc = g->sc;
	FILE *o = g->out;
	int i, j, n = sc->nspecs + 1;

	for (i = 0; i < sc->nprobes; i++) {
		const struct probe *p = &sc->probes[i];

		if (p->type == P_UPROBE || p->type == P_USDT)
			fprintf(o, "static int kp%d(struct kprobe *kp, struct pt_regs *regs)\n{\n"
				   "\tstruct rt_ctx c;\n\tchar *T = ukpa_script_thread();\n\n"
				   "\tif (!T || rt_stopped)\n\t\treturn 0;\n"
				   "\tc.T = T;\n\tc.regs = regs;\n\tc.kp = kp;\n\tc.ret = 0;\n"
				   "\tc.retaddr = 0;\n"
				   "\tc.init = 0;\n\tc.probe = %d;\n\tblk%d(&c);\n\treturn 0;\n}\n",
				p->spec, i, p->block);
		else if (p->type == P_URETPROBE)
			fprintf(o, "static int rp%d(struct kretprobe_instance *ri, struct pt_regs *regs)\n{\n"
				   "\tstruct rt_ctx c;\n\tstruct kretprobe *rp;\n"
				   "\tchar *T = ukpa_script_thread();\n\n"
				   "\tif (!T || rt_stopped || !(rp = get_kretprobe(ri)))\n\t\treturn 0;\n"
				   "\tc.T = T;\n\tc.regs = regs;\n\tc.kp = &rp->kp;\n\tc.ret = 1;\n"
				   "\tc.retaddr = (uint64_t)(uintptr_t)ri->ret_addr;\n"
				   "\tc.init = 0;\n\tc.probe = %d;\n\tblk%d(&c);\n\treturn 0;\n}\n",
				p->spec, i, p->block);
	}
	/* by the agent's SPEC index: the SPECs' copies (an inlined
	 * function's, args) run their original's handler */
	if (sc->origin)
		n = sc->norigin + 1;
	fprintf(o, "static int (*const kps[%d])(struct kprobe *, struct pt_regs *) = {\n", n);
	for (j = 0; j < n - 1; j++)
		for (i = 0; i < sc->nprobes; i++)
			if ((sc->probes[i].type == P_UPROBE || sc->probes[i].type == P_USDT) &&
			    sc->probes[i].spec == (sc->origin ? sc->origin[j] : j))
				fprintf(o, "\t[%d] = kp%d,\n", j, sc->probes[i].spec);
	fputs("};\n", o);
	fprintf(o, "static int (*const rps[%d])(struct kretprobe_instance *, struct pt_regs *) = {\n", n);
	for (j = 0; j < n - 1; j++)
		for (i = 0; i < sc->nprobes; i++)
			if (sc->probes[i].type == P_URETPROBE &&
			    sc->probes[i].spec == (sc->origin ? sc->origin[j] : j))
				fprintf(o, "\t[%d] = rp%d,\n", j, sc->probes[i].spec);
	fputs("};\n", o);
	/* BEGIN, END: the init block as the thread's */
	fputs("static void __attribute__((unused)) init_ctx(struct rt_ctx *c, uint32_t probe)\n{\n"
	      "\tc->T = (char *)rt_init_block;\n\tc->regs = 0;\n\tc->kp = 0;\n\tc->ret = 0;\n"
	      "\tc->retaddr = 0;\n"
	      "\tc->init = 1;\n\tc->probe = probe;\n}\n", o);
	/* [init] the process's builtins: in every image (-f) */
	fputs("static void setup(void)\n{\n"
	      "\tstruct ukp_script_thread *t = (struct ukp_script_thread *)(void *)rt_init_block;\n\n"
	      "\trt_pid = getpid();\n\tt->tid = (int32_t)rt_pid;\n"
	      "\trt_sys(SYS_prctl, 16 /* PR_GET_NAME */, (long)t->comm, 0);\n}\n", o);
	fputs("static void begin(void)\n{\n\tstruct rt_ctx c;\n\n"
	      "\trt_t0 = rt_nsecs();\n\tsetup();\n\t(void)c;\n", o);
	for (i = 0; i < sc->nprobes; i++)
		if (sc->probes[i].type == P_BEGIN)
			fprintf(o, "\tinit_ctx(&c, %d);\n\tblk%d(&c);\n", i, sc->probes[i].block);
	fputs("}\n", o);
	/* every map's entries: added to those of the other processes (-p,
	 * -f) */
	fputs("static void dump(void)\n{\n", o);
	for (i = 0; i < sc->nmaps; i++)
		fprintf(o, "\trt_each_map%d(rt_dump%d, 0);\n", i, i);
	fputs("}\n", o);
	/* [init] a forked child (-f): its own pid, its own maps (the
	 * parent's entries are the parent's to print); the agent gives its
	 * threads new blocks */
	fputs("static void after_fork(void)\n{\n"
	      "\trt_zero(rt_init_block, sizeof(rt_init_block));\n\tsetup();\n", o);
	for (i = 0; i < sc->nmaps; i++)
		if (sc->maps[i]->global)
			fprintf(o, "\trt_zero(g_map%d, sizeof(g_map%d));\n", i, i);
	fputs("}\n", o);
	fputs("static void end(void)\n{\n\tstruct rt_ctx c;\n\n\t(void)c;\n\trt_stopped = 0;\n", o);
	for (i = 0; i < sc->nprobes; i++)
		if (sc->probes[i].type == P_END)
			fprintf(o, "\tinit_ctx(&c, %d);\n\tblk%d(&c);\n", i, sc->probes[i].block);
	fputs("\trt_stopped = 1;\n\tdump();\n}\n", o);
	/* interval probes, on the agent's timer thread */
	fputs("static const uint32_t interval_ms[] = {", o);
	for (i = 0; i < sc->nprobes; i++)
		if (sc->probes[i].type == P_INTERVAL)
			fprintf(o, " %u,", sc->probes[i].ms);
	fputs(" 0 };\nstatic void interval(uint32_t i)\n{\n\tstruct rt_ctx c;\n\n"
	      "\tif (rt_stopped)\n\t\treturn;\n\tswitch (i) {\n", o);
	for (i = 0, j = 0; i < sc->nprobes; i++)
		if (sc->probes[i].type == P_INTERVAL)
			fprintf(o, "\tcase %d:\n\t\tinit_ctx(&c, %d);\n\t\tblk%d(&c);\n\t\tbreak;\n",
				j++, i, sc->probes[i].block);
	fputs("\tdefault:\n\t\t(void)c;\n\t}\n}\n", o);
	fprintf(o, "__attribute__((visibility(\"default\"))) const struct ukp_script_desc ukp_script = {\n"
		   "\t.abi = UKP_SCRIPT_ABI,\n\t.nspecs = %d,\n\t.thread_bytes = THREAD_BYTES,\n"
		   "\t.out_max = %d,\n\t.flags = %s,\n\t.kp = kps,\n\t.rp = rps,\n\t.begin = begin,\n\t.end = end,\n"
		   "\t.nintervals = %d,\n\t.interval_ms = interval_ms,\n\t.interval = interval,\n"
		   "\t.setup = setup,\n\t.dump = dump,\n\t.after_fork = after_fork,\n};\n",
		sc->origin ? sc->norigin : sc->nspecs, sc->out_max,
		sc->has_exit ? "UKP_SCRIPT_F_EXIT" : "0", j);
}

int script_gen(const struct script *sc, FILE *out)
{
	struct gen g = { .sc = sc, .out = out };

	fprintf(out, "/* generated by ukprobe run */\n#define USTACK_REC %d\n#include \"runtime.h\"\n\n",
		USTACK_REC);
	maps(&g);
	blocks(&g);
	handlers(&g);
	return ferror(out) ? -1 : 0;
}
