/*
 * machine.c - machine profiles: hw/<name>.xml to struct rl_machine and back.
 *
 * A profile is read in three steps, each of which can reject it with a
 * one-line "FILE:LINE: reason" message:
 *
 *   1. libxml2 parses the file: no network (XML_PARSE_NONET), no entity
 *      substitution and no DTD loading, and a DOCTYPE is refused outright,
 *      since a profile has no use for one and it is the door to entity tricks;
 *   2. the document is validated against hw/machine.xsd, which fixes the
 *      shape, the enumerations and positivity;
 *   3. the struct is filled and checked for what a schema cannot say:
 *      finite, non-absurd magnitudes (a typo like "4.8e21" for a bandwidth
 *      is valid xs:double), an fp32 peak to fall back on, main memory
 *      being the largest level, and the optional geometry the tiling pass
 *      reads (<simd>, line_bytes and ways per level) being plausible: a
 *      power-of-two line, no set larger than a core's share of the level.
 *
 * Cache levels are not required to grow outwards: non-inclusive hierarchies
 * hold more in their private L2s than in the L3 (56 x 2 MiB of L2 against
 * 105 MiB of L3 on a Sapphire Rapids part), and probe writes what it finds.
 *
 * libxml2 reports errors through callbacks; they are collected per call in a
 * struct rl_xml_errors (first error wins, since later ones are usually
 * consequences of it), never through libxml2's global handlers, so loading is
 * safe from several threads and prints nothing behind the caller's back.
 *
 * Writing goes through xmlTextWriter into memory, then to a temporary file
 * beside the target that is renamed over it, so a failed write never leaves
 * a half profile behind. Numbers are written in the shortest form that reads
 * back to the same double, so write-then-load is exact.
 */
#include "machine.h"
#include "buf.h" /* rl_write_file_atomic */

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <libxml/parser.h>
#include <libxml/tree.h>
#include <libxml/xmlschemas.h>
#include <libxml/xmlwriter.h>

#ifndef RL_HW_DIR
#define RL_HW_DIR "hw" /* the build defines it; this keeps a bare compile working */
#endif

#ifndef PATH_MAX
#define PATH_MAX 4096
#endif

/* Magnitudes past these are typos, not machines (a 2024 flagship GPU is
 * ~2e15 FLOP/s dense fp8, ~5e12 B/s HBM; the limits leave 100x headroom). */
#define RL_MAX_PEAK 1e18     /* FLOP/s */
#define RL_MAX_BW 1e15       /* bytes/s */
#define RL_MAX_CAPACITY 1e15 /* bytes */
#define RL_MAX_LATENCY 1.0   /* seconds */
#define RL_MAX_CALIB_RATE 1e16 /* elements or FLOP per second per core */
#define RL_MAX_CORES 1048576
/* The optional geometry (<simd>, line_bytes, ways): past these it is a typo.
 * SVE allows 2048-bit vectors; a fully associative 64 MiB cache of 64-byte
 * lines would have 1M ways, more than any real one. */
#define RL_MAX_SIMD_BITS 2048
#define RL_MAX_SIMD_REGS 256
#define RL_MAX_FMA_UNITS 16
#define RL_MAX_FMA_LATENCY 64
#define RL_MAX_LINE 4096
#define RL_MAX_WAYS 1048576

static const char *const rl_prec_names[] = {
	[RL_PREC_FP64] = "fp64", [RL_PREC_FP32] = "fp32",
	[RL_PREC_TF32] = "tf32", [RL_PREC_FP16] = "fp16",
	[RL_PREC_BF16] = "bf16", [RL_PREC_FP8] = "fp8",
	[RL_PREC_INT8] = "int8", [RL_PREC_INT4] = "int4",
};
_Static_assert(sizeof rl_prec_names / sizeof rl_prec_names[0] == RL_PREC_COUNT_,
               "rl_prec_names must name every enum rl_prec");

const char *rl_prec_name(enum rl_prec p)
{
	if ((unsigned)p >= RL_PREC_COUNT_)
		return "?";
	return rl_prec_names[p];
}

bool rl_prec_from_name(const char *s, enum rl_prec *p)
{
	for (int i = 0; s && i < RL_PREC_COUNT_; i++) {
		if (strcmp(s, rl_prec_names[i]) == 0) {
			*p = (enum rl_prec)i;
			return true;
		}
	}
	return false;
}

static const char *const rl_math_names[] = {
	[RL_MATH_BASIC] = "basic", [RL_MATH_DIV] = "div",         [RL_MATH_SQRT] = "sqrt",
	[RL_MATH_EXP] = "exp",     [RL_MATH_LOG] = "log",         [RL_MATH_TANH] = "tanh",
	[RL_MATH_SIGMOID] = "sigmoid", [RL_MATH_ERF] = "erf",     [RL_MATH_GEMM] = "gemm",
	[RL_MATH_GATHER] = "gather", [RL_MATH_MMPLAIN] = "matmul_plain", [RL_MATH_ROW] = "row",
};
_Static_assert(sizeof rl_math_names / sizeof rl_math_names[0] == RL_MATH_COUNT_,
               "rl_math_names must name every enum rl_math");

const char *rl_math_name(enum rl_math c)
{
	return (unsigned)c < RL_MATH_COUNT_ ? rl_math_names[c] : "?";
}

bool rl_math_from_name(const char *s, enum rl_math *c)
{
	for (int i = 0; s && i < RL_MATH_COUNT_; i++) {
		if (strcmp(s, rl_math_names[i]) == 0) {
			*c = (enum rl_math)i;
			return true;
		}
	}
	return false;
}

bool rl_machine_calibrated(const struct rl_machine *m)
{
	for (int i = 0; i < RL_MATH_REQUIRED_; i++)
		if (!(m->calib[i] > 0))
			return false;
	return true;
}

double rl_machine_peak(const struct rl_machine *m, enum rl_prec p, bool matrix)
{
	if ((unsigned)p >= RL_PREC_COUNT_)
		return 0;
	double v = m->peak_vector[p];
	if (matrix && m->peak_matrix[p] > v)
		return m->peak_matrix[p];
	return v;
}

double rl_machine_balance(const struct rl_machine *m, enum rl_prec p)
{
	if (m->nlevels <= 0)
		return 0;
	double bw = rl_machine_dram(m)->read_bw;
	return bw > 0 ? rl_machine_peak(m, p, true) / bw : 0;
}

/* ---- messages ----------------------------------------------------------- */

/* "FILE:LINE: reason", or "FILE: reason" when there is no line. */
/* "FILE:LINE: reason" (or "FILE: reason") into err, on one line. */
static void rl_vfail(char *err, size_t errlen, const char *file, int line, const char *fmt,
                     va_list ap)
{
	if (!err || errlen == 0)
		return;
	int n = line > 0 ? snprintf(err, errlen, "%s:%d: ", file, line)
	                 : snprintf(err, errlen, "%s: ", file);
	if (n < 0 || (size_t)n >= errlen)
		return;
	vsnprintf(err + n, errlen - (size_t)n, fmt, ap);
	/* one line, whatever a libxml2 message or a file name brought in */
	for (char *c = err; *c; c++)
		if (*c == '\n' || *c == '\r')
			*c = ' ';
}

/* For the internal checks that return bool (their caller knows the status). */
static bool rl_fail(char *err, size_t errlen, const char *file, int line,
                    const char *fmt, ...)
	__attribute__((format(printf, 5, 6)));

static bool rl_fail(char *err, size_t errlen, const char *file, int line,
                    const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	rl_vfail(err, errlen, file, line, fmt, ap);
	va_end(ap);
	return false;
}

/* For the public functions: the message as rl_fail, and the status st. */
static enum rl_status rl_fail_st(enum rl_status st, char *err, size_t errlen, const char *file,
                                 int line, const char *fmt, ...)
	__attribute__((format(printf, 6, 7)));

static enum rl_status rl_fail_st(enum rl_status st, char *err, size_t errlen, const char *file,
                                 int line, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	rl_vfail(err, errlen, file, line, fmt, ap);
	va_end(ap);
	return st;
}

/* The first error libxml2 reported during one parse or validation. */
struct rl_xml_errors {
	bool have;
	int line;
	char msg[384];
};

#if LIBXML_VERSION >= 21200
typedef const xmlError rl_xml_error_t;
#else
typedef xmlError rl_xml_error_t;
#endif

static void rl_xml_capture(struct rl_xml_errors *xe, rl_xml_error_t *e)
{
	if (xe->have || !e || e->level == XML_ERR_WARNING)
		return;
	xe->have = true;
	xe->line = e->line;
	if (xe->line <= 0 && e->node)
		xe->line = (int)xmlGetLineNo((xmlNode *)e->node);
	snprintf(xe->msg, sizeof xe->msg, "%s",
	         e->message ? e->message : "unknown XML error");
	/* libxml2 messages end in a newline and may hold more; keep one line */
	size_t n = strlen(xe->msg);
	while (n > 0 && isspace((unsigned char)xe->msg[n - 1]))
		xe->msg[--n] = '\0';
	for (char *c = xe->msg; *c; c++)
		if (*c == '\n' || *c == '\r')
			*c = ' ';
}

/* Parser errors arrive with the parser context as user data (SAX2 owns
 * userData), so the collector rides in ctxt->_private. */
static void rl_xml_on_parse_error(void *ctx, rl_xml_error_t *e)
{
	xmlParserCtxt *pc = ctx;
	if (pc && pc->_private)
		rl_xml_capture(pc->_private, e);
}

static void rl_xml_on_schema_error(void *ctx, rl_xml_error_t *e)
{
	rl_xml_capture(ctx, e);
}

/* ---- small helpers ------------------------------------------------------ */

static bool rl_ends_with(const char *s, const char *suffix)
{
	size_t n = strlen(s), k = strlen(suffix);
	return n >= k && strcmp(s + n - k, suffix) == 0;
}

static bool rl_file_exists(const char *path)
{
	struct stat st;
	return stat(path, &st) == 0 && S_ISREG(st.st_mode);
}

/* A name as the schema allows it: [A-Za-z0-9][A-Za-z0-9._-]*. */
static bool rl_name_ok(const char *s)
{
	if (!isalnum((unsigned char)s[0]))
		return false;
	for (; *s; s++)
		if (!isalnum((unsigned char)*s) && *s != '.' && *s != '_' && *s != '-')
			return false;
	return true;
}

static int rl_strcmp_p(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Profile names in dir (files "*.xml" minus the extension), sorted.
 * Returns the count, or -1 if dir cannot be read; free with rl_names_free. */
static int rl_names_scan(const char *dir, char ***out)
{
	*out = NULL;
	DIR *d = opendir(dir);
	if (!d)
		return -1;
	char **v = NULL;
	int n = 0, cap = 0;
	struct dirent *de;
	while ((de = readdir(d))) {
		const char *nm = de->d_name;
		if (nm[0] == '.' || !rl_ends_with(nm, ".xml"))
			continue;
		if (n == cap) {
			cap = cap ? 2 * cap : 16;
			char **nv = realloc(v, (size_t)cap * sizeof *v);
			if (!nv)
				break;
			v = nv;
		}
		size_t len = strlen(nm) - 4;
		char *s = malloc(len + 1);
		if (!s)
			break;
		memcpy(s, nm, len);
		s[len] = '\0';
		v[n++] = s;
	}
	closedir(d);
	if (n > 1)
		qsort(v, (size_t)n, sizeof *v, rl_strcmp_p);
	*out = v;
	return n;
}

static void rl_names_free(char **v, int n)
{
	for (int i = 0; i < n; i++)
		free(v[i]);
	free(v);
}

/* ---- locations ---------------------------------------------------------- */

const char *rl_machine_hw_dir(void)
{
	const char *e = getenv("RLOPT_HW_DIR");
	return e && *e ? e : RL_HW_DIR;
}

bool rl_machine_host_path(char *buf, size_t len)
{
	const char *e = getenv("RLOPT_HOST_PROFILE");
	int n;
	if (e && *e) {
		n = snprintf(buf, len, "%s", e);
	} else {
		const char *home = getenv("HOME");
		if (!home || !*home)
			return false;
		n = snprintf(buf, len, "%s/.config/rlopt/host.xml", home);
	}
	return n > 0 && (size_t)n < len;
}

const char *rl_machine_default(void)
{
	char p[PATH_MAX];
	return rl_machine_host_path(p, sizeof p) && rl_file_exists(p)
	               ? "host"
	               : "generic-cpu";
}

/* ---- semantic checks ---------------------------------------------------- */

/* Source lines of the parts of a loaded profile, so the checks can point at
 * them; all zero for a struct that did not come from a file. */
struct rl_machine_lines {
	int root;
	int desc;
	int peak[2][RL_PREC_COUNT_]; /* [0] vector, [1] matrix */
	int level[RL_MAX_MEM_LEVELS];
	int eff;
	int lat;
	int simd;
	int calib[RL_MATH_COUNT_];
};

/* Finite and in (0, max]; NaN fails the first comparison. */
static bool rl_in_range(double x, double max)
{
	return x > 0 && isfinite(x) && x <= max;
}

static bool rl_check_lines(const struct rl_machine *m,
                           const struct rl_machine_lines *ln, const char *file,
                           char *err, size_t errlen)
{
	static const struct rl_machine_lines none;
	if (!ln)
		ln = &none;
	if (!m->name[0] || !rl_name_ok(m->name))
		return rl_fail(err, errlen, file, ln->root,
		               "machine name '%s' must match [A-Za-z0-9][A-Za-z0-9._-]*",
		               m->name);
	if (!memchr(m->desc, '\0', sizeof m->desc) || !m->desc[0])
		return rl_fail(err, errlen, file, ln->desc, "description is empty");
	if (strcmp(m->kind, "gpu") != 0 && strcmp(m->kind, "cpu") != 0)
		return rl_fail(err, errlen, file, ln->root,
		               "kind '%.8s' is neither 'gpu' nor 'cpu'", m->kind);
	if (m->cores < 1 || m->cores > RL_MAX_CORES)
		return rl_fail(err, errlen, file, ln->root,
		               "cores = %d is outside [1, %d]", m->cores, RL_MAX_CORES);

	for (int u = 0; u < 2; u++) {
		const double *pk = u ? m->peak_matrix : m->peak_vector;
		for (int p = 0; p < RL_PREC_COUNT_; p++) {
			if (pk[p] == 0)
				continue; /* no such unit */
			if (!rl_in_range(pk[p], RL_MAX_PEAK))
				return rl_fail(err, errlen, file, ln->peak[u][p],
				               "%s %s peak %g FLOP/s is not in (0, %g]",
				               rl_prec_name((enum rl_prec)p),
				               u ? "matrix" : "vector", pk[p], RL_MAX_PEAK);
		}
	}
	if (m->peak_vector[RL_PREC_FP32] <= 0 && m->peak_matrix[RL_PREC_FP32] <= 0)
		return rl_fail(err, errlen, file, ln->root,
		               "no fp32 peak: every machine needs one, the cost model "
		               "falls back to it");

	if (m->nlevels < 1 || m->nlevels > RL_MAX_MEM_LEVELS)
		return rl_fail(err, errlen, file, ln->root,
		               "%d memory levels; need 1 to %d, main memory last",
		               m->nlevels, RL_MAX_MEM_LEVELS);
	const struct rl_mem_level *main_mem = rl_machine_dram(m);
	for (int i = 0; i < m->nlevels; i++) {
		const struct rl_mem_level *l = &m->level[i];
		int line = ln->level[i];
		if (!memchr(l->name, '\0', sizeof l->name) || !rl_name_ok(l->name))
			return rl_fail(err, errlen, file, line,
			               "memory level %d has a bad name", i + 1);
		for (int j = 0; j < i; j++)
			if (strcmp(m->level[j].name, l->name) == 0)
				return rl_fail(err, errlen, file, line,
				               "memory level '%s' appears twice", l->name);
		if (!rl_in_range(l->capacity, RL_MAX_CAPACITY))
			return rl_fail(err, errlen, file, line,
			               "level '%s' capacity %g B is not in (0, %g]",
			               l->name, l->capacity, RL_MAX_CAPACITY);
		if (!rl_in_range(l->read_bw, RL_MAX_BW))
			return rl_fail(err, errlen, file, line,
			               "level '%s' read_bw %g B/s is not in (0, %g]",
			               l->name, l->read_bw, RL_MAX_BW);
		if (!rl_in_range(l->write_bw, RL_MAX_BW))
			return rl_fail(err, errlen, file, line,
			               "level '%s' write_bw %g B/s is not in (0, %g]",
			               l->name, l->write_bw, RL_MAX_BW);
		/* one core's rate: optional, never above the whole chip's */
		if ((l->core_read_bw != 0 && !rl_in_range(l->core_read_bw, l->read_bw)) ||
		    (l->core_write_bw != 0 && !rl_in_range(l->core_write_bw, l->write_bw)))
			return rl_fail(err, errlen, file, line,
			               "level '%s' core_read_bw/core_write_bw %g/%g B/s must be in "
			               "(0, read_bw/write_bw %g/%g]", l->name, l->core_read_bw,
			               l->core_write_bw, l->read_bw, l->write_bw);
		/* Levels are listed closest first, and the cost model prices
		 * untiled tensors at the last one: it must be main memory, so
		 * no level may hold more. Bandwidth order is not checked (an
		 * Infinity Cache can be slower than the L2 behind it is big), nor
		 * capacity order between caches: capacities are chip totals, and
		 * a non-inclusive last cache can be smaller than the private
		 * caches before it (a 56-core Sapphire Rapids: 56 x 2 MiB of L2,
		 * 105 MiB of L3). */
		if (l->capacity > main_mem->capacity)
			return rl_fail(err, errlen, file, line,
			               "level '%s' (%g B) is larger than the last level "
			               "'%s' (%g B), which must be main memory",
			               l->name, l->capacity, main_mem->name,
			               main_mem->capacity);
	}

	/* the optional geometry: absent is 0; present must make sense. A set
	 * (ways x line) larger than a core's share of the level (capacities
	 * are chip totals) is a typo: real sets are a few KiB, shares are more. */
	for (int i = 0; i < m->nlevels; i++) {
		const struct rl_mem_level *l = &m->level[i];
		int line = ln->level[i];
		if (l->line_bytes < 0 || l->line_bytes > RL_MAX_LINE ||
		    (l->line_bytes & (l->line_bytes - 1)) != 0 ||
		    (l->line_bytes > 0 && l->line_bytes < 4))
			return rl_fail(err, errlen, file, line,
			               "level '%s' line_bytes %d is not a power of two in "
			               "[4, %d]", l->name, l->line_bytes, RL_MAX_LINE);
		if (l->ways < 0 || l->ways > RL_MAX_WAYS)
			return rl_fail(err, errlen, file, line,
			               "level '%s' ways %d is not in [1, %d]", l->name,
			               l->ways, RL_MAX_WAYS);
		double set = (double)(l->line_bytes ? l->line_bytes : 1) *
		             (double)(l->ways ? l->ways : 1);
		if ((l->ways || l->line_bytes) && set > l->capacity / m->cores)
			return rl_fail(err, errlen, file, line,
			               "level '%s': %d ways x %d-byte lines (%g B) exceed a "
			               "core's share of it (%g B of %g B over %d cores)", l->name,
			               l->ways, l->line_bytes, set, l->capacity / m->cores,
			               l->capacity, m->cores);
	}
	if (m->simd_bits < 0 || m->simd_bits > RL_MAX_SIMD_BITS ||
	    (m->simd_bits > 0 && (m->simd_bits < 32 || m->simd_bits % 32 != 0)))
		return rl_fail(err, errlen, file, ln->simd,
		               "<simd> width_bits %d is not a multiple of 32 in [32, %d]",
		               m->simd_bits, RL_MAX_SIMD_BITS);
	if (m->simd_registers < 0 || m->simd_registers > RL_MAX_SIMD_REGS ||
	    (m->simd_registers > 0 && m->simd_registers < 4))
		return rl_fail(err, errlen, file, ln->simd,
		               "<simd> registers %d is not in [4, %d] (a register tile "
		               "needs accumulators, a load and a broadcast)",
		               m->simd_registers, RL_MAX_SIMD_REGS);
	if (m->fma_units < 0 || m->fma_units > RL_MAX_FMA_UNITS)
		return rl_fail(err, errlen, file, ln->simd,
		               "<simd> fma_units %d is not in [1, %d]", m->fma_units,
		               RL_MAX_FMA_UNITS);
	if (m->fma_latency < 0 || m->fma_latency > RL_MAX_FMA_LATENCY)
		return rl_fail(err, errlen, file, ln->simd,
		               "<simd> fma_latency_cycles %d is not in [1, %d]",
		               m->fma_latency, RL_MAX_FMA_LATENCY);

	const double eff[3] = {m->eff_contiguous, m->eff_strided, m->eff_gather};
	static const char *const eff_name[3] = {"contiguous", "strided", "gather"};
	for (int i = 0; i < 3; i++)
		if (!rl_in_range(eff[i], 1.0))
			return rl_fail(err, errlen, file, ln->eff,
			               "%s efficiency %g is not in (0, 1]", eff_name[i],
			               eff[i]);
	for (int k = 0; k < RL_MATH_COUNT_; k++)
		if (m->calib[k] != 0 && !rl_in_range(m->calib[k], RL_MAX_CALIB_RATE))
			return rl_fail(err, errlen, file, ln->calib[k],
			               "<rate> op '%s' per_core %g is not in (0, %g]",
			               rl_math_name((enum rl_math)k), m->calib[k],
			               RL_MAX_CALIB_RATE);
	if (!rl_in_range(m->launch_latency, RL_MAX_LATENCY))
		return rl_fail(err, errlen, file, ln->lat,
		               "launch latency %g s is not in (0, %g]",
		               m->launch_latency, RL_MAX_LATENCY);
	if (m->fork_latency != 0) {
		if (strcmp(m->kind, "cpu") != 0)
			return rl_fail(err, errlen, file, ln->lat,
			               "fork/join latency on a %s profile: only CPU kernels are "
			               "split across a thread pool", m->kind);
		if (!rl_in_range(m->fork_latency, RL_MAX_LATENCY))
			return rl_fail(err, errlen, file, ln->lat,
			               "fork/join latency %g s is not in (0, %g]",
			               m->fork_latency, RL_MAX_LATENCY);
	}
	if (m->launch_graph != 0) {
		double eager = m->launch_eager > 0 ? m->launch_eager : m->launch_latency;
		if (strcmp(m->kind, "gpu") != 0)
			return rl_fail(err, errlen, file, ln->lat,
			               "graph replay latency on a %s profile: only GPU kernels "
			               "are replayed from a captured graph", m->kind);
		if (!rl_in_range(m->launch_graph, eager))
			return rl_fail(err, errlen, file, ln->lat,
			               "graph replay latency %g s is not in (0, %g] (the eager "
			               "launch latency: replaying a graph never costs more)",
			               m->launch_graph, eager);
	}
	return true;
}

const char *rl_launch_mode_name(enum rl_launch_mode mode)
{
	return mode == RL_LAUNCH_GRAPH ? "graph" : "eager";
}

bool rl_machine_set_launch(struct rl_machine *m, enum rl_launch_mode mode)
{
	if (m->launch_eager <= 0)
		m->launch_eager = m->launch_latency;
	if (mode == RL_LAUNCH_GRAPH && strcmp(m->kind, "gpu") != 0)
		return false;
	m->launch_mode = mode;
	m->launch_latency = mode == RL_LAUNCH_GRAPH && m->launch_graph > 0 ? m->launch_graph
	                                                                   : m->launch_eager;
	return true;
}

void rl_machine_launch_note(const struct rl_machine *m, char *buf, size_t len)
{
	double eager = m->launch_eager > 0 ? m->launch_eager : m->launch_latency;
	if (strcmp(m->kind, "gpu") != 0 && m->fork_latency > 0)
		snprintf(buf, len, "function call, %.3g us per kernel; %.3g us more for one split "
		         "across threads (fork/join)", m->launch_latency * 1e6, m->fork_latency * 1e6);
	else if (strcmp(m->kind, "gpu") != 0)
		snprintf(buf, len, "function call, %.3g us per kernel", m->launch_latency * 1e6);
	else if (m->launch_mode == RL_LAUNCH_GRAPH && m->launch_graph > 0)
		snprintf(buf, len, "CUDA graph replay, %.3g us per kernel (eager launch %.3g us)",
		         m->launch_latency * 1e6, eager * 1e6);
	else if (m->launch_mode == RL_LAUNCH_GRAPH)
		snprintf(buf, len, "CUDA graph replay priced at the eager %.3g us per kernel "
		         "(the profile gives no <latency graph=> figure)", eager * 1e6);
	else
		snprintf(buf, len, "eager launches, %.3g us per kernel%s", eager * 1e6,
		         m->launch_graph > 0 ? " (the CUDA backend's default is graph replay)" : "");
}

enum rl_status rl_machine_check(const struct rl_machine *m, char *err, size_t errlen)
{
	const char *file = m->source[0] ? m->source : m->name[0] ? m->name : "machine";
	return rl_check_lines(m, NULL, file, err, errlen) ? RL_OK : RL_ERR_INVALID;
}

/* ---- XML to struct ------------------------------------------------------ */

static int rl_line(const xmlNode *n)
{
	long l = xmlGetLineNo(n);
	return l > 0 && l < INT_MAX ? (int)l : 0;
}

/* Attribute as a double. Absent and optional: *out untouched, true. The
 * schema has vetted the lexical form; this guards against what it allows
 * (surrounding whitespace) and against a caller that skipped it. */
static bool rl_attr_double(const xmlNode *n, const char *name, bool required,
                           double *out, const char *file, char *err,
                           size_t errlen)
{
	xmlChar *v = xmlGetProp(n, BAD_CAST name);
	if (!v) {
		if (!required)
			return true;
		return rl_fail(err, errlen, file, rl_line(n),
		               "<%s> lacks attribute '%s'", (const char *)n->name,
		               name);
	}
	char *end;
	errno = 0;
	double d = strtod((const char *)v, &end);
	while (isspace((unsigned char)*end))
		end++;
	bool ok = end != (char *)v && *end == '\0';
	if (!ok)
		rl_fail(err, errlen, file, rl_line(n),
		        "<%s> attribute %s='%s' is not a number",
		        (const char *)n->name, name, (const char *)v);
	xmlFree(v);
	if (ok)
		*out = d;
	return ok;
}

/* Optional whole-number attribute in [1, max]; absent leaves *out at 0.
 * Zero, fractions and overflow are errors naming the line. */
static bool rl_attr_count(const xmlNode *n, const char *name, int max, int *out,
                          const char *file, char *err, size_t errlen)
{
	double d = 0;
	xmlChar *v = xmlGetProp(n, BAD_CAST name);
	if (!v)
		return true;
	xmlFree(v);
	if (!rl_attr_double(n, name, true, &d, file, err, errlen))
		return false;
	if (!(d >= 1 && d <= max) || d != floor(d))
		return rl_fail(err, errlen, file, rl_line(n),
		               "<%s> attribute %s=%g is not a whole number in [1, %d]",
		               (const char *)n->name, name, d, max);
	*out = (int)d;
	return true;
}

/* Attribute copied into a fixed buffer; too long is an error, not a cut. */
static bool rl_attr_string(const xmlNode *n, const char *name, char *buf,
                           size_t len, const char *file, char *err,
                           size_t errlen)
{
	xmlChar *v = xmlGetProp(n, BAD_CAST name);
	if (!v)
		return rl_fail(err, errlen, file, rl_line(n),
		               "<%s> lacks attribute '%s'", (const char *)n->name,
		               name);
	int k = snprintf(buf, len, "%s", (const char *)v);
	xmlFree(v);
	if (k < 0 || (size_t)k >= len)
		return rl_fail(err, errlen, file, rl_line(n),
		               "<%s> attribute '%s' is longer than %zu bytes",
		               (const char *)n->name, name, len - 1);
	return true;
}

static bool rl_elem_is(const xmlNode *n, const char *name)
{
	return n->type == XML_ELEMENT_NODE && xmlStrEqual(n->name, BAD_CAST name);
}

static bool rl_read_description(const xmlNode *n, struct rl_machine *m,
                                const char *file, char *err, size_t errlen)
{
	xmlChar *v = xmlNodeGetContent(n);
	if (!v)
		return rl_fail(err, errlen, file, rl_line(n), "empty <description>");
	/* collapse runs of whitespace: the text may be wrapped in the file
	 * but is printed on one line */
	size_t k = 0;
	bool space = false, fit = true;
	for (const xmlChar *c = v; *c; c++) {
		if (isspace(*c)) {
			space = k > 0;
			continue;
		}
		if (space && k + 1 < sizeof m->desc)
			m->desc[k++] = ' ';
		space = false;
		if (k + 1 >= sizeof m->desc) {
			fit = false;
			break;
		}
		m->desc[k++] = (char)*c;
	}
	m->desc[k] = '\0';
	xmlFree(v);
	if (!fit)
		return rl_fail(err, errlen, file, rl_line(n),
		               "<description> is longer than %zu bytes",
		               sizeof m->desc - 1);
	return true;
}

static bool rl_read_peak(const xmlNode *n, struct rl_machine *m,
                         struct rl_machine_lines *ln, const char *file,
                         char *err, size_t errlen)
{
	char prec[16], unit[16];
	double flops = 0;
	if (!rl_attr_string(n, "precision", prec, sizeof prec, file, err, errlen) ||
	    !rl_attr_string(n, "unit", unit, sizeof unit, file, err, errlen) ||
	    !rl_attr_double(n, "flops", true, &flops, file, err, errlen))
		return false;
	enum rl_prec p;
	if (!rl_prec_from_name(prec, &p))
		return rl_fail(err, errlen, file, rl_line(n),
		               "unknown precision '%s'", prec);
	int u;
	if (strcmp(unit, "vector") == 0)
		u = 0;
	else if (strcmp(unit, "matrix") == 0)
		u = 1;
	else
		return rl_fail(err, errlen, file, rl_line(n),
		               "unknown unit '%s' (vector or matrix)", unit);
	double *slot = u ? &m->peak_matrix[p] : &m->peak_vector[p];
	if (ln->peak[u][p])
		return rl_fail(err, errlen, file, rl_line(n),
		               "second %s %s peak (first on line %d)", prec, unit,
		               ln->peak[u][p]);
	*slot = flops;
	ln->peak[u][p] = rl_line(n);
	if (!ln->peak[u][p])
		ln->peak[u][p] = -1; /* seen, line unknown */
	return true;
}

static bool rl_read_level(const xmlNode *n, struct rl_machine *m,
                          struct rl_machine_lines *ln, const char *file,
                          char *err, size_t errlen)
{
	if (m->nlevels >= RL_MAX_MEM_LEVELS)
		return rl_fail(err, errlen, file, rl_line(n),
		               "more than %d memory levels", RL_MAX_MEM_LEVELS);
	struct rl_mem_level *l = &m->level[m->nlevels];
	if (!rl_attr_string(n, "name", l->name, sizeof l->name, file, err, errlen) ||
	    !rl_attr_double(n, "capacity", true, &l->capacity, file, err, errlen) ||
	    !rl_attr_double(n, "read_bw", true, &l->read_bw, file, err, errlen))
		return false;
	l->write_bw = l->read_bw;
	l->core_read_bw = l->core_write_bw = 0;
	if (!rl_attr_double(n, "write_bw", false, &l->write_bw, file, err, errlen) ||
	    !rl_attr_double(n, "core_read_bw", false, &l->core_read_bw, file, err, errlen))
		return false;
	l->core_write_bw = l->core_read_bw;
	if (!rl_attr_double(n, "core_write_bw", false, &l->core_write_bw, file, err, errlen) ||
	    !rl_attr_count(n, "line_bytes", RL_MAX_LINE, &l->line_bytes, file, err, errlen) ||
	    !rl_attr_count(n, "ways", RL_MAX_WAYS, &l->ways, file, err, errlen))
		return false;
	ln->level[m->nlevels++] = rl_line(n);
	return true;
}

/* <calibration cc="..."><rate op="exp" per_core="1.2e9"/>...</calibration> */
static bool rl_read_calibration(const xmlNode *c, struct rl_machine *m,
                                struct rl_machine_lines *ln, const char *file,
                                char *err, size_t errlen)
{
	xmlChar *cc = xmlGetProp(c, BAD_CAST "cc");
	if (cc) {
		snprintf(m->calib_cc, sizeof m->calib_cc, "%s", (const char *)cc);
		xmlFree(cc);
	}
	for (const xmlNode *r = c->children; r; r = r->next) {
		if (!rl_elem_is(r, "rate"))
			continue;
		xmlChar *op = xmlGetProp(r, BAD_CAST "op");
		enum rl_math k;
		bool known = op && rl_math_from_name((const char *)op, &k);
		if (!known) {
			bool f = rl_fail(err, errlen, file, rl_line(r),
			                 "<rate> op '%s' is not a calibrated class (basic, div, "
			                 "sqrt, exp, log, tanh, sigmoid, erf, gemm, gather, "
			                 "matmul_plain, row)",
			                 op ? (const char *)op : "");
			xmlFree(op);
			return f;
		}
		xmlFree(op);
		if (ln->calib[k])
			return rl_fail(err, errlen, file, rl_line(r),
			               "<rate> op '%s' given twice (first at line %d)",
			               rl_math_name(k), ln->calib[k]);
		ln->calib[k] = rl_line(r);
		if (!rl_attr_double(r, "per_core", true, &m->calib[k], file, err, errlen))
			return false;
	}
	return true;
}

static bool rl_read_machine(const xmlNode *root, struct rl_machine *m,
                            struct rl_machine_lines *ln, const char *file,
                            char *err, size_t errlen)
{
	ln->root = rl_line(root);
	if (!rl_elem_is(root, "machine"))
		return rl_fail(err, errlen, file, ln->root,
		               "root element is <%s>, expected <machine>",
		               (const char *)root->name);
	if (!rl_attr_string(root, "name", m->name, sizeof m->name, file, err, errlen) ||
	    !rl_attr_string(root, "kind", m->kind, sizeof m->kind, file, err, errlen))
		return false;
	double cores = 0;
	if (!rl_attr_double(root, "cores", true, &cores, file, err, errlen))
		return false;
	if (!(cores >= 1 && cores <= RL_MAX_CORES) || cores != floor(cores))
		return rl_fail(err, errlen, file, ln->root,
		               "cores = %g is not a whole number in [1, %d]", cores,
		               RL_MAX_CORES);
	m->cores = (int)cores;

	for (const xmlNode *c = root->children; c; c = c->next) {
		if (c->type != XML_ELEMENT_NODE)
			continue;
		if (rl_elem_is(c, "description")) {
			ln->desc = rl_line(c);
			if (!rl_read_description(c, m, file, err, errlen))
				return false;
		} else if (rl_elem_is(c, "compute")) {
			for (const xmlNode *p = c->children; p; p = p->next)
				if (rl_elem_is(p, "peak") &&
				    !rl_read_peak(p, m, ln, file, err, errlen))
					return false;
		} else if (rl_elem_is(c, "simd")) {
			ln->simd = rl_line(c);
			if (!rl_attr_count(c, "width_bits", RL_MAX_SIMD_BITS, &m->simd_bits,
			                   file, err, errlen) ||
			    !rl_attr_count(c, "registers", RL_MAX_SIMD_REGS,
			                   &m->simd_registers, file, err, errlen) ||
			    !rl_attr_count(c, "fma_units", RL_MAX_FMA_UNITS, &m->fma_units,
			                   file, err, errlen) ||
			    !rl_attr_count(c, "fma_latency_cycles", RL_MAX_FMA_LATENCY,
			                   &m->fma_latency, file, err, errlen))
				return false;
		} else if (rl_elem_is(c, "calibration")) {
			if (!rl_read_calibration(c, m, ln, file, err, errlen))
				return false;
		} else if (rl_elem_is(c, "memory")) {
			for (const xmlNode *l = c->children; l; l = l->next)
				if (rl_elem_is(l, "level") &&
				    !rl_read_level(l, m, ln, file, err, errlen))
					return false;
		} else if (rl_elem_is(c, "efficiency")) {
			ln->eff = rl_line(c);
			if (!rl_attr_double(c, "contiguous", true, &m->eff_contiguous,
			                    file, err, errlen) ||
			    !rl_attr_double(c, "strided", true, &m->eff_strided, file,
			                    err, errlen) ||
			    !rl_attr_double(c, "gather", true, &m->eff_gather, file,
			                    err, errlen))
				return false;
		} else if (rl_elem_is(c, "latency")) {
			ln->lat = rl_line(c);
			if (!rl_attr_double(c, "launch", true, &m->launch_latency,
			                    file, err, errlen) ||
			    !rl_attr_double(c, "graph", false, &m->launch_graph, file,
			                    err, errlen) ||
			    !rl_attr_double(c, "fork", false, &m->fork_latency, file,
			                    err, errlen))
				return false;
			m->launch_eager = m->launch_latency;
		} else if (rl_elem_is(c, "features")) {
			xmlChar *v = xmlGetProp(c, BAD_CAST "sparse24");
			if (v) {
				/* xs:boolean: true, false, 1, 0 */
				m->has_sparse24 = xmlStrEqual(v, BAD_CAST "true") ||
				                  xmlStrEqual(v, BAD_CAST "1");
				xmlFree(v);
			}
		} else {
			return rl_fail(err, errlen, file, rl_line(c),
			               "unexpected element <%s>", (const char *)c->name);
		}
	}
	return true;
}

/* Parse, validate against the schema, fill and check. */
static enum rl_status rl_load_file(const char *path, struct rl_machine *m, char *err,
                                   size_t errlen)
{
	/* fopen first: a clearer message than libxml2's I/O warning */
	FILE *f = fopen(path, "rb");
	if (!f)
		return rl_fail_st(RL_ERR_IO, err, errlen, path, 0, "cannot open: %s",
		                  strerror(errno));
	fclose(f);

	char xsd[PATH_MAX];
	int k = snprintf(xsd, sizeof xsd, "%s/machine.xsd", rl_machine_hw_dir());
	if (k < 0 || (size_t)k >= sizeof xsd)
		return rl_fail_st(RL_ERR_IO, err, errlen, path, 0, "hw directory path too long");
	if (!rl_file_exists(xsd))
		return rl_fail_st(RL_ERR_IO, err, errlen, xsd, 0,
		                  "schema not found (set RLOPT_HW_DIR to the folder "
		                  "holding machine.xsd)");

	enum rl_status st = RL_ERR_NOMEM;
	struct rl_xml_errors xe = {0};
	xmlDoc *doc = NULL;
	xmlSchemaParserCtxt *spc = NULL;
	xmlSchema *schema = NULL;
	xmlSchemaValidCtxt *vc = NULL;
	xmlParserCtxt *pc = xmlNewParserCtxt();
	if (!pc) {
		rl_fail(err, errlen, path, 0, "out of memory");
		goto done;
	}
	pc->_private = &xe;
	pc->sax->serror = rl_xml_on_parse_error;
	/* No XML_PARSE_NOENT (no entity substitution), no DTDLOAD, no network.
	 * NOERROR/NOWARNING silence libxml2's own printing; errors still reach
	 * the structured handler above. */
	doc = xmlCtxtReadFile(pc, path, NULL,
	                      XML_PARSE_NONET | XML_PARSE_NOERROR |
	                              XML_PARSE_NOWARNING | XML_PARSE_BIG_LINES);
	st = RL_ERR_PARSE;
	if (!doc || !pc->wellFormed) {
		if (xe.have)
			rl_fail(err, errlen, path, xe.line > 0 ? xe.line : 1,
			        "not well-formed XML: %s", xe.msg);
		else
			rl_fail(err, errlen, path, 1, "not well-formed XML");
		goto done;
	}
	xmlNode *root = xmlDocGetRootElement(doc);
	if (!root) {
		rl_fail(err, errlen, path, 1, "empty document");
		goto done;
	}
	if (doc->intSubset || doc->extSubset) {
		rl_fail(err, errlen, path, rl_line(root) > 1 ? rl_line(root) - 1 : 1,
		        "a DOCTYPE is not allowed in a machine profile");
		goto done;
	}

	st = RL_ERR_IO; /* the schema is ours: a broken install */
	spc = xmlSchemaNewParserCtxt(xsd);
	if (!spc) {
		rl_fail(err, errlen, xsd, 0, "cannot read schema");
		goto done;
	}
	struct rl_xml_errors se = {0};
	xmlSchemaSetParserStructuredErrors(spc, rl_xml_on_schema_error, &se);
	schema = xmlSchemaParse(spc);
	if (!schema) {
		rl_fail(err, errlen, xsd, se.line, "bad schema: %s",
		        se.have ? se.msg : "unknown error");
		goto done;
	}
	st = RL_ERR_NOMEM;
	vc = xmlSchemaNewValidCtxt(schema);
	if (!vc) {
		rl_fail(err, errlen, path, 0, "out of memory");
		goto done;
	}
	struct rl_xml_errors ve = {0};
	xmlSchemaSetValidStructuredErrors(vc, rl_xml_on_schema_error, &ve);
	st = RL_ERR_INVALID;
	int rc = xmlSchemaValidateDoc(vc, doc);
	if (rc != 0) {
		if (ve.have)
			rl_fail(err, errlen, path, ve.line > 0 ? ve.line : rl_line(root),
			        "does not match machine.xsd: %s", ve.msg);
		else
			rl_fail(err, errlen, path, rl_line(root),
			        "does not match machine.xsd (validator error %d)", rc);
		goto done;
	}

	struct rl_machine_lines ln = {0};
	struct rl_machine tmp;
	memset(&tmp, 0, sizeof tmp);
	if (!rl_read_machine(root, &tmp, &ln, path, err, errlen))
		goto done;
	if (!rl_check_lines(&tmp, &ln, path, err, errlen))
		goto done;
	snprintf(tmp.source, sizeof tmp.source, "%s", path);
	/* the CUDA backend replays a captured graph; CPU kernels are calls */
	rl_machine_set_launch(&tmp, strcmp(tmp.kind, "gpu") == 0 ? RL_LAUNCH_GRAPH
	                                                        : RL_LAUNCH_EAGER);
	*m = tmp;
	st = RL_OK;
done:
	if (vc)
		xmlSchemaFreeValidCtxt(vc);
	if (schema)
		xmlSchemaFree(schema);
	if (spc)
		xmlSchemaFreeParserCtxt(spc);
	if (doc)
		xmlFreeDoc(doc);
	if (pc)
		xmlFreeParserCtxt(pc);
	return st;
}

/* "a, b, c" into buf (truncated quietly; it is only for a message). */
static void rl_names_join(char **names, int n, char *buf, size_t len)
{
	size_t k = 0;
	buf[0] = '\0';
	for (int i = 0; i < n && k < len; i++) {
		int w = snprintf(buf + k, len - k, "%s%s", i ? ", " : "", names[i]);
		if (w < 0)
			break;
		k += (size_t)w;
	}
}

enum rl_status rl_machine_load(const char *spec, struct rl_machine *m, char *err,
                               size_t errlen)
{
	if (!spec || !*spec)
		return rl_fail_st(RL_ERR_IO, err, errlen, "machine", 0, "empty profile name");
	if (strchr(spec, '/') || rl_ends_with(spec, ".xml"))
		return rl_load_file(spec, m, err, errlen);

	char path[PATH_MAX];
	if (strcmp(spec, "host") == 0) {
		if (!rl_machine_host_path(path, sizeof path))
			return rl_fail_st(RL_ERR_IO, err, errlen, "host", 0,
			                  "no host profile path: set RLOPT_HOST_PROFILE "
			                  "or HOME");
		if (!rl_file_exists(path))
			return rl_fail_st(RL_ERR_IO, err, errlen, path, 0,
			                  "no host profile; measure this machine with "
			                  "`rlopt probe -o %s`", path);
		return rl_load_file(path, m, err, errlen);
	}

	const char *dir = rl_machine_hw_dir();
	int k = snprintf(path, sizeof path, "%s/%s.xml", dir, spec);
	if (k < 0 || (size_t)k >= sizeof path)
		return rl_fail_st(RL_ERR_IO, err, errlen, spec, 0, "profile name too long");
	if (rl_file_exists(path))
		return rl_load_file(path, m, err, errlen);

	char **names;
	int n = rl_names_scan(dir, &names);
	if (n < 0)
		return rl_fail_st(RL_ERR_IO, err, errlen, spec, 0,
		                  "unknown machine, and the hw directory %s cannot be "
		                  "read: %s (set RLOPT_HW_DIR)", dir, strerror(errno));
	char known[1024];
	rl_names_join(names, n, known, sizeof known);
	rl_names_free(names, n);
	return rl_fail_st(RL_ERR_IO, err, errlen, spec, 0,
	                  "unknown machine (known in %s: %s; or 'host', or a path "
	                  "to a .xml profile)", dir, n ? known : "none");
}

void rl_machine_list(FILE *f)
{
	const char *dir = rl_machine_hw_dir();
	char **names;
	int n = rl_names_scan(dir, &names);
	if (n < 0) {
		fprintf(f, "cannot read %s: %s (set RLOPT_HW_DIR)\n", dir,
		        strerror(errno));
		return;
	}
	fprintf(f, "machine profiles in %s:\n", dir);
	fprintf(f, "  %-18s %-4s %6s  %s\n", "NAME", "KIND", "CORES", "DESCRIPTION");
	char err[512];
	struct rl_machine m;
	for (int i = 0; i < n; i++) {
		char path[PATH_MAX];
		int k = snprintf(path, sizeof path, "%s/%s.xml", dir, names[i]);
		if (k > 0 && (size_t)k < sizeof path &&
		    rl_load_file(path, &m, err, sizeof err) == RL_OK)
			fprintf(f, "  %-18s %-4s %6d  %s\n", names[i], m.kind,
			        m.cores, m.desc);
		else
			fprintf(f, "  %-18s (invalid: %s)\n", names[i], err);
	}
	rl_names_free(names, n);

	char host[PATH_MAX];
	if (rl_machine_host_path(host, sizeof host) && rl_file_exists(host)) {
		if (rl_load_file(host, &m, err, sizeof err) == RL_OK)
			fprintf(f, "  %-18s %-4s %6d  %s (%s)\n", "host", m.kind,
			        m.cores, m.desc, host);
		else
			fprintf(f, "  %-18s (invalid: %s)\n", "host", err);
	}
}

/* ---- struct to XML ------------------------------------------------------ */

/* Shortest %g form that reads back to exactly x, with the exponent tidied
 * ("6.7e+13" -> "6.7e13"); always a valid xs:double lexical form. */
static void rl_fmt_double(char *buf, size_t len, double x)
{
	for (int prec = 1; prec <= 17; prec++) {
		snprintf(buf, len, "%.*g", prec, x);
		if (strtod(buf, NULL) == x)
			break;
	}
	char *e = strchr(buf, 'e');
	if (!e)
		return;
	char *src = e + 1, *dst = e + 1;
	if (*src == '+')
		src++;
	else if (*src == '-')
		*dst++ = *src++;
	while (*src == '0' && src[1])
		src++;
	memmove(dst, src, strlen(src) + 1);
	/* a byte count reads better as digits ("41943040", not "4.194304e7");
	 * keep the exponent form only where it is shorter ("8e10") */
	char whole[40];
	if (x == floor(x) && fabs(x) < 1e17 &&
	    snprintf(whole, sizeof whole, "%.0f", x) > 0 &&
	    strlen(whole) <= strlen(buf) && strlen(whole) < len)
		memcpy(buf, whole, strlen(whole) + 1);
}

static int rl_w_attr_double(xmlTextWriter *w, const char *name, double x)
{
	char buf[40];
	rl_fmt_double(buf, sizeof buf, x);
	return xmlTextWriterWriteAttribute(w, BAD_CAST name, BAD_CAST buf);
}

/* A comment body XML accepts: no "--", no trailing '-', no control bytes;
 * each line of the text indented two spaces. Caller frees. */
static char *rl_comment_body(const char *text)
{
	size_t n = strlen(text);
	char *out = malloc(3 * n + 8);
	if (!out)
		return NULL;
	size_t k = 0;
	out[k++] = '\n';
	out[k++] = ' ';
	out[k++] = ' ';
	for (const char *c = text; *c; c++) {
		unsigned char ch = (unsigned char)*c;
		if (ch == '\n') {
			out[k++] = '\n';
			if (c[1]) {
				out[k++] = ' ';
				out[k++] = ' ';
			}
			continue;
		}
		if (ch < 0x20 && ch != '\t')
			ch = '?';
		if (ch == '-' && k > 0 && out[k - 1] == '-')
			out[k++] = ' ';
		out[k++] = (char)ch;
	}
	if (out[k - 1] != '\n')
		out[k++] = '\n';
	out[k] = '\0';
	return out;
}

static bool rl_write_doc(xmlTextWriter *w, const struct rl_machine *m,
                         const char *comment)
{
	bool ok = xmlTextWriterSetIndent(w, 1) >= 0 &&
	          xmlTextWriterSetIndentString(w, BAD_CAST "  ") >= 0 &&
	          xmlTextWriterStartDocument(w, NULL, "UTF-8", NULL) >= 0;
	if (ok && comment && *comment) {
		char *body = rl_comment_body(comment);
		ok = body && xmlTextWriterWriteComment(w, BAD_CAST body) >= 0;
		free(body);
	}
	ok = ok && xmlTextWriterStartElement(w, BAD_CAST "machine") >= 0 &&
	     xmlTextWriterWriteAttribute(w, BAD_CAST "name", BAD_CAST m->name) >= 0 &&
	     xmlTextWriterWriteAttribute(w, BAD_CAST "kind", BAD_CAST m->kind) >= 0 &&
	     xmlTextWriterWriteFormatAttribute(w, BAD_CAST "cores", "%d", m->cores) >= 0 &&
	     xmlTextWriterWriteElement(w, BAD_CAST "description", BAD_CAST m->desc) >= 0 &&
	     xmlTextWriterStartElement(w, BAD_CAST "compute") >= 0;
	for (int p = 0; ok && p < RL_PREC_COUNT_; p++) {
		for (int u = 0; ok && u < 2; u++) {
			double v = u ? m->peak_matrix[p] : m->peak_vector[p];
			if (v == 0)
				continue;
			ok = xmlTextWriterStartElement(w, BAD_CAST "peak") >= 0 &&
			     xmlTextWriterWriteAttribute(w, BAD_CAST "precision",
			             BAD_CAST rl_prec_name((enum rl_prec)p)) >= 0 &&
			     xmlTextWriterWriteAttribute(w, BAD_CAST "unit",
			             BAD_CAST(u ? "matrix" : "vector")) >= 0 &&
			     rl_w_attr_double(w, "flops", v) >= 0 &&
			     xmlTextWriterEndElement(w) >= 0;
		}
	}
	ok = ok && xmlTextWriterEndElement(w) >= 0;
	if (ok && (m->simd_bits || m->simd_registers || m->fma_units || m->fma_latency)) {
		static const char *const sname[4] = {"width_bits", "registers", "fma_units",
		                                     "fma_latency_cycles"};
		const int sval[4] = {m->simd_bits, m->simd_registers, m->fma_units,
		                     m->fma_latency};
		ok = xmlTextWriterStartElement(w, BAD_CAST "simd") >= 0;
		for (int i = 0; ok && i < 4; i++)
			if (sval[i])
				ok = xmlTextWriterWriteFormatAttribute(w, BAD_CAST sname[i], "%d",
				                                       sval[i]) >= 0;
		ok = ok && xmlTextWriterEndElement(w) >= 0;
	}
	bool any = false;
	for (int k = 0; k < RL_MATH_COUNT_; k++)
		any |= m->calib[k] > 0;
	if (ok && any) {
		ok = xmlTextWriterStartElement(w, BAD_CAST "calibration") >= 0;
		if (ok && m->calib_cc[0])
			ok = xmlTextWriterWriteAttribute(w, BAD_CAST "cc", BAD_CAST m->calib_cc) >= 0;
		for (int k = 0; ok && k < RL_MATH_COUNT_; k++)
			if (m->calib[k] > 0)
				ok = xmlTextWriterStartElement(w, BAD_CAST "rate") >= 0 &&
				     xmlTextWriterWriteAttribute(w, BAD_CAST "op",
				             BAD_CAST rl_math_name((enum rl_math)k)) >= 0 &&
				     rl_w_attr_double(w, "per_core", m->calib[k]) >= 0 &&
				     xmlTextWriterEndElement(w) >= 0;
		ok = ok && xmlTextWriterEndElement(w) >= 0;
	}
	ok = ok && xmlTextWriterStartElement(w, BAD_CAST "memory") >= 0;
	for (int i = 0; ok && i < m->nlevels; i++) {
		const struct rl_mem_level *l = &m->level[i];
		ok = xmlTextWriterStartElement(w, BAD_CAST "level") >= 0 &&
		     xmlTextWriterWriteAttribute(w, BAD_CAST "name", BAD_CAST l->name) >= 0 &&
		     rl_w_attr_double(w, "capacity", l->capacity) >= 0 &&
		     rl_w_attr_double(w, "read_bw", l->read_bw) >= 0 &&
		     rl_w_attr_double(w, "write_bw", l->write_bw) >= 0;
		if (ok && l->core_read_bw > 0)
			ok = rl_w_attr_double(w, "core_read_bw", l->core_read_bw) >= 0 &&
			     rl_w_attr_double(w, "core_write_bw", l->core_write_bw) >= 0;
		if (ok && l->line_bytes)
			ok = xmlTextWriterWriteFormatAttribute(w, BAD_CAST "line_bytes", "%d",
			                                       l->line_bytes) >= 0;
		if (ok && l->ways)
			ok = xmlTextWriterWriteFormatAttribute(w, BAD_CAST "ways", "%d",
			                                       l->ways) >= 0;
		ok = ok && xmlTextWriterEndElement(w) >= 0;
	}
	ok = ok && xmlTextWriterEndElement(w) >= 0 &&
	     xmlTextWriterStartElement(w, BAD_CAST "efficiency") >= 0 &&
	     rl_w_attr_double(w, "contiguous", m->eff_contiguous) >= 0 &&
	     rl_w_attr_double(w, "strided", m->eff_strided) >= 0 &&
	     rl_w_attr_double(w, "gather", m->eff_gather) >= 0 &&
	     xmlTextWriterEndElement(w) >= 0 &&
	     xmlTextWriterStartElement(w, BAD_CAST "latency") >= 0 &&
	     rl_w_attr_double(w, "launch", m->launch_eager > 0 ? m->launch_eager
	                                                        : m->launch_latency) >= 0 &&
	     (m->launch_graph <= 0 || rl_w_attr_double(w, "graph", m->launch_graph) >= 0) &&
	     (m->fork_latency <= 0 || rl_w_attr_double(w, "fork", m->fork_latency) >= 0) &&
	     xmlTextWriterEndElement(w) >= 0 &&
	     xmlTextWriterStartElement(w, BAD_CAST "features") >= 0 &&
	     xmlTextWriterWriteAttribute(w, BAD_CAST "sparse24",
	             BAD_CAST(m->has_sparse24 ? "true" : "false")) >= 0 &&
	     xmlTextWriterEndElement(w) >= 0 &&
	     xmlTextWriterEndElement(w) >= 0 && /* machine */
	     xmlTextWriterEndDocument(w) >= 0;
	return ok;
}

enum rl_status rl_machine_write(const struct rl_machine *m, const char *path,
                                const char *comment, char *err, size_t errlen)
{
	if (!path || !*path)
		return rl_fail_st(RL_ERR_IO, err, errlen, "machine", 0, "no output path");
	/* never write what the loader would refuse */
	if (!rl_check_lines(m, NULL, path, err, errlen))
		return RL_ERR_INVALID;

	xmlBuffer *buf = xmlBufferCreate();
	if (!buf)
		return rl_fail_st(RL_ERR_NOMEM, err, errlen, path, 0, "out of memory");
	xmlTextWriter *w = xmlNewTextWriterMemory(buf, 0);
	if (!w) {
		xmlBufferFree(buf);
		return rl_fail_st(RL_ERR_NOMEM, err, errlen, path, 0, "out of memory");
	}
	bool ok = rl_write_doc(w, m, comment);
	xmlFreeTextWriter(w); /* flushes into buf */
	if (!ok) {
		xmlBufferFree(buf);
		return rl_fail_st(RL_ERR_IO, err, errlen, path, 0, "XML writer failed");
	}

	/* all or nothing: a temporary file beside the target, renamed over it */
	char werr[512];
	enum rl_status st = rl_write_file_atomic(path, xmlBufferContent(buf),
	                                         (size_t)xmlBufferLength(buf), werr, sizeof(werr));
	xmlBufferFree(buf);
	if (st != RL_OK)
		snprintf(err, errlen, "%s", werr);
	return st;
}
