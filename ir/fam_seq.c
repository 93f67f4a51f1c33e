/*
 * fam_seq.c - shape and dtype inference, FLOPs and bytes for the recurrent
 * and signal family: RNN, GRU, LSTM, DFT, STFT, Det, TfIdfVectorizer, and
 * the small ops of other domains that share its emitter: Binarizer,
 * ArrayFeatureExtractor, TreeEnsemble (ai.onnx.ml) and the optimizer
 * updates Adagrad, Adam, Momentum (ai.onnx.preview.training).
 *
 * Recurrent layers follow the ONNX spec: X is (seq, batch, input) with
 * layout 0 and (batch, seq, input) with layout 1; W is (dirs, G*H, input),
 * R (dirs, G*H, H) with G = 1, 3, 4 gates for RNN, GRU, LSTM and dirs 2 for
 * direction "bidirectional", else 1. Y is (seq, dirs, batch, H) or (batch,
 * seq, dirs, H); Y_h and Y_c are (dirs, batch, H) or (batch, dirs, H).
 *
 * DFT keeps the input's rank: the last axis (1 real, 2 complex) becomes 2,
 * except an inverse one-sided transform (irfft), which gives a real last
 * axis of 1. Along the transformed axis the length is dft_length (default:
 * the input's length, or 2 * (n - 1) for irfft), halved plus one for a
 * forward one-sided one. The axis is an attribute (default 1) before opset
 * 20 and an input (default -2) from 20 on; a length or axis that is not a
 * constant leaves the dims it could change to unk_* symbols, which the
 * model's declared output fixes. STFT gives (batch, frames, bins, 2) with
 * frames = 1 + (len - L) / step and bins = L / 2 + 1 one-sided (else L),
 * L the window's length or frame_length.
 */
#include "infer_impl.h"

#include <string.h>

/* ---- RNN, GRU, LSTM ------------------------------------------------------ */

/* Gates per op: RNN 1, GRU 3, LSTM 4. */
static int rnn_gates(enum rl_op op)
{
	return op == RL_OP_LSTM ? 4 : op == RL_OP_GRU ? 3 : 1;
}

static enum rl_status infer_rnn(struct rl_graph *g, uint32_t node)
{
	struct rl_node *n = &g->nodes[node];
	struct rl_value *x = rl_infer_in(g, n, 0), *w = rl_infer_in(g, n, 1), *r = rl_infer_in(g, n, 2);
	enum rl_status st = rl_infer_dtype_in(g, node, 0, RL_TC_FLOAT);
	for (int i = 1; st == RL_OK && i < n->nin; i++)
		if (i != 4)
			st = rl_infer_dtype_same(g, node, 0, i);
	if (st == RL_OK && rl_node_in(n, 4) != RL_NONE && g->values[n->in[4]].dtype != RL_DT_INT32)
		return rl_graph_error(g, n, RL_ERR_SHAPE, "sequence_lens must be int32, not %s",
		                      rl_dtype_name(g->values[n->in[4]].dtype));
	if (st != RL_OK)
		return st;
	const char *dir = rl_node_attr_str(n, "direction", "forward");
	int dirs = strcmp(dir, "bidirectional") == 0 ? 2 : 1;
	if (dirs == 1 && strcmp(dir, "forward") != 0 && strcmp(dir, "reverse") != 0)
		return rl_graph_error(g, n, RL_ERR_UNSUPPORTED,
		                      "direction '%s' is not forward, reverse or bidirectional", dir);
	int64_t layout = rl_node_attr_int(n, "layout", 0);
	if (layout != 0 && layout != 1)
		return rl_graph_error(g, n, RL_ERR_UNSUPPORTED, "layout %lld is not 0 or 1",
		                      (long long)layout);
	char b1[RL_SSTR], b2[RL_SSTR];
	if (x->shape.rank >= 0 && x->shape.rank != 3)
		return rl_graph_error(g, n, RL_ERR_SHAPE, "X %s must have rank 3", rl_sstr(&x->shape, b1));
	if ((w->shape.rank >= 0 && w->shape.rank != 3) || (r->shape.rank >= 0 && r->shape.rank != 3))
		return rl_graph_error(g, n, RL_ERR_SHAPE, "W %s and R %s must have rank 3",
		                      rl_sstr(&w->shape, b1), rl_sstr(&r->shape, b2));
	struct rl_dim hid = rl_dim_num(rl_node_attr_int(n, "hidden_size", -1));
	if (hid.v < 0)
		hid = r->shape.rank == 3 ? r->shape.d[2] : rl_dim_unk(g, node, 0, 3);
	int gates = rnn_gates(n->op);
	if (w->shape.rank == 3 && (rl_dim_differ(w->shape.d[0], rl_dim_num(dirs)) ||
	                           (hid.v >= 0 && rl_dim_differ(w->shape.d[1], rl_dim_num(gates * hid.v))) ||
	                           (x->shape.rank == 3 && rl_dim_differ(w->shape.d[2], x->shape.d[2]))))
		return rl_graph_error(g, n, RL_ERR_SHAPE,
		                      "W %s must be (%d, %d*hidden_size, input_size) for X %s", rl_sstr(&w->shape, b1),
		                      dirs, gates, rl_sstr(&x->shape, b2));
	if (r->shape.rank == 3 && hid.v >= 0 && rl_dim_differ(r->shape.d[2], hid))
		return rl_graph_error(g, n, RL_ERR_SHAPE, "R %s must be (%d, %d*%lld, %lld)",
		                      rl_sstr(&r->shape, b1), dirs, gates, (long long)hid.v, (long long)hid.v);
	struct rl_dim seq = x->shape.rank == 3 ? x->shape.d[layout ? 1 : 0] : rl_dim_unk(g, node, 0, 0);
	struct rl_dim bat = x->shape.rank == 3 ? x->shape.d[layout ? 0 : 1] : rl_dim_unk(g, node, 0, 1);
	struct rl_shape y = {.rank = 4}, yh = {.rank = 3};
	if (layout == 0) {
		y.d[0] = seq, y.d[1] = rl_dim_num(dirs), y.d[2] = bat, y.d[3] = hid;
		yh.d[0] = rl_dim_num(dirs), yh.d[1] = bat, yh.d[2] = hid;
	} else {
		y.d[0] = bat, y.d[1] = seq, y.d[2] = rl_dim_num(dirs), y.d[3] = hid;
		yh.d[0] = bat, yh.d[1] = rl_dim_num(dirs), yh.d[2] = hid;
	}
	st = rl_infer_set(g, node, 0, x->dtype, &y);
	for (int k = 1; st == RL_OK && k < n->nout; k++)
		st = rl_infer_set(g, node, k, x->dtype, &yh);
	return st;
}

/* ---- DFT, STFT ------------------------------------------------------------ */

static bool const_int(struct rl_graph *g, uint32_t v, int64_t *out)
{
	if (v == RL_NONE || !rl_value_is_const(g, v) || !g->values[v].data ||
	    rl_shape_numel(&g->values[v].shape) != 1)
		return false;
	*out = rl_value_get_int(g, v, 0);
	return true;
}

static enum rl_status infer_dft(struct rl_graph *g, uint32_t node)
{
	struct rl_node *n = &g->nodes[node];
	struct rl_value *x = rl_infer_in(g, n, 0);
	enum rl_status st = rl_infer_dtype_in(g, node, 0, RL_TC_FLOAT);
	if (st == RL_OK)
		st = rl_infer_dtype_in(g, node, 1, RL_TC_INDEX);
	if (st == RL_OK && n->opset >= 20)
		st = rl_infer_dtype_in(g, node, 2, RL_TC_INDEX);
	if (st != RL_OK)
		return st;
	if (n->opset < 20 && n->nin > 2)
		return rl_graph_error(g, n, RL_ERR_INVALID, "has %d inputs; DFT-%d takes 1 to 2",
		                      n->nin, n->opset);
	int rank = x->shape.rank;
	char b[RL_SSTR];
	if (rank < 0)
		return rl_infer_set(g, node, 0, x->dtype, &x->shape);
	if (rank < 2 || (x->shape.d[rank - 1].v >= 0 && x->shape.d[rank - 1].v != 1 &&
	                 x->shape.d[rank - 1].v != 2))
		return rl_graph_error(g, n, RL_ERR_SHAPE,
		                      "input %s must end in an axis of 1 (real) or 2 (complex)",
		                      rl_sstr(&x->shape, b));
	bool inv = rl_node_attr_int(n, "inverse", 0) != 0;
	bool one = rl_node_attr_int(n, "onesided", 0) != 0;
	int64_t a = 1;
	bool axis_known = true;
	if (n->opset >= 20) {
		a = -2;
		if (rl_node_in(n, 2) != RL_NONE)
			axis_known = const_int(g, n->in[2], &a);
	} else {
		a = rl_node_attr_int(n, "axis", 1);
	}
	int ax = -1;
	if (axis_known) {
		if (!rl_axis_norm(a, rank, false, &ax) || ax == rank - 1)
			return rl_graph_error(g, n, RL_ERR_SHAPE, "axis %lld is not an axis of input %s "
			                      "before its last", (long long)a, rl_sstr(&x->shape, b));
	}
	int64_t len = -1;
	bool len_known = true;
	if (rl_node_in(n, 1) != RL_NONE) {
		len_known = const_int(g, n->in[1], &len);
		if (len_known && len < 1)
			return rl_graph_error(g, n, RL_ERR_SHAPE, "dft_length %lld is not positive",
			                      (long long)len);
	}
	struct rl_shape y = x->shape;
	y.d[rank - 1] = rl_dim_num(inv && one ? 1 : 2);
	for (int d = 0; d < rank - 1; d++) {
		if (axis_known && d != ax)
			continue;
		if (!axis_known && !one && rl_node_in(n, 1) == RL_NONE)
			continue; /* no axis changes length */
		struct rl_dim in = x->shape.d[d];
		if (!axis_known || !len_known || in.v < 0) {
			if (!(len_known && len < 0 && !one)) /* default length: same dim */
				y.d[d] = rl_dim_unk(g, node, 0, d);
			continue;
		}
		int64_t L = len >= 0 ? len : inv && one ? 2 * (in.v - 1) : in.v;
		if (L < 1)
			return rl_graph_error(g, n, RL_ERR_SHAPE, "input %s gives a DFT length of %lld",
			                      rl_sstr(&x->shape, b), (long long)L);
		y.d[d] = rl_dim_num(one && !inv ? L / 2 + 1 : L);
	}
	return rl_infer_set(g, node, 0, x->dtype, &y);
}

static enum rl_status infer_stft(struct rl_graph *g, uint32_t node)
{
	struct rl_node *n = &g->nodes[node];
	struct rl_value *x = rl_infer_in(g, n, 0), *win = rl_infer_in(g, n, 2);
	enum rl_status st = rl_infer_dtype_in(g, node, 0, RL_TC_FLOAT);
	if (st == RL_OK)
		st = rl_infer_dtype_in(g, node, 1, RL_TC_INDEX);
	if (st == RL_OK)
		st = rl_infer_dtype_same(g, node, 0, 2);
	if (st == RL_OK)
		st = rl_infer_dtype_in(g, node, 3, RL_TC_INDEX);
	if (st != RL_OK)
		return st;
	char b[RL_SSTR];
	const struct rl_shape *sx = &x->shape;
	if (sx->rank >= 0 && (sx->rank != 3 || (sx->d[2].v >= 0 && sx->d[2].v != 1 && sx->d[2].v != 2)))
		return rl_graph_error(g, n, RL_ERR_SHAPE, "signal %s must be (batch, length, 1 or 2)",
		                      rl_sstr(sx, b));
	if (win && win->shape.rank >= 0 && win->shape.rank != 1)
		return rl_graph_error(g, n, RL_ERR_SHAPE, "window %s must have rank 1",
		                      rl_sstr(&win->shape, b));
	int64_t L = -1, step = -1;
	if (!const_int(g, rl_node_in(n, 3), &L) && win && win->shape.rank == 1)
		L = win->shape.d[0].v;
	if (L < 0 && !win && rl_node_in(n, 3) == RL_NONE && sx->rank == 3)
		L = sx->d[1].v; /* the whole signal is one frame */
	const_int(g, rl_node_in(n, 1), &step);
	bool one = rl_node_attr_int(n, "onesided", 1) != 0;
	struct rl_shape y = {.rank = 4};
	y.d[0] = sx->rank == 3 ? sx->d[0] : rl_dim_unk(g, node, 0, 0);
	if (L > 0 && step > 0 && sx->rank == 3 && sx->d[1].v >= L)
		y.d[1] = rl_dim_num(1 + (sx->d[1].v - L) / step);
	else
		y.d[1] = rl_dim_unk(g, node, 0, 1);
	y.d[2] = L > 0 ? rl_dim_num(one ? L / 2 + 1 : L) : rl_dim_unk(g, node, 0, 2);
	y.d[3] = rl_dim_num(2);
	return rl_infer_set(g, node, 0, x->dtype, &y);
}

/* ---- Det, TfIdfVectorizer ------------------------------------------------ */

static enum rl_status infer_det(struct rl_graph *g, uint32_t node)
{
	struct rl_node *n = &g->nodes[node];
	struct rl_value *x = rl_infer_in(g, n, 0);
	enum rl_status st = rl_infer_dtype_in(g, node, 0, RL_TC_FLOAT);
	if (st != RL_OK)
		return st;
	char b[RL_SSTR];
	int r = x->shape.rank;
	if (r >= 0 && (r < 2 || rl_dim_differ(x->shape.d[r - 1], x->shape.d[r - 2])))
		return rl_graph_error(g, n, RL_ERR_SHAPE, "input %s must be (..., M, M)",
		                      rl_sstr(&x->shape, b));
	struct rl_shape y = x->shape;
	y.rank = r >= 2 ? r - 2 : -1;
	return rl_infer_set(g, node, 0, x->dtype, &y);
}

static enum rl_status infer_tfidf(struct rl_graph *g, uint32_t node)
{
	struct rl_node *n = &g->nodes[node];
	struct rl_value *x = rl_infer_in(g, n, 0);
	if (x->dtype != RL_DT_INT32 && x->dtype != RL_DT_INT64)
		return rl_graph_error(g, n, RL_ERR_UNSUPPORTED,
		                      "input of %s is not supported (int32 and int64 are)",
		                      rl_dtype_name(x->dtype));
	const int64_t *idx;
	int ni = rl_node_attr_ints(n, "ngram_indexes", &idx);
	int64_t size = 0;
	for (int i = 0; i < ni; i++) {
		if (idx[i] < 0)
			return rl_graph_error(g, n, RL_ERR_SHAPE, "ngram_indexes holds %lld",
			                      (long long)idx[i]);
		if (idx[i] + 1 > size)
			size = idx[i] + 1;
	}
	char b[RL_SSTR];
	if (x->shape.rank > 2)
		return rl_graph_error(g, n, RL_ERR_SHAPE, "input %s must be (C) or (B, C)",
		                      rl_sstr(&x->shape, b));
	struct rl_shape y = {.rank = x->shape.rank == 2 ? 2 : 1};
	if (y.rank == 2)
		y.d[0] = x->shape.d[0];
	y.d[y.rank - 1] = rl_dim_num(size);
	return rl_infer_set(g, node, 0, RL_DT_FLOAT, &y);
}

/* ---- ai.onnx.ml ----------------------------------------------------------- */

static enum rl_status infer_ml(struct rl_graph *g, uint32_t node)
{
	struct rl_node *n = &g->nodes[node];
	struct rl_value *x = rl_infer_in(g, n, 0);
	char b[RL_SSTR];
	enum rl_status st = rl_infer_dtype_in(g, node, 0, RL_TC_NUM);
	if (st != RL_OK)
		return st;
	switch (n->op) {
	case RL_OP_Binarizer:
		return rl_infer_set(g, node, 0, x->dtype, &x->shape);
	case RL_OP_ArrayFeatureExtractor: {
		struct rl_value *ind = rl_infer_in(g, n, 1);
		if (ind->dtype != RL_DT_INT64)
			return rl_graph_error(g, n, RL_ERR_SHAPE, "indices must be int64, not %s",
			                      rl_dtype_name(ind->dtype));
		if (x->shape.rank == 0)
			return rl_graph_error(g, n, RL_ERR_SHAPE, "input must not be a scalar");
		struct rl_shape y = x->shape;
		if (y.rank < 0)
			return rl_infer_set(g, node, 0, x->dtype, &y);
		if (y.rank == 1) {
			y.rank = 2;
			y.d[0] = rl_dim_num(1);
		}
		int64_t k = rl_shape_numel(&ind->shape);
		y.d[y.rank - 1] = k >= 0 ? rl_dim_num(k) : rl_dim_unk(g, node, 0, y.rank - 1);
		return rl_infer_set(g, node, 0, x->dtype, &y);
	}
	case RL_OP_TreeEnsemble: {
		if (x->shape.rank >= 0 && x->shape.rank != 2)
			return rl_graph_error(g, n, RL_ERR_SHAPE, "input %s must be (N, F)",
			                      rl_sstr(&x->shape, b));
		int64_t nt = rl_node_attr_int(n, "n_targets", -1);
		if (nt < 1)
			return rl_graph_error(g, n, RL_ERR_INVALID, "attribute n_targets is missing or < 1");
		struct rl_shape y = {.rank = 2};
		y.d[0] = x->shape.rank == 2 ? x->shape.d[0] : rl_dim_unk(g, node, 0, 0);
		y.d[1] = rl_dim_num(nt);
		if (!rl_dtype_is_float(x->dtype))
			return rl_graph_error(g, n, RL_ERR_UNSUPPORTED, "input of %s is not supported "
			                      "(floating-point inputs are)", rl_dtype_name(x->dtype));
		return rl_infer_set(g, node, 0, x->dtype, &y);
	}
	default:
		return RL_OK;
	}
}

/* ---- Adagrad, Adam, Momentum ---------------------------------------------- */

/* Tensors per optimized input: X, G, H (Adagrad); X, G, V, H (Adam);
 * X, G, V (Momentum). Outputs per input: 2, 3, 2. */
static int optim_per(enum rl_op op)
{
	return op == RL_OP_Adam ? 4 : 3;
}

static enum rl_status infer_optim(struct rl_graph *g, uint32_t node)
{
	struct rl_node *n = &g->nodes[node];
	int per = optim_per(n->op), outs = per - 1;
	int cnt = (n->nin - 2) / per;
	if (cnt < 1 || 2 + cnt * per != n->nin || n->nout != cnt * outs)
		return rl_graph_error(g, n, RL_ERR_INVALID, "has %d inputs and %d outputs; %s takes 2 + "
		                      "%d*n inputs and gives %d*n outputs", n->nin, n->nout,
		                      rl_op_table[n->op].name, per, outs);
	enum rl_status st = rl_infer_dtype_in(g, node, 0, RL_TC_FLOAT);
	if (st == RL_OK)
		st = rl_infer_dtype_in(g, node, 1, RL_TC_INDEX);
	for (int i = 0; st == RL_OK && i < cnt; i++) {
		const struct rl_shape *sx = &g->values[n->in[2 + i]].shape;
		char b1[RL_SSTR], b2[RL_SSTR];
		for (int k = 1; k < per; k++) {
			uint32_t v = rl_node_in(n, 2 + k * cnt + i);
			if (v == RL_NONE)
				return rl_graph_error(g, n, RL_ERR_INVALID, "input %d is missing",
				                      2 + k * cnt + i);
			st = rl_infer_dtype_in(g, node, 2 + k * cnt + i, RL_TC_FLOAT);
			if (st != RL_OK)
				return st;
			const struct rl_shape *s = &g->values[v].shape;
			bool same = s->rank == sx->rank;
			for (int d = 0; same && d < s->rank; d++)
				same = !rl_dim_differ(s->d[d], sx->d[d]);
			if (!same && s->rank >= 0 && sx->rank >= 0)
				return rl_graph_error(g, n, RL_ERR_SHAPE, "input %d %s does not match X %s",
				                      2 + k * cnt + i, rl_sstr(s, b1), rl_sstr(sx, b2));
		}
		for (int k = 0; st == RL_OK && k < outs; k++)
			st = rl_infer_set(g, node, k * cnt + i, g->values[n->in[2 + i]].dtype, sx);
	}
	return st;
}

enum rl_status rl_infer_seq(struct rl_graph *g, uint32_t node)
{
	switch (g->nodes[node].op) {
	case RL_OP_RNN:
	case RL_OP_GRU:
	case RL_OP_LSTM:
		return infer_rnn(g, node);
	case RL_OP_DFT: return infer_dft(g, node);
	case RL_OP_STFT: return infer_stft(g, node);
	case RL_OP_Det: return infer_det(g, node);
	case RL_OP_TfIdfVectorizer: return infer_tfidf(g, node);
	case RL_OP_Binarizer:
	case RL_OP_ArrayFeatureExtractor:
	case RL_OP_TreeEnsemble:
		return infer_ml(g, node);
	case RL_OP_Adagrad:
	case RL_OP_Adam:
	case RL_OP_Momentum:
		return infer_optim(g, node);
	default:
		return rl_graph_error(g, &g->nodes[node], RL_ERR_UNSUPPORTED,
		                      "no shape rule for this operator");
	}
}

/* ---- cost ---------------------------------------------------------------- */
/*
 * With T = RL_FLOPS_TRANS, S steps, B batch, I input size, H hidden, D
 * directions, G gates (RNN 1, GRU 3, LSTM 4):
 *   RNN, GRU, LSTM   D * S * B * (2 * G * H * (I + H) + e * H): the input
 *                    and recurrent products as multiply-adds, and per hidden
 *                    unit e = T + 2 (RNN: bias add, activation), 3 T + 9
 *                    (GRU: two sigmoids and a tanh, bias adds, reset and
 *                    blend), 5 T + 12 (LSTM: three sigmoids, two tanh, the
 *                    peepholes, cell update); bytes are the baseline (every
 *                    input read once: the weights stay in cache across steps)
 *   DFT              8 * n * L per transformed line (a complex multiply-add
 *                    per input and output point: the direct transform the
 *                    kernel runs), n the line's input length, L its output
 *                    length; lines = numel(Y) / (2 * L) (output pairs)
 *   STFT             8 * L * bins per frame, plus L window multiplies
 *   Det              2/3 M^3 + M^2 per matrix (LU with partial pivoting)
 *   TfIdfVectorizer  numel(X) * (skips + 1) * P compares for P pool items
 *   Binarizer        1 compare per element
 *   ArrayFeatureExtractor  0 FLOPs; only the gathered elements of X read
 *   TreeEnsemble     N * nodes compares at most (every tree walked to its
 *                    deepest leaf is bounded by its node count)
 *   Adagrad          per element 7 + T (sqrt), Adam 12 + T, Momentum 5
 * Scalars given as inputs (axis, frame_step, R, T) are read but small.
 */
#include "cost_impl.h"

static double attr_count(const struct rl_node *n, const char *name)
{
	const int64_t *v;
	int k = rl_node_attr_ints(n, name, &v);
	return k > 0 ? k : 0;
}

bool rl_count_seq(const struct rl_graph *g, uint32_t node, struct rl_counts *c)
{
	const struct rl_node *n = &g->nodes[node];
	double t = RL_FLOPS_TRANS;
	switch (n->op) {
	case RL_OP_RNN:
	case RL_OP_GRU:
	case RL_OP_LSTM: {
		int layout = (int)rl_node_attr_int(n, "layout", 0);
		double S = rl_cnt_dim(g, n, 0, layout ? 1 : 0), B = rl_cnt_dim(g, n, 0, layout ? 0 : 1);
		double I = rl_cnt_dim(g, n, 0, 2), H = rl_cnt_dim(g, n, 2, 2);
		double D = rl_cnt_dim(g, n, 1, 0), G = rnn_gates(n->op);
		double e = n->op == RL_OP_LSTM ? 5 * t + 12 : n->op == RL_OP_GRU ? 3 * t + 9 : t + 2;
		c->flops = D * S * B * (2 * G * H * (I + H) + e * H);
		c->macs = D * S * B * G * H * (I + H);
		return true;
	}
	case RL_OP_DFT: {
		const struct rl_shape *sx = &g->values[n->in[0]].shape, *sy = &g->values[n->out[0]].shape;
		/* the transformed axis: the one whose length changed, else the
		 * default; counted with the longer of the two lengths */
		double nin = 0, L = 0;
		for (int d = 0; d < sx->rank - 1; d++) {
			if (sx->d[d].v != sy->d[d].v || nin == 0) {
				nin = (double)sx->d[d].v;
				L = (double)sy->d[d].v;
				if (sx->d[d].v != sy->d[d].v)
					break;
			}
		}
		double lines = L > 0 ? rl_cnt_out(g, n, 0) / ((double)sy->d[sy->rank - 1].v * L) : 0;
		c->flops = 8 * nin * L * lines;
		for (int i = 1; i < n->nin; i++)
			c->bytes_read -= rl_cnt_bytes(g, rl_node_in(n, i));
		return true;
	}
	case RL_OP_STFT: {
		const struct rl_shape *sy = &g->values[n->out[0]].shape;
		double frames = (double)(sy->d[0].v * sy->d[1].v), bins = (double)sy->d[2].v;
		double L = rl_cnt_in(g, n, 2);
		if (L == 0)
			L = bins; /* no window: at least the bins */
		c->flops = frames * (8 * L * bins + L);
		return true;
	}
	case RL_OP_Det: {
		const struct rl_shape *sx = &g->values[n->in[0]].shape;
		double M = (double)sx->d[sx->rank - 1].v, mats = M > 0 ? rl_cnt_in(g, n, 0) / (M * M) : 0;
		c->flops = mats * (2.0 / 3.0 * M * M * M + M * M);
		return true;
	}
	case RL_OP_TfIdfVectorizer:
		c->flops = rl_cnt_in(g, n, 0) * (double)(rl_node_attr_int(n, "max_skip_count", 0) + 1) *
		           attr_count(n, "pool_int64s");
		return true;
	case RL_OP_Binarizer:
		c->flops = rl_cnt_in(g, n, 0);
		return true;
	case RL_OP_ArrayFeatureExtractor: {
		uint32_t x = n->in[0];
		double xb = rl_cnt_bytes(g, x);
		double gb = rl_cnt_out(g, n, 0) * (double)rl_dtype_size(g->values[x].dtype);
		c->bytes_read += gb - xb;
		if (rl_value_is_const(g, x))
			c->weight_bytes += gb - xb;
		return true;
	}
	case RL_OP_TreeEnsemble:
		c->flops = rl_cnt_dim(g, n, 0, 0) * attr_count(n, "nodes_featureids");
		return true;
	case RL_OP_Adagrad:
	case RL_OP_Adam:
	case RL_OP_Momentum: {
		double e = n->op == RL_OP_Adam ? 12 + t : n->op == RL_OP_Adagrad ? 7 + t : 5;
		double cnt = 0;
		for (int k = 0; k < n->nout; k++)
			cnt += rl_cnt_out(g, n, k);
		int per = optim_per(n->op);
		c->flops = e * cnt / (per - 1);
		return true;
	}
	default:
		return false;
	}
}
