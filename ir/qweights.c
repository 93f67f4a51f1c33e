/*
 * qweights.c - packing float weights into the layout of qweights.h,
 * unpacking them again (the pass measures error with it), and the shape
 * and cost rules of QuantMatMul.
 *
 * Rounding is to nearest (ties away from zero, lrintf would depend on the
 * rounding mode), so the same weights give the same bytes on every host.
 * Scales are float32 or, with half_scales, float16 (llama.cpp's Q4_0 and
 * Q8_0 store theirs so): int4 in blocks of 32 then moves 0.5625 bytes per
 * weight instead of 0.625, int8 1.0625 instead of 1.125, for a relative
 * rounding of the scale under 2^-11 (bench/quant_error.py: no change in the
 * stack's logits error at the third digit).
 */
#include "qweights.h"

#include "cost_impl.h"
#include "infer_impl.h"

#include <math.h>
#include <string.h>

const char *rl_qscheme_name(enum rl_qscheme s)
{
	switch (s) {
	case RL_Q_NONE: return "float";
	case RL_Q_INT8_CHANNEL: return "int8/channel";
	case RL_Q_INT8_BLOCK: return "int8/block";
	case RL_Q_INT4_SYM: return "int4/block";
	case RL_Q_INT4_ASYM: return "int4/block+zp";
	case RL_Q_COUNT_: break;
	}
	return "?";
}

int rl_qscheme_bits(enum rl_qscheme s)
{
	switch (s) {
	case RL_Q_INT8_CHANNEL: case RL_Q_INT8_BLOCK: return 8;
	case RL_Q_INT4_SYM: case RL_Q_INT4_ASYM: return 4;
	default: return 32;
	}
}

int64_t rl_qweight_unit(int bits, int64_t k, int64_t block)
{
	(void)k;
	return bits == 8 && block >= k ? 32 : block;
}

int64_t rl_qweight_rowbytes(int bits, int64_t k, int64_t block)
{
	int64_t u = rl_qweight_unit(bits, k, block);
	return (k + u - 1) / u * u * bits / 8;
}

int64_t rl_qweight_geometry(struct rl_qweight *w, enum rl_qscheme scheme, int64_t k,
                            int64_t n, int64_t block)
{
	memset(w, 0, sizeof(*w));
	w->scheme = scheme;
	w->bits = rl_qscheme_bits(scheme);
	w->k = k;
	w->n = n;
	w->block = scheme == RL_Q_INT8_CHANNEL ? k : block;
	w->nb = (k + w->block - 1) / w->block;
	w->unit = rl_qweight_unit(w->bits, k, w->block);
	w->rowbytes = rl_qweight_rowbytes(w->bits, k, w->block);
	return n * (w->rowbytes + w->nb * (4 + (scheme == RL_Q_INT4_ASYM)));
}

/* Round half away from zero, then clamp to [lo, hi]. Clamping first to
 * [lo - 1, hi + 1] gives the same result (rounding is monotone) and lets a
 * conversion do the rounding: floorf is a library call on baseline x86-64,
 * and this runs about ten times per weight (the int4 scale search). */
static int32_t round_clamp(float x, int32_t lo, int32_t hi)
{
	float c = x < (float)(lo - 1) ? (float)(lo - 1) : x > (float)(hi + 1) ? (float)(hi + 1) : x;
	int32_t r = c >= 0 ? (int32_t)(c + 0.5f) : -(int32_t)(-c + 0.5f);
	return r < lo ? lo : r > hi ? hi : r;
}

/* Squared error of a block of int4 codes at scale s, zero point zp. */
static double sse4(const float *x, int64_t ks, int64_t len, float s, int32_t zp)
{
	double e = 0;
	float inv = s != 0 ? 1.0f / s : 0;
	for (int64_t j = 0; j < len; j++) {
		float v = x[j * ks];
		float d = v - s * (float)(round_clamp(v * inv + (float)zp, 0, 15) - zp);
		e += (double)d * d;
	}
	return e;
}

/*
 * A grid over the block's whole range wastes codes: the largest weight
 * rarely sits where a uniform grid is best. So the scale is searched for the
 * least squared error (ties keep the earlier candidate).
 *
 * Symmetric (zero point 8, codes -8..7 after it): the grid has one more
 * level on the negative side, so the scale takes the sign that puts the
 * block's largest-magnitude weight there (a negative scale when that weight
 * is positive and no negative one is as large; the kernels only multiply by it), and its magnitude is tried
 * at 64/64 (first: a block that fits the grid exactly stays exact), 62/64,
 * ... 50/64, then 72/64 ... 66/64 of max|w| / 7 (the largest weight lands
 * between code 6.2 and 9, clamped to -8). On N(0, 1) weights in blocks of
 * 32 this gives 8.1% relative product error where max|w| / 7 alone gives
 * 9.9% and the earlier search (1 .. 7/8 of it, positive only) 8.8%; 4 bits
 * of a Gaussian cannot go below 6.25% (its rate-distortion bound
 * 2^-4), which is why int4 cannot meet a 3% budget on such weights.
 *
 * With a zero point: 1 .. 7/8 of the range in steps of 1/64, the range's low
 * end kept where it was.
 */
static void search4(const float *x, int64_t ks, int64_t len, float *s, int32_t *zp, bool asym)
{
	float s0 = *s;
	if (!(s0 > 0))
		return;
	if (!asym) {
		float mx = 0, mn = 0; /* a tie keeps the positive scale */
		for (int64_t j = 0; j < len; j++) {
			mx = x[j * ks] > mx ? x[j * ks] : mx;
			mn = x[j * ks] < mn ? x[j * ks] : mn;
		}
		double best = -1;
		for (int t = 0; t < 12; t++) {
			float sc = (mx > -mn ? -s0 : s0) * ((float)(72 - 2 * ((t + 4) % 12)) / 64.0f);
			double e = sse4(x, ks, len, sc, 8);
			if (best < 0 || e < best) {
				best = e;
				*s = sc;
			}
		}
		return;
	}
	float lo = -(float)*zp * s0;
	double best = sse4(x, ks, len, s0, *zp);
	for (int t = 1; t <= 8; t++) {
		float sc = s0 * (1.0f - (float)t / 64.0f);
		int32_t z = round_clamp(-lo / sc, 0, 15);
		double e = sse4(x, ks, len, sc, z);
		if (e < best) {
			best = e;
			*s = sc;
			*zp = z;
		}
	}
}

int64_t rl_qweight_bytes(const struct rl_qweight *w)
{
	return w->n * (w->rowbytes + w->nb * ((w->half_scales ? 2 : 4) + (w->z != NULL)));
}

int64_t rl_qweight_code_at(int bits, int64_t unit, int64_t rowbytes, int64_t k, int *shift)
{
	int64_t units = rowbytes * 8 / bits / unit;
	int64_t un = k / unit, j = k % unit, g = un / 16, i = un % 16;
	int64_t lanes = units - 16 * g < 16 ? units - 16 * g : 16;
	int64_t base = g * 16 * unit * bits / 8;
	if (bits == 8) {
		*shift = 0;
		return base + j / 4 * 4 * lanes + 4 * i + j % 4;
	}
	*shift = (int)(j % 8 / 4) * 4;
	return base + j / 8 * 4 * lanes + 4 * i + j % 4;
}

int rl_qweight_code(const struct rl_qweight *w, int64_t k, int64_t n)
{
	int sh;
	int64_t at = rl_qweight_code_at(w->bits, w->unit, w->rowbytes, k, &sh);
	uint8_t b = w->q[n * w->rowbytes + at];
	return w->bits == 8 ? (int)(int8_t)b : (b >> sh) & 15;
}

void rl_qweight_pack(struct rl_qweight *w, const float *src, int64_t ks, int64_t ns)
{
	memset(w->q, 0, (size_t)(w->n * w->rowbytes));
	for (int64_t n = 0; n < w->n; n++) {
		uint8_t *row = w->q + n * w->rowbytes;
		int64_t kpad = w->rowbytes * (w->bits == 8 ? 1 : 2);
		for (int64_t b = 0; b < w->nb; b++) {
			int64_t k0 = b * w->block;
			int64_t len = w->k - k0 < w->block ? w->k - k0 : w->block;
			float mn = 0, mx = 0, amax = 0;
			for (int64_t j = 0; j < len; j++) {
				float x = src[(k0 + j) * ks + n * ns];
				mn = j == 0 || x < mn ? x : mn;
				mx = j == 0 || x > mx ? x : mx;
				amax = fabsf(x) > amax ? fabsf(x) : amax;
			}
			float *s = &w->s[n * w->nb + b];
			int32_t zp = 0;
			if (w->bits == 8) {
				*s = amax / 127.0f;
			} else {
				zp = 8;
				*s = amax / 7.0f;
				if (w->scheme == RL_Q_INT4_ASYM && mx > mn) {
					/* the range [min(mn,0), max(mx,0)]: 0 stays exact (padding) */
					float lo = mn < 0 ? mn : 0, hi = mx > 0 ? mx : 0;
					*s = (hi - lo) / 15.0f;
					zp = round_clamp(-lo / *s, 0, 15);
				}
				search4(src + k0 * ks + n * ns, ks, len, s, &zp, w->scheme == RL_Q_INT4_ASYM);
				if (w->z)
					w->z[n * w->nb + b] = (uint8_t)zp;
			}
			/* float16 scales: the codes are rounded against the scale the
			 * kernels will read (a relative change of at most 2^-11; an
			 * int8 weight that lands past 127 clamps there) */
			if (w->half_scales)
				*s = rl_half_to_float(rl_float_to_half(*s));
			float inv = *s != 0 ? 1.0f / *s : 0;
			/* the last block also fills the padding to the chunk's end */
			int64_t end = b == w->nb - 1 ? kpad - k0 : len;
			for (int64_t j = 0; j < end; j++) {
				int sh;
				int64_t at = rl_qweight_code_at(w->bits, w->unit, w->rowbytes, k0 + j, &sh);
				if (w->bits == 8) {
					int32_t q = j < len ? round_clamp(src[(k0 + j) * ks + n * ns] * inv, -127, 127) : 0;
					row[at] = (uint8_t)(int8_t)q;
				} else {
					int32_t q = j < len ? round_clamp(src[(k0 + j) * ks + n * ns] * inv + (float)zp, 0, 15)
					                    : zp;
					row[at] = (uint8_t)(row[at] | (q << sh));
				}
			}
		}
	}
}

/* Unit by unit (one scale and zero point each: a unit is a block, or part
 * of the one per-channel block), with the layout's offsets worked out per
 * unit rather than per code: the pass decodes every weight once per scheme
 * it tries. Same values as rl_qweight_code. */
void rl_qweight_column(const struct rl_qweight *w, int64_t n, float *col)
{
	const uint8_t *row = w->q + n * w->rowbytes;
	int64_t u = w->unit, units = w->rowbytes * 8 / w->bits / u;
	for (int64_t un = 0; un * u < w->k; un++) {
		int64_t g = un / 16, i = un % 16, lanes = units - 16 * g < 16 ? units - 16 * g : 16;
		const uint8_t *base = row + g * 16 * u * w->bits / 8 + 4 * i;
		int64_t b = un * u / w->block, len = w->k - un * u < u ? w->k - un * u : u;
		float s = w->s[n * w->nb + b];
		float *c = col + un * u;
		if (w->bits == 8) {
			for (int64_t j = 0; j < len; j++)
				c[j] = s * (float)(int8_t)base[j / 4 * 4 * lanes + j % 4];
		} else {
			float z = w->z ? (float)w->z[n * w->nb + b] : 8.0f;
			for (int64_t j = 0; j < len; j++)
				c[j] = s * ((float)((base[j / 8 * 4 * lanes + j % 4] >> (j % 8 / 4 * 4)) & 15) - z);
		}
	}
}

/* ---- QuantMatMul: shapes and counts -------------------------------------- */

enum rl_status rl_infer_quant_matmul(struct rl_graph *g, uint32_t node)
{
	struct rl_node *n = &g->nodes[node];
	int64_t K = rl_node_attr_int(n, "K", -1), N = rl_node_attr_int(n, "N", -1);
	int64_t bits = rl_node_attr_int(n, "bits", -1), bs = rl_node_attr_int(n, "block_size", -1);
	if (K <= 0 || N <= 0 || (bits != 8 && bits != 4) || bs <= 0 || (bits == 4 && bs % 32))
		return rl_graph_error(g, n, RL_ERR_INVALID, "QuantMatMul needs attributes K, N > 0, "
		                      "bits 8 or 4 and block_size (a multiple of 32 for 4 bits)");
	int64_t nb = (K + bs - 1) / bs, rowbytes = rl_qweight_rowbytes((int)bits, K, bs);
	struct rl_value *a = rl_infer_in(g, n, 0), *q = rl_infer_in(g, n, 1);
	struct rl_value *s = rl_infer_in(g, n, 2), *z = rl_infer_in(g, n, 3);
	struct rl_value *bias = rl_infer_in(g, n, 4);
	const int64_t qd[2] = {N, rowbytes}, sd[2] = {N, nb};
	struct rl_shape qs, ss, bsh;
	rl_shape_set(&qs, 2, qd);
	rl_shape_set(&ss, 2, sd);
	rl_shape_set(&bsh, 1, &N);
	if (!a || !q || !s || a->dtype != RL_DT_FLOAT || q->dtype != RL_DT_UINT8 ||
	    (s->dtype != RL_DT_FLOAT && s->dtype != RL_DT_FLOAT16) || !rl_shape_equal(&q->shape, &qs) ||
	    !rl_shape_equal(&s->shape, &ss) ||
	    (z && (z->dtype != RL_DT_UINT8 || bits != 4 || !rl_shape_equal(&z->shape, &ss))) ||
	    (bias && (bias->dtype != RL_DT_FLOAT || !rl_shape_equal(&bias->shape, &bsh))))
		return rl_graph_error(g, n, RL_ERR_SHAPE, "QuantMatMul inputs do not match K=%lld "
		                      "N=%lld bits=%lld block_size=%lld", (long long)K, (long long)N,
		                      (long long)bits, (long long)bs);
	struct rl_shape out = {.rank = -1};
	if (a->shape.rank >= 1) {
		struct rl_dim k = a->shape.d[a->shape.rank - 1];
		if (k.v >= 0 && k.v != K)
			return rl_graph_error(g, n, RL_ERR_SHAPE, "QuantMatMul: A's last dimension "
			                      "%lld is not K=%lld", (long long)k.v, (long long)K);
		out = a->shape;
		out.d[out.rank - 1] = rl_dim_num(N);
	}
	return rl_infer_set(g, node, 0, RL_DT_FLOAT, &out);
}

/* MACs as the float product; the extra FLOPs of dequantization (one
 * multiply-add per weight and row) are the kernel's business, not the
 * model's: the report keeps FLOPs comparable before and after. */
bool rl_count_quant_matmul(const struct rl_graph *g, uint32_t node, struct rl_counts *c)
{
	const struct rl_node *n = &g->nodes[node];
	double mn = rl_cnt_out(g, n, 0);
	int64_t K = rl_node_attr_int(n, "K", 0), N = rl_node_attr_int(n, "N", 0);
	int bits = (int)rl_node_attr_int(n, "bits", 8);
	int64_t bs = rl_node_attr_int(n, "block_size", 32);
	double k = (double)K;
	c->macs = mn * k;
	c->flops = 2 * c->macs + (rl_node_in(n, 4) != RL_NONE ? mn : 0);
	/* as the kernels run it (ir/cost.h): the codes' products, the threads
	 * they split into, the activation rows quantized before the split */
	int64_t M = N > 0 ? (int64_t)(mn / (double)N) : 0;
	rl_qmatmul_kernel_counts(bits, K, N, bs, M, c);
	return true;
}

void rl_qmatmul_kernel_counts(int bits, int64_t k, int64_t n, int64_t block, int64_t m,
                              struct rl_counts *c)
{
	c->qmacs = c->macs;
	if (k > 0 && n > 0 && block > 0 && (bits == 8 || bits == 4)) {
		c->par_tasks = (double)rl_qmatmul_tasks(bits, k, n, block, m);
		c->serial = RL_QX_PREP_BASIC * (double)(m < 1 ? 1 : m) * (double)k;
	}
}

int64_t rl_qmatmul_grain(int bits, int64_t k, int64_t block, int64_t m)
{
	int64_t per = RL_QCOLS * rl_qweight_rowbytes(bits, k, block) * (m < 1 ? 1 : m);
	return per >= RL_QTASK_BYTES ? 1 : (RL_QTASK_BYTES + per - 1) / per;
}

int64_t rl_qmatmul_tasks(int bits, int64_t k, int64_t n, int64_t block, int64_t m)
{
	int64_t groups = (n + RL_QCOLS - 1) / RL_QCOLS;
	int64_t t = groups / rl_qmatmul_grain(bits, k, block, m);
	return t < 1 ? 1 : t;
}
