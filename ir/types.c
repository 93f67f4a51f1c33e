/*
 * types.c - dtypes, shapes, and the operator table generated from ops.def.
 */
#include "ir.h"

#include <stdlib.h>
#include <string.h>

/* ---- operator table ----------------------------------------------------- */

const struct rl_op_info rl_op_table[RL_OP_COUNT_] = {
#define RL_OP(name, fam, imin, imax, omin, omax, flags, emit, fold, tc) \
	[RL_OP_##name] = {#name, RL_FAM_##fam, imin, imax, omin, omax, flags, \
	                  RL_EMIT_##emit, RL_FOLD_##fold, RL_TC_##tc},
#include "ops.def"
#undef RL_OP
};

/* Sorted view of the table for binary search; built once. Loading runs this
 * twice per node, and a linear scan of ~120 strcmps per node dominated the
 * load time of a 100k-node model. */
static int op_cmp(const void *a, const void *b)
{
	return strcmp(rl_op_table[*(const int *)a].name, rl_op_table[*(const int *)b].name);
}

static enum rl_op op_lookup_any(const char *op_type)
{
	static int sorted[RL_OP_COUNT_];
	static bool ready;
	if (!ready) {
		for (int i = 0; i < RL_OP_COUNT_; i++)
			sorted[i] = i;
		qsort(sorted, RL_OP_COUNT_, sizeof(int), op_cmp);
		ready = true;
	}
	int lo = 0, hi = RL_OP_COUNT_ - 1;
	while (lo <= hi) {
		int mid = (lo + hi) / 2;
		int c = strcmp(op_type, rl_op_table[sorted[mid]].name);
		if (c == 0)
			return (enum rl_op)sorted[mid];
		if (c < 0)
			hi = mid - 1;
		else
			lo = mid + 1;
	}
	return RL_OP_COUNT_;
}

const char *rl_op_domain(enum rl_op op)
{
	if (op == RL_OP_FlexAttention)
		return "ai.onnx.preview";
	unsigned f = op < RL_OP_COUNT_ ? rl_op_table[op].flags : 0;
	return f & RL_OPF_ML ? "ai.onnx.ml" : f & RL_OPF_TRAIN ? "ai.onnx.preview.training" : "";
}

bool rl_op_in_domain(enum rl_op op, const char *dom)
{
	if (op >= RL_OP_COUNT_)
		return false;
	if (!dom || !strcmp(dom, "ai.onnx"))
		dom = "";
	return strcmp(dom, rl_op_domain(op)) == 0;
}

enum rl_op rl_op_lookup_domain(const char *domain, const char *op_type)
{
	if (!domain || strcmp(domain, "ai.onnx") == 0)
		domain = "";
	enum rl_op op = op_lookup_any(op_type);
	return op < RL_OP_COUNT_ && strcmp(rl_op_domain(op), domain) == 0 ? op : RL_OP_COUNT_;
}

enum rl_op rl_op_lookup(const char *op_type)
{
	return rl_op_lookup_domain("", op_type);
}

const char *rl_family_name(enum rl_family f)
{
	static const char *names[RL_FAM_COUNT_] = {
#define X(E, file, name) [RL_FAM_##E] = name,
		RL_FAMILIES(X)
#undef X
	};
	return f < RL_FAM_COUNT_ ? names[f] : "?";
}

/* ---- dtypes ------------------------------------------------------------- */

static const struct {
	const char *name;
	size_t size;
} dtype_info[RL_DT_COUNT_] = {
	[RL_DT_UNDEFINED] = {"undefined", 0}, [RL_DT_FLOAT] = {"float32", 4},
	[RL_DT_UINT8] = {"uint8", 1},         [RL_DT_INT8] = {"int8", 1},
	[RL_DT_UINT16] = {"uint16", 2},       [RL_DT_INT16] = {"int16", 2},
	[RL_DT_INT32] = {"int32", 4},         [RL_DT_INT64] = {"int64", 8},
	[RL_DT_STRING] = {"string", 0},       [RL_DT_BOOL] = {"bool", 1},
	[RL_DT_FLOAT16] = {"float16", 2},     [RL_DT_DOUBLE] = {"float64", 8},
	[RL_DT_UINT32] = {"uint32", 4},       [RL_DT_UINT64] = {"uint64", 8},
	[RL_DT_COMPLEX64] = {"complex64", 8}, [RL_DT_COMPLEX128] = {"complex128", 16},
	[RL_DT_BFLOAT16] = {"bfloat16", 2},
	/* low precision: one byte an element in memory (ir/lowp.c) */
	[RL_DT_FLOAT8E4M3FN] = {"float8e4m3fn", 1},
	[RL_DT_FLOAT8E4M3FNUZ] = {"float8e4m3fnuz", 1},
	[RL_DT_FLOAT8E5M2] = {"float8e5m2", 1},
	[RL_DT_FLOAT8E5M2FNUZ] = {"float8e5m2fnuz", 1},
	[RL_DT_UINT4] = {"uint4", 1},         [RL_DT_INT4] = {"int4", 1},
	[RL_DT_FLOAT4E2M1] = {"float4e2m1", 1},
	[RL_DT_FLOAT8E8M0] = {"float8e8m0", 1},
	[RL_DT_UINT2] = {"uint2", 1},         [RL_DT_INT2] = {"int2", 1},
};

size_t rl_dtype_size(enum rl_dtype t)
{
	return (unsigned)t < RL_DT_COUNT_ ? dtype_info[t].size : 0;
}

const char *rl_dtype_name(enum rl_dtype t)
{
	return (unsigned)t < RL_DT_COUNT_ ? dtype_info[t].name : "unknown";
}

bool rl_dtype_is_float(enum rl_dtype t)
{
	return t == RL_DT_FLOAT || t == RL_DT_DOUBLE || t == RL_DT_FLOAT16 ||
	       t == RL_DT_BFLOAT16;
}

bool rl_dtype_is_int(enum rl_dtype t)
{
	switch (t) {
	case RL_DT_UINT8: case RL_DT_INT8: case RL_DT_UINT16: case RL_DT_INT16:
	case RL_DT_INT32: case RL_DT_INT64: case RL_DT_UINT32: case RL_DT_UINT64:
		return true;
	default:
		return false;
	}
}

bool rl_dtype_is_signed(enum rl_dtype t)
{
	return t == RL_DT_INT8 || t == RL_DT_INT16 || t == RL_DT_INT32 ||
	       t == RL_DT_INT64 || rl_dtype_is_float(t);
}

bool rl_dtype_is_numeric(enum rl_dtype t)
{
	return rl_dtype_is_float(t) || rl_dtype_is_int(t) || t == RL_DT_BOOL;
}

enum rl_dtype rl_dtype_parse(const char *s)
{
	static const struct {
		const char *alias;
		enum rl_dtype t;
	} aliases[] = {
		{"f32", RL_DT_FLOAT},   {"float", RL_DT_FLOAT}, {"f64", RL_DT_DOUBLE},
		{"double", RL_DT_DOUBLE}, {"f16", RL_DT_FLOAT16}, {"half", RL_DT_FLOAT16},
		{"bf16", RL_DT_BFLOAT16}, {"i8", RL_DT_INT8},   {"u8", RL_DT_UINT8},
		{"i32", RL_DT_INT32},   {"i64", RL_DT_INT64},
	};
	for (int i = 1; i < RL_DT_COUNT_; i++)
		if (strcmp(dtype_info[i].name, s) == 0)
			return (enum rl_dtype)i;
	for (size_t i = 0; i < sizeof(aliases) / sizeof(aliases[0]); i++)
		if (strcmp(aliases[i].alias, s) == 0)
			return aliases[i].t;
	return RL_DT_UNDEFINED;
}

/* IEEE binary16 <-> binary32, round to nearest even, NaN and inf kept. */
float rl_half_to_float(uint16_t h)
{
	uint32_t sign = (uint32_t)(h & 0x8000) << 16;
	uint32_t exp = (h >> 10) & 0x1f, man = h & 0x3ff, bits;
	if (exp == 0) {
		if (man == 0) {
			bits = sign;
		} else { /* subnormal: normalize */
			int e = -1;
			do {
				e++;
				man <<= 1;
			} while (!(man & 0x400));
			bits = sign | ((uint32_t)(127 - 15 - e) << 23) | ((man & 0x3ff) << 13);
		}
	} else if (exp == 31) {
		bits = sign | 0x7f800000u | (man << 13);
	} else {
		bits = sign | ((exp + 112) << 23) | (man << 13);
	}
	float f;
	memcpy(&f, &bits, 4);
	return f;
}

uint16_t rl_float_to_half(float f)
{
	uint32_t x;
	memcpy(&x, &f, 4);
	uint32_t sign = (x >> 16) & 0x8000;
	uint32_t absx = x & 0x7fffffffu;
	if (absx >= 0x7f800000u) /* inf or nan */
		return (uint16_t)(sign | 0x7c00 | (absx > 0x7f800000u ? 0x200 : 0));
	if (absx >= 0x477ff000u) /* rounds to >= 65520: overflow to inf */
		return (uint16_t)(sign | 0x7c00);
	if (absx < 0x38800000u) { /* subnormal or zero in half */
		if (absx < 0x33000000u)
			return (uint16_t)sign;
		uint32_t e = absx >> 23;
		uint32_t m = (absx & 0x7fffff) | 0x800000;
		int shift = 126 - (int)e; /* 14 - (e - 127) + 10 - 23 + 23 */
		uint32_t hm = m >> (shift);
		uint32_t rem = m & ((1u << shift) - 1), half = 1u << (shift - 1);
		if (rem > half || (rem == half && (hm & 1)))
			hm++;
		return (uint16_t)(sign | hm);
	}
	uint32_t h = ((absx >> 13) - (112u << 10));
	uint32_t rem = absx & 0x1fff;
	if (rem > 0x1000 || (rem == 0x1000 && (h & 1)))
		h++;
	return (uint16_t)(sign | h);
}

float rl_bf16_to_float(uint16_t h)
{
	uint32_t bits = (uint32_t)h << 16;
	float f;
	memcpy(&f, &bits, 4);
	return f;
}

uint16_t rl_float_to_bf16(float f)
{
	uint32_t x;
	memcpy(&x, &f, 4);
	if ((x & 0x7fffffffu) > 0x7f800000u)
		return (uint16_t)((x >> 16) | 0x40);
	x += 0x7fff + ((x >> 16) & 1);
	return (uint16_t)(x >> 16);
}

/* ---- shapes ------------------------------------------------------------- */

bool rl_shape_is_static(const struct rl_shape *s)
{
	if (s->rank < 0)
		return false;
	for (int i = 0; i < s->rank; i++)
		if (s->d[i].v < 0)
			return false;
	return true;
}

int64_t rl_shape_numel(const struct rl_shape *s)
{
	if (!rl_shape_is_static(s))
		return -1;
	int64_t n = 1;
	for (int i = 0; i < s->rank; i++) {
		if (s->d[i].v && n > INT64_MAX / s->d[i].v)
			return -1;
		n *= s->d[i].v;
	}
	return n;
}

bool rl_shape_equal(const struct rl_shape *a, const struct rl_shape *b)
{
	if (a->rank != b->rank)
		return false;
	for (int i = 0; i < a->rank; i++) {
		if (a->d[i].v != b->d[i].v)
			return false;
		if (a->d[i].v < 0 &&
		    (!a->d[i].sym || !b->d[i].sym || strcmp(a->d[i].sym, b->d[i].sym)))
			return false;
	}
	return true;
}

char *rl_shape_str(const struct rl_shape *s, char *buf, size_t n)
{
	if (s->rank < 0) {
		snprintf(buf, n, "?");
		return buf;
	}
	if (s->rank == 0) {
		snprintf(buf, n, "scalar");
		return buf;
	}
	size_t p = 0;
	buf[0] = 0;
	for (int i = 0; i < s->rank && p < n; i++) {
		if (s->d[i].v >= 0)
			p += (size_t)snprintf(buf + p, n - p, "%s%lld", i ? "x" : "",
			                      (long long)s->d[i].v);
		else
			p += (size_t)snprintf(buf + p, n - p, "%s%s", i ? "x" : "",
			                      s->d[i].sym ? s->d[i].sym : "?");
	}
	return buf;
}

void rl_shape_set(struct rl_shape *s, int rank, const int64_t *dims)
{
	RL_ASSERT(rank <= RL_MAX_RANK);
	memset(s, 0, sizeof(*s));
	s->rank = rank;
	for (int i = 0; i < rank; i++)
		s->d[i].v = dims[i];
}

bool rl_shape_broadcast(const struct rl_shape *a, const struct rl_shape *b,
                        struct rl_shape *out)
{
	if (a->rank < 0 || b->rank < 0)
		return false;
	int r = a->rank > b->rank ? a->rank : b->rank;
	struct rl_shape o;
	memset(&o, 0, sizeof(o));
	o.rank = r;
	for (int i = 0; i < r; i++) {
		int ia = i - (r - a->rank), ib = i - (r - b->rank);
		struct rl_dim da = ia >= 0 ? a->d[ia] : (struct rl_dim){1, NULL};
		struct rl_dim db = ib >= 0 ? b->d[ib] : (struct rl_dim){1, NULL};
		if (da.v == 1)
			o.d[i] = db;
		else if (db.v == 1)
			o.d[i] = da;
		else if (da.v >= 0 && db.v >= 0) {
			if (da.v != db.v)
				return false;
			o.d[i] = da;
		} else if (da.v < 0 && db.v < 0) {
			/* two symbols: equal names broadcast; else assume equal */
			o.d[i] = da;
		} else {
			o.d[i] = da.v >= 0 ? da : db; /* symbol must equal the number */
		}
	}
	*out = o;
	return true;
}
