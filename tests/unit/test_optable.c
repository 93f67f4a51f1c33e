/*
 * test_optable.c - the columns of ir/ops.def agree with each other and with
 * what the code does with them.
 *
 * - emit: every row names an emitter in range; the RL_OPF_INDEXF rows (and
 *   only they) go to emit_index.c, every other row to its family's emitter
 *   or none; rl_emit_c_supports() is exactly "has an emitter", and so is
 *   the list `rlopt ops` prints for the C target.
 * - fold: an elementwise op the scalar table computes (CALC) is computed on
 *   constants (EVAL or FOLD), FOLD only for such ops; and on constant
 *   float inputs, shape inference evaluates an elementwise op exactly when
 *   its column says EVAL (the column gates ir/eval.c).
 * - tc: for every row with a class, inference refuses input 0 of a dtype
 *   outside it, naming input 0 (the column gates ir/infer.c's check).
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backends/c/emit.h"
#include "ir.h"
#include "scalar.h"
#include "testutil.h"

/* the emitter of family f (RL_FAMILIES gives both enums in one order) */
static enum rl_emitter family_emitter(enum rl_family f)
{
	static const enum rl_emitter e[RL_FAM_COUNT_] = {
#define X(E, file, name) [RL_FAM_##E] = RL_EMIT_##E,
		RL_FAMILIES(X)
#undef X
	};
	return e[f];
}

Test(optable, emit_column)
{
	for (int op = 0; op < RL_OP_COUNT_; op++) {
		const struct rl_op_info *oi = &rl_op_table[op];
		cr_expect(oi->emit < RL_EMIT_COUNT_, "%s: emit out of range", oi->name);
		bool indexf = oi->flags & RL_OPF_INDEXF;
		cr_expect_eq(oi->emit == RL_EMIT_INDEX, indexf,
		             "%s: emit INDEX exactly for the RL_OPF_INDEXF rows", oi->name);
		if (!indexf)
			cr_expect(oi->emit == RL_EMIT_NONE || oi->emit == family_emitter(oi->family),
			          "%s: emitter %d is not its family's (%s)", oi->name, (int)oi->emit,
			          rl_family_name(oi->family));
		cr_expect_eq(rl_emit_c_supports((enum rl_op)op), oi->emit != RL_EMIT_NONE,
		             "%s: rl_emit_c_supports disagrees with the emit column", oi->name);
	}
	cr_expect(!rl_emit_c_supports(RL_OP_COUNT_));
}

/* `rlopt ops` lists an op for the C target exactly when it has an emitter
 * (but QuantMatMul, which the quantize pass makes and no model holds) */
Test(optable, rlopt_ops_lists_the_emit_column)
{
	char *dir = tu_tmpdir();
	char out[4096];
	snprintf(out, sizeof(out), "%s/ops.txt", dir);
	cr_assert_eq(tu_sh("'%s' ops --target c > '%s' 2>&1", RL_EXE, out), 0);
	FILE *f = fopen(out, "r");
	cr_assert(f);
	bool listed[RL_OP_COUNT_] = {false};
	char line[512];
	while (fgets(line, sizeof(line), f)) {
		/* "[domain:]Name[ # note]" */
		char *nm = strrchr(line, ':') && !strchr(line, '#') ? strrchr(line, ':') + 1 : line;
		if (strchr(line, '#') && strchr(line, ':') && strchr(line, ':') < strchr(line, '#'))
			nm = strchr(line, ':') + 1;
		nm[strcspn(nm, " \t\n#")] = 0;
		for (int op = 0; op < RL_OP_COUNT_; op++)
			if (!strcmp(nm, rl_op_table[op].name))
				listed[op] = true;
	}
	fclose(f);
	for (int op = 0; op < RL_OP_COUNT_; op++) {
		const struct rl_op_info *oi = &rl_op_table[op];
		bool want = oi->emit != RL_EMIT_NONE && op != RL_OP_QuantMatMul;
		cr_expect_eq(listed[op], want, "%s: `rlopt ops` %s it", oi->name,
		             listed[op] ? "lists" : "does not list");
	}
	tu_rmtree(dir);
	free(dir);
}

Test(optable, fold_column_and_scalar_table)
{
	for (int op = 0; op < RL_OP_COUNT_; op++) {
		const struct rl_op_info *oi = &rl_op_table[op];
		const struct rl_scalar_info *si = rl_scalar_info((enum rl_op)op);
		bool calc = si && (si->flags & RL_SCF_CALC);
		if (calc)
			cr_expect(oi->fold != RL_FOLD_NO, "%s: the scalar table computes it, fold NO",
			          oi->name);
		if (oi->fold == RL_FOLD_FOLD)
			cr_expect(calc, "%s: fold FOLD without a CALC row in scalar.def", oi->name);
	}
}

/* An elementwise op on constant float32 inputs: is its output known after
 * shape inference? */
static bool evaluated(enum rl_op op, bool *inferred)
{
	static const float xv[3] = {0.25f, 0.5f, 0.75f}, yv[3] = {1.5f, 2.0f, 3.0f};
	struct rl_graph *g = tu_graph_new(21, "optable.onnx");
	uint32_t a = tu_const(g, "a", RL_DT_FLOAT, TU_SHAPE(1, 3), xv);
	uint32_t b = tu_const(g, "b", RL_DT_FLOAT, TU_SHAPE(1, 3), yv);
	unsigned fl = rl_op_table[op].flags;
	uint32_t nd = fl & RL_OPF_UNARY ? tu_add(g, op, "n", 1, 1, a) : tu_add(g, op, "n", 1, 2, a, b);
	if (op == RL_OP_Mod)
		tu_attr_i(g, nd, "fmod", 1); /* float Mod needs fmod=1 */
	*inferred = rl_graph_infer(g) == RL_OK;
	bool known = *inferred && (tu_out(g, nd, 0)->flags & RL_VAL_CONST);
	rl_graph_free(g);
	return known;
}

Test(optable, fold_column_gates_evaluation)
{
	int checked = 0;
	for (int op = 0; op < RL_OP_COUNT_; op++) {
		const struct rl_op_info *oi = &rl_op_table[op];
		const struct rl_scalar_info *si = rl_scalar_info((enum rl_op)op);
		/* the ops the scalar table computes on floats, of one or two inputs */
		if (oi->family != RL_FAM_ELEMWISE || !si || !(si->flags & RL_SCF_CALC) ||
		    !(si->flags & RL_SCF_F) ||
		    !(oi->flags & (RL_OPF_UNARY | RL_OPF_BINARY | RL_OPF_VARIADIC)) ||
		    oi->tc == RL_TC_INT || oi->tc == RL_TC_UINT || oi->tc == RL_TC_BOOL ||
		    oi->tc == RL_TC_INDEX)
			continue;
		bool inferred;
		bool known = evaluated((enum rl_op)op, &inferred);
		cr_expect(inferred, "%s: does not infer on float32 [3]", oi->name);
		cr_expect_eq(known, oi->fold == RL_FOLD_EVAL,
		             "%s: fold %d, but inference %s its constant output", oi->name,
		             (int)oi->fold, known ? "evaluated" : "did not evaluate");
		checked++;
	}
	cr_expect_gt(checked, 40, "only %d elementwise ops checked", checked);
}

/* A dtype outside class tc. */
static enum rl_dtype outside(enum rl_tc tc)
{
	switch (tc) {
	case RL_TC_NUM: return RL_DT_BOOL;
	case RL_TC_NUMBOOL: return RL_DT_STRING;
	case RL_TC_FLOAT: return RL_DT_INT32;
	case RL_TC_SIGNED: return RL_DT_UINT8;
	case RL_TC_INT: return RL_DT_FLOAT;
	case RL_TC_UINT: return RL_DT_INT8;
	case RL_TC_BOOL: return RL_DT_FLOAT;
	case RL_TC_INDEX: return RL_DT_FLOAT;
	case RL_TC_ANY: break;
	}
	return RL_DT_UNDEFINED;
}

Test(optable, tc_column_is_checked)
{
	int checked = 0;
	for (int op = 0; op < RL_OP_COUNT_; op++) {
		const struct rl_op_info *oi = &rl_op_table[op];
		if (oi->tc == RL_TC_ANY || oi->in_min < 1)
			continue;
		struct rl_graph *g = tu_graph_new(21, "optable.onnx");
		uint32_t in[8];
		in[0] = tu_input(g, "x", outside(oi->tc), TU_SHAPE(2, 2, 3));
		for (int i = 1; i < oi->in_min && i < 8; i++) {
			char nm[16];
			snprintf(nm, sizeof(nm), "i%d", i);
			in[i] = tu_input(g, nm, RL_DT_FLOAT, TU_SHAPE(2, 2, 3));
		}
		int nin = oi->in_min < 8 ? oi->in_min : 8;
		uint32_t node;
		tu_add_flow(g, (enum rl_op)op, in, nin, oi->out_min, &node);
		if (rl_op_domain((enum rl_op)op)[0])
			g->nodes[node].domain = rl_op_domain((enum rl_op)op);
		enum rl_status st = rl_graph_infer(g);
		cr_expect_neq(st, RL_OK, "%s: input 0 of %s accepted", oi->name,
		              rl_dtype_name(outside(oi->tc)));
		cr_expect(st == RL_OK || strstr(g->err, "input 0"), "%s: %s", oi->name, g->err);
		rl_graph_free(g);
		checked++;
	}
	cr_expect_gt(checked, 60, "only %d ops checked", checked);
}
