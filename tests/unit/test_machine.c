/*
 * test_machine.c - machine profiles (frontends/machine/machine.c).
 *
 * Every shipped profile must load and validate; the balance the roofline is
 * drawn from must equal hand arithmetic on the numbers in the file; every
 * kind of bad profile (malformed, schema-invalid, absurd) must be refused
 * with a message naming the file and the line; write-then-load must be exact.
 *
 * Paths come from RL_SOURCE_DIR, never the working directory, and scratch
 * files go to a fresh mkdtemp directory per test. The probe is not run here:
 * it takes seconds and its numbers depend on the machine.
 */
#include <criterion/criterion.h>

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "machine.h"

#ifndef RL_SOURCE_DIR
#error "RL_SOURCE_DIR must name the source root"
#endif

#define HW_DIR RL_SOURCE_DIR "/hw"

static const char *const shipped[] = {
	"a100", "epyc9654", "generic-cpu", "h100", "h200",
	"laptop-i7-1360p", "mi300x", "rtx4090",
};
#define NSHIPPED (sizeof shipped / sizeof shipped[0])

static char tmpdir[512];

static void setup(void)
{
	/* the shipped profiles of this tree, whatever the caller's env says */
	setenv("RLOPT_HW_DIR", HW_DIR, 1);
	const char *t = getenv("TMPDIR");
	snprintf(tmpdir, sizeof tmpdir, "%s/rlopt-test-machine-XXXXXX",
	         t && *t ? t : "/tmp");
	cr_assert_not_null(mkdtemp(tmpdir), "mkdtemp failed");
	/* no host profile unless a test makes one */
	char host[600];
	snprintf(host, sizeof host, "%s/host.xml", tmpdir);
	setenv("RLOPT_HOST_PROFILE", host, 1);
}

static void teardown(void)
{
	DIR *d = opendir(tmpdir);
	if (!d)
		return;
	struct dirent *de;
	while ((de = readdir(d))) {
		if (de->d_name[0] == '.')
			continue;
		char p[1024];
		snprintf(p, sizeof p, "%s/%s", tmpdir, de->d_name);
		unlink(p);
	}
	closedir(d);
	rmdir(tmpdir);
}

TestSuite(machine, .init = setup, .fini = teardown);

/* ---- helpers ------------------------------------------------------------ */

static char *slurp(const char *path)
{
	FILE *f = fopen(path, "rb");
	cr_assert_not_null(f, "cannot open %s", path);
	fseek(f, 0, SEEK_END);
	long n = ftell(f);
	fseek(f, 0, SEEK_SET);
	char *s = malloc((size_t)n + 1);
	cr_assert_not_null(s);
	cr_assert_eq(fread(s, 1, (size_t)n, f), (size_t)n);
	s[n] = '\0';
	fclose(f);
	return s;
}

static char *shipped_text(const char *name)
{
	char p[600];
	snprintf(p, sizeof p, "%s/%s.xml", HW_DIR, name);
	return slurp(p);
}

/* text with the first `old` replaced by `new`; old must occur */
static char *replace(const char *text, const char *old, const char *new)
{
	const char *at = strstr(text, old);
	cr_assert_not_null(at, "'%s' not in the profile text", old);
	size_t pre = (size_t)(at - text), ol = strlen(old), nl = strlen(new);
	char *s = malloc(strlen(text) - ol + nl + 1);
	cr_assert_not_null(s);
	memcpy(s, text, pre);
	memcpy(s + pre, new, nl);
	strcpy(s + pre + nl, at + ol);
	return s;
}

/* text with everything from `from` up to and including `to` cut out */
static char *cut(const char *text, const char *from, const char *to)
{
	const char *a = strstr(text, from);
	cr_assert_not_null(a, "'%s' not in the profile text", from);
	const char *b = strstr(a, to);
	cr_assert_not_null(b, "'%s' not in the profile text", to);
	b += strlen(to);
	char *s = malloc(strlen(text) + 1);
	cr_assert_not_null(s);
	memcpy(s, text, (size_t)(a - text));
	strcpy(s + (a - text), b);
	return s;
}

/* 1-based line of the first occurrence of needle */
static int line_of(const char *text, const char *needle)
{
	const char *at = strstr(text, needle);
	cr_assert_not_null(at, "'%s' not in the text", needle);
	int line = 1;
	for (const char *c = text; c < at; c++)
		line += *c == '\n';
	return line;
}

static void tmp_path(char *buf, size_t len, const char *name)
{
	snprintf(buf, len, "%s/%s", tmpdir, name);
}

static void write_file(const char *path, const char *text)
{
	FILE *f = fopen(path, "wb");
	cr_assert_not_null(f, "cannot create %s", path);
	fputs(text, f);
	fclose(f);
}

/* Load text saved as name; expect failure; return the message. */
static const char *load_bad(const char *name, const char *text)
{
	static char err[1024];
	char path[600];
	tmp_path(path, sizeof path, name);
	write_file(path, text);
	struct rl_machine m;
	err[0] = '\0';
	cr_assert(rl_machine_load(path, &m, err, sizeof err) != RL_OK,
	              "%s loaded but should not have", name);
	cr_assert(strchr(err, '\n') == NULL, "message is not one line: %s", err);
	return err;
}

/* err has "NAME:<digits>:" somewhere (the path before NAME may vary) */
static bool has_file_line(const char *err, const char *name)
{
	for (const char *at = strstr(err, name); at; at = strstr(at + 1, name)) {
		const char *c = at + strlen(name);
		if (*c++ != ':')
			continue;
		const char *d = c;
		while (*c >= '0' && *c <= '9')
			c++;
		if (c > d && *c == ':')
			return true;
	}
	return false;
}

/* err has "NAME:LINE:" exactly */
static bool has_exact_line(const char *err, const char *name, int line)
{
	char want[256];
	snprintf(want, sizeof want, "%s:%d:", name, line);
	return strstr(err, want) != NULL;
}

static void assert_same(const struct rl_machine *a, const struct rl_machine *b)
{
	cr_assert_str_eq(a->name, b->name);
	cr_assert_str_eq(a->desc, b->desc);
	cr_assert_str_eq(a->kind, b->kind);
	cr_assert_eq(a->cores, b->cores);
	for (int p = 0; p < RL_PREC_COUNT_; p++) {
		cr_assert(a->peak_vector[p] == b->peak_vector[p], "%s vector %.17g != %.17g",
		          rl_prec_name(p), a->peak_vector[p], b->peak_vector[p]);
		cr_assert(a->peak_matrix[p] == b->peak_matrix[p], "%s matrix %.17g != %.17g",
		          rl_prec_name(p), a->peak_matrix[p], b->peak_matrix[p]);
	}
	cr_assert_eq(a->nlevels, b->nlevels);
	for (int i = 0; i < a->nlevels; i++) {
		cr_assert_str_eq(a->level[i].name, b->level[i].name);
		cr_assert(a->level[i].capacity == b->level[i].capacity);
		cr_assert(a->level[i].read_bw == b->level[i].read_bw);
		cr_assert(a->level[i].write_bw == b->level[i].write_bw);
		cr_assert(a->level[i].core_read_bw == b->level[i].core_read_bw);
		cr_assert(a->level[i].core_write_bw == b->level[i].core_write_bw);
		cr_assert_eq(a->level[i].line_bytes, b->level[i].line_bytes);
		cr_assert_eq(a->level[i].ways, b->level[i].ways);
	}
	cr_assert_eq(a->simd_bits, b->simd_bits);
	cr_assert_eq(a->simd_registers, b->simd_registers);
	cr_assert_eq(a->fma_units, b->fma_units);
	cr_assert_eq(a->fma_latency, b->fma_latency);
	for (int k = 0; k < RL_MATH_COUNT_; k++)
		cr_assert(a->calib[k] == b->calib[k], "rate %s %.17g != %.17g",
		          rl_math_name((enum rl_math)k), a->calib[k], b->calib[k]);
	cr_assert(a->eff_contiguous == b->eff_contiguous);
	cr_assert(a->eff_strided == b->eff_strided);
	cr_assert(a->eff_gather == b->eff_gather);
	cr_assert(a->launch_latency == b->launch_latency);
	cr_assert(a->launch_eager == b->launch_eager);
	cr_assert(a->launch_graph == b->launch_graph);
	cr_assert_eq(a->launch_mode, b->launch_mode);
	cr_assert_eq(a->has_sparse24, b->has_sparse24);
	for (int k = 0; k < RL_MATH_COUNT_; k++)
		cr_assert(a->calib[k] == b->calib[k], "%s %.17g != %.17g",
		          rl_math_name((enum rl_math)k), a->calib[k], b->calib[k]);
	cr_assert_str_eq(a->calib_cc, b->calib_cc);
}

static bool rel_eq(double a, double b)
{
	double d = a - b;
	if (d < 0)
		d = -d;
	return d <= 1e-12 * (b < 0 ? -b : b);
}

/* ---- shipped profiles --------------------------------------------------- */

Test(machine, every_shipped_profile_loads)
{
	char err[1024];
	for (size_t i = 0; i < NSHIPPED; i++) {
		struct rl_machine m;
		cr_assert(rl_machine_load(shipped[i], &m, err, sizeof err) == RL_OK, "%s: %s",
		          shipped[i], err);
		cr_assert_str_eq(m.name, shipped[i]);
		cr_assert(strcmp(m.kind, "gpu") == 0 || strcmp(m.kind, "cpu") == 0);
		cr_assert_gt(m.nlevels, 0);
		cr_assert_gt(rl_machine_peak(&m, RL_PREC_FP32, true), 0);
		cr_assert_gt(rl_machine_balance(&m, RL_PREC_FP32), 0);
		cr_assert(strstr(m.source, shipped[i]) != NULL);
		cr_assert(rl_machine_check(&m, err, sizeof err) == RL_OK, "%s", err);
	}
	/* and nothing in hw/ that is not in the list above fails either */
	DIR *d = opendir(HW_DIR);
	cr_assert_not_null(d);
	struct dirent *de;
	int n = 0;
	while ((de = readdir(d))) {
		size_t len = strlen(de->d_name);
		if (len < 5 || strcmp(de->d_name + len - 4, ".xml") != 0)
			continue;
		char path[600];
		snprintf(path, sizeof path, "%s/%s", HW_DIR, de->d_name);
		struct rl_machine m;
		cr_assert(rl_machine_load(path, &m, err, sizeof err) == RL_OK, "%s", err);
		n++;
	}
	closedir(d);
	cr_assert_geq(n, (int)NSHIPPED);
}

Test(machine, h200_numbers_and_balance)
{
	char err[1024];
	struct rl_machine m;
	cr_assert(rl_machine_load("h200", &m, err, sizeof err) == RL_OK, "%s", err);
	cr_assert_str_eq(m.kind, "gpu");
	cr_assert_eq(m.cores, 132);
	cr_assert_eq(m.nlevels, 3);
	cr_assert_str_eq(rl_machine_dram(&m)->name, "HBM3e");
	cr_assert(rl_machine_dram(&m)->capacity == 141e9);
	cr_assert(rl_machine_dram(&m)->read_bw == 4.8e12);
	cr_assert(m.has_sparse24);

	/* fp32: no matrix unit, the vector rate 66.9 TFLOP/s over 4.8 TB/s */
	cr_assert(rel_eq(rl_machine_balance(&m, RL_PREC_FP32), 66.9e12 / 4.8e12),
	          "fp32 balance %.17g", rl_machine_balance(&m, RL_PREC_FP32));
	cr_assert(rel_eq(rl_machine_balance(&m, RL_PREC_FP32), 13.9375));
	/* bf16: the tensor cores' 989.4 TFLOP/s dense over 4.8 TB/s */
	cr_assert(rel_eq(rl_machine_balance(&m, RL_PREC_BF16), 989.4e12 / 4.8e12),
	          "bf16 balance %.17g", rl_machine_balance(&m, RL_PREC_BF16));
	cr_assert(rel_eq(rl_machine_balance(&m, RL_PREC_BF16), 206.125));

	/* peak: matrix only when asked, best of the two when asked */
	cr_assert(rl_machine_peak(&m, RL_PREC_BF16, false) == 133.8e12);
	cr_assert(rl_machine_peak(&m, RL_PREC_BF16, true) == 989.4e12);
	cr_assert(rl_machine_peak(&m, RL_PREC_TF32, false) == 0);
	cr_assert(rl_machine_peak(&m, RL_PREC_TF32, true) == 494.7e12);
	cr_assert(rl_machine_peak(&m, RL_PREC_INT4, true) == 0);
	cr_assert(rl_machine_peak(&m, RL_PREC_COUNT_, true) == 0);
}

Test(machine, cpu_balance)
{
	char err[1024];
	struct rl_machine m;
	cr_assert(rl_machine_load("epyc9654", &m, err, sizeof err) == RL_OK, "%s", err);
	/* 96 cores x 32 FLOP/clk x 2.4 GHz over 12 x 4800 MT/s x 8 B */
	cr_assert(rel_eq(rl_machine_balance(&m, RL_PREC_FP32), 7.3728e12 / 460.8e9));
	cr_assert(rel_eq(rl_machine_balance(&m, RL_PREC_FP32), 16.0));
	cr_assert(!m.has_sparse24);
	cr_assert(rl_machine_peak(&m, RL_PREC_FP16, true) == 0);
}

Test(machine, prec_names)
{
	for (int p = 0; p < RL_PREC_COUNT_; p++) {
		enum rl_prec q;
		cr_assert(rl_prec_from_name(rl_prec_name(p), &q));
		cr_assert_eq(q, p);
	}
	cr_assert_str_eq(rl_prec_name(RL_PREC_FP32), "fp32");
	cr_assert_str_eq(rl_prec_name(RL_PREC_BF16), "bf16");
	enum rl_prec q;
	cr_assert_not(rl_prec_from_name("fp7", &q));
	cr_assert_not(rl_prec_from_name(NULL, &q));
}

Test(machine, hw_dir_from_env)
{
	cr_assert_str_eq(rl_machine_hw_dir(), HW_DIR);
	setenv("RLOPT_HW_DIR", tmpdir, 1);
	cr_assert_str_eq(rl_machine_hw_dir(), tmpdir);
}

Test(machine, list_names_every_profile)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	cr_assert_not_null(f);
	rl_machine_list(f);
	fclose(f);
	for (size_t i = 0; i < NSHIPPED; i++)
		cr_assert(strstr(buf, shipped[i]) != NULL, "%s missing from:\n%s",
		          shipped[i], buf);
	cr_assert(strstr(buf, "NVIDIA H200") != NULL);
	cr_assert(strstr(buf, "invalid") == NULL, "%s", buf);
	/* sorted */
	cr_assert_lt(strstr(buf, "a100"), strstr(buf, "epyc9654"));
	cr_assert_lt(strstr(buf, "h100"), strstr(buf, "h200"));
	cr_assert_lt(strstr(buf, "mi300x"), strstr(buf, "rtx4090"));
	free(buf);
}

/* ---- names, paths, host ------------------------------------------------- */

Test(machine, unknown_name_lists_known_names)
{
	char err[1024];
	struct rl_machine m;
	cr_assert(rl_machine_load("h300", &m, err, sizeof err) != RL_OK);
	cr_assert(strstr(err, "h300") != NULL, "%s", err);
	for (size_t i = 0; i < NSHIPPED; i++)
		cr_assert(strstr(err, shipped[i]) != NULL, "%s not in: %s", shipped[i], err);
	/* in order, so a user can scan it */
	cr_assert_lt(strstr(err, "a100"), strstr(err, "generic-cpu"));
	cr_assert_lt(strstr(err, "generic-cpu"), strstr(err, "h100"));
	cr_assert_lt(strstr(err, "h200"), strstr(err, "rtx4090"));
	cr_assert(strchr(err, '\n') == NULL);
}

Test(machine, empty_spec_and_missing_path)
{
	char err[1024];
	struct rl_machine m;
	cr_assert(rl_machine_load("", &m, err, sizeof err) != RL_OK);
	cr_assert(rl_machine_load(NULL, &m, err, sizeof err) != RL_OK);
	char path[600];
	tmp_path(path, sizeof path, "nope.xml");
	cr_assert(rl_machine_load(path, &m, err, sizeof err) != RL_OK);
	cr_assert(strstr(err, "nope.xml") != NULL, "%s", err);
	/* a name with a slash is a path, not a lookup in hw/ */
	cr_assert(rl_machine_load("hw/h200", &m, err, sizeof err) != RL_OK);
	cr_assert(strstr(err, "hw/h200") != NULL, "%s", err);
}

Test(machine, load_by_path)
{
	char err[1024], path[600];
	struct rl_machine a, b;
	snprintf(path, sizeof path, "%s/a100.xml", HW_DIR);
	cr_assert(rl_machine_load(path, &a, err, sizeof err) == RL_OK, "%s", err);
	cr_assert(rl_machine_load("a100", &b, err, sizeof err) == RL_OK, "%s", err);
	assert_same(&a, &b);
}

Test(machine, host_profile)
{
	char err[1024], host[600];
	struct rl_machine m;
	cr_assert(rl_machine_host_path(host, sizeof host));
	cr_assert(strstr(host, tmpdir) == host);
	/* none yet: the default is the generic CPU, and "host" says how to
	 * make one */
	cr_assert_str_eq(rl_machine_default(), "generic-cpu");
	cr_assert(rl_machine_load("host", &m, err, sizeof err) != RL_OK);
	cr_assert(strstr(err, "rlopt probe") != NULL, "%s", err);

	cr_assert(rl_machine_load("generic-cpu", &m, err, sizeof err) == RL_OK, "%s", err);
	snprintf(m.name, sizeof m.name, "host");
	cr_assert(rl_machine_write(&m, host, "measured: not really", err, sizeof err) == RL_OK,
	          "%s", err);
	cr_assert_str_eq(rl_machine_default(), "host");
	struct rl_machine h;
	cr_assert(rl_machine_load("host", &h, err, sizeof err) == RL_OK, "%s", err);
	cr_assert_str_eq(h.name, "host");

	/* without RLOPT_HOST_PROFILE it lives under $HOME */
	unsetenv("RLOPT_HOST_PROFILE");
	setenv("HOME", tmpdir, 1);
	cr_assert(rl_machine_host_path(host, sizeof host));
	char want[700];
	snprintf(want, sizeof want, "%s/.config/rlopt/host.xml", tmpdir);
	cr_assert_str_eq(host, want);
	cr_assert_str_eq(rl_machine_default(), "generic-cpu");
}

/* ---- malformed XML ------------------------------------------------------ */

Test(machine, malformed_xml)
{
	const char *err = load_bad("bad.xml",
	                           "<?xml version=\"1.0\"?>\n"
	                           "<machine name=\"x\" kind=\"cpu\" cores=\"1\">\n"
	                           "  <compute>\n"
	                           "</machine>\n");
	cr_assert(has_file_line(err, "bad.xml"), "%s", err);
	cr_assert(has_exact_line(err, "bad.xml", 4), "%s", err);
}

Test(machine, truncated_and_empty)
{
	char h200[600];
	snprintf(h200, sizeof h200, "%s/h200.xml", HW_DIR);
	char *text = slurp(h200);
	text[strlen(text) / 2] = '\0';
	const char *err = load_bad("trunc.xml", text);
	cr_assert(has_file_line(err, "trunc.xml"), "%s", err);
	free(text);

	err = load_bad("empty.xml", "");
	cr_assert(has_file_line(err, "empty.xml"), "%s", err);

	err = load_bad("junk.xml", "\x01\x02 not xml at all");
	cr_assert(has_file_line(err, "junk.xml"), "%s", err);
}

Test(machine, doctype_refused)
{
	const char *err = load_bad("dtd.xml",
	                           "<?xml version=\"1.0\"?>\n"
	                           "<!DOCTYPE machine [<!ENTITY big \"x\">]>\n"
	                           "<machine name=\"&big;\" kind=\"cpu\" cores=\"1\"/>\n");
	cr_assert(has_file_line(err, "dtd.xml"), "%s", err);
	cr_assert(strstr(err, "DOCTYPE") != NULL, "%s", err);
}

/* The status says which kind of failure it was (ir/ir.h, "Errors"): not
 * found, not XML, not a valid profile. */
Test(machine, status_names_the_kind_of_failure)
{
	char err[1024], path[600];
	struct rl_machine m;
	tmp_path(path, sizeof path, "absent.xml");
	cr_assert_eq(rl_machine_load(path, &m, err, sizeof err), RL_ERR_IO, "%s", err);
	cr_assert_eq(rl_machine_load("h300", &m, err, sizeof err), RL_ERR_IO, "%s", err);
	tmp_path(path, sizeof path, "notxml.xml");
	write_file(path, "<machine name=\"x\"");
	cr_assert_eq(rl_machine_load(path, &m, err, sizeof err), RL_ERR_PARSE, "%s", err);
	char *text = shipped_text("h200");
	char *bad = cut(text, "  <memory>", "</memory>\n");
	tmp_path(path, sizeof path, "invalid.xml");
	write_file(path, bad);
	cr_assert_eq(rl_machine_load(path, &m, err, sizeof err), RL_ERR_INVALID, "%s", err);
	free(bad);
	free(text);
	cr_assert_eq(rl_machine_load("h200", &m, err, sizeof err), RL_OK, "%s", err);
	m.level[m.nlevels - 1].read_bw = -1;
	cr_assert_eq(rl_machine_check(&m, err, sizeof err), RL_ERR_INVALID);
	tmp_path(path, sizeof path, "refused.xml");
	cr_assert_eq(rl_machine_write(&m, path, NULL, err, sizeof err), RL_ERR_INVALID);
}

/* ---- schema-invalid ----------------------------------------------------- */

Test(machine, schema_missing_memory)
{
	char *text = shipped_text("h200");
	char *bad = cut(text, "  <memory>", "</memory>\n");
	const char *err = load_bad("nomem.xml", bad);
	cr_assert(has_file_line(err, "nomem.xml"), "%s", err);
	cr_assert(strstr(err, "memory") != NULL, "%s", err);
	/* the validator stops at the element after the gap */
	cr_assert(has_exact_line(err, "nomem.xml", line_of(bad, "<efficiency")), "%s", err);
	free(bad);
	free(text);
}

Test(machine, schema_negative_bandwidth)
{
	char *text = shipped_text("h200");
	char *bad = replace(text, "read_bw=\"4.8e12\"", "read_bw=\"-4.8e12\"");
	const char *err = load_bad("neg.xml", bad);
	cr_assert(has_exact_line(err, "neg.xml", line_of(bad, "-4.8e12")), "%s", err);
	cr_assert(strstr(err, "read_bw") != NULL, "%s", err);
	free(bad);
	free(text);
}

Test(machine, schema_unknown_precision)
{
	char *text = shipped_text("h200");
	char *bad = replace(text, "precision=\"fp8\"", "precision=\"fp7\"");
	const char *err = load_bad("prec.xml", bad);
	cr_assert(has_exact_line(err, "prec.xml", line_of(bad, "fp7")), "%s", err);
	cr_assert(strstr(err, "fp7") != NULL, "%s", err);
	free(bad);
	free(text);
}

Test(machine, schema_duplicate_peak_and_bad_efficiency)
{
	char *text = shipped_text("a100");
	char *bad = replace(text, "precision=\"fp64\" unit=\"matrix\"",
	                    "precision=\"fp64\" unit=\"vector\"");
	const char *err = load_bad("dup.xml", bad);
	cr_assert(has_file_line(err, "dup.xml"), "%s", err);
	free(bad);

	bad = replace(text, "strided=\"0.35\"", "strided=\"1.5\"");
	err = load_bad("eff.xml", bad);
	cr_assert(has_exact_line(err, "eff.xml", line_of(bad, "strided=\"1.5\"")), "%s", err);
	free(bad);
	free(text);
}

/* ---- absurd numbers (valid xs:double, not a machine) -------------------- */

Test(machine, absurd_bandwidth)
{
	char *text = shipped_text("h200");
	char *bad = replace(text, "read_bw=\"4.8e12\"", "read_bw=\"4.8e17\"");
	const char *err = load_bad("absurd.xml", bad);
	cr_assert(has_exact_line(err, "absurd.xml", line_of(bad, "4.8e17")), "%s", err);
	cr_assert(strstr(err, "read_bw") != NULL, "%s", err);
	free(bad);
	free(text);
}

Test(machine, absurd_peak_capacity_latency_infinity)
{
	char *text = shipped_text("h200");
	struct {
		const char *file, *old, *new;
	} cases[] = {
		{"peak.xml", "flops=\"66.9e12\"", "flops=\"66.9e19\""},
		{"cap.xml", "capacity=\"141e9\"", "capacity=\"141e19\""},
		{"lat.xml", "launch=\"4e-6\"", "launch=\"4\""},
		{"inf.xml", "flops=\"989.4e12\"", "flops=\"INF\""},
		{"wbw.xml", "write_bw=\"6.5e12\"", "write_bw=\"6.5e16\""},
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		char *bad = replace(text, cases[i].old, cases[i].new);
		const char *err = load_bad(cases[i].file, bad);
		cr_assert(has_exact_line(err, cases[i].file, line_of(bad, cases[i].new)),
		          "%s", err);
		free(bad);
	}
	free(text);
}

Test(machine, main_memory_must_be_largest)
{
	char *text = shipped_text("h200");
	char *bad = replace(text, "capacity=\"52428800\"", "capacity=\"1e12\"");
	const char *err = load_bad("order.xml", bad);
	cr_assert(has_exact_line(err, "order.xml", line_of(bad, "capacity=\"1e12\"")), "%s", err);
	cr_assert(strstr(err, "HBM3e") != NULL, "%s", err);
	free(bad);
	free(text);
}

Test(machine, fp32_peak_required)
{
	char *text = shipped_text("generic-cpu");
	char *bad = cut(text, "    <peak precision=\"fp32\"", "/>\n");
	const char *err = load_bad("nofp32.xml", bad);
	cr_assert(has_file_line(err, "nofp32.xml"), "%s", err);
	cr_assert(strstr(err, "fp32") != NULL, "%s", err);
	free(bad);
	free(text);
}

/* ---- writing ------------------------------------------------------------ */

Test(machine, write_then_load_is_exact)
{
	char err[1024], path[600];
	for (size_t i = 0; i < NSHIPPED; i++) {
		struct rl_machine a, b;
		cr_assert(rl_machine_load(shipped[i], &a, err, sizeof err) == RL_OK, "%s", err);
		tmp_path(path, sizeof path, "rt.xml");
		/* comment text XML forbids inside a comment: "--", a trailing '-' */
		cr_assert(rl_machine_write(&a, path, "line one -- with dashes\nline two-",
		                           err, sizeof err) == RL_OK, "%s", err);
		cr_assert(rl_machine_load(path, &b, err, sizeof err) == RL_OK, "%s: %s", shipped[i], err);
		assert_same(&a, &b);
		cr_assert_str_eq(b.source, path);
	}
}

Test(machine, write_odd_values_round_trip)
{
	char err[1024], path[600];
	struct rl_machine a, b;
	cr_assert(rl_machine_load("generic-cpu", &a, err, sizeof err) == RL_OK, "%s", err);
	/* measured numbers have all 17 digits */
	a.peak_vector[RL_PREC_FP32] = 19096480202.8014;
	a.level[0].read_bw = 1.0 / 3.0 * 1e11;
	a.eff_gather = 0.0035890303091172747;
	a.launch_latency = a.launch_eager = 1.4385575000005702e-8;
	a.cores = 2;
	snprintf(a.desc, sizeof a.desc, "quotes \" and <angles> & ampersands");
	tmp_path(path, sizeof path, "odd.xml");
	cr_assert(rl_machine_write(&a, path, NULL, err, sizeof err) == RL_OK, "%s", err);
	cr_assert(rl_machine_load(path, &b, err, sizeof err) == RL_OK, "%s", err);
	assert_same(&a, &b);
}

Test(machine, write_refuses_invalid_and_leaves_nothing)
{
	char err[1024], path[600];
	struct rl_machine m;
	cr_assert(rl_machine_load("h100", &m, err, sizeof err) == RL_OK, "%s", err);
	tmp_path(path, sizeof path, "invalid.xml");

	struct rl_machine bad = m;
	bad.nlevels = 0;
	cr_assert(rl_machine_write(&bad, path, NULL, err, sizeof err) != RL_OK);
	cr_assert(strstr(err, "invalid.xml") != NULL, "%s", err);

	bad = m;
	bad.eff_strided = 0;
	cr_assert(rl_machine_write(&bad, path, NULL, err, sizeof err) != RL_OK);
	cr_assert(rl_machine_check(&bad, err, sizeof err) != RL_OK);

	bad = m;
	snprintf(bad.name, sizeof bad.name, "has space");
	cr_assert(rl_machine_write(&bad, path, NULL, err, sizeof err) != RL_OK);

	struct stat st;
	cr_assert_neq(stat(path, &st), 0, "a refused write left %s behind", path);

	/* an unwritable place: a message, and no temporary file */
	char deep[700];
	snprintf(deep, sizeof deep, "%s/no/such/dir/x.xml", tmpdir);
	cr_assert(rl_machine_write(&m, deep, NULL, err, sizeof err) != RL_OK);
	cr_assert(strstr(err, "x.xml") != NULL, "%s", err);

	DIR *d = opendir(tmpdir);
	cr_assert_not_null(d);
	struct dirent *de;
	while ((de = readdir(d)))
		cr_assert(de->d_name[0] == '.', "left behind: %s", de->d_name);
	closedir(d);
}

Test(machine, write_replaces_existing_file)
{
	char err[1024], path[600];
	struct rl_machine a, b;
	tmp_path(path, sizeof path, "same.xml");
	write_file(path, "old contents");
	cr_assert(rl_machine_load("mi300x", &a, err, sizeof err) == RL_OK, "%s", err);
	cr_assert(rl_machine_write(&a, path, "replaced", err, sizeof err) == RL_OK, "%s", err);
	cr_assert(rl_machine_load(path, &b, err, sizeof err) == RL_OK, "%s", err);
	assert_same(&a, &b);
}

/* ---- the tiler's geometry (<simd>, line_bytes, ways) -------------------- */

Test(machine, simd_and_cache_geometry)
{
	char err[1024];
	struct rl_machine m;
	cr_assert(rl_machine_load("epyc9654", &m, err, sizeof err) == RL_OK, "%s", err);
	cr_assert_eq(m.simd_bits, 512);
	cr_assert_eq(m.simd_registers, 32);
	cr_assert_eq(m.fma_units, 2);
	cr_assert_eq(m.fma_latency, 4);
	cr_assert_eq(m.level[0].line_bytes, 64);
	cr_assert_eq(m.level[0].ways, 8);
	cr_assert_eq(m.level[1].ways, 8);
	cr_assert_eq(m.level[2].ways, 16);
	cr_assert_eq(m.level[3].line_bytes, 0, "DRAM has no line in the profile");
	cr_assert_eq(m.level[3].ways, 0);
	cr_assert(rl_machine_load("generic-cpu", &m, err, sizeof err) == RL_OK, "%s", err);
	cr_assert_eq(m.simd_bits, 256);
	cr_assert_eq(m.simd_registers, 16);
	/* GPU profiles and older hand-written ones leave them out: zero */
	cr_assert(rl_machine_load("h200", &m, err, sizeof err) == RL_OK, "%s", err);
	cr_assert_eq(m.simd_bits + m.simd_registers + m.fma_units + m.fma_latency, 0);
	for (int i = 0; i < m.nlevels; i++)
		cr_assert_eq(m.level[i].line_bytes + m.level[i].ways, 0);
}

Test(machine, geometry_missing_loads_as_zero)
{
	char *text = shipped_text("epyc9654");
	char *a = cut(text, "  <simd ", "/>\n");
	char *b = replace(a, " line_bytes=\"64\" ways=\"8\"/>", "/>");
	char path[600], err[1024];
	tmp_path(path, sizeof path, "old.xml");
	write_file(path, b);
	struct rl_machine m;
	cr_assert(rl_machine_load(path, &m, err, sizeof err) == RL_OK, "%s", err);
	cr_assert_eq(m.simd_bits, 0);
	cr_assert_eq(m.fma_latency, 0);
	cr_assert_eq(m.level[0].ways, 0);
	cr_assert_eq(m.level[0].line_bytes, 0);
	cr_assert_eq(m.level[1].ways, 8);
	free(b);
	free(a);
	free(text);
}

Test(machine, geometry_contradictions_name_file_and_line)
{
	char *text = shipped_text("epyc9654");
	struct {
		const char *file, *old, *new, *says;
	} cases[] = {
		/* zero: the schema's positiveInteger */
		{"ways0.xml", "line_bytes=\"64\" ways=\"8\"", "line_bytes=\"64\" ways=\"0\"", "xsd"},
		{"simd0.xml", "width_bits=\"512\"", "width_bits=\"0\"", "xsd"},
		/* not a power of two */
		{"line48.xml", "line_bytes=\"64\" ways=\"8\"", "line_bytes=\"48\" ways=\"8\"",
		 "power of two"},
		/* a set larger than the whole level */
		{"set.xml", "line_bytes=\"64\" ways=\"8\"", "line_bytes=\"1024\" ways=\"64\"",
		 "exceed a core's share"},
		{"regs.xml", "registers=\"32\"", "registers=\"2\"", "registers"},
		{"width.xml", "width_bits=\"512\"", "width_bits=\"100\"", "width_bits"},
		{"lat.xml", "fma_latency_cycles=\"4\"", "fma_latency_cycles=\"400\"", "fma_latency"},
		{"frac.xml", "fma_units=\"2\"", "fma_units=\"2.5\"", "xsd"},
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		char *bad = replace(text, cases[i].old, cases[i].new);
		const char *err = load_bad(cases[i].file, bad);
		cr_assert(has_exact_line(err, cases[i].file, line_of(bad, cases[i].new)), "%s", err);
		cr_assert(strstr(err, cases[i].says) != NULL, "%s", err);
		free(bad);
	}
	free(text);
}

/* One core's bandwidth of a level: optional, write defaults to read, written
 * back, never above the chip's (file and line named). */
Test(machine, core_bandwidth)
{
	char *text = shipped_text("epyc9654");
	char *a = replace(text, "<level name=\"DRAM\" capacity=\"824633720832\" read_bw=\"460.8e9\"",
	                  "<level name=\"DRAM\" capacity=\"824633720832\" read_bw=\"460.8e9\" "
	                  "core_read_bw=\"40e9\"");
	char path[600], err[1024];
	tmp_path(path, sizeof path, "core.xml");
	write_file(path, a);
	struct rl_machine m, back;
	cr_assert(rl_machine_load(path, &m, err, sizeof err) == RL_OK, "%s", err);
	cr_assert(m.level[3].core_read_bw == 40e9);
	cr_assert(m.level[3].core_write_bw == 40e9, "write defaults to read");
	cr_assert(m.level[0].core_read_bw == 0 && m.level[0].core_write_bw == 0, "not given: 0");
	tmp_path(path, sizeof path, "core_back.xml");
	cr_assert(rl_machine_write(&m, path, NULL, err, sizeof err) == RL_OK, "%s", err);
	cr_assert(rl_machine_load(path, &back, err, sizeof err) == RL_OK, "%s", err);
	assert_same(&m, &back);
	char *bad = replace(a, "core_read_bw=\"40e9\"", "core_read_bw=\"40e9\" core_write_bw=\"5e12\"");
	const char *e = load_bad("corefast.xml", bad);
	cr_assert(has_exact_line(e, "corefast.xml", line_of(bad, "core_write_bw")), "%s", e);
	cr_assert(strstr(e, "core_read_bw/core_write_bw") != NULL, "%s", e);
	free(bad);
	bad = replace(a, "core_read_bw=\"40e9\"", "core_read_bw=\"-1\"");
	e = load_bad("coreneg.xml", bad);
	cr_assert(strstr(e, "coreneg.xml") != NULL, "%s", e);
	free(bad);
	free(a);
	free(text);
}

/* ---- launch modes ----------------------------------------------------------- */

/* A GPU profile loads priced as the CUDA backend runs (graph replay); eager
 * mode restores the launch figure; a CPU profile has no graph mode. */
Test(machine, launch_modes)
{
	char err[1024], note[200];
	struct rl_machine g, c;
	cr_assert(rl_machine_load("h200", &g, err, sizeof err) == RL_OK, "%s", err);
	cr_assert_eq(g.launch_mode, RL_LAUNCH_GRAPH);
	cr_assert(g.launch_eager == 4e-6 && g.launch_graph == 0.81e-6, "%g %g", g.launch_eager,
	          g.launch_graph);
	cr_assert(g.launch_latency == 0.81e-6);
	rl_machine_launch_note(&g, note, sizeof note);
	cr_assert(strstr(note, "graph replay") && strstr(note, "eager launch 4 us"), "%s", note);
	cr_assert(rl_machine_set_launch(&g, RL_LAUNCH_EAGER));
	cr_assert(g.launch_latency == 4e-6);
	rl_machine_launch_note(&g, note, sizeof note);
	cr_assert(strstr(note, "eager launches, 4 us") != NULL, "%s", note);
	cr_assert(rl_machine_set_launch(&g, RL_LAUNCH_GRAPH) && g.launch_latency == 0.81e-6);

	cr_assert(rl_machine_load("epyc9654", &c, err, sizeof err) == RL_OK, "%s", err);
	cr_assert_eq(c.launch_mode, RL_LAUNCH_EAGER);
	cr_assert(c.launch_latency == 2e-8 && c.launch_graph == 0);
	cr_assert_not(rl_machine_set_launch(&c, RL_LAUNCH_GRAPH));
	cr_assert(c.launch_latency == 2e-8 && c.launch_mode == RL_LAUNCH_EAGER);

	/* a GPU profile without the graph figure prices graph mode at eager, and says so */
	char *text = shipped_text("h200");
	char *nog = replace(text, "graph=\"0.81e-6\"", "");
	char path[600];
	tmp_path(path, sizeof path, "nograph.xml");
	write_file(path, nog);
	cr_assert(rl_machine_load(path, &g, err, sizeof err) == RL_OK, "%s", err);
	cr_assert(g.launch_mode == RL_LAUNCH_GRAPH && g.launch_latency == 4e-6);
	rl_machine_launch_note(&g, note, sizeof note);
	cr_assert(strstr(note, "no <latency graph=> figure") != NULL, "%s", note);
	free(nog);
	free(text);
}

Test(machine, launch_contradictions_name_file_and_line)
{
	char *gpu = shipped_text("h200"), *cpu = shipped_text("epyc9654");
	/* replaying a graph dearer than launching eagerly */
	char *bad = replace(gpu, "graph=\"0.81e-6\"", "graph=\"5e-6\"");
	const char *err = load_bad("dear.xml", bad);
	cr_assert(has_exact_line(err, "dear.xml", line_of(bad, "graph=\"5e-6\"")), "%s", err);
	cr_assert(strstr(err, "graph replay latency") != NULL, "%s", err);
	free(bad);
	bad = replace(gpu, "graph=\"0.81e-6\"", "graph=\"0\"");
	err = load_bad("zero.xml", bad);
	cr_assert(strstr(err, "xsd") != NULL, "%s", err);
	free(bad);
	/* a CPU has no graph replay */
	bad = replace(cpu, "launch=\"2e-8\"", "launch=\"2e-8\" graph=\"1e-8\"");
	err = load_bad("cpugraph.xml", bad);
	cr_assert(has_exact_line(err, "cpugraph.xml", line_of(bad, "graph=\"1e-8\"")), "%s", err);
	cr_assert(strstr(err, "cpu profile") != NULL, "%s", err);
	free(bad);
	free(gpu);
	free(cpu);
}

/* ---- calibrated rates ------------------------------------------------------- */

static const char calib_block[] =
	"  <calibration cc=\"cc -O2\">\n"
	"    <rate op=\"basic\" per_core=\"8e9\"/>\n"
	"    <rate op=\"div\" per_core=\"2e9\"/>\n"
	"    <rate op=\"sqrt\" per_core=\"2.5e9\"/>\n"
	"    <rate op=\"exp\" per_core=\"1.5e9\"/>\n"
	"    <rate op=\"log\" per_core=\"1e9\"/>\n"
	"    <rate op=\"tanh\" per_core=\"1.25e9\"/>\n"
	"    <rate op=\"sigmoid\" per_core=\"1.2e9\"/>\n"
	"    <rate op=\"erf\" per_core=\"1.1e9\"/>\n"
	"    <rate op=\"gemm\" per_core=\"9.6e10\"/>\n"
	"    <rate op=\"gather\" per_core=\"7e7\"/>\n"
	"  </calibration>\n"
	"  <memory>";

/* epyc9654 with the block above inserted before <memory>, with one edit */
static char *calibrated_text(const char *old, const char *new)
{
	char *text = shipped_text("epyc9654");
	char *a = replace(text, "  <memory>", calib_block);
	char *b = old ? replace(a, old, new) : a;
	if (b != a)
		free(a);
	free(text);
	return b;
}

Test(machine, calibration_loads_and_round_trips)
{
	char *text = calibrated_text(NULL, NULL);
	char path[600], path2[600], err[1024];
	tmp_path(path, sizeof path, "cal.xml");
	write_file(path, text);
	struct rl_machine m, b;
	cr_assert(rl_machine_load(path, &m, err, sizeof err) == RL_OK, "%s", err);
	cr_assert(rl_machine_calibrated(&m));
	cr_assert(m.calib[RL_MATH_EXP] == 1.5e9);
	cr_assert(m.calib[RL_MATH_GEMM] == 9.6e10);
	cr_assert_str_eq(m.calib_cc, "cc -O2");
	tmp_path(path2, sizeof path2, "cal2.xml");
	cr_assert(rl_machine_write(&m, path2, NULL, err, sizeof err) == RL_OK, "%s", err);
	cr_assert(rl_machine_load(path2, &b, err, sizeof err) == RL_OK, "%s", err);
	assert_same(&m, &b);
	/* shipped profiles carry none: priced from the peak */
	cr_assert(rl_machine_load("epyc9654", &m, err, sizeof err) == RL_OK, "%s", err);
	cr_assert(!rl_machine_calibrated(&m));
	free(text);
}

Test(machine, calibration_optional_classes)
{
	/* matmul_plain and row are optional (profiles probed before they
	 * existed still count as calibrated); when given they load and
	 * round-trip like the others */
	char *text = calibrated_text("    <rate op=\"gather\" per_core=\"7e7\"/>\n",
	                             "    <rate op=\"gather\" per_core=\"7e7\"/>\n"
	                             "    <rate op=\"matmul_plain\" per_core=\"3e10\"/>\n"
	                             "    <rate op=\"row\" per_core=\"2.5e7\"/>\n");
	char path[600], path2[600], err[1024];
	tmp_path(path, sizeof path, "opt.xml");
	write_file(path, text);
	struct rl_machine m, b;
	cr_assert_eq(rl_machine_load(path, &m, err, sizeof err), RL_OK, "%s", err);
	cr_assert(rl_machine_calibrated(&m));
	cr_assert(m.calib[RL_MATH_MMPLAIN] == 3e10);
	cr_assert(m.calib[RL_MATH_ROW] == 2.5e7);
	tmp_path(path2, sizeof path2, "opt2.xml");
	cr_assert_eq(rl_machine_write(&m, path2, NULL, err, sizeof err), RL_OK, "%s", err);
	cr_assert_eq(rl_machine_load(path2, &b, err, sizeof err), RL_OK, "%s", err);
	assert_same(&m, &b);
	free(text);
	text = calibrated_text(NULL, NULL);
	write_file(path, text);
	cr_assert_eq(rl_machine_load(path, &m, err, sizeof err), RL_OK, "%s", err);
	cr_assert(rl_machine_calibrated(&m));
	cr_assert(m.calib[RL_MATH_MMPLAIN] == 0 && m.calib[RL_MATH_ROW] == 0);
	free(text);
}

Test(machine, calibration_partial_is_not_calibrated)
{
	char *text = calibrated_text("    <rate op=\"erf\" per_core=\"1.1e9\"/>\n", "");
	char path[600], err[1024];
	tmp_path(path, sizeof path, "part.xml");
	write_file(path, text);
	struct rl_machine m;
	cr_assert(rl_machine_load(path, &m, err, sizeof err) == RL_OK, "%s", err);
	cr_assert(m.calib[RL_MATH_EXP] == 1.5e9);
	cr_assert(m.calib[RL_MATH_ERF] == 0);
	cr_assert(!rl_machine_calibrated(&m));
	free(text);
}

Test(machine, calibration_bad_rates_name_file_and_line)
{
	struct {
		const char *file, *old, *new, *says;
	} cases[] = {
		{"calop.xml", "op=\"tanh\"", "op=\"tan\"", "not a calibrated class"},
		{"caldup.xml", "op=\"log\" per_core=\"1e9\"", "op=\"exp\" per_core=\"1e9\"",
		 "given twice"},
		{"calzero.xml", "per_core=\"2e9\"", "per_core=\"0\"", "xsd"},
		{"calbig.xml", "per_core=\"2e9\"", "per_core=\"2e19\"", "per_core"},
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		char *bad = calibrated_text(cases[i].old, cases[i].new);
		const char *err = load_bad(cases[i].file, bad);
		cr_assert(has_exact_line(err, cases[i].file, line_of(bad, cases[i].new)), "%s", err);
		cr_assert(strstr(err, cases[i].says) != NULL, "%s", err);
		free(bad);
	}
}
