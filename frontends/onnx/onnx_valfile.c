/*
 * onnx_valfile.c - the graph input and output files `rlopt run` reads and
 * writes: a TensorProto, a SequenceProto of tensors or an OptionalProto
 * (empty, a tensor, or a sequence of tensors), as the ONNX backend tests
 * store them (input_K.pb, output_K.pb).
 *
 * The protobuf-c code is generated from onnx.proto, which does not hold
 * SequenceProto and OptionalProto (they are in onnx-data.proto, which
 * libonnx-dev does not install), so their few fields are read and written
 * here on the wire format; the tensors inside are ordinary TensorProtos:
 *
 *   SequenceProto  1 name, 2 elem_type, 3 tensor_values (repeated),
 *                  4 sparse tensors, 5 sequences, 6 maps, 7 optionals
 *   OptionalProto  1 name, 2 elem_type, 3 tensor_value, 4 sparse tensor,
 *                  5 sequence_value, 6 map, 7 optional
 *   elem_type      0 undefined, 1 tensor, 2 sparse tensor, 3 sequence,
 *                  4 map, 5 optional
 *
 * Only what a static C interface holds (tensors and sequences of tensors)
 * is accepted; anything else, and any malformed file, is refused with one
 * line naming the file. The wire formats cannot tell the three messages
 * apart, so the caller says which one the model's type expects.
 */
#include "onnx.h"
#include "onnx_subgraph.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { ELEM_UNDEFINED = 0, ELEM_TENSOR = 1, ELEM_SEQUENCE = 3 };
enum { WT_VARINT = 0, WT_I64 = 1, WT_LEN = 2, WT_I32 = 5 };

/* ---- reading the wire format ---------------------------------------------- */

struct wire {
	const uint8_t *p, *end;
};

static bool get_varint(struct wire *w, uint64_t *v)
{
	*v = 0;
	for (int shift = 0; shift < 64; shift += 7) {
		if (w->p >= w->end)
			return false;
		uint8_t b = *w->p++;
		*v |= (uint64_t)(b & 0x7f) << shift;
		if (!(b & 0x80))
			return true;
	}
	return false;
}

struct field {
	uint32_t num;
	int wt;
	uint64_t val;        /* WT_VARINT */
	const uint8_t *data; /* WT_LEN */
	size_t len;
};

/* The next field of w: 1, 0 at the end, -1 malformed. */
static int next_field(struct wire *w, struct field *f)
{
	if (w->p == w->end)
		return 0;
	uint64_t tag;
	if (!get_varint(w, &tag) || (tag >> 3) == 0 || (tag >> 3) > 0x1fffffff)
		return -1;
	f->num = (uint32_t)(tag >> 3);
	f->wt = (int)(tag & 7);
	switch (f->wt) {
	case WT_VARINT:
		return get_varint(w, &f->val) ? 1 : -1;
	case WT_I64:
	case WT_I32: {
		size_t n = f->wt == WT_I64 ? 8 : 4;
		if ((size_t)(w->end - w->p) < n)
			return -1;
		w->p += n;
		return 1;
	}
	case WT_LEN: {
		uint64_t n;
		if (!get_varint(w, &n) || n > (uint64_t)(w->end - w->p))
			return -1;
		f->data = w->p;
		f->len = (size_t)n;
		w->p += n;
		return 1;
	}
	default: /* groups (3, 4) are not in these messages */
		return -1;
	}
}

static const char *elem_name(uint64_t e)
{
	switch (e) {
	case 2: return "sparse tensors";
	case 3: return "sequences";
	case 4: return "maps";
	case 5: return "optionals";
	default: return "an unknown kind";
	}
}

static bool add_tensor(struct rl_value_file *f, const uint8_t *data, size_t len, char *why,
                       size_t whylen)
{
	struct rl_tensor *nt = realloc(f->t, (size_t)(f->n + 1) * sizeof(*nt));
	if (!nt) {
		snprintf(why, whylen, "out of memory");
		return false;
	}
	f->t = nt;
	char w2[400];
	if (rl_onnx_tensor_decode(data, len, &f->t[f->n], w2, sizeof(w2)) != RL_OK) {
		snprintf(why, whylen, "element %d: %s", f->n, w2);
		return false;
	}
	f->n++;
	return true;
}

static bool set_name(struct rl_value_file *f, const struct field *fl)
{
	free(f->name);
	f->name = malloc(fl->len + 1);
	if (!f->name)
		return false;
	memcpy(f->name, fl->data, fl->len);
	f->name[fl->len] = 0;
	return true;
}

/* A SequenceProto's tensors into f (name too when top). */
static bool parse_sequence(const uint8_t *buf, size_t len, struct rl_value_file *f, bool top,
                           char *why, size_t whylen)
{
	struct wire w = {buf, buf + len};
	struct field fl;
	int r;
	uint64_t elem = ELEM_UNDEFINED;
	while ((r = next_field(&w, &fl)) == 1) {
		bool want_len = fl.num == 1 || (fl.num >= 3 && fl.num <= 7);
		if (fl.num <= 7 && (want_len ? fl.wt != WT_LEN : fl.wt != WT_VARINT)) {
			snprintf(why, whylen, "not a SequenceProto (field %u has wire type %d)", fl.num,
			         fl.wt);
			return false;
		}
		if (fl.num == 1 && top && !set_name(f, &fl)) {
			snprintf(why, whylen, "out of memory");
			return false;
		}
		if (fl.num == 2)
			elem = fl.val;
		if (fl.num == 3 && !add_tensor(f, fl.data, fl.len, why, whylen))
			return false;
		if (fl.num >= 4 && fl.num <= 7) {
			snprintf(why, whylen, "a sequence of %s is not supported (only tensors)",
			         elem_name(fl.num - 2));
			return false;
		}
	}
	if (r < 0) {
		snprintf(why, whylen, "not a SequenceProto (malformed protobuf)");
		return false;
	}
	if (elem != ELEM_UNDEFINED && elem != ELEM_TENSOR) {
		snprintf(why, whylen, "a sequence of %s is not supported (only tensors)",
		         elem_name(elem));
		return false;
	}
	return true;
}

static bool parse_optional(const uint8_t *buf, size_t len, struct rl_value_file *f, char *why,
                           size_t whylen)
{
	struct wire w = {buf, buf + len};
	struct field fl;
	int r;
	while ((r = next_field(&w, &fl)) == 1) {
		bool want_len = fl.num == 1 || (fl.num >= 3 && fl.num <= 7);
		if (fl.num <= 7 && (want_len ? fl.wt != WT_LEN : fl.wt != WT_VARINT)) {
			snprintf(why, whylen, "not an OptionalProto (field %u has wire type %d)", fl.num,
			         fl.wt);
			return false;
		}
		if (fl.num == 1 && !set_name(f, &fl)) {
			snprintf(why, whylen, "out of memory");
			return false;
		}
		if ((fl.num == 3 || fl.num == 5) && f->present) {
			snprintf(why, whylen, "not an OptionalProto (it holds two values)");
			return false;
		}
		if (fl.num == 3) {
			f->present = 1;
			f->inner = RL_ONNX_TENSOR;
			if (!add_tensor(f, fl.data, fl.len, why, whylen))
				return false;
		} else if (fl.num == 5) {
			f->present = 1;
			f->inner = RL_ONNX_SEQUENCE;
			if (!parse_sequence(fl.data, fl.len, f, false, why, whylen))
				return false;
		} else if (fl.num == 4 || fl.num == 6 || fl.num == 7) {
			snprintf(why, whylen, "an optional holding %s is not supported (only a tensor "
			         "or a sequence of tensors)", elem_name(fl.num - 2));
			return false;
		}
	}
	if (r < 0) {
		snprintf(why, whylen, "not an OptionalProto (malformed protobuf)");
		return false;
	}
	return true;
}

enum rl_status rl_value_file_read(const char *path, enum rl_onnx_kind kind,
                                  struct rl_value_file *f, char *err, size_t errlen)
{
	memset(f, 0, sizeof(*f));
	f->kind = kind;
	f->inner = RL_ONNX_TENSOR;
	FILE *fp = fopen(path, "rb");
	if (!fp) {
		snprintf(err, errlen, "%s: cannot open: %s", path, strerror(errno));
		return RL_ERR_IO;
	}
	size_t cap = 1 << 16, len = 0, r;
	uint8_t *buf = malloc(cap);
	while (buf && (r = fread(buf + len, 1, cap - len, fp)) > 0) {
		len += r;
		if (len == cap) {
			uint8_t *nb = realloc(buf, cap *= 2);
			if (!nb)
				free(buf);
			buf = nb;
		}
	}
	fclose(fp);
	if (!buf) {
		snprintf(err, errlen, "%s: out of memory", path);
		return RL_ERR_NOMEM;
	}
	char why[512];
	bool ok;
	if (kind == RL_ONNX_TENSOR) {
		if (len == 0) {
			snprintf(why, sizeof(why), "empty file");
			ok = false;
		} else {
			f->t = calloc(1, sizeof(*f->t));
			ok = f->t && rl_onnx_tensor_decode(buf, len, f->t, why, sizeof(why)) == RL_OK;
			if (!f->t)
				snprintf(why, sizeof(why), "out of memory");
			f->n = ok ? 1 : 0;
		}
	} else if (kind == RL_ONNX_SEQUENCE) {
		ok = parse_sequence(buf, len, f, true, why, sizeof(why));
	} else {
		ok = parse_optional(buf, len, f, why, sizeof(why));
	}
	free(buf);
	if (!ok) {
		snprintf(err, errlen, "%s: %s", path, why);
		rl_value_file_free(f);
		return RL_ERR_PARSE;
	}
	if (!f->name)
		f->name = strdup(f->n && f->t[0].name && kind == RL_ONNX_TENSOR ? f->t[0].name : "");
	return RL_OK;
}

void rl_value_file_free(struct rl_value_file *f)
{
	for (int i = 0; i < f->n; i++)
		rl_tensor_free(&f->t[i]);
	free(f->t);
	free(f->name);
	memset(f, 0, sizeof(*f));
}

/* ---- writing ----------------------------------------------------------------- */

struct obuf {
	uint8_t *p;
	size_t n, cap;
	bool oom;
};

static void put(struct obuf *o, const void *d, size_t n)
{
	if (o->oom)
		return;
	if (o->n + n > o->cap) {
		size_t c = o->cap ? o->cap : 256;
		while (c < o->n + n)
			c *= 2;
		uint8_t *np = realloc(o->p, c);
		if (!np) {
			o->oom = true;
			return;
		}
		o->p = np;
		o->cap = c;
	}
	if (n)
		memcpy(o->p + o->n, d, n);
	o->n += n;
}

static void put_varint(struct obuf *o, uint64_t v)
{
	uint8_t b[10];
	int n = 0;
	do {
		b[n] = (uint8_t)(v & 0x7f);
		v >>= 7;
		if (v)
			b[n] |= 0x80;
		n++;
	} while (v);
	put(o, b, (size_t)n);
}

static void put_bytes(struct obuf *o, uint32_t num, const void *d, size_t n)
{
	put_varint(o, (uint64_t)num << 3 | WT_LEN);
	put_varint(o, n);
	put(o, d, n);
}

static void put_tensor(struct obuf *o, uint32_t num, const struct rl_tensor *t)
{
	size_t len;
	uint8_t *b = rl_tensor_pack(t, &len);
	if (!b) {
		o->oom = true;
		return;
	}
	put_bytes(o, num, b, len);
	free(b);
}

static void put_sequence(struct obuf *o, const char *name, const struct rl_value_file *f)
{
	if (name && *name)
		put_bytes(o, 1, name, strlen(name));
	put_varint(o, 2 << 3 | WT_VARINT);
	put_varint(o, ELEM_TENSOR);
	for (int i = 0; i < f->n; i++)
		put_tensor(o, 3, &f->t[i]);
}

enum rl_status rl_value_file_write(const char *path, const struct rl_value_file *f,
                                   char *err, size_t errlen)
{
	if (f->kind == RL_ONNX_TENSOR) {
		RL_ASSERT(f->n == 1);
		return rl_tensor_write(path, &f->t[0], err, errlen);
	}
	struct obuf o = {0};
	if (f->kind == RL_ONNX_SEQUENCE) {
		put_sequence(&o, f->name, f);
	} else {
		if (f->name && *f->name)
			put_bytes(&o, 1, f->name, strlen(f->name));
		if (f->present) {
			put_varint(&o, 2 << 3 | WT_VARINT);
			put_varint(&o, f->inner == RL_ONNX_SEQUENCE ? ELEM_SEQUENCE : ELEM_TENSOR);
			if (f->inner == RL_ONNX_SEQUENCE) {
				struct obuf s = {0};
				put_sequence(&s, NULL, f);
				o.oom |= s.oom;
				put_bytes(&o, 5, s.p, s.n);
				free(s.p);
			} else {
				RL_ASSERT(f->n == 1);
				put_tensor(&o, 3, &f->t[0]);
			}
		}
	}
	enum rl_status st;
	if (o.oom) {
		snprintf(err, errlen, "%s: out of memory", path);
		st = RL_ERR_NOMEM;
	} else {
		st = rl_write_file_atomic(path, o.p ? o.p : (const uint8_t *)"", o.n, err, errlen);
	}
	free(o.p);
	return st;
}
