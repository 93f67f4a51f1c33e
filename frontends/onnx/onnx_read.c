/*
 * onnx_read.c - ONNX ModelProto (protobuf-c) to IR.
 *
 * The file is mmap'd and unpacked by protobuf-c; the unpacked message is
 * kept alive with the graph because initializers stored as raw_data are
 * borrowed from it (protobuf-c copies bytes fields once while unpacking; we
 * never copy them again). Initializers in typed fields (float_data, ...) are
 * converted into graph-owned memory. External data is mmap'd, page-aligned,
 * from a file that must resolve inside the model's folder: an absolute path,
 * a `..` that climbs out, or a symlink pointing outside is refused.
 *
 * Checks made here, each a one-line error naming file, node and reason:
 * empty or unparsable files, a missing graph, ir_version below 3 (a newer one
 * than RL_ONNX_IR_MAX loads; the command line warns),
 * unknown operators (all of them listed at once), input counts outside the
 * operator table's range, names nothing produces, two producers of one name,
 * negative or overflowing dims, and bad external data. Cycles and shapes are
 * left to rl_graph_verify() and rl_graph_infer().
 */
#include "onnx.h"
#include "onnx.pb-c.h"
#include "onnx_subgraph.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#define RL_MAX_NUMEL (INT64_C(1) << 40) /* refuse absurd tensors up front */

static void set_err(char *err, size_t errlen, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static void set_err(char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
	for (char *p = err; *p; p++)
		if (*p == '\n' || *p == '\r')
			*p = ' ';
}

/* ---- dtypes ------------------------------------------------------------- */

static bool dtype_supported(int32_t dt)
{
	return dt > 0 && dt < RL_DT_COUNT_ && dt != RL_DT_STRING &&
	       dt != RL_DT_COMPLEX64 && dt != RL_DT_COMPLEX128;
}

static const char *onnx_dtype_name(int32_t dt)
{
	if (dt >= 0 && dt < RL_DT_COUNT_)
		return rl_dtype_name((enum rl_dtype)dt);
	return "unknown";
}

/* ---- shapes ------------------------------------------------------------- */

static bool dims_to_shape(const int64_t *dims, size_t n, struct rl_shape *s,
                          char *why, size_t whylen)
{
	if (n > RL_MAX_RANK) {
		snprintf(why, whylen, "rank %zu exceeds the supported %d", n, RL_MAX_RANK);
		return false;
	}
	memset(s, 0, sizeof(*s));
	s->rank = (int)n;
	int64_t numel = 1;
	for (size_t i = 0; i < n; i++) {
		if (dims[i] < 0) {
			snprintf(why, whylen, "negative dimension %lld", (long long)dims[i]);
			return false;
		}
		if (dims[i] && numel > RL_MAX_NUMEL / dims[i]) {
			snprintf(why, whylen, "dimensions overflow (more than 2^40 elements)");
			return false;
		}
		numel *= dims[i];
		s->d[i].v = dims[i];
	}
	return true;
}

/* ---- external data ------------------------------------------------------ */

struct ext_ref {
	const char *location;
	int64_t offset, length; /* length -1: to the end of the file */
};

static bool parse_external(const Onnx__TensorProto *t, struct ext_ref *r,
                           char *why, size_t whylen)
{
	r->location = NULL;
	r->offset = 0;
	r->length = -1;
	for (size_t i = 0; i < t->n_external_data; i++) {
		const Onnx__StringStringEntryProto *e = t->external_data[i];
		if (!e->key || !e->value)
			continue;
		char *end;
		if (strcmp(e->key, "location") == 0) {
			r->location = e->value;
		} else if (strcmp(e->key, "offset") == 0) {
			errno = 0;
			r->offset = strtoll(e->value, &end, 10);
			if (errno || *end || r->offset < 0) {
				snprintf(why, whylen, "bad external data offset '%s'", e->value);
				return false;
			}
		} else if (strcmp(e->key, "length") == 0) {
			errno = 0;
			r->length = strtoll(e->value, &end, 10);
			if (errno || *end || r->length < 0) {
				snprintf(why, whylen, "bad external data length '%s'", e->value);
				return false;
			}
		}
	}
	if (!r->location || !*r->location) {
		snprintf(why, whylen, "external data without a location");
		return false;
	}
	return true;
}

/* Map external data; confines the file to the model's folder. */
static bool map_external(struct rl_graph *g, const char *dir,
                         const struct ext_ref *r, size_t want, const void **data,
                         char *why, size_t whylen)
{
	if (r->location[0] == '/') {
		snprintf(why, whylen, "external data location '%s' is absolute; "
		         "it must be relative to the model's folder", r->location);
		return false;
	}
	/* lexical check first: a '..' that climbs above the folder */
	int depth = 0;
	for (const char *p = r->location; *p;) {
		const char *q = strchr(p, '/');
		size_t n = q ? (size_t)(q - p) : strlen(p);
		if (n == 2 && p[0] == '.' && p[1] == '.')
			depth--;
		else if (n && !(n == 1 && p[0] == '.'))
			depth++;
		if (depth < 0) {
			snprintf(why, whylen, "external data location '%s' escapes the "
			         "model's folder", r->location);
			return false;
		}
		p = q ? q + 1 : p + n;
	}
	char path[PATH_MAX], real_dir[PATH_MAX], real_file[PATH_MAX];
	if ((size_t)snprintf(path, sizeof(path), "%s/%s", dir, r->location) >= sizeof(path)) {
		snprintf(why, whylen, "external data path too long");
		return false;
	}
	if (!realpath(dir, real_dir) || !realpath(path, real_file)) {
		snprintf(why, whylen, "external data file '%s' not found: %s", r->location,
		         strerror(errno));
		return false;
	}
	size_t dl = strlen(real_dir);
	if (strncmp(real_file, real_dir, dl) != 0 || real_file[dl] != '/') {
		snprintf(why, whylen, "external data location '%s' resolves outside the "
		         "model's folder", r->location);
		return false;
	}
	int fd = open(real_file, O_RDONLY | O_CLOEXEC);
	struct stat st;
	if (fd < 0 || fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
		snprintf(why, whylen, "external data file '%s' cannot be read", r->location);
		if (fd >= 0)
			close(fd);
		return false;
	}
	int64_t len = r->length >= 0 ? r->length : (int64_t)st.st_size - r->offset;
	if (r->offset > (int64_t)st.st_size || len < 0 ||
	    r->offset + len > (int64_t)st.st_size) {
		snprintf(why, whylen, "external data file '%s' has %lld bytes, shorter "
		         "than offset %lld + length %lld", r->location,
		         (long long)st.st_size, (long long)r->offset, (long long)len);
		close(fd);
		return false;
	}
	if ((size_t)len != want) {
		snprintf(why, whylen, "external data length %lld does not match the "
		         "shape's %zu bytes", (long long)len, want);
		close(fd);
		return false;
	}
	if (want == 0) {
		close(fd);
		*data = "";
		return true;
	}
	long pg = sysconf(_SC_PAGESIZE);
	int64_t base = r->offset - r->offset % pg;
	size_t maplen = (size_t)(r->offset - base + len);
	void *m = mmap(NULL, maplen, PROT_READ, MAP_PRIVATE, fd, base);
	close(fd);
	if (m == MAP_FAILED) {
		snprintf(why, whylen, "cannot map external data '%s': %s", r->location,
		         strerror(errno));
		return false;
	}
	rl_graph_add_mapping(g, m, maplen);
	*data = (const char *)m + (r->offset - base);
	return true;
}

/* ---- tensors ------------------------------------------------------------ */

/*
 * Decode a TensorProto. With g set, raw data is borrowed from the proto (which
 * lives as long as g) and converted data is graph-owned; with g NULL (tensor
 * files) everything is copied into malloc'd memory.
 */
static bool decode_tensor(struct rl_graph *g, const char *dir,
                          const Onnx__TensorProto *t, enum rl_dtype *dtp,
                          struct rl_shape *shape, const void **datap,
                          size_t *nbytesp, char *why, size_t whylen)
{
	int32_t dt = t->data_type;
	if (!dtype_supported(dt)) {
		snprintf(why, whylen, "tensor dtype %s is not supported", onnx_dtype_name(dt));
		return false;
	}
	if (!dims_to_shape(t->dims, t->n_dims, shape, why, whylen))
		return false;
	if (t->segment) {
		snprintf(why, whylen, "segmented tensors are not supported");
		return false;
	}
	int64_t numel = rl_shape_numel(shape);
	size_t es = rl_dtype_size((enum rl_dtype)dt);
	size_t want = (size_t)numel * es;
	/* int4, uint4, float4e2m1, int2, uint2: packed in the file, one byte an
	 * element in memory (ir/lowp.c) */
	bool packed = rl_dtype_bits((enum rl_dtype)dt) < 8;
	size_t fwant = rl_dtype_packed_size((enum rl_dtype)dt, numel);
	*dtp = (enum rl_dtype)dt;
	*nbytesp = want;

	const void *fdata = NULL;
	if (t->has_data_location && t->data_location == ONNX__TENSOR_PROTO__DATA_LOCATION__EXTERNAL) {
		if (!g) {
			snprintf(why, whylen, "external data is not allowed in a tensor file");
			return false;
		}
		struct ext_ref r;
		if (!parse_external(t, &r, why, whylen) ||
		    !map_external(g, dir, &r, fwant, packed ? &fdata : datap, why, whylen))
			return false;
		if (!packed)
			return true;
	} else if (t->has_raw_data) {
		if (t->raw_data.len != fwant) {
			snprintf(why, whylen, "raw_data holds %zu bytes, the shape needs %zu",
			         t->raw_data.len, fwant);
			return false;
		}
		fdata = t->raw_data.data;
	}
	if (fdata || t->has_raw_data) {
		if (g && !packed) {
			*datap = want ? fdata : "";
			return true;
		}
		void *d = g ? rl_graph_own(g, want ? want : 1) : malloc(want ? want : 1);
		if (!d) {
			snprintf(why, whylen, "out of memory");
			return false;
		}
		if (packed)
			rl_lowp_unpack((enum rl_dtype)dt, fdata, numel, d);
		else if (want)
			memcpy(d, fdata, want);
		*datap = d;
		return true;
	}
	/* typed fields */
	size_t have;
	switch (dt) {
	case RL_DT_FLOAT: have = t->n_float_data; break;
	case RL_DT_DOUBLE: have = t->n_double_data; break;
	case RL_DT_INT64: have = t->n_int64_data; break;
	case RL_DT_UINT32: case RL_DT_UINT64: have = t->n_uint64_data; break;
	default: have = t->n_int32_data; break;
	}
	/* a sub-byte type keeps one packed byte in each int32 */
	if (have != (packed ? fwant : (size_t)numel)) {
		snprintf(why, whylen, "tensor has %zu values, its shape needs %lld", have,
		         (long long)(packed ? (int64_t)fwant : numel));
		return false;
	}
	void *d = g ? rl_graph_own(g, want) : malloc(want ? want : 1);
	if (!d) {
		snprintf(why, whylen, "out of memory");
		return false;
	}
	if (rl_dtype_is_lowp((enum rl_dtype)dt)) {
		uint8_t *b = packed ? malloc(fwant ? fwant : 1) : d;
		if (!b) {
			if (!g)
				free(d);
			snprintf(why, whylen, "out of memory");
			return false;
		}
		for (size_t i = 0; i < have; i++)
			b[i] = (uint8_t)t->int32_data[i];
		if (packed) {
			rl_lowp_unpack((enum rl_dtype)dt, b, numel, d);
			free(b);
		}
		*datap = d;
		return true;
	}
	for (int64_t i = 0; i < numel; i++) {
		switch (dt) {
		case RL_DT_FLOAT: ((float *)d)[i] = t->float_data[i]; break;
		case RL_DT_DOUBLE: ((double *)d)[i] = t->double_data[i]; break;
		case RL_DT_INT64: ((int64_t *)d)[i] = t->int64_data[i]; break;
		case RL_DT_UINT64: ((uint64_t *)d)[i] = t->uint64_data[i]; break;
		case RL_DT_UINT32: ((uint32_t *)d)[i] = (uint32_t)t->uint64_data[i]; break;
		case RL_DT_INT32: ((int32_t *)d)[i] = t->int32_data[i]; break;
		case RL_DT_INT16: ((int16_t *)d)[i] = (int16_t)t->int32_data[i]; break;
		case RL_DT_UINT16: case RL_DT_FLOAT16: case RL_DT_BFLOAT16:
			((uint16_t *)d)[i] = (uint16_t)t->int32_data[i];
			break;
		case RL_DT_INT8: ((int8_t *)d)[i] = (int8_t)t->int32_data[i]; break;
		case RL_DT_UINT8: ((uint8_t *)d)[i] = (uint8_t)t->int32_data[i]; break;
		case RL_DT_BOOL: ((uint8_t *)d)[i] = t->int32_data[i] != 0; break;
		default: break;
		}
	}
	*datap = d;
	return true;
}

/* ---- value info --------------------------------------------------------- */

static bool type_to_value(struct rl_graph *g, const Onnx__TypeProto *tp,
                          const char *vname, enum rl_dtype *dt,
                          struct rl_shape *s, char *why, size_t whylen)
{
	*dt = RL_DT_UNDEFINED;
	memset(s, 0, sizeof(*s));
	s->rank = -1;
	if (!tp)
		return true; /* untyped: inference fills it in */
	if (tp->value_case != ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE) {
		snprintf(why, whylen, "value '%s' is not a tensor (sequence, map, optional "
		         "and sparse types are not supported)", vname);
		return false;
	}
	const Onnx__TypeProto__Tensor *tt = tp->tensor_type;
	if (tt->has_elem_type && tt->elem_type != 0) {
		if (!dtype_supported(tt->elem_type)) {
			snprintf(why, whylen, "value '%s' has unsupported dtype %s", vname,
			         onnx_dtype_name(tt->elem_type));
			return false;
		}
		*dt = (enum rl_dtype)tt->elem_type;
	}
	if (!tt->shape)
		return true;
	if (tt->shape->n_dim > RL_MAX_RANK) {
		snprintf(why, whylen, "value '%s' has rank %zu, more than %d", vname,
		         tt->shape->n_dim, RL_MAX_RANK);
		return false;
	}
	s->rank = (int)tt->shape->n_dim;
	for (size_t i = 0; i < tt->shape->n_dim; i++) {
		const Onnx__TensorShapeProto__Dimension *d = tt->shape->dim[i];
		/* some exporters write -1 for "any size": an unnamed symbol, bound
		 * like any other by --shape, --dim or the input files. So is the
		 * name "?": paddle2onnx writes it on every unknown axis (PP-OCR's
		 * classifier: x is [-1, 3, ?, ?], height and width unrelated), so
		 * it cannot mean one shared size */
		if (d->value_case == ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE &&
		    d->dim_value != -1) {
			if (d->dim_value < 0 || d->dim_value > RL_MAX_NUMEL) {
				snprintf(why, whylen, "value '%s' has dimension %lld at axis %zu",
				         vname, (long long)d->dim_value, i);
				return false;
			}
			s->d[i].v = d->dim_value;
		} else {
			s->d[i].v = RL_DIM_SYMBOLIC;
			if (d->value_case == ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_PARAM &&
			    d->dim_param && *d->dim_param && strcmp(d->dim_param, "?") != 0) {
				s->d[i].sym = rl_arena_strdup(g, d->dim_param);
			} else {
				char buf[300];
				snprintf(buf, sizeof(buf), "%s_dim%zu", vname, i);
				s->d[i].sym = rl_arena_strdup(g, buf);
			}
		}
	}
	if (rl_shape_is_static(s)) {
		/* the product of declared dims must not overflow either */
		int64_t n = 1;
		for (int i = 0; i < s->rank; i++) {
			if (s->d[i].v && n > RL_MAX_NUMEL / s->d[i].v) {
				snprintf(why, whylen, "value '%s' has dimensions that overflow", vname);
				return false;
			}
			n *= s->d[i].v;
		}
	}
	return true;
}

/* A graph input's or output's type into p: a tensor, a sequence of tensors,
 * or an optional tensor or sequence of tensors (onnx.h, struct
 * rl_onnx_port); the element type into p->dtype and p->shape. */
static bool port_type(struct rl_graph *g, const Onnx__TypeProto *tp, const char *vname,
                      struct rl_onnx_port *p, char *why, size_t whylen)
{
	memset(p, 0, sizeof(*p));
	p->name = rl_arena_strdup(g, vname);
	p->kind = p->inner = RL_ONNX_TENSOR;
	p->present = p->len = -1;
	p->count = 1;
	if (tp && tp->value_case == ONNX__TYPE_PROTO__VALUE_SEQUENCE_TYPE) {
		p->kind = RL_ONNX_SEQUENCE;
		tp = tp->sequence_type ? tp->sequence_type->elem_type : NULL;
	} else if (tp && tp->value_case == ONNX__TYPE_PROTO__VALUE_OPTIONAL_TYPE) {
		p->kind = RL_ONNX_OPTIONAL;
		tp = tp->optional_type ? tp->optional_type->elem_type : NULL;
		if (tp && tp->value_case == ONNX__TYPE_PROTO__VALUE_SEQUENCE_TYPE) {
			p->inner = RL_ONNX_SEQUENCE;
			tp = tp->sequence_type ? tp->sequence_type->elem_type : NULL;
		}
	}
	if (p->kind == RL_ONNX_TENSOR)
		return type_to_value(g, tp, vname, &p->dtype, &p->shape, why, whylen);
	p->count = 0;
	if (tp && tp->value_case != ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE) {
		snprintf(why, whylen, "value '%s' is a %s of something other than tensors (only "
		         "tensors, sequences of tensors and optionals of either are supported)",
		         vname, p->kind == RL_ONNX_SEQUENCE ? "sequence" : "optional");
		return false;
	}
	return type_to_value(g, tp, vname, &p->dtype, &p->shape, why, whylen);
}

static const struct rl_onnx_port *find_port(const struct rl_onnx_port *ports, uint32_t n,
                                            const char *name)
{
	for (uint32_t i = 0; i < n; i++)
		if (strcmp(ports[i].name, name) == 0)
			return &ports[i];
	return NULL;
}

/* ---- attributes --------------------------------------------------------- */

static enum rl_status convert_attrs(struct rl_graph *g, uint32_t nid,
                                    const Onnx__NodeProto *np, char *why,
                                    size_t whylen)
{
	for (size_t i = 0; i < np->n_attribute; i++) {
		const Onnx__AttributeProto *ap = np->attribute[i];
		if (!ap->name || !*ap->name) {
			snprintf(why, whylen, "attribute without a name");
			return RL_ERR_INVALID;
		}
		if (ap->ref_attr_name && *ap->ref_attr_name) {
			snprintf(why, whylen, "attribute '%s' refers to a function attribute",
			         ap->name);
			return RL_ERR_UNSUPPORTED;
		}
		enum rl_attr_kind kind;
		switch (ap->type) {
		case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOAT: kind = RL_ATTR_FLOAT; break;
		case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INT: kind = RL_ATTR_INT; break;
		case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRING: kind = RL_ATTR_STRING; break;
		case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__TENSOR: kind = RL_ATTR_TENSOR; break;
		case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOATS: kind = RL_ATTR_FLOATS; break;
		case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INTS: kind = RL_ATTR_INTS; break;
		case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRINGS: kind = RL_ATTR_STRINGS; break;
		case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__GRAPH:
		case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__GRAPHS: kind = RL_ATTR_GRAPH; break;
		default: kind = RL_ATTR_OTHER; break;
		}
		struct rl_attr *a = rl_node_add_attr(g, nid, ap->name, kind);
		switch (kind) {
		case RL_ATTR_FLOAT: a->f = ap->f; break;
		case RL_ATTR_INT: a->i = ap->i; break;
		case RL_ATTR_STRING:
			a->s = rl_arena_strndup(g, (const char *)ap->s.data, ap->s.len);
			a->n = (int)ap->s.len;
			break;
		case RL_ATTR_FLOATS:
			a->n = (int)ap->n_floats;
			a->floats = rl_arena_alloc(g, (ap->n_floats + 1) * sizeof(double));
			for (size_t k = 0; k < ap->n_floats; k++)
				a->floats[k] = ap->floats[k];
			break;
		case RL_ATTR_INTS:
			a->n = (int)ap->n_ints;
			a->ints = rl_arena_alloc(g, (ap->n_ints + 1) * sizeof(int64_t));
			if (ap->n_ints)
				memcpy(a->ints, ap->ints, ap->n_ints * sizeof(int64_t));
			break;
		case RL_ATTR_STRINGS:
			a->n = (int)ap->n_strings;
			a->strs = rl_arena_alloc(g, (ap->n_strings + 1) * sizeof(char *));
			for (size_t k = 0; k < ap->n_strings; k++)
				a->strs[k] = rl_arena_strndup(g, (const char *)ap->strings[k].data,
				                              ap->strings[k].len);
			break;
		case RL_ATTR_TENSOR: {
			if (!ap->t) {
				snprintf(why, whylen, "tensor attribute '%s' is empty", ap->name);
				return RL_ERR_INVALID;
			}
			enum rl_dtype dt;
			struct rl_shape s;
			const void *data;
			size_t nb;
			char w2[400];
			if (!decode_tensor(g, g->dir, ap->t, &dt, &s, &data, &nb, w2, sizeof(w2))) {
				snprintf(why, whylen, "attribute '%s': %s", ap->name, w2);
				return RL_ERR_UNSUPPORTED;
			}
			/* the tensor lives in an anonymous constant value */
			char vn[64];
			snprintf(vn, sizeof(vn), "rl::attr/%u/%s", nid, ap->name);
			uint32_t v = rl_graph_add_value(g, vn, dt, &s);
			rl_value_set_data(g, v, data, nb);
			a = (struct rl_attr *)rl_node_attr(&g->nodes[nid], ap->name);
			a->tensor = v;
			break;
		}
		default:
			break;
		}
	}
	return RL_OK;
}

/* ---- shared with the control-flow lowering (onnx_subgraph.c) ------------ */

enum rl_status rl_onnx_node_attrs(struct rl_graph *g, uint32_t nid,
                                  const Onnx__NodeProto *np, char *why, size_t whylen)
{
	return convert_attrs(g, nid, np, why, whylen);
}

uint32_t rl_onnx_tensor_value(struct rl_graph *g, const Onnx__TensorProto *t,
                              const char *name, char *why, size_t whylen)
{
	enum rl_dtype dt;
	struct rl_shape s;
	const void *data;
	size_t nb;
	if (!decode_tensor(g, g->dir, t, &dt, &s, &data, &nb, why, whylen))
		return RL_NONE;
	uint32_t v = rl_graph_add_value(g, name, dt, &s);
	rl_value_set_data(g, v, data, nb);
	return v;
}

/* ---- the model ---------------------------------------------------------- */

static void free_model(void *p)
{
	onnx__model_proto__free_unpacked(p, NULL);
}

static const char *dir_of(struct rl_graph *g, const char *path)
{
	const char *slash = strrchr(path, '/');
	if (!slash)
		return ".";
	if (slash == path)
		return "/";
	return rl_arena_strndup(g, path, (size_t)(slash - path));
}

#define FAIL(st, node, ...)                                                  \
	do {                                                                 \
		rl_graph_error(g, node, st, __VA_ARGS__);                    \
		status = st;                                                 \
		goto fail;                                                   \
	} while (0)

/* ---- operators rlopt does not know ---------------------------------------- */

struct unknown_ops {
	char list[600];         /* "If, Loop, ai.onnx.ml::Binarizer" */
	size_t nl;
	size_t n;               /* distinct unknown operators */
	const char *first_node; /* where the first one is */
};

/* Add node np's operator to u when rlopt does not know it and u does not
 * hold it yet. */
static void unknown_ops_add(const Onnx__NodeProto *np, struct unknown_ops *u)
{
	const char *dom = np->domain ? np->domain : "";
	const char *ot = np->op_type ? np->op_type : "";
	if (rl_op_lookup_domain(dom, ot) != RL_OP_COUNT_ ||
	    ((!*dom || strcmp(dom, "ai.onnx") == 0) && rl_onnx_ctrl_op(ot)))
		return;
	char entry[200];
	snprintf(entry, sizeof(entry), "%s%s%s", *dom ? dom : "", *dom ? "::" : "",
	         *ot ? ot : "(empty op_type)");
	/* each distinct operator once: look for ", entry," in ", list," */
	char hay[sizeof(u->list) + 4], needle[sizeof(entry) + 4];
	snprintf(hay, sizeof(hay), ", %s,", u->list);
	snprintf(needle, sizeof(needle), ", %s,", entry);
	if (strstr(hay, needle))
		return;
	if (!u->first_node)
		u->first_node = np->name && *np->name ? np->name : ot;
	u->n++;
	if (u->nl + strlen(entry) + 3 < sizeof(u->list) - 8)
		u->nl += (size_t)snprintf(u->list + u->nl, sizeof(u->list) - u->nl, "%s%s",
		                          u->n > 1 ? ", " : "", entry);
	else if (!strstr(u->list, "..."))
		u->nl += (size_t)snprintf(u->list + u->nl, sizeof(u->list) - u->nl, ", ...");
}

/* Every operator of gp, and of the subgraphs its nodes hold (If branches,
 * Loop and Scan bodies), that rlopt does not know, each once, in order. */
static void unknown_ops_collect(const Onnx__GraphProto *gp, struct unknown_ops *u, int depth)
{
	if (!gp || depth > 16)
		return;
	for (size_t i = 0; i < gp->n_node; i++) {
		const Onnx__NodeProto *np = gp->node[i];
		unknown_ops_add(np, u);
		for (size_t a = 0; a < np->n_attribute; a++) {
			const Onnx__AttributeProto *ap = np->attribute[a];
			unknown_ops_collect(ap->g, u, depth + 1);
			for (size_t k = 0; k < ap->n_graphs; k++)
				unknown_ops_collect(ap->graphs[k], u, depth + 1);
		}
	}
}

/* The model's ports as it declares them: a sequence or an optional
 * becomes tensors once bound (onnx.h), the rest one tensor each. */
struct ports {
	struct rl_onnx_port *pin, *pout;
	uint32_t npin, npout;
	bool nontensor; /* some port is a sequence or an optional */
};

/* IR version, graph name, producer and the opset imports. */
static enum rl_status read_header(struct rl_graph *g, const Onnx__ModelProto *m)
{
	enum rl_status status = RL_OK;
	const Onnx__GraphProto *gp = m->graph;
	if (!m->has_ir_version || m->ir_version < 3)
		FAIL(RL_ERR_UNSUPPORTED, NULL, "ir_version %lld is not supported (3 and later are)",
		     (long long)m->ir_version);
	/* a newer IR version loads (tools/rlopt.c warns): what it adds that
	 * this reader does not know, operators and dtypes, is refused where it
	 * is met; unknown protobuf fields are skipped */
	g->ir_version = m->ir_version;
	g->graph_name = rl_arena_strdup(g, gp->name ? gp->name : "");
	g->producer_name = rl_arena_strdup(g, m->producer_name ? m->producer_name : "");

	g->opset = -1;
	g->nopsets = (int)m->n_opset_import;
	g->opset_domains = rl_arena_alloc(g, (m->n_opset_import + 1) * sizeof(char *));
	g->opset_versions = rl_arena_alloc(g, (m->n_opset_import + 1) * sizeof(int64_t));
	for (size_t i = 0; i < m->n_opset_import; i++) {
		const Onnx__OperatorSetIdProto *o = m->opset_import[i];
		const char *dom = o->domain ? o->domain : "";
		g->opset_domains[i] = rl_arena_strdup(g, dom);
		g->opset_versions[i] = o->version;
		if (!*dom || strcmp(dom, "ai.onnx") == 0)
			g->opset = (int)o->version;
	}
	/* a model of ai.onnx.ml or training ops alone may import no default
	 * domain: only a default-domain node needs one */
	bool uses_default = false;
	for (size_t i = 0; i < gp->n_node; i++) {
		const char *dom = gp->node[i]->domain ? gp->node[i]->domain : "";
		uses_default |= !*dom || strcmp(dom, "ai.onnx") == 0;
	}
	if (g->opset < 0) {
		if (m->n_opset_import && uses_default)
			FAIL(RL_ERR_INVALID, NULL, "the model imports no default-domain opset");
		g->opset = m->n_opset_import ? 0 : 1; /* IR 3 models may omit it: oldest semantics */
	}
	if (g->opset < 7 && uses_default)
		FAIL(RL_ERR_UNSUPPORTED, NULL, "opset %d is not supported (7 and later are)",
		     g->opset);
	return RL_OK;
fail:
	return status;
}

static enum rl_status read_initializers(struct rl_graph *g, const Onnx__GraphProto *gp)
{
	enum rl_status status = RL_OK;
	char why[512];
	for (size_t i = 0; i < gp->n_initializer; i++) {
		const Onnx__TensorProto *t = gp->initializer[i];
		const char *name = t->name ? t->name : "";
		if (!*name)
			FAIL(RL_ERR_INVALID, NULL, "initializer %zu has no name", i);
		if (rl_graph_find_value(g, name) != RL_NONE)
			FAIL(RL_ERR_INVALID, NULL, "initializer '%s' is defined twice", name);
		enum rl_dtype dt;
		struct rl_shape s;
		const void *data;
		size_t nb;
		if (!decode_tensor(g, g->dir, t, &dt, &s, &data, &nb, why, sizeof(why)))
			FAIL(RL_ERR_INVALID, NULL, "initializer '%s': %s", name, why);
		uint32_t v = rl_graph_add_value(g, name, dt, &s);
		rl_value_set_data(g, v, data, nb);
		if (t->has_data_location &&
		    t->data_location == ONNX__TENSOR_PROTO__DATA_LOCATION__EXTERNAL)
			g->values[v].flags |= RL_VAL_EXTERNAL;
	}
	if (gp->n_sparse_initializer)
		FAIL(RL_ERR_UNSUPPORTED, NULL, "sparse initializers are not supported");
	return RL_OK;
fail:
	return status;
}

/* Graph inputs; ones that name an initializer are constants (IR < 4). */
static enum rl_status read_inputs(struct rl_graph *g, const Onnx__GraphProto *gp,
                                  struct ports *io)
{
	enum rl_status status = RL_OK;
	char why[512];
	for (size_t i = 0; i < gp->n_input; i++) {
		const Onnx__ValueInfoProto *vi = gp->input[i];
		const char *name = vi->name ? vi->name : "";
		if (!*name)
			FAIL(RL_ERR_INVALID, NULL, "graph input %zu has no name", i);
		struct rl_onnx_port *port = &io->pin[io->npin];
		if (!port_type(g, vi->type, name, port, why, sizeof(why)))
			FAIL(RL_ERR_UNSUPPORTED, NULL, "graph input: %s", why);
		enum rl_dtype dt = port->dtype;
		struct rl_shape s = port->shape;
		uint32_t v = rl_graph_find_value(g, name);
		if (find_port(io->pin, io->npin, name))
			FAIL(RL_ERR_INVALID, NULL, "graph input '%s' is listed twice", name);
		if (port->kind != RL_ONNX_TENSOR) {
			/* its tensors are made when it is bound (rl_onnx_bind_*) */
			if (v != RL_NONE)
				FAIL(RL_ERR_INVALID, NULL, "graph input '%s' is a %s and an initializer",
				     name, port->kind == RL_ONNX_SEQUENCE ? "sequence" : "optional");
			io->nontensor = true;
			io->npin++;
			continue;
		}
		if (v != RL_NONE) {
			if (g->values[v].flags & RL_VAL_INPUT)
				FAIL(RL_ERR_INVALID, NULL, "graph input '%s' is listed twice", name);
			if (dt != RL_DT_UNDEFINED && dt != g->values[v].dtype)
				FAIL(RL_ERR_INVALID, NULL, "graph input '%s' is declared %s but its "
				     "initializer is %s", name, rl_dtype_name(dt),
				     rl_dtype_name(g->values[v].dtype));
			continue; /* an initializer: a constant, not an input */
		}
		if (dt == RL_DT_UNDEFINED)
			FAIL(RL_ERR_INVALID, NULL, "graph input '%s' has no element type", name);
		if (s.rank < 0)
			FAIL(RL_ERR_UNSUPPORTED, NULL, "graph input '%s' has no shape", name);
		v = rl_graph_add_value(g, name, dt, &s);
		g->values[v].flags |= RL_VAL_INPUT;
		port->first = g->ninputs;
		io->npin++;
		g->inputs[g->ninputs++] = v;
	}
	return RL_OK;
fail:
	return status;
}

/* Which nodes onnx_subgraph.c lowers: control flow, sequences, optionals,
 * FlexAttention with a modifier graph, and the Identity nodes that pass one
 * of those on (repeated until no more are found: an Identity of an Identity
 * of a sequence). One flag per node, in the graph's arena. */
static uint8_t *mark_lowered(struct rl_graph *g, const Onnx__GraphProto *gp,
                             const struct ports *io)
{
	uint8_t *lowered = rl_arena_alloc(g, gp->n_node + 1);
	for (size_t i = 0; i < gp->n_node; i++) {
		const Onnx__NodeProto *np = gp->node[i];
		lowered[i] = rl_op_lookup_domain(np->domain, np->op_type) == RL_OP_COUNT_ ||
		             rl_onnx_flex_mod(np);
	}
	for (bool more = true; more;) {
		more = false;
		for (size_t i = 0; i < gp->n_node; i++) {
			const Onnx__NodeProto *np = gp->node[i];
			if (lowered[i] || rl_op_lookup_domain(np->domain, np->op_type) != RL_OP_Identity ||
			    np->n_input < 1 || !np->input[0])
				continue;
			const struct rl_onnx_port *ip = find_port(io->pin, io->npin, np->input[0]);
			bool seq = ip && ip->kind != RL_ONNX_TENSOR;
			for (size_t j = 0; j < gp->n_node && !seq; j++)
				for (size_t k = 0; lowered[j] && k < gp->node[j]->n_output && !seq; k++)
					seq = gp->node[j]->output[k] &&
					      strcmp(gp->node[j]->output[k], np->input[0]) == 0;
			if (seq)
				lowered[i] = more = true;
		}
	}
	return lowered;
}

/* A lowered node: only its outputs now, rl_onnx_lower_ctrl() builds what
 * computes them. */
static enum rl_status add_lowered_outputs(struct rl_graph *g, const Onnx__NodeProto *np)
{
	enum rl_status status = RL_OK;
	for (size_t k = 0; k < np->n_output; k++) {
		const char *on = np->output[k];
		if (!on || !*on)
			continue;
		if (rl_graph_find_value(g, on) != RL_NONE)
			FAIL(RL_ERR_INVALID, NULL, "node '%s' (%s): output '%s' is also "
			     "produced elsewhere", np->name ? np->name : "", np->op_type, on);
		rl_graph_add_value(g, on, RL_DT_UNDEFINED, NULL);
	}
	return RL_OK;
fail:
	return status;
}

/* Node i with its outputs and attributes but no inputs (add_node_inputs
 * wires them once every node's outputs exist); *id is its node id. */
static enum rl_status add_node(struct rl_graph *g, const Onnx__NodeProto *np, size_t i,
                               uint32_t *id_out)
{
	enum rl_status status = RL_OK;
	char why[512];
	enum rl_op op = rl_op_lookup_domain(np->domain, np->op_type);
	uint32_t outs[64];
	char nbuf[64];
	const char *nname = np->name;
	if (!nname || !*nname) {
		snprintf(nbuf, sizeof(nbuf), "%s_%zu", np->op_type, i);
		nname = nbuf;
	}
	for (size_t k = 0; k < np->n_output; k++) {
		const char *on = np->output[k];
		if (!on || !*on) {
			outs[k] = RL_NONE; /* optional output not requested */
			continue;
		}
		uint32_t prev = rl_graph_find_value(g, on);
		if (prev != RL_NONE) {
			struct rl_value *pv = &g->values[prev];
			const char *what = pv->flags & RL_VAL_INPUT ? "a graph input"
			                 : pv->flags & RL_VAL_CONST ? "an initializer"
			                 : pv->producer != RL_NONE ? "another node" : "another output";
			const char *other = pv->producer != RL_NONE ? g->nodes[pv->producer].name : "";
			struct rl_node tmp = {.op = op, .name = nname};
			FAIL(RL_ERR_INVALID, &tmp, "output '%s' is also produced by %s%s%s%s",
			     on, what, *other ? " '" : "", other, *other ? "'" : "");
		}
		outs[k] = rl_graph_add_value(g, on, RL_DT_UNDEFINED, NULL);
	}
	/* trailing omitted outputs are dropped */
	int nout = (int)np->n_output;
	while (nout > 0 && outs[nout - 1] == RL_NONE)
		nout--;
	uint32_t id = rl_graph_add_node(g, op, nname, NULL, 0, outs, nout);
	*id_out = id;
	struct rl_node *n = &g->nodes[id];
	n->opset = g->opset;
	if (*rl_op_domain(op)) {
		/* ai.onnx.ml, ai.onnx.preview(.training): that domain's version */
		n->domain = rl_op_domain(op);
		n->opset = 1;
		for (int k = 0; k < g->nopsets; k++)
			if (strcmp(g->opset_domains[k], n->domain) == 0)
				n->opset = (int)g->opset_versions[k];
	}
	const struct rl_op_info *oi = &rl_op_table[op];
	if (nout < oi->out_min || (oi->out_max >= 0 && nout > oi->out_max))
		FAIL(RL_ERR_INVALID, n, "has %d outputs; %s produces %d to %d", nout,
		     oi->name, oi->out_min, oi->out_max);
	enum rl_status st = convert_attrs(g, id, np, why, sizeof(why));
	if (st != RL_OK)
		FAIL(st, &g->nodes[id], "%s", why);
	return RL_OK;
fail:
	return status;
}

/* Every node's outputs first, so that unsorted models resolve; node_ids[i]
 * is RL_NONE for a lowered node. */
static enum rl_status add_nodes(struct rl_graph *g, const Onnx__GraphProto *gp,
                                const uint8_t *lowered, uint32_t *node_ids)
{
	enum rl_status status = RL_OK;
	for (size_t i = 0; i < gp->n_node; i++) {
		const Onnx__NodeProto *np = gp->node[i];
		if (np->n_output > 64)
			FAIL(RL_ERR_UNSUPPORTED, NULL, "node %zu has %zu outputs", i, np->n_output);
		node_ids[i] = RL_NONE;
		status = lowered[i] ? add_lowered_outputs(g, np) : add_node(g, np, i, &node_ids[i]);
		if (status != RL_OK)
			return status;
	}
	return RL_OK;
fail:
	return status;
}

/* Then every node's inputs, each a node output, graph input or
 * initializer by now. */
static enum rl_status add_node_inputs(struct rl_graph *g, const Onnx__GraphProto *gp,
                                      const uint32_t *node_ids, const struct ports *io)
{
	enum rl_status status = RL_OK;
	for (size_t i = 0; i < gp->n_node; i++) {
		const Onnx__NodeProto *np = gp->node[i];
		uint32_t id = node_ids[i];
		if (id == RL_NONE)
			continue; /* lowered below */
		int nin = (int)np->n_input;
		while (nin > 0 && (!np->input[nin - 1] || !*np->input[nin - 1]))
			nin--; /* trailing omitted optionals */
		const struct rl_op_info *oi = &rl_op_table[g->nodes[id].op];
		if (nin < oi->in_min || (oi->in_max >= 0 && nin > oi->in_max)) {
			if (oi->in_max < 0)
				FAIL(RL_ERR_INVALID, &g->nodes[id], "has %d inputs; %s takes at least %d",
				     nin, oi->name, oi->in_min);
			FAIL(RL_ERR_INVALID, &g->nodes[id], "has %d inputs; %s takes %d to %d", nin,
			     oi->name, oi->in_min, oi->in_max);
		}
		struct rl_node *n = &g->nodes[id];
		n->in = rl_arena_alloc(g, (size_t)(nin + 1) * sizeof(uint32_t));
		n->nin = nin;
		for (int k = 0; k < nin; k++)
			g->nodes[id].in[k] = RL_NONE;
		for (int k = 0; k < nin; k++) {
			const char *in = np->input[k];
			if (!in || !*in)
				continue;
			uint32_t v = rl_graph_find_value(g, in);
			const struct rl_onnx_port *ip = find_port(io->pin, io->npin, in);
			if (v == RL_NONE && ip)
				FAIL(RL_ERR_UNSUPPORTED, &g->nodes[id], "input '%s' is a %s graph input; "
				     "only If, Loop, Scan, SequenceMap, Identity and the sequence and "
				     "optional operators take one", in,
				     ip->kind == RL_ONNX_SEQUENCE ? "sequence" : "optional");
			if (v == RL_NONE)
				FAIL(RL_ERR_INVALID, &g->nodes[id], "input '%s' is not produced by any "
				     "node, graph input or initializer", in);
			rl_node_set_input(g, id, k, v);
		}
	}
	return RL_OK;
fail:
	return status;
}

static enum rl_status read_outputs(struct rl_graph *g, const Onnx__GraphProto *gp,
                                   struct ports *io)
{
	enum rl_status status = RL_OK;
	char why[512];
	for (size_t i = 0; i < gp->n_output; i++) {
		const Onnx__ValueInfoProto *vi = gp->output[i];
		const char *name = vi->name ? vi->name : "";
		uint32_t v = rl_graph_find_value(g, name);
		if (v == RL_NONE && !find_port(io->pin, io->npin, name))
			FAIL(RL_ERR_INVALID, NULL, "graph output '%s' is not produced by any node, "
			     "graph input or initializer", name);
		struct rl_onnx_port *port = &io->pout[io->npout++];
		if (!port_type(g, vi->type, name, port, why, sizeof(why)))
			FAIL(RL_ERR_UNSUPPORTED, NULL, "graph output: %s", why);
		if (port->kind != RL_ONNX_TENSOR) {
			io->nontensor = true; /* its tensors are made by the lowering */
			continue;
		}
		if (v == RL_NONE)
			FAIL(RL_ERR_UNSUPPORTED, NULL, "graph output '%s' is a tensor but graph input "
			     "'%s' is not", name, name);
		enum rl_dtype dt = port->dtype;
		struct rl_shape s = port->shape;
		port->first = g->noutputs;
		struct rl_value *val = &g->values[v];
		/* the declared type is a hint that inference checks */
		if (val->producer != RL_NONE) {
			if (dt != RL_DT_UNDEFINED)
				val->dtype = dt;
			if (s.rank >= 0)
				val->shape = s;
		}
		val->flags |= RL_VAL_OUTPUT;
		g->outputs[g->noutputs++] = v;
	}
	if (!gp->n_output)
		FAIL(RL_ERR_INVALID, NULL, "the graph has no outputs");
	return RL_OK;
fail:
	return status;
}

/* value_info: types of intermediates, checked as hints by inference. */
static void read_value_info(struct rl_graph *g, const Onnx__GraphProto *gp)
{
	char why[512];
	for (size_t i = 0; i < gp->n_value_info; i++) {
		const Onnx__ValueInfoProto *vi = gp->value_info[i];
		if (!vi->name)
			continue;
		enum rl_dtype dt;
		struct rl_shape s;
		if (!type_to_value(g, vi->type, vi->name, &dt, &s, why, sizeof(why)))
			continue; /* a non-tensor annotation on a value we never use */
		uint32_t v = rl_graph_find_value(g, vi->name);
		if (v == RL_NONE || g->values[v].producer == RL_NONE)
			continue;
		struct rl_value *val = &g->values[v];
		if (val->dtype == RL_DT_UNDEFINED)
			val->dtype = dt;
		if (val->shape.rank < 0)
			val->shape = s;
	}
}

/* ModelProto to IR, as its phases: header and opsets, initializers, graph
 * inputs, unknown operators (all listed before failing), nodes, their
 * inputs, graph outputs, value_info hints; control flow is deferred until
 * the caller binds shapes. The first failure stores its message with
 * rl_graph_error and returns its status. */
static enum rl_status build_graph(struct rl_graph *g, const Onnx__ModelProto *m)
{
	enum rl_status status = RL_OK;
	uint32_t *node_ids = NULL;
	if (!m->graph)
		FAIL(RL_ERR_INVALID, NULL, "the model has no graph");
	const Onnx__GraphProto *gp = m->graph;
	if ((status = read_header(g, m)) != RL_OK || (status = read_initializers(g, gp)) != RL_OK)
		goto fail;

	g->inputs = malloc((gp->n_input + 1) * sizeof(uint32_t));
	RL_ASSERT(g->inputs);
	struct ports io = {
	        .pin = rl_arena_alloc(g, (gp->n_input + 1) * sizeof(*io.pin)),
	        .pout = rl_arena_alloc(g, (gp->n_output + 1) * sizeof(*io.pout)),
	};
	if ((status = read_inputs(g, gp, &io)) != RL_OK)
		goto fail;

	node_ids = malloc((gp->n_node + 1) * sizeof(uint32_t));
	RL_ASSERT(node_ids);
	{
		/* unknown operators, subgraphs (If, Loop, Scan bodies) included:
		 * list every one before failing */
		struct unknown_ops u = {.list = ""};
		unknown_ops_collect(gp, &u, 0);
		if (u.n)
			FAIL(RL_ERR_UNSUPPORTED, NULL, "unsupported operator%s (first at node '%s'): %s",
			     u.n > 1 ? "s" : "", u.first_node, u.list);
	}
	uint8_t *lowered = mark_lowered(g, gp, &io);
	if ((status = add_nodes(g, gp, lowered, node_ids)) != RL_OK ||
	    (status = add_node_inputs(g, gp, node_ids, &io)) != RL_OK)
		goto fail;

	g->outputs = malloc((gp->n_output + 1) * sizeof(uint32_t));
	RL_ASSERT(g->outputs);
	if ((status = read_outputs(g, gp, &io)) != RL_OK)
		goto fail;
	read_value_info(g, gp);
	free(node_ids);
	if (io.nontensor) {
		g->onnx_io = rl_arena_alloc(g, sizeof(*g->onnx_io));
		*g->onnx_io = (struct rl_onnx_io){.nin = io.npin, .nout = io.npout, .in = io.pin,
		                                  .out = io.pout};
	}
	/* control flow waits for the shapes the caller binds */
	rl_onnx_defer_ctrl(g, gp, lowered);
	return RL_OK;
fail:
	free(node_ids);
	return status;
}

enum rl_status rl_onnx_load_buffer(const void *buf, size_t len, const char *path,
                                   struct rl_graph **gp, char *err, size_t errlen)
{
	*gp = NULL;
	if (len == 0) {
		set_err(err, errlen, "%s: empty file", path);
		return RL_ERR_PARSE;
	}
	Onnx__ModelProto *m = onnx__model_proto__unpack(NULL, len, buf);
	if (!m) {
		set_err(err, errlen, "%s: not an ONNX model (protobuf parse failed: "
		        "truncated or not a ModelProto)", path);
		return RL_ERR_PARSE;
	}
	struct rl_graph *g = rl_graph_new();
	if (!g) {
		onnx__model_proto__free_unpacked(m, NULL);
		set_err(err, errlen, "%s: out of memory", path);
		return RL_ERR_NOMEM;
	}
	rl_graph_add_cleanup(g, free_model, m);
	g->path = rl_arena_strdup(g, path);
	g->dir = dir_of(g, g->path);
	enum rl_status st = build_graph(g, m);
	if (st != RL_OK) {
		set_err(err, errlen, "%s", g->err);
		rl_graph_free(g);
		return st;
	}
	*gp = g;
	return RL_OK;
}

enum rl_status rl_onnx_load(const char *path, struct rl_graph **gp, char *err,
                            size_t errlen)
{
	*gp = NULL;
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		set_err(err, errlen, "%s: cannot open: %s", path, strerror(errno));
		return RL_ERR_IO;
	}
	struct stat st;
	if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
		set_err(err, errlen, "%s: not a regular file", path);
		close(fd);
		return RL_ERR_IO;
	}
	if (st.st_size == 0) {
		close(fd);
		set_err(err, errlen, "%s: empty file", path);
		return RL_ERR_PARSE;
	}
	void *map = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
	close(fd);
	if (map == MAP_FAILED) {
		set_err(err, errlen, "%s: cannot map: %s", path, strerror(errno));
		return RL_ERR_IO;
	}
	/* protobuf-c copies what it keeps, so the file map can go right after */
	enum rl_status s = rl_onnx_load_buffer(map, (size_t)st.st_size, path, gp, err, errlen);
	munmap(map, (size_t)st.st_size);
	return s;
}

/* ---- tensor files ------------------------------------------------------- */

enum rl_status rl_tensor_read(const char *path, struct rl_tensor *t, char *err,
                              size_t errlen)
{
	memset(t, 0, sizeof(*t));
	FILE *f = fopen(path, "rb");
	if (!f) {
		set_err(err, errlen, "%s: cannot open: %s", path, strerror(errno));
		return RL_ERR_IO;
	}
	struct rl_buf fb = {0};
	size_t r;
	do { /* room for as much again as read so far (at least 64 KiB) */
		rl_buf_reserve(&fb, fb.len > (1 << 16) ? fb.len : (1 << 16));
		r = fread(fb.s + fb.len, 1, fb.cap - fb.len - 1, f);
		fb.len += r;
	} while (r > 0);
	fclose(f);
	unsigned char *buf = (unsigned char *)fb.s;
	size_t len = fb.len;
	if (len == 0) {
		free(buf);
		set_err(err, errlen, "%s: empty file", path);
		return RL_ERR_PARSE;
	}
	char why[400];
	enum rl_status st = rl_onnx_tensor_decode(buf, len, t, why, sizeof(why));
	free(buf);
	if (st != RL_OK)
		set_err(err, errlen, "%s: %s", path, why);
	return st;
}

enum rl_status rl_onnx_tensor_decode(const uint8_t *buf, size_t len, struct rl_tensor *t,
                                     char *why, size_t whylen)
{
	memset(t, 0, sizeof(*t));
	Onnx__TensorProto *tp = onnx__tensor_proto__unpack(NULL, len, buf);
	if (!tp) {
		snprintf(why, whylen, "not a TensorProto (protobuf parse failed)");
		return RL_ERR_PARSE;
	}
	const void *data;
	enum rl_status st = RL_OK;
	if (!decode_tensor(NULL, NULL, tp, &t->dtype, &t->shape, &data, &t->nbytes, why,
	                   whylen)) {
		st = RL_ERR_INVALID;
	} else {
		t->data = (void *)data;
		t->name = strdup(tp->name ? tp->name : "");
	}
	onnx__tensor_proto__free_unpacked(tp, NULL);
	return st;
}

void rl_tensor_free(struct rl_tensor *t)
{
	free(t->name);
	free(t->data);
	memset(t, 0, sizeof(*t));
}
