/*
 * onnx_write.c - IR back to an ONNX ModelProto, and TensorProto files.
 *
 * The writer builds protobuf-c messages that point at the graph's own
 * strings and tensor bytes (nothing is copied until protobuf-c packs), packs
 * them into one buffer and writes it atomically.
 *
 * External data: when the model's weights came from external data (or the
 * quantize pass spilled its codes to a file: RL_VAL_EXTERNAL), or the
 * tensors add up to more than EXT_TOTAL bytes (protobuf's 2 GiB limit), every
 * tensor of at least EXT_MIN bytes goes to OUT.data next to the model
 * (location "OUT.data", relative; offsets page-aligned), written as the
 * tensor is built: a repacked tensor's buffer is freed and a borrowed
 * tensor's pages are handed back right after, so the resident set holds one
 * tensor, not the model. The data is written to a temporary file renamed to
 * OUT.data before the (small) model is written atomically; on any failure
 * both are removed, nothing half-written is left. Constants without a producer
 * become initializers (raw_data); constants that inference evaluated keep
 * their producing node, so load-write-load gives the same graph. Every typed
 * intermediate is listed in value_info so the written model carries rlopt's
 * inferred shapes.
 */
#include "frontends/onnx/onnx.h"
#include "ir/qweights.h"
#include "ir/buf.h"
#include "onnx.pb-c.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define EXT_MIN 1024                    /* smaller tensors stay in the model */
#define EXT_TOTAL ((double)(1u << 30))  /* more than this: external data */

/* ---- building messages -------------------------------------------------- */

struct wctx {
	const struct rl_graph *g;
	void **allocs; /* everything malloc'd for the messages */
	size_t nallocs, cap;
	bool oom;
	/* external data (above) */
	bool ext;         /* tensors of EXT_MIN bytes or more go to the data file */
	int dfd;          /* the temporary data file, -1 until the first tensor */
	char *dtmp;       /* its path */
	const char *dpath; /* OUT.data */
	const char *dloc;  /* its name, relative to the model's folder */
	int64_t doff;     /* next offset */
	bool ioerr;
	char ioerrmsg[256];
};

static void *walloc(struct wctx *w, size_t n)
{
	void *p = calloc(1, n ? n : 1);
	if (!p) {
		w->oom = true;
		return NULL;
	}
	if (w->nallocs == w->cap) {
		w->cap = w->cap ? 2 * w->cap : 256;
		void **na = realloc(w->allocs, w->cap * sizeof(void *));
		if (!na) {
			free(p);
			w->oom = true;
			return NULL;
		}
		w->allocs = na;
	}
	w->allocs[w->nallocs++] = p;
	return p;
}

/* Free p, allocated by walloc, now (a tensor's buffer once it is written). */
static void wfree(struct wctx *w, void *p)
{
	for (size_t i = w->nallocs; p && i-- > 0;)
		if (w->allocs[i] == p) {
			free(p);
			w->allocs[i] = NULL;
			return;
		}
}

/* Move t's raw bytes to the data file (when writing external data and t is
 * big enough); owned: the bytes are the writer's (walloc), freed after;
 * else borrowed from the graph, their pages handed back. */
static void externalize(struct wctx *w, Onnx__TensorProto *t, bool owned)
{
	if (!w->ext || !t || !t->has_raw_data || t->raw_data.len < EXT_MIN || w->ioerr)
		return;
	if (w->dfd < 0) {
		w->dfd = mkstemp(w->dtmp);
		if (w->dfd < 0) {
			w->ioerr = true;
			snprintf(w->ioerrmsg, sizeof(w->ioerrmsg), "cannot write %s: %s", w->dpath,
			         strerror(errno));
			return;
		}
	}
	int64_t off = (w->doff + 4095) / 4096 * 4096;
	const uint8_t *p = t->raw_data.data;
	size_t len = t->raw_data.len;
	/* in pieces of 16 MiB, a borrowed piece's pages handed back once
	 * written: a 262 MB embedding would otherwise be resident whole */
	const size_t piece = (size_t)16 << 20;
	for (size_t done = 0; done < len;) {
		size_t want = len - done < piece ? len - done : piece;
		ssize_t n = pwrite(w->dfd, p + done, want, (off_t)(off + (int64_t)done));
		if (n < 0 && errno == EINTR)
			continue;
		if (n > 0 && !owned)
			rl_page_out(p + done, (size_t)n);
		if (n <= 0) {
			w->ioerr = true;
			snprintf(w->ioerrmsg, sizeof(w->ioerrmsg), "write to %s failed: %s", w->dpath,
			         n < 0 ? strerror(errno) : "no space");
			return;
		}
		done += (size_t)n;
	}
	w->doff = off + (int64_t)len;
	Onnx__StringStringEntryProto **e = walloc(w, 3 * sizeof(*e));
	char *num = walloc(w, 48);
	if (!e || !num)
		return;
	snprintf(num, 24, "%lld", (long long)off);
	snprintf(num + 24, 24, "%zu", len);
	const char *kv[3][2] = {{"location", w->dloc}, {"offset", num}, {"length", num + 24}};
	for (int i = 0; i < 3; i++) {
		if (!(e[i] = walloc(w, sizeof(*e[i]))))
			return;
		onnx__string_string_entry_proto__init(e[i]);
		e[i]->key = (char *)kv[i][0];
		e[i]->value = (char *)kv[i][1];
	}
	t->external_data = e;
	t->n_external_data = 3;
	t->has_data_location = 1;
	t->data_location = ONNX__TENSOR_PROTO__DATA_LOCATION__EXTERNAL;
	if (owned)
		wfree(w, t->raw_data.data);
	t->has_raw_data = 0;
	t->raw_data.data = NULL;
	t->raw_data.len = 0;
}

static Onnx__TensorProto *make_tensor(struct wctx *w, uint32_t v, const char *name, bool ext_ok)
{
	const struct rl_value *val = &w->g->values[v];
	Onnx__TensorProto *t = walloc(w, sizeof(*t));
	if (!t)
		return NULL;
	onnx__tensor_proto__init(t);
	t->name = (char *)name;
	t->has_data_type = 1;
	t->data_type = (int32_t)val->dtype;
	t->n_dims = (size_t)(val->shape.rank > 0 ? val->shape.rank : 0);
	t->dims = walloc(w, (t->n_dims + 1) * sizeof(int64_t));
	if (!t->dims)
		return NULL;
	for (size_t i = 0; i < t->n_dims; i++)
		t->dims[i] = val->shape.d[i].v;
	t->has_raw_data = 1;
	t->raw_data.len = val->nbytes;
	t->raw_data.data = (uint8_t *)val->data;
	if (rl_dtype_bits(val->dtype) < 8) { /* int4, float4, int2...: pack */
		int64_t ne = rl_shape_numel(&val->shape);
		t->raw_data.len = rl_dtype_packed_size(val->dtype, ne);
		t->raw_data.data = walloc(w, t->raw_data.len + 1);
		if (!t->raw_data.data)
			return NULL;
		rl_lowp_pack(val->dtype, val->data, ne, t->raw_data.data);
		if (ext_ok)
			externalize(w, t, true);
		return t;
	}
	if (ext_ok)
		externalize(w, t, false);
	return t;
}

static Onnx__TypeProto *make_type(struct wctx *w, const struct rl_value *val)
{
	Onnx__TypeProto *tp = walloc(w, sizeof(*tp));
	Onnx__TypeProto__Tensor *tt = walloc(w, sizeof(*tt));
	if (!tp || !tt)
		return NULL;
	onnx__type_proto__init(tp);
	onnx__type_proto__tensor__init(tt);
	tp->value_case = ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE;
	tp->tensor_type = tt;
	tt->has_elem_type = 1;
	tt->elem_type = (int32_t)val->dtype;
	if (val->shape.rank < 0)
		return tp;
	Onnx__TensorShapeProto *sp = walloc(w, sizeof(*sp));
	if (!sp)
		return NULL;
	onnx__tensor_shape_proto__init(sp);
	sp->n_dim = (size_t)val->shape.rank;
	sp->dim = walloc(w, (sp->n_dim + 1) * sizeof(*sp->dim));
	if (!sp->dim)
		return NULL;
	for (int i = 0; i < val->shape.rank; i++) {
		Onnx__TensorShapeProto__Dimension *d = walloc(w, sizeof(*d));
		if (!d)
			return NULL;
		onnx__tensor_shape_proto__dimension__init(d);
		if (val->extent_axis == i + 1) {
			/* data-dependent (ir/fam_detect.c): the dim is only a bound; unknown */
		} else if (val->shape.d[i].v >= 0) {
			d->value_case = ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE;
			d->dim_value = val->shape.d[i].v;
		} else if (val->shape.d[i].sym) {
			d->value_case = ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_PARAM;
			d->dim_param = (char *)val->shape.d[i].sym;
		}
		sp->dim[i] = d;
	}
	tt->shape = sp;
	return tp;
}

static Onnx__ValueInfoProto *make_vi(struct wctx *w, uint32_t v)
{
	const struct rl_value *val = &w->g->values[v];
	Onnx__ValueInfoProto *vi = walloc(w, sizeof(*vi));
	if (!vi)
		return NULL;
	onnx__value_info_proto__init(vi);
	vi->name = (char *)val->name;
	if (val->dtype != RL_DT_UNDEFINED)
		vi->type = make_type(w, val);
	return vi;
}

static Onnx__AttributeProto *make_attr(struct wctx *w, const struct rl_attr *a)
{
	Onnx__AttributeProto *ap = walloc(w, sizeof(*ap));
	if (!ap)
		return NULL;
	onnx__attribute_proto__init(ap);
	ap->name = (char *)a->name;
	ap->has_type = 1;
	switch (a->kind) {
	case RL_ATTR_FLOAT:
		ap->type = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOAT;
		ap->has_f = 1;
		ap->f = (float)a->f;
		break;
	case RL_ATTR_INT:
		ap->type = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INT;
		ap->has_i = 1;
		ap->i = a->i;
		break;
	case RL_ATTR_STRING:
		ap->type = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRING;
		ap->has_s = 1;
		ap->s.data = (uint8_t *)a->s;
		ap->s.len = (size_t)a->n;
		break;
	case RL_ATTR_TENSOR:
		ap->type = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__TENSOR;
		ap->t = make_tensor(w, a->tensor, "", false); /* attributes stay inline */
		break;
	case RL_ATTR_FLOATS:
		ap->type = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOATS;
		ap->n_floats = (size_t)a->n;
		ap->floats = walloc(w, ((size_t)a->n + 1) * sizeof(float));
		if (!ap->floats)
			return NULL;
		for (int i = 0; i < a->n; i++)
			ap->floats[i] = (float)a->floats[i];
		break;
	case RL_ATTR_INTS:
		ap->type = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INTS;
		ap->n_ints = (size_t)a->n;
		ap->ints = a->ints;
		break;
	case RL_ATTR_STRINGS:
		ap->type = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRINGS;
		ap->n_strings = (size_t)a->n;
		ap->strings = walloc(w, ((size_t)a->n + 1) * sizeof(ProtobufCBinaryData));
		if (!ap->strings)
			return NULL;
		for (int i = 0; i < a->n; i++) {
			ap->strings[i].data = (uint8_t *)a->strs[i];
			ap->strings[i].len = strlen(a->strs[i]);
		}
		break;
	default:
		return NULL; /* subgraphs never reach a loaded graph */
	}
	return ap;
}


/* ---- quantized products (QuantMatMul, ir/quant.h) ----------------------- */
/*
 * QuantMatMul is rlopt's own node; the file gets standard operators instead:
 *   qdq          DequantizeLinear(codes [K,N], scales, zero points) -> MatMul
 *                (int8 per output channel: axis 1, opset 13; blocked and int4:
 *                axis 0 with block_size, opset 21), then Add for a bias
 *   matmulnbits  com.microsoft MatMulNBits (bits, block_size; B packed
 *                [N, blocks, block_size * bits / 8] as onnxruntime documents:
 *                two int4 per byte, the first in the low nibble, unsigned
 *                with zero point 8 or 128 unless given), then Add for a bias
 * The codes are repacked from the kernels' layout into new tensors.
 */

static char *wstr(struct wctx *w, const char *a, const char *b)
{
	size_t n = strlen(a) + strlen(b) + 1;
	char *s = walloc(w, n);
	if (s)
		snprintf(s, n, "%s%s", a, b);
	return s;
}

static Onnx__TensorProto *new_tensor(struct wctx *w, const char *name, int dt, int rank,
                                     const int64_t *dims, size_t nbytes)
{
	Onnx__TensorProto *t = walloc(w, sizeof(*t));
	if (!t)
		return NULL;
	onnx__tensor_proto__init(t);
	t->name = (char *)name;
	t->has_data_type = 1;
	t->data_type = dt;
	t->n_dims = (size_t)rank;
	t->dims = walloc(w, (size_t)(rank + 1) * sizeof(int64_t));
	t->has_raw_data = 1;
	t->raw_data.len = nbytes;
	t->raw_data.data = walloc(w, nbytes);
	if (!t->dims || !t->raw_data.data)
		return NULL;
	memcpy(t->dims, dims, (size_t)rank * sizeof(int64_t));
	return t;
}

static Onnx__NodeProto *new_node(struct wctx *w, const char *name, const char *op,
                                 const char *domain, int nin, int nattr)
{
	Onnx__NodeProto *np = walloc(w, sizeof(*np));
	if (!np)
		return NULL;
	onnx__node_proto__init(np);
	np->name = (char *)name;
	np->op_type = (char *)op;
	np->domain = (char *)domain;
	np->input = walloc(w, (size_t)(nin + 1) * sizeof(char *));
	np->output = walloc(w, 2 * sizeof(char *));
	np->attribute = walloc(w, (size_t)(nattr + 1) * sizeof(*np->attribute));
	np->n_input = (size_t)nin;
	np->n_output = 1;
	return np->input && np->output && np->attribute ? np : NULL;
}

static void node_int(struct wctx *w, Onnx__NodeProto *np, const char *name, int64_t v)
{
	Onnx__AttributeProto *ap = walloc(w, sizeof(*ap));
	if (!ap)
		return;
	onnx__attribute_proto__init(ap);
	ap->name = (char *)name;
	ap->has_type = 1;
	ap->type = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INT;
	ap->has_i = 1;
	ap->i = v;
	np->attribute[np->n_attribute++] = ap;
}

static void qweight_of(const struct rl_graph *g, const struct rl_node *n, struct rl_qweight *qw)
{
	int64_t K = rl_node_attr_int(n, "K", 0), N = rl_node_attr_int(n, "N", 0);
	int64_t bits = rl_node_attr_int(n, "bits", 8), bs = rl_node_attr_int(n, "block_size", K);
	uint32_t z = rl_node_in(n, 3);
	rl_qweight_geometry(qw, bits == 4 ? (z != RL_NONE ? RL_Q_INT4_ASYM : RL_Q_INT4_SYM)
	                              : bs == K ? RL_Q_INT8_CHANNEL : RL_Q_INT8_BLOCK, K, N, bs);
	qw->q = (uint8_t *)g->values[n->in[1]].data;
	qw->s = (float *)g->values[n->in[2]].data;
	qw->half_scales = g->values[n->in[2]].dtype == RL_DT_FLOAT16;
	qw->z = z != RL_NONE ? (uint8_t *)g->values[z].data : NULL;
}

/* Scale i of qw as float32: float16 scales are widened (exactly) for the
 * file, whose DequantizeLinear and MatMulNBits take scales of A's type. */
static float qscale(const struct rl_qweight *qw, int64_t i)
{
	return qw->half_scales ? rl_half_to_float(((const uint16_t *)qw->s)[i]) : qw->s[i];
}

/* The default-domain opset the qdq form of node n needs. */
static int qdq_opset(const struct rl_node *n)
{
	bool per_channel = rl_node_attr_int(n, "bits", 8) == 8 &&
	                   rl_node_attr_int(n, "block_size", 0) == rl_node_attr_int(n, "K", -1);
	return per_channel ? 13 : 21;
}

/* Append the nodes and initializers of QuantMatMul n; false when out of memory. */
static bool write_quant(struct wctx *w, const struct rl_node *n, int format,
                        Onnx__GraphProto *gp)
{
	const struct rl_graph *g = w->g;
	struct rl_qweight qw;
	qweight_of(g, n, &qw);
	int64_t K = qw.k, N = qw.n;
	const char *qn = g->values[n->in[1]].name, *sn = g->values[n->in[2]].name;
	const char *zn = qw.z ? g->values[n->in[3]].name : NULL;
	const char *a = g->values[n->in[0]].name, *y = g->values[n->out[0]].name;
	bool bias = rl_node_in(n, 4) != RL_NONE;
	const char *prod = bias ? wstr(w, y, "_nobias") : y;
	Onnx__NodeProto *np;
	if (format == 0) {
		bool chan = qw.scheme == RL_Q_INT8_CHANNEL;
		int64_t qd[2] = {K, N}, sd[2] = {qw.nb, N};
		int dt = qw.bits == 8 ? 3 : qw.z ? 21 : 22; /* INT8, UINT4, INT4 */
		size_t nbytes = qw.bits == 8 ? (size_t)(K * N) : (size_t)((K * N + 1) / 2);
		Onnx__TensorProto *tq = new_tensor(w, qn, dt, 2, qd, nbytes);
		Onnx__TensorProto *ts = new_tensor(w, sn, 1, chan ? 1 : 2, chan ? &N : sd,
		                                   (size_t)(qw.nb * N) * sizeof(float));
		Onnx__TensorProto *tz = qw.z ? new_tensor(w, zn, 21, 2, sd, (size_t)((qw.nb * N + 1) / 2)) : NULL;
		if (!tq || !ts || (qw.z && !tz))
			return false;
		uint8_t *qb = tq->raw_data.data;
		for (int64_t k = 0; k < K; k++)
			for (int64_t j = 0; j < N; j++) {
				int c = rl_qweight_code(&qw, k, j);
				int64_t i = k * N + j;
				if (qw.bits == 8)
					qb[i] = (uint8_t)(int8_t)c;
				else
					qb[i / 2] |= (uint8_t)(((qw.z ? c : c - 8) & 15) << (i % 2 * 4));
			}
		float *sb = (float *)ts->raw_data.data;
		for (int64_t b = 0; b < qw.nb; b++)
			for (int64_t j = 0; j < N; j++) {
				sb[b * N + j] = qscale(&qw, j * qw.nb + b);
				if (tz)
					tz->raw_data.data[(b * N + j) / 2] |=
						(uint8_t)(qw.z[j * qw.nb + b] << ((b * N + j) % 2 * 4));
			}
		externalize(w, tq, true), externalize(w, ts, true), externalize(w, tz, true);
		gp->initializer[gp->n_initializer++] = tq;
		gp->initializer[gp->n_initializer++] = ts;
		if (tz)
			gp->initializer[gp->n_initializer++] = tz;
		const char *wf = wstr(w, qn, "_dq");
		if (!(np = new_node(w, wstr(w, n->name, "_dequantize"), "DequantizeLinear", "",
		                    tz ? 3 : 2, 2)))
			return false;
		np->input[0] = (char *)qn;
		np->input[1] = (char *)sn;
		if (tz)
			np->input[2] = (char *)zn;
		np->output[0] = (char *)wf;
		node_int(w, np, "axis", chan ? 1 : 0);
		if (!chan)
			node_int(w, np, "block_size", qw.block);
		gp->node[gp->n_node++] = np;
		if (!(np = new_node(w, n->name, "MatMul", "", 2, 0)))
			return false;
		np->input[0] = (char *)a;
		np->input[1] = (char *)wf;
		np->output[0] = (char *)prod;
		gp->node[gp->n_node++] = np;
	} else {
		/* blocks of a power of two >= 16: per-channel int8 becomes one block */
		int64_t bs = qw.block;
		if (qw.scheme == RL_Q_INT8_CHANNEL)
			for (bs = 16; bs < K; bs *= 2)
				;
		int64_t nb = (K + bs - 1) / bs, blob = bs * qw.bits / 8;
		int64_t qd[3] = {N, nb, blob}, sd = N * nb, zd = N * ((nb + 1) / 2);
		Onnx__TensorProto *tq = new_tensor(w, qn, 2, 3, qd, (size_t)(N * nb * blob));
		Onnx__TensorProto *ts = new_tensor(w, sn, 1, 1, &sd, (size_t)sd * sizeof(float));
		Onnx__TensorProto *tz = qw.z ? new_tensor(w, zn, 2, 1, &zd, (size_t)zd) : NULL;
		if (!tq || !ts || (qw.z && !tz))
			return false;
		uint8_t *qb = tq->raw_data.data;
		for (int64_t j = 0; j < N; j++) {
			uint8_t *row = qb + j * nb * blob;
			for (int64_t k = 0; k < nb * bs; k++) {
				int c = k < K ? rl_qweight_code(&qw, k, j) : qw.bits == 8 ? 0 : qw.z ? -1 : 8;
				if (qw.bits == 8)
					row[k] = (uint8_t)(c + 128);
				else if (c >= 0)
					row[k / 2] |= (uint8_t)(c << (k % 2 * 4));
				else /* padding past K: the block's zero point */
					row[k / 2] |= (uint8_t)(qw.z[j * qw.nb + k / bs] << (k % 2 * 4));
			}
			for (int64_t b = 0; b < nb; b++) {
				((float *)ts->raw_data.data)[j * nb + b] = qscale(&qw, j * qw.nb + b);
				if (tz)
					tz->raw_data.data[j * ((nb + 1) / 2) + b / 2] |=
						(uint8_t)(qw.z[j * qw.nb + b] << (b % 2 * 4));
			}
		}
		externalize(w, tq, true), externalize(w, ts, true), externalize(w, tz, true);
		gp->initializer[gp->n_initializer++] = tq;
		gp->initializer[gp->n_initializer++] = ts;
		if (tz)
			gp->initializer[gp->n_initializer++] = tz;
		if (!(np = new_node(w, n->name, "MatMulNBits", "com.microsoft", tz ? 4 : 3, 4)))
			return false;
		np->input[0] = (char *)a;
		np->input[1] = (char *)qn;
		np->input[2] = (char *)sn;
		if (tz)
			np->input[3] = (char *)zn;
		np->output[0] = (char *)prod;
		node_int(w, np, "K", K);
		node_int(w, np, "N", N);
		node_int(w, np, "bits", qw.bits);
		node_int(w, np, "block_size", bs);
		gp->node[gp->n_node++] = np;
	}
	/* the kernel-layout codes, scales and zero points were read for the
	 * last time (spilled: pages of a file mapping, handed back) */
	rl_page_out(qw.q, (size_t)(N * qw.rowbytes));
	rl_page_out(qw.s, (size_t)(N * qw.nb) * (qw.half_scales ? 2 : 4));
	if (qw.z)
		rl_page_out(qw.z, (size_t)(N * qw.nb));
	if (bias) {
		if (!(np = new_node(w, wstr(w, n->name, "_bias"), "Add", "", 2, 0)))
			return false;
		np->input[0] = (char *)prod;
		np->input[1] = (char *)g->values[n->in[4]].name;
		np->output[0] = (char *)y;
		gp->node[gp->n_node++] = np;
	}
	return true;
}

enum rl_status rl_onnx_write(const struct rl_graph *g, const char *path,
                             char *err, size_t errlen)
{
	return rl_onnx_write_fmt(g, path, 0, err, errlen);
}

enum rl_status rl_onnx_write_fmt(const struct rl_graph *g, const char *path, int qformat,
                                 char *err, size_t errlen)
{
	struct wctx w = {.g = g, .dfd = -1};
	enum rl_status st = RL_OK;
	/* external data: weights that came from (or were spilled to) files, or
	 * more than protobuf's limit allows */
	double total = 0;
	for (uint32_t v = 0; v < g->nvalues; v++) {
		const struct rl_value *val = &g->values[v];
		if (!(val->flags & RL_VAL_CONST) || val->producer != RL_NONE || !val->nuses)
			continue;
		total += (double)val->nbytes;
		w.ext |= (val->flags & RL_VAL_EXTERNAL) && val->nbytes >= EXT_MIN;
	}
	w.ext |= total > EXT_TOTAL;
	char *dpath = NULL;
	if (w.ext) {
		size_t pl = strlen(path);
		dpath = malloc(2 * pl + 40);
		if (!dpath) {
			snprintf(err, errlen, "%s: out of memory", path);
			return RL_ERR_NOMEM;
		}
		snprintf(dpath, pl + 8, "%s.data", path);
		w.dtmp = dpath + pl + 8;
		snprintf(w.dtmp, pl + 32, "%s.data.tmpXXXXXX", path);
		const char *slash = strrchr(dpath, '/');
		w.dpath = dpath;
		w.dloc = slash ? slash + 1 : dpath;
	}
	Onnx__ModelProto m;
	Onnx__GraphProto gp;
	onnx__model_proto__init(&m);
	onnx__graph_proto__init(&gp);
	m.has_ir_version = 1;
	/* IR 3 wants initializers listed as inputs; we write IR >= 4 instead */
	m.ir_version = g->ir_version < 4 ? 4 : g->ir_version;
	m.producer_name = "rlopt";
	m.producer_version = RL_VERSION;
	m.graph = &gp;
	gp.name = (char *)(g->graph_name && *g->graph_name ? g->graph_name : "rlopt");

	/* quantized products: the opset their form needs (qdq: DequantizeLinear
	 * with block_size or int4 is opset 21; from 18 on, the operators a model
	 * can hold changed only by additions up to 21, so such a model is
	 * written at 21) and com.microsoft for MatMulNBits */
	uint32_t nq = 0;
	int64_t opset = g->opset;
	for (uint32_t i = 0; i < g->nnodes; i++) {
		const struct rl_node *n = &g->nodes[i];
		if (n->dead || n->op != RL_OP_QuantMatMul)
			continue;
		nq++;
		int need = qformat ? 1 : qdq_opset(n);
		if (need <= opset)
			continue;
		if (need == 21 && opset >= 18) {
			opset = 21;
			continue;
		}
		snprintf(err, errlen, "%s: node '%s': its %s weights as DequantizeLinear need opset %d "
		         "and the model imports opset %d; use --onnx-format matmulnbits (or --quantize "
		         "int8-channel for one scale per channel at opset 13)", path, n->name,
		         rl_node_attr_int(n, "bits", 8) == 4 ? "int4" : "blocked int8", need, g->opset);
		free(dpath);
		return RL_ERR_UNSUPPORTED;
	}
	/* opsets: keep the model's; make sure the default domain is there (unless
	 * the model imports none: ai.onnx.ml or training ops alone, g->opset 0) */
	int nops = g->nopsets;
	bool has_default = g->opset <= 0, has_ms = false;
	for (int i = 0; i < nops; i++) {
		has_default |= !*g->opset_domains[i] || !strcmp(g->opset_domains[i], "ai.onnx");
		has_ms |= !strcmp(g->opset_domains[i], "com.microsoft");
	}
	bool add_ms = nq && qformat && !has_ms;
	m.opset_import = walloc(&w, (size_t)(nops + 2) * sizeof(*m.opset_import));
	for (int i = 0; m.opset_import && i < nops + !has_default + add_ms; i++) {
		Onnx__OperatorSetIdProto *o = walloc(&w, sizeof(*o));
		if (!o)
			break;
		onnx__operator_set_id_proto__init(o);
		bool ms = i == nops + !has_default;
		o->domain = (char *)(i < nops ? g->opset_domains[i] : ms ? "com.microsoft" : "");
		o->has_version = 1;
		o->version = i < nops ? g->opset_versions[i] : ms ? 1 : opset;
		if (i < nops && (!*o->domain || !strcmp(o->domain, "ai.onnx")))
			o->version = opset;
		m.opset_import[m.n_opset_import++] = o;
	}

	/* nodes, in topological order when known */
	uint32_t nlive = 0;
	for (uint32_t i = 0; i < g->nnodes; i++)
		nlive += !g->nodes[i].dead;
	gp.node = walloc(&w, (nlive + 2 * nq + 1) * sizeof(*gp.node));
	gp.initializer = walloc(&w, (g->nvalues + 3 * nq + 1) * sizeof(*gp.initializer));
	bool use_order = g->norder == nlive && nlive;
	for (uint32_t k = 0; gp.node && k < g->nnodes; k++) {
		uint32_t idx = use_order ? (k < g->norder ? g->order[k] : RL_NONE) : k;
		if (idx == RL_NONE)
			break;
		const struct rl_node *n = &g->nodes[idx];
		if (n->dead)
			continue;
		if (n->op == RL_OP_QuantMatMul) {
			if (!gp.initializer || !write_quant(&w, n, qformat, &gp))
				w.oom = true;
			continue;
		}
		Onnx__NodeProto *np = walloc(&w, sizeof(*np));
		if (!np)
			break;
		onnx__node_proto__init(np);
		np->name = (char *)n->name;
		np->op_type = (char *)rl_op_table[n->op].name;
		np->domain = (char *)(n->domain ? n->domain : "");
		np->n_input = (size_t)n->nin;
		np->input = walloc(&w, ((size_t)n->nin + 1) * sizeof(char *));
		np->n_output = (size_t)n->nout;
		np->output = walloc(&w, ((size_t)n->nout + 1) * sizeof(char *));
		if (!np->input || !np->output)
			break;
		for (int i = 0; i < n->nin; i++)
			np->input[i] = (char *)(n->in[i] == RL_NONE ? "" : g->values[n->in[i]].name);
		for (int i = 0; i < n->nout; i++)
			np->output[i] = (char *)(n->out[i] == RL_NONE ? "" : g->values[n->out[i]].name);
		np->attribute = walloc(&w, ((size_t)n->nattrs + 1) * sizeof(*np->attribute));
		for (int i = 0; np->attribute && i < n->nattrs; i++) {
			Onnx__AttributeProto *ap = make_attr(&w, &n->attrs[i]);
			if (ap)
				np->attribute[np->n_attribute++] = ap;
		}
		gp.node[gp.n_node++] = np;
	}

	/* initializers: constants nothing produces and no attribute owns */
	bool *attr_owned = calloc(g->nvalues + 1, 1);
	if (!attr_owned)
		w.oom = true;
	for (uint32_t i = 0; attr_owned && i < g->nnodes; i++) {
		for (int k = 0; !g->nodes[i].dead && k < g->nodes[i].nattrs; k++)
			if (g->nodes[i].attrs[k].kind == RL_ATTR_TENSOR)
				attr_owned[g->nodes[i].attrs[k].tensor] = true;
		/* the codes, scales and zero points went out repacked (write_quant) */
		for (int k = 1; !g->nodes[i].dead && g->nodes[i].op == RL_OP_QuantMatMul && k <= 3; k++)
			if (rl_node_in(&g->nodes[i], k) != RL_NONE)
				attr_owned[g->nodes[i].in[k]] = true;
	}
	gp.value_info = walloc(&w, (g->nvalues + 1) * sizeof(*gp.value_info));
	for (uint32_t v = 0; attr_owned && gp.initializer && gp.value_info && v < g->nvalues; v++) {
		const struct rl_value *val = &g->values[v];
		if (attr_owned[v])
			continue;
		if ((val->flags & RL_VAL_CONST) && val->producer == RL_NONE) {
			if (val->nuses || (val->flags & RL_VAL_OUTPUT))
				gp.initializer[gp.n_initializer++] = make_tensor(&w, v, val->name, true);
		} else if (val->producer != RL_NONE && !(val->flags & RL_VAL_OUTPUT) &&
		           val->dtype != RL_DT_UNDEFINED) {
			gp.value_info[gp.n_value_info++] = make_vi(&w, v);
		}
	}
	free(attr_owned);
	gp.input = walloc(&w, (g->ninputs + 1) * sizeof(*gp.input));
	for (uint32_t i = 0; gp.input && i < g->ninputs; i++)
		gp.input[gp.n_input++] = make_vi(&w, g->inputs[i]);
	gp.output = walloc(&w, (g->noutputs + 1) * sizeof(*gp.output));
	for (uint32_t i = 0; gp.output && i < g->noutputs; i++)
		gp.output[gp.n_output++] = make_vi(&w, g->outputs[i]);

	/* the data file is complete: give it its name, then write the model */
	bool data_named = false;
	if (w.dfd >= 0 && !w.oom && !w.ioerr) {
		mode_t um = umask(0);
		umask(um);
		fchmod(w.dfd, 0666 & ~um);
		if (close(w.dfd) != 0 || rename(w.dtmp, w.dpath) != 0) {
			w.ioerr = true;
			snprintf(w.ioerrmsg, sizeof(w.ioerrmsg), "cannot write %s: %s", w.dpath,
			         strerror(errno));
			unlink(w.dtmp);
		} else {
			data_named = true;
		}
		w.dfd = -1;
	}
	if (w.oom) {
		snprintf(err, errlen, "%s: out of memory", path);
		st = RL_ERR_NOMEM;
	} else if (w.ioerr) {
		snprintf(err, errlen, "%s: %s", path, w.ioerrmsg);
		st = RL_ERR_IO;
	} else {
		size_t len = onnx__model_proto__get_packed_size(&m);
		uint8_t *buf = malloc(len ? len : 1);
		if (!buf) {
			snprintf(err, errlen, "%s: out of memory", path);
			st = RL_ERR_NOMEM;
		} else {
			onnx__model_proto__pack(&m, buf);
			st = rl_write_file_atomic(path, buf, len, err, errlen);
			free(buf);
		}
	}
	if (w.dfd >= 0) { /* failed before the data file was complete */
		close(w.dfd);
		unlink(w.dtmp);
	}
	if (data_named && st != RL_OK)
		unlink(w.dpath);
	free(dpath);
	for (size_t i = 0; i < w.nallocs; i++)
		free(w.allocs[i]);
	free(w.allocs);
	return st;
}

uint8_t *rl_tensor_pack(const struct rl_tensor *t, size_t *lenp)
{
	Onnx__TensorProto tp;
	onnx__tensor_proto__init(&tp);
	int64_t dims[RL_MAX_RANK];
	for (int i = 0; i < t->shape.rank; i++)
		dims[i] = t->shape.d[i].v;
	tp.n_dims = (size_t)(t->shape.rank > 0 ? t->shape.rank : 0);
	tp.dims = dims;
	tp.has_data_type = 1;
	tp.data_type = (int32_t)t->dtype;
	tp.name = t->name ? t->name : "";
	tp.has_raw_data = 1;
	tp.raw_data.data = t->data;
	tp.raw_data.len = t->nbytes;
	uint8_t *pk = NULL;
	if (rl_dtype_bits(t->dtype) < 8) { /* int4, float4, int2...: pack */
		int64_t ne = rl_shape_numel(&t->shape);
		tp.raw_data.len = rl_dtype_packed_size(t->dtype, ne);
		pk = malloc(tp.raw_data.len + 1);
		if (!pk)
			return NULL;
		rl_lowp_pack(t->dtype, t->data, ne, pk);
		tp.raw_data.data = pk;
	}
	size_t len = onnx__tensor_proto__get_packed_size(&tp);
	uint8_t *buf = malloc(len ? len : 1);
	if (buf)
		onnx__tensor_proto__pack(&tp, buf);
	free(pk);
	*lenp = len;
	return buf;
}

enum rl_status rl_tensor_write(const char *path, const struct rl_tensor *t,
                               char *err, size_t errlen)
{
	size_t len;
	uint8_t *buf = rl_tensor_pack(t, &len);
	if (!buf) {
		snprintf(err, errlen, "%s: out of memory", path);
		return RL_ERR_NOMEM;
	}
	enum rl_status st = rl_write_file_atomic(path, buf, len, err, errlen);
	free(buf);
	return st;
}
