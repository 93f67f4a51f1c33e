/*
 * rlopt.c - the command line: argument parsing and subcommand dispatch.
 *
 * Everything a library user would need lives in the library; this file only
 * turns flags into calls and statuses into messages and exit codes (see
 * cli.h for the codes).
 */
#include "cli.h"

#include "backends/c/emit.h"
#include "backends/cuda/emit_cuda.h"
#include "backends/report/report.h"
#include "frontends/onnx/onnx.h"
#include "passes/pass.h"

#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static const char usage_text[] =
	"usage: rlopt MODEL.onnx -o OUT.c [options]     generate C (OUT.c, OUT.h)\n"
	"       rlopt MODEL.onnx -o OUT.onnx [options]  write the (optimized) model\n"
	"       rlopt MODEL.onnx -o OUT.cu [options]    generate CUDA (OUT.cu, OUT.h; --hw a GPU,\n"
	"                                 default h200); `rlopt run --target cuda --emulate`\n"
	"                                 runs its kernels on the CPU\n"
	"       rlopt run MODEL.onnx -i IN.pb... -d OUTDIR [options]\n"
	"                                 generate, compile with $CC, run, write OUTDIR/output_K.pb;\n"
	"                                 -i a.pb b.pb or -i a.pb -i b.pb, matched to the inputs by\n"
	"                                 the names inside the files (by position if unnamed)\n"
	"       rlopt report MODEL.onnx [--batch B[,B...]] [-O0|-O1|-O2|--passes P] [--per-node]\n"
	"                    [--format F] [-o FILE]\n"
	"                                 roofline report: per-kernel FLOPs, bytes, bound, time\n"
	"                                 (of the graph the passes make; default: as loaded)\n"
	"       rlopt diff BEFORE.onnx AFTER.onnx [--hw H] [--batch 1,64,1024] [--format text|json]\n"
	"                  [--fail-on-slowdown]  judge a rewrite: FLOPs, bytes, time per batch\n"
	"       rlopt ops                 list the supported ONNX operators\n"
	"       rlopt hw                  list the shipped machine profiles\n"
	"       rlopt probe [-o FILE.xml] [--cc CC] [--cflags FLAGS] [--no-calibrate]\n"
	"                                measure this machine and the code rlopt emits\n"
	"                                on it (compiled `CC FLAGS`, default cc -O2),\n"
	"                                write a profile\n"
	"                                 (default ~/.config/rlopt/host.xml, then the default --hw)\n"
	"       rlopt --help | --version\n"
	"\n"
	"options:\n"
	"  -o FILE               output file (.c, .onnx; report: .txt .json .svg .html)\n"
	"  --report FILE         also write the roofline report of the optimized graph\n"
	"                        (.txt .json .svg .html), with the passes' remarks\n"
	"  --format F            report format: text, json, svg or html\n"
	"  --batch N             bind every batch-like symbolic dim to N\n"
	"                        (report: a list 1,8,64 sweeps the batch)\n"
	"  --shape NAME=DIMS     bind input NAME to DIMS, e.g. --shape x=1x3x224x224\n"
	"  --dim SYM=N           bind the symbolic dim SYM to N\n"
	"  --seq NAME=LEN        sequence input NAME has LEN tensors, inputs NAME.0 ...\n"
	"  --optional NAME       optional input NAME is present (default: absent)\n"
	"  --hw NAME|FILE.xml    machine profile (see `rlopt hw`)\n"
	"  --launch eager|graph  GPU: price (and, for .cu, emit) kernel-by-kernel launches\n"
	"                        or a replayed CUDA graph (default graph)\n"
	"  --weights-max BYTES   embed constants up to this size, else NAME.weights (16 MiB;\n"
	"                        run: 1 MiB, which compiles much faster)\n"
	"  --static              (-o OUT.c) for small targets: no malloc, stdio or threads,\n"
	"                        weights embedded, NAME_run_ws(ws, ...) on the caller's\n"
	"                        NAME_WORKSPACE_BYTES, no large scratch on the stack\n"
	"  -O0 | -O1 | -O2       optimization level (default -O2): -O0 none, -O1 cleanup, -O2 all\n"
	"  --passes a,b,c        run exactly these passes, in this order\n"
	"  --dump-after PASS     print the graph after PASS\n"
	"  --remarks             print every decision the passes took or declined\n"
	"  --factorize           apply low-rank / Tucker-2 factorizations the judge accepts\n"
	"                        (predicted speedup >= 10% and weight error under --max-rel-error)\n"
	"  --max-rel-error E     relative error bound for --factorize and --quantize (default 1e-2)\n"
	"  --quantize none|int8|int4|auto|int8-channel|int4-mixed\n"
	"                        int8/int4 weights for MatMul/Gemm within --max-rel-error;\n"
	"                        int8: blocks of --block; int8-channel: one scale per\n"
	"                        channel; int4-mixed: int4, but a product that makes a model\n"
	"                        output (the LM head) int8 in blocks; auto: only\n"
	"                        memory-bound nodes, narrowest scheme (default none)\n"
	"  --block 32|64|128     codes per scale along K for blocked schemes (default 32)\n"
	"  --scale-type f16|f32  quantization scales stored as float16 or float32 (default\n"
	"                        f16: int4 in blocks of 32 is 0.5625 bytes a weight, not 0.625)\n"
	"  --value NAME=FILE.pb  (-o OUT.c, run) bind input NAME to that tensor's data: shapes\n"
	"                        it decides are fixed; NAME_run returns -2 if a run passes other\n"
	"                        data (run also binds, by itself, an integer input of at most 64\n"
	"                        elements that decides a shape, and says so)\n"
	"  --calibrate IN.pb[,IN.pb...]  inputs the quantization error is measured on\n"
	"                        (default: seeded random rows)\n"
	"  --onnx-format qdq|matmulnbits  quantized weights in -o OUT.onnx: DequantizeLinear\n"
	"                        (opset 21) or com.microsoft MatMulNBits (default qdq)\n"
	"  --threads N           (run) threads the generated code uses (default: online cores);\n"
	"                        (report, diff, --report) price the run on N of the profile's cores\n"
	"  --cc CC               (run) compiler (default $CC, else cc); -v prints the command\n"
	"  --cflags 'FLAGS'      (run) extra compiler flags, after -std=c11 -O2 (no shell)\n"
	"  --timeout S           (run) limit on compile and run time in seconds (default 600)\n"
	"  --keep                (run) keep the temporary build folder\n"
	"  --target c|cuda       backend (default: from -o's extension; run: c)\n"
	"  --emulate             (run --target cuda) build the .cu with $CXX or g++ and run every\n"
	"                        kernel on the CPU (default: nvcc and the GPU)\n"
	"  --cuda-library cublas|none  (.cu, run --target cuda) cublas: plain float32/float16/\n"
	"                        bfloat16 MatMul and Gemm call cuBLAS in the captured graph (link\n"
	"                        -lcublas; emulation runs rlopt's kernel); none: rlopt's (default)\n"
	"  -v                    verbose\n"
	"\n"
	"exit codes: 0 success, 1 usage error, 2 bad or unsupported input,\n"
	"            3 diff found a slowdown (--fail-on-slowdown),\n"
	"            4 the generated program failed to compile, crashed or timed out (run)\n";

static void usage_error(const char *fmt, const char *arg)
{
	fprintf(stderr, "rlopt: ");
	fprintf(stderr, fmt, arg);
	fprintf(stderr, "\nTry 'rlopt --help'.\n");
}

void rl_cli_opts_init(struct rl_cli_opts *o)
{
	memset(o, 0, sizeof(*o));
	o->batch = -1;
	o->opt_level = 2;
	o->weights_max = -1;
	o->max_rel_error = 1e-2;
	o->launch = -1;
}

bool rl_cli_parse_dims(const char *s, struct rl_shape *out)
{
	memset(out, 0, sizeof(*out));
	if (!*s)
		return false;
	if (strcmp(s, "scalar") == 0)
		return true;
	const char *p = s;
	while (*p) {
		if (out->rank == RL_MAX_RANK)
			return false;
		char *end;
		errno = 0;
		long long v = strtoll(p, &end, 10);
		if (end == p || errno || v < 0 || v > (1ll << 40))
			return false;
		out->d[out->rank++].v = v;
		if (*end == 'x' || *end == ',')
			p = end + 1;
		else if (*end == 0)
			p = end;
		else
			return false;
		if ((*end == 'x' || *end == ',') && !*p)
			return false;
	}
	return true;
}

bool rl_cli_parse_list(const char *s, int64_t *out, int max, int *n)
{
	*n = 0;
	const char *p = s;
	if (!*p)
		return false;
	while (*p) {
		if (*n == max)
			return false;
		char *end;
		errno = 0;
		long long v = strtoll(p, &end, 10);
		if (end == p || errno || v <= 0 || v > (1ll << 30))
			return false;
		out[(*n)++] = v;
		if (*end == ',') {
			p = end + 1;
			if (!*p)
				return false;
		} else if (*end) {
			return false;
		} else {
			p = end;
		}
	}
	return true;
}

static const char *optval(int argc, char **argv, int *i, const char *flag)
{
	const char *a = argv[*i];
	size_t fl = strlen(flag);
	if (strncmp(a, flag, fl) == 0 && a[fl] == '=')
		return a + fl + 1;
	if (strcmp(a, flag) == 0) {
		if (*i + 1 >= argc) {
			usage_error("option %s needs a value", flag);
			return NULL;
		}
		return argv[++*i];
	}
	return NULL;
}

static bool is_flag(const char *a, const char *flag)
{
	size_t fl = strlen(flag);
	return strcmp(a, flag) == 0 || (strncmp(a, flag, fl) == 0 && a[fl] == '=');
}

static int parse_common(struct rl_cli_opts *o, int argc, char **argv, int *i);

int rl_cli_parse_common(struct rl_cli_opts *o, int argc, char **argv, int *i)
{
	static const struct { const char *flag; enum rl_cli_opt bit; } t[] = {
		{"--batch", RL_OPT_BATCH}, {"--shape", RL_OPT_SHAPE}, {"--dim", RL_OPT_DIM},
		{"--hw", RL_OPT_HW}, {"--weights-max", RL_OPT_WEIGHTS_MAX},
		{"--passes", RL_OPT_PASSES}, {"--dump-after", RL_OPT_DUMP_AFTER},
		{"--report", RL_OPT_REPORT}, {"--format", RL_OPT_FORMAT}, {"-O0", RL_OPT_OLEVEL},
		{"-O1", RL_OPT_OLEVEL}, {"-O2", RL_OPT_OLEVEL}, {"--factorize", RL_OPT_FACTORIZE},
		{"--max-rel-error", RL_OPT_MAX_REL_ERROR}, {"--remarks", RL_OPT_REMARKS},
		{"-v", RL_OPT_VERBOSE}, {"--verbose", RL_OPT_VERBOSE},
		{"--quantize", RL_OPT_QUANTIZE}, {"--block", RL_OPT_BLOCK},
		{"--scale-type", RL_OPT_SCALE_TYPE},
		{"--calibrate", RL_OPT_CALIBRATE}, {"--onnx-format", RL_OPT_ONNX_FORMAT},
		{"--launch", RL_OPT_LAUNCH},
		{"--value", RL_OPT_VALUE},
		{"--seq", RL_OPT_SEQ}, {"--optional", RL_OPT_SEQ},
		{"--threads", RL_OPT_THREADS},
	};
	const char *a = argv[*i];
	int r = parse_common(o, argc, argv, i);
	for (size_t k = 0; r > 0 && k < sizeof(t) / sizeof(t[0]); k++)
		if (is_flag(a, t[k].flag)) {
			o->given |= RL_OPT_BIT(t[k].bit);
			o->given_as[t[k].bit] = t[k].flag;
		}
	if (r > 0 && o->nbatches > 1) {
		o->given |= RL_OPT_BIT(RL_OPT_BATCH_LIST);
		o->given_as[RL_OPT_BATCH_LIST] = "--batch N,N,...";
	}
	return r;
}

/* Options that only steer the pass pipeline. */
static bool steers_passes(int b)
{
	return b == RL_OPT_DUMP_AFTER || b == RL_OPT_REMARKS || b == RL_OPT_FACTORIZE ||
	       b == RL_OPT_MAX_REL_ERROR || b == RL_OPT_QUANTIZE || b == RL_OPT_BLOCK ||
	       b == RL_OPT_SCALE_TYPE ||
	       b == RL_OPT_CALIBRATE;
}

bool rl_cli_check_used(const struct rl_cli_opts *o, unsigned used, const char *cmd)
{
	for (int b = 0; b < RL_OPT_COUNT_; b++)
		if ((o->given & RL_OPT_BIT(b)) && !(used & RL_OPT_BIT(b))) {
			if (strchr(cmd, ' '))
				fprintf(stderr, "rlopt: option '%s' is not used by `%s`\n", o->given_as[b],
				        cmd);
			else
				fprintf(stderr, "rlopt: %s: option '%s' is not used by %s%s\n", cmd,
				        o->given_as[b], cmd, steers_passes(b) && (used & RL_OPT_BIT(RL_OPT_OLEVEL))
				                ? " unless passes run (-O1, -O2 or --passes)" : "");
			return false;
		}
	const char *bad = NULL;
	if ((o->given & RL_OPT_BIT(RL_OPT_OLEVEL)) && (o->given & RL_OPT_BIT(RL_OPT_PASSES)))
		bad = "-O and --passes both choose the passes: give one";
	else if ((o->given & RL_OPT_BIT(RL_OPT_MAX_REL_ERROR)) &&
	         !(o->given & (RL_OPT_BIT(RL_OPT_FACTORIZE) | RL_OPT_BIT(RL_OPT_QUANTIZE))))
		bad = "--max-rel-error bounds --factorize or --quantize: give one of them";
	else if ((o->given & (RL_OPT_BIT(RL_OPT_BLOCK) | RL_OPT_BIT(RL_OPT_CALIBRATE) |
	                      RL_OPT_BIT(RL_OPT_SCALE_TYPE))) &&
	         !(o->given & RL_OPT_BIT(RL_OPT_QUANTIZE)))
		bad = "--block, --scale-type and --calibrate steer --quantize: give it too";
	else if ((o->given & RL_OPT_BIT(RL_OPT_QUANTIZE)) && !o->passes && o->opt_level < 2)
		bad = "--quantize runs at -O2 (or with quantize in --passes)";
	else if ((o->given & RL_OPT_BIT(RL_OPT_FACTORIZE)) && !o->passes && o->opt_level < 2)
		bad = "--factorize runs at -O2 (or with factorize in --passes)";
	else if ((o->given & RL_OPT_BIT(RL_OPT_FORMAT)) && (used & RL_OPT_BIT(RL_OPT_REPORT)) &&
	         !o->report)
		bad = "--format sets the format of --report FILE: give both";
	if (bad) {
		fprintf(stderr, strchr(cmd, ' ') ? "rlopt: `%s`: %s\n" : "rlopt: %s: %s\n", cmd, bad);
		return false;
	}
	return true;
}

/* Binding shapes: --batch, --shape, --seq, --optional, --dim. One option
 * at argv[*i]: 1 taken (with its value), 0 not one of these, -1 a usage
 * error (printed). The same for the three below. */
static int parse_bind_opts(struct rl_cli_opts *o, int argc, char **argv, int *i)
{
	const char *a = argv[*i], *v;
	if (is_flag(a, "--batch")) {
		if (!(v = optval(argc, argv, i, "--batch")))
			return -1;
		if (!rl_cli_parse_list(v, o->batches, 16, &o->nbatches)) {
			usage_error("--batch wants N or a list N,N,... of positive integers, not '%s'", v);
			return -1;
		}
		o->batch = (int)o->batches[0];
		return 1;
	}
	if (is_flag(a, "--shape")) {
		if (!(v = optval(argc, argv, i, "--shape")))
			return -1;
		const char *eq = strrchr(v, '=');
		if (!eq || eq == v || o->nshapes == RL_MAX_BIND ||
		    !rl_cli_parse_dims(eq + 1, &o->shapes[o->nshapes].shape)) {
			usage_error("--shape wants NAME=DIMS such as x=1x3x224x224, not '%s'", v);
			return -1;
		}
		o->shapes[o->nshapes++].name = strndup(v, (size_t)(eq - v));
		return 1;
	}
	if (is_flag(a, "--seq") || is_flag(a, "--optional")) {
		bool seq = is_flag(a, "--seq");
		if (!(v = optval(argc, argv, i, seq ? "--seq" : "--optional")))
			return -1;
		const char *eq = seq ? strrchr(v, '=') : NULL;
		char *end = NULL;
		long long n = eq ? strtoll(eq + 1, &end, 10) : -1;
		if (o->nseqs == RL_MAX_BIND || !*v ||
		    (seq && (!eq || eq == v || n < 0 || n > 4096 || *end))) {
			usage_error(seq ? "--seq wants NAME=LEN with LEN from 0 to 4096, not '%s'"
			                : "--optional wants an input name, not '%s'", v);
			return -1;
		}
		o->seqs[o->nseqs].name = seq ? strndup(v, (size_t)(eq - v)) : v;
		o->seqs[o->nseqs++].len = (int)n;
		return 1;
	}
	if (is_flag(a, "--dim")) {
		if (!(v = optval(argc, argv, i, "--dim")))
			return -1;
		const char *eq = strrchr(v, '=');
		char *end;
		long long n = eq ? strtoll(eq + 1, &end, 10) : -1;
		if (!eq || eq == v || n < 0 || *end || o->ndims == RL_MAX_BIND) {
			usage_error("--dim wants SYMBOL=N, not '%s'", v);
			return -1;
		}
		o->dims[o->ndims].sym = strndup(v, (size_t)(eq - v));
		o->dims[o->ndims++].v = n;
		return 1;
	}
	return 0;
}

/* Machine, output and pass selection: --hw, --weights-max, --passes,
 * --dump-after, --report, --format, -O0/-O1/-O2. */
static int parse_target_opts(struct rl_cli_opts *o, int argc, char **argv, int *i)
{
	const char *a = argv[*i], *v;
	if (is_flag(a, "--hw")) {
		if (!(o->hw = optval(argc, argv, i, "--hw")))
			return -1;
		return 1;
	}
	if (is_flag(a, "--weights-max")) {
		if (!(v = optval(argc, argv, i, "--weights-max")))
			return -1;
		char *end;
		o->weights_max = strtoll(v, &end, 10);
		if (*end || o->weights_max < 0) {
			usage_error("--weights-max wants a byte count, not '%s'", v);
			return -1;
		}
		return 1;
	}
	if (is_flag(a, "--passes")) {
		if (!(o->passes = optval(argc, argv, i, "--passes")))
			return -1;
		return 1;
	}
	if (is_flag(a, "--dump-after")) {
		if (!(o->dump_after = optval(argc, argv, i, "--dump-after")))
			return -1;
		return 1;
	}
	if (is_flag(a, "--report")) {
		if (!(o->report = optval(argc, argv, i, "--report")))
			return -1;
		return 1;
	}
	if (is_flag(a, "--format")) {
		if (!(o->format = optval(argc, argv, i, "--format")))
			return -1;
		return 1;
	}
	if (strcmp(a, "-O0") == 0 || strcmp(a, "-O1") == 0 || strcmp(a, "-O2") == 0) {
		o->opt_level = a[2] - '0';
		return 1;
	}
	return 0;
}

/* Rewrites: --factorize, --max-rel-error, --remarks, --quantize, --block,
 * --calibrate. */
static int parse_rewrite_opts(struct rl_cli_opts *o, int argc, char **argv, int *i)
{
	const char *a = argv[*i], *v;
	if (strcmp(a, "--factorize") == 0) {
		o->factorize = true;
		return 1;
	}
	if (is_flag(a, "--max-rel-error")) {
		if (!(v = optval(argc, argv, i, "--max-rel-error")))
			return -1;
		char *end;
		errno = 0;
		o->max_rel_error = strtod(v, &end);
		if (end == v || *end || errno || !(o->max_rel_error > 0 && o->max_rel_error < 1)) {
			usage_error("--max-rel-error wants a number in (0, 1), not '%s'", v);
			return -1;
		}
		return 1;
	}
	if (strcmp(a, "--remarks") == 0) {
		o->remarks = true;
		return 1;
	}
	if (is_flag(a, "--quantize")) {
		/* in the order of enum rl_quant_mode (ir/qweights.h) */
		static const char *const modes[] = {"none", "int8", "int4", "auto", "int8-channel",
		                                    "int4-mixed"};
		if (!(v = optval(argc, argv, i, "--quantize")))
			return -1;
		o->quantize = -1;
		for (int k = 0; k < 6; k++)
			if (strcmp(v, modes[k]) == 0)
				o->quantize = k;
		if (o->quantize < 0) {
			usage_error("--quantize wants none, int8, int4, auto, int8-channel or int4-mixed, "
			            "not '%s'", v);
			return -1;
		}
		return 1;
	}
	if (is_flag(a, "--block")) {
		if (!(v = optval(argc, argv, i, "--block")))
			return -1;
		if (strcmp(v, "32") && strcmp(v, "64") && strcmp(v, "128")) {
			usage_error("--block wants 32, 64 or 128, not '%s'", v);
			return -1;
		}
		o->quant_block = atoi(v);
		return 1;
	}
	if (is_flag(a, "--scale-type")) {
		if (!(v = optval(argc, argv, i, "--scale-type")))
			return -1;
		if (strcmp(v, "f16") && strcmp(v, "f32")) {
			usage_error("--scale-type wants f16 or f32, not '%s'", v);
			return -1;
		}
		o->quant_scale32 = strcmp(v, "f32") == 0;
		return 1;
	}
	if (is_flag(a, "--calibrate")) {
		if (!(v = optval(argc, argv, i, "--calibrate")))
			return -1;
		for (const char *p = v; *p;) {
			const char *e = strchr(p, ',');
			size_t n = e ? (size_t)(e - p) : strlen(p);
			if (!n || o->ncalib == RL_MAX_BIND) {
				usage_error("--calibrate wants IN.pb[,IN.pb...] (one per model input), not '%s'", v);
				return -1;
			}
			o->calib[o->ncalib++] = strndup(p, n);
			p += n + (e != NULL);
		}
		return 1;
	}
	return 0;
}

/* --launch, --threads, --onnx-format, --value, -v. */
static int parse_misc_opts(struct rl_cli_opts *o, int argc, char **argv, int *i)
{
	const char *a = argv[*i], *v;
	if (is_flag(a, "--threads")) {
		if (!(v = optval(argc, argv, i, "--threads")))
			return -1;
		char *end;
		errno = 0;
		long t = strtol(v, &end, 10);
		if (!*v || *end || errno || t < 1 || t > RL_CLI_MAX_THREADS) {
			usage_error("--threads wants a whole number from 1 to 4096, not '%s'", v);
			return -1;
		}
		o->threads = (int)t;
		return 1;
	}
	if (is_flag(a, "--launch")) {
		if (!(v = optval(argc, argv, i, "--launch")))
			return -1;
		if (strcmp(v, "eager") && strcmp(v, "graph")) {
			usage_error("--launch wants eager or graph, not '%s'", v);
			return -1;
		}
		o->launch = strcmp(v, "graph") == 0 ? RL_LAUNCH_GRAPH : RL_LAUNCH_EAGER;
		return 1;
	}
	if (is_flag(a, "--onnx-format")) {
		if (!(v = optval(argc, argv, i, "--onnx-format")))
			return -1;
		if (strcmp(v, "qdq") && strcmp(v, "matmulnbits")) {
			usage_error("--onnx-format wants qdq or matmulnbits, not '%s'", v);
			return -1;
		}
		o->onnx_format = strcmp(v, "matmulnbits") == 0;
		return 1;
	}
	if (is_flag(a, "--value")) {
		if (!(v = optval(argc, argv, i, "--value")))
			return -1;
		const char *eq = strchr(v, '=');
		if (!eq || eq == v || !eq[1] || o->nvalues == RL_MAX_BIND) {
			usage_error("--value wants NAME=FILE.pb (a TensorProto for graph input NAME), "
			            "not '%s'", v);
			return -1;
		}
		for (int k = 0; k < o->nvalues; k++)
			if (strlen(o->values[k].name) == (size_t)(eq - v) &&
			    strncmp(o->values[k].name, v, (size_t)(eq - v)) == 0) {
				usage_error("--value binds input '%s' twice", o->values[k].name);
				return -1;
			}
		o->values[o->nvalues].name = strndup(v, (size_t)(eq - v));
		o->values[o->nvalues++].path = eq + 1;
		return 1;
	}
	if (strcmp(a, "-v") == 0 || strcmp(a, "--verbose") == 0) {
		o->verbose = true;
		return 1;
	}
	return 0;
}

/* The options every command shares (each command says which it uses,
 * rl_cli_check_used): 1 taken, 0 not one of them, -1 a usage error. */
static int parse_common(struct rl_cli_opts *o, int argc, char **argv, int *i)
{
	int r;
	if ((r = parse_bind_opts(o, argc, argv, i)) != 0 ||
	    (r = parse_target_opts(o, argc, argv, i)) != 0 ||
	    (r = parse_rewrite_opts(o, argc, argv, i)) != 0)
		return r;
	return parse_misc_opts(o, argc, argv, i);
}


struct rl_graph *rl_cli_load(const char *path, const struct rl_cli_opts *o,
                             bool need_static)
{
	return rl_cli_load_ex(path, o, need_static, NULL, 0, NULL, false);
}

/* --value NAME=FILE.pb: bind the input to the file's tensor. A problem is one
 * line in g->err naming the option, the input and the reason. */
static bool bind_values(struct rl_graph *g, const struct rl_cli_opts *o)
{
	size_t pl = strlen(g->path) + 2; /* rl_graph_error's "PATH: " */
	for (int i = 0; i < o->nvalues; i++) {
		struct rl_tensor t;
		char err[1024];
		if (rl_tensor_read(o->values[i].path, &t, err, sizeof(err)) != RL_OK) {
			rl_graph_error(g, NULL, RL_ERR_IO, "--value %s=%s: %s", o->values[i].name,
			               o->values[i].path, err);
			return false;
		}
		enum rl_status st = rl_graph_bind_value(g, o->values[i].name, t.dtype, &t.shape, t.data,
		                                        t.nbytes);
		rl_tensor_free(&t);
		if (st != RL_OK) {
			char msg[1024];
			snprintf(msg, sizeof(msg), "%s", strlen(g->err) > pl ? g->err + pl : g->err);
			rl_graph_error(g, NULL, st, "--value %s=%s: %s", o->values[i].name,
			               o->values[i].path, msg);
			return false;
		}
	}
	return true;
}

/* --seq NAME=LEN and --optional NAME: the length of a sequence input, the
 * presence of an optional one (absent unless given). */
static bool bind_seq_opts(struct rl_graph *g, const struct rl_cli_opts *o)
{
	const struct rl_onnx_io *io = g->onnx_io;
	for (int i = 0; i < o->nseqs; i++) {
		bool found = false;
		for (uint32_t k = 0; io && k < io->nin; k++)
			found |= io->in[k].kind != RL_ONNX_TENSOR && !strcmp(io->in[k].name, o->seqs[i].name);
		if (!found) {
			rl_graph_error(g, NULL, RL_ERR_INVALID, "%s %s: the model has no sequence or "
			               "optional input named '%s'", o->seqs[i].len < 0 ? "--optional"
			               : "--seq", o->seqs[i].name, o->seqs[i].name);
			return false;
		}
	}
	for (uint32_t k = 0; io && k < io->nin; k++) {
		const struct rl_onnx_port *p = &io->in[k];
		int len = -1;
		bool given = false;
		for (int i = 0; i < o->nseqs; i++)
			if (!strcmp(o->seqs[i].name, p->name)) {
				given = true;
				len = o->seqs[i].len >= 0 ? o->seqs[i].len : len;
			}
		if (!given || p->kind == RL_ONNX_TENSOR)
			continue;
		bool seq = p->kind == RL_ONNX_SEQUENCE || p->inner == RL_ONNX_SEQUENCE;
		if (seq && len < 0) {
			rl_graph_error(g, NULL, RL_ERR_INVALID, "input '%s' is a sequence: give its "
			               "length with --seq %s=LEN", p->name, p->name);
			return false;
		}
		enum rl_status st = p->kind == RL_ONNX_SEQUENCE
		                  ? rl_onnx_bind_sequence(g, p->name, len, NULL)
		                  : rl_onnx_bind_optional(g, p->name, true, len, NULL);
		if (st != RL_OK)
			return false;
	}
	return true;
}

/* rlopt run's input files, read as the model's inputs want them, bound, and
 * their tensors in g->inputs' order into *flat (malloc'd). */
/*
 * Where each of n named tensors goes among the graph inputs: pos[i] is the
 * input the i-th takes. True when every name is non-empty and names a
 * distinct graph input and n is the input count; false (pos untouched)
 * otherwise, and the caller keeps the order given. TensorProto files carry
 * the name of the input they were saved for (the onnx test data does, and
 * numpy_helper.from_array(x, name)), so `-i` and --calibrate files may be
 * given in any order.
 */
bool rl_cli_match_names(const struct rl_graph *g, const char *const *names, int n, int *pos)
{
	if (n <= 0 || (uint32_t)n != g->ninputs)
		return false;
	for (int i = 0; i < n; i++) {
		if (!names[i] || !*names[i])
			return false;
		pos[i] = -1;
		for (uint32_t k = 0; k < g->ninputs && pos[i] < 0; k++)
			if (!strcmp(names[i], g->values[g->inputs[k]].name))
				pos[i] = (int)k;
		if (pos[i] < 0)
			return false;
		for (int j = 0; j < i; j++)
			if (pos[j] == pos[i])
				return false;
	}
	return true;
}

static bool bind_files(struct rl_graph *g, const char *const *paths, int npaths,
                       struct rl_value_file *files, struct rl_tensor **flat, int *nflat)
{
	char err[1024];
	const struct rl_onnx_io *io = g->onnx_io;
	if (io && (uint32_t)npaths != io->nin) {
		rl_graph_error(g, NULL, RL_ERR_INVALID, "the model has %u input%s, %d given with -i",
		               io->nin, io->nin == 1 ? "" : "s", npaths);
		return false;
	}
	if (!io) {
		/* plain tensors: read them all, then take them by the names inside
		 * the files when every file has one and they name the model's
		 * inputs (each once); by position otherwise */
		for (int i = 0; i < npaths; i++)
			if (rl_value_file_read(paths[i], RL_ONNX_TENSOR, &files[i], err,
			                       sizeof(err)) != RL_OK) {
				rl_graph_error(g, NULL, RL_ERR_INVALID, "%s", err);
				return false;
			}
		const char *names[RL_MAX_BIND * 2 + 1] = {NULL};
		int pos[RL_MAX_BIND * 2 + 1];
		for (int i = 0; i < npaths && i < RL_MAX_BIND * 2 + 1; i++)
			names[i] = files[i].name;
		if (npaths <= RL_MAX_BIND * 2 + 1 && rl_cli_match_names(g, names, npaths, pos)) {
			struct rl_value_file tmp[RL_MAX_BIND * 2 + 1];
			for (int i = 0; i < npaths; i++)
				tmp[pos[i]] = files[i];
			memcpy(files, tmp, (size_t)npaths * sizeof(*files));
		}
	}
	int n = 0;
	for (int i = 0; i < npaths; i++) {
		const struct rl_onnx_port *p = io ? &io->in[i] : NULL;
		enum rl_onnx_kind kind = p ? p->kind : RL_ONNX_TENSOR;
		if (io && rl_value_file_read(paths[i], kind, &files[i], err, sizeof(err)) != RL_OK) {
			rl_graph_error(g, NULL, RL_ERR_INVALID, "%s", err);
			return false;
		}
		n += files[i].n;
		if (!p || kind == RL_ONNX_TENSOR)
			continue;
		if (kind == RL_ONNX_OPTIONAL && files[i].present && files[i].inner != p->inner) {
			rl_graph_error(g, NULL, RL_ERR_SHAPE, "input %d ('%s'): %s holds a %s, the model "
			               "wants an optional %s", i, p->name, paths[i],
			               files[i].inner == RL_ONNX_SEQUENCE ? "sequence" : "tensor",
			               p->inner == RL_ONNX_SEQUENCE ? "sequence" : "tensor");
			return false;
		}
		enum rl_status st = kind == RL_ONNX_SEQUENCE
		                  ? rl_onnx_bind_sequence(g, p->name, files[i].n, files[i].t)
		                  : rl_onnx_bind_optional(g, p->name, files[i].present != 0,
		                                          files[i].n, files[i].t);
		if (st != RL_OK)
			return false;
	}
	*flat = calloc((size_t)n + 1, sizeof(**flat));
	if (!*flat)
		return false;
	*nflat = 0;
	for (int i = 0; i < npaths; i++)
		for (int k = 0; k < files[i].n; k++)
			(*flat)[(*nflat)++] = files[i].t[k]; /* borrowed */
	return true;
}

static struct rl_graph *load_graph(const char *path, const struct rl_cli_opts *o,
                                   bool need_static, const char *const *paths, int npaths,
                                   struct rl_value_file *files, const bool *bind);

/*
 * rlopt run's automatic binding. After inference, a node whose inputs all
 * have fixed shapes but whose output does not computed that shape from data
 * (Range's limits, Reshape's or Expand's shape, Slice's ends, a window's
 * size, ...). Its non-constant operands of at most RL_AUTO_BIND_MAX elements
 * (a size is often computed in float, as the expanded window functions do)
 * are followed back through their producers (not into Shape or
 * Size, which read only a shape) to the graph inputs they come from: those
 * of an integer dtype and at most RL_AUTO_BIND_MAX elements are bound to
 * the -i tensor's data and the model loaded again, until nothing new is
 * found. Float inputs and larger ones are never bound; what stays unfixed
 * is reported as before. Returns how many inputs it marked in bind[].
 */
static int mark_needed(const struct rl_graph *g, bool *bind)
{
	int added = 0;
	bool *seen = calloc(g->nvalues + 1, sizeof(bool));
	uint32_t *stack = calloc(g->nvalues + 1, sizeof(uint32_t));
	if (!seen || !stack) {
		free(seen);
		free(stack);
		return 0;
	}
	for (uint32_t k = 0; k < g->norder; k++) {
		const struct rl_node *n = &g->nodes[g->order[k]];
		bool out_unfixed = false, in_fixed = true;
		for (int q = 0; q < n->nout; q++)
			if (n->out[q] != RL_NONE && !rl_shape_is_static(&g->values[n->out[q]].shape))
				out_unfixed = true;
		for (int q = 0; q < n->nin; q++)
			if (n->in[q] != RL_NONE && !rl_shape_is_static(&g->values[n->in[q]].shape))
				in_fixed = false;
		if (!out_unfixed || !in_fixed)
			continue;
		uint32_t sp = 0;
		for (int q = 0; q < n->nin; q++) {
			uint32_t v = n->in[q];
			if (v == RL_NONE || rl_value_is_const(g, v) || seen[v] ||
			    rl_shape_numel(&g->values[v].shape) > RL_AUTO_BIND_MAX)
				continue;
			seen[v] = true;
			stack[sp++] = v;
		}
		while (sp) {
			const struct rl_value *val = &g->values[stack[--sp]];
			if (val->producer == RL_NONE || val->producer >= g->nnodes)
				continue;
			const struct rl_node *p = &g->nodes[val->producer];
			if (p->op == RL_OP_Shape || p->op == RL_OP_Size)
				continue;
			for (int q = 0; q < p->nin; q++) {
				uint32_t v = p->in[q];
				if (v != RL_NONE && !seen[v] && !rl_value_is_const(g, v)) {
					seen[v] = true;
					stack[sp++] = v;
				}
			}
		}
	}
	for (uint32_t i = 0; i < g->ninputs; i++) {
		const struct rl_value *v = &g->values[g->inputs[i]];
		if (seen[g->inputs[i]] && !bind[i] && rl_dtype_is_int(v->dtype) &&
		    rl_shape_is_static(&v->shape) && rl_shape_numel(&v->shape) <= RL_AUTO_BIND_MAX) {
			bind[i] = true;
			added++;
		}
	}
	free(seen);
	free(stack);
	return added;
}

static bool load_quiet; /* load_graph: no message on failure (a trial load) */
static enum rl_status load_status; /* load_graph: why inference failed */

static bool eligible(const struct rl_tensor *t)
{
	return rl_dtype_is_int(t->dtype) && rl_shape_numel(&t->shape) <= RL_AUTO_BIND_MAX;
}

/* A quiet load; its files are read into tf (npaths of them) and freed
 * here unless keep. */
static struct rl_graph *load_trial(const char *path, const struct rl_cli_opts *o,
                                   bool need_static, const char *const *paths, int npaths,
                                   struct rl_value_file *tf, bool keep, const bool *bind)
{
	load_quiet = true;
	memset(tf, 0, (size_t)npaths * sizeof(*tf));
	struct rl_graph *g = load_graph(path, o, need_static, paths, npaths, tf, bind);
	load_quiet = false;
	if (!keep)
		for (int i = 0; i < npaths; i++)
			rl_value_file_free(&tf[i]);
	return g;
}

struct rl_graph *rl_cli_load_ex(const char *path, const struct rl_cli_opts *o,
                                bool need_static, const char *const *paths, int npaths,
                                struct rl_value_file *files, bool auto_bind)
{
	if (!auto_bind || !paths || !npaths || npaths > RL_MAX_BIND * 2)
		return load_graph(path, o, need_static, paths, npaths, files, NULL);
	/* the input files as the first trial reads them (sequences and
	 * optionals flattened to their tensors, in g->inputs' order) */
	struct rl_value_file pre[RL_MAX_BIND * 2], tf[RL_MAX_BIND * 2];
	bool bind[RL_MAX_BIND * 2 + 1] = {false};
	load_status = RL_OK;
	struct rl_graph *g = load_trial(path, o, need_static, paths, npaths, pre, true, bind);
	const struct rl_tensor *in[RL_MAX_BIND * 2 + 1];
	int nin = 0;
	for (int i = 0; i < npaths; i++)
		for (int k = 0; k < pre[i].n && nin < RL_MAX_BIND * 2 + 1; k++)
			in[nin++] = &pre[i].t[k];
	if (!g && load_status != RL_ERR_SHAPE) /* not a shape: the error, printed */
		goto plain;
	if (!g) {
		/* Inference itself stops on a shape a value decides (an If whose
		 * branches give different shapes under a condition computed from
		 * an input, as in AffineGrid's body). Bind every eligible input;
		 * the pruning below unbinds those not needed. Other failures (a
		 * Loop's run-time trip count, a run-time sequence position) stay
		 * errors: no shape depends on them. */
		int n = 0;
		for (int i = 0; i < nin; i++)
			n += bind[i] = eligible(in[i]);
		g = n ? load_trial(path, o, need_static, paths, npaths, tf, false, bind) : NULL;
		if (!g) /* binding does not help: the unbound error, printed */
			goto plain;
	}
	/* each round can fix shapes that lead to the next operand */
	for (int round = 0; g && round < 8 && (uint32_t)nin == g->ninputs; round++) {
		bool more[RL_MAX_BIND * 2 + 1];
		memcpy(more, bind, sizeof(more));
		if (!mark_needed(g, more))
			break;
		rl_graph_free(g);
		memcpy(bind, more, sizeof(bind));
		g = load_trial(path, o, need_static, paths, npaths, tf, false, bind);
	}
	if (!g) /* the last word: this load's error, printed */
		goto bound;
	/* An operand followed back is not always a size (MelWeightMatrix's
	 * sample_rate sits beside its dft_length), and the fallback above binds
	 * all: unbind, one at a time, each input without which the model still
	 * loads with every shape fixed. */
	for (int i = 0; i < nin; i++) {
		if (!bind[i])
			continue;
		bind[i] = false;
		struct rl_graph *t = load_trial(path, o, need_static, paths, npaths, tf, false, bind);
		bool fixed = t != NULL;
		for (uint32_t v = 0; t && fixed && v < t->nvalues; v++)
			fixed = rl_shape_is_static(&t->values[v].shape) ||
			        (t->values[v].producer == RL_NONE && !t->values[v].nuses);
		if (!fixed)
			bind[i] = true;
		rl_graph_free(t);
	}
	for (int i = 0; i < nin && (uint32_t)i < g->ninputs; i++)
		if (bind[i]) {
			char sb[128];
			fprintf(stderr, "rlopt: run: input '%s' (%s[%s]) decides a shape: bound to "
			        "the value of its -i file; the generated code checks each run passes "
			        "that value\n", g->values[g->inputs[i]].name,
			        rl_dtype_name(in[i]->dtype), rl_shape_str(&in[i]->shape, sb, sizeof(sb)));
		}
	rl_graph_free(g);
bound:
	/* the load the caller keeps, with its files, binding what was found */
	for (int i = 0; i < npaths; i++)
		rl_value_file_free(&pre[i]);
	return load_graph(path, o, need_static, paths, npaths, files, bind);
plain:
	for (int i = 0; i < npaths; i++)
		rl_value_file_free(&pre[i]);
	if (g)
		rl_graph_free(g);
	return load_graph(path, o, need_static, paths, npaths, files, NULL);
}

static bool ir_warned; /* the newer-IR warning, once per process */

static struct rl_graph *load_graph(const char *path, const struct rl_cli_opts *o,
                                   bool need_static, const char *const *paths, int npaths,
                                   struct rl_value_file *files, const bool *bind)
{
	char err[1024];
	struct rl_graph *g;
	const char *(*isym)[RL_MAX_RANK] = NULL; /* input symbols as loaded */
	struct rl_tensor *in = NULL;
	int nin = 0;
	if (rl_onnx_load(path, &g, err, sizeof(err)) != RL_OK) {
		if (!load_quiet)
			fprintf(stderr, "rlopt: %s\n", err);
		return NULL;
	}
	if (g->ir_version > RL_ONNX_IR_MAX && !load_quiet && !ir_warned) {
		ir_warned = true;
		fprintf(stderr, "rlopt: warning: %s: ir_version %lld is newer than this reader knows "
		        "(%d); loading it: an operator or dtype it does not know is still an error\n",
		        path, (long long)g->ir_version, RL_ONNX_IR_MAX);
	}
	if (!bind_seq_opts(g, o))
		goto fail;
	if (paths && !bind_files(g, paths, npaths, files, &in, &nin))
		goto fail;
	for (int i = 0; i < o->nshapes; i++) {
		if (rl_graph_bind_input(g, o->shapes[i].name, &o->shapes[i].shape) != RL_OK)
			goto fail;
	}
	for (int i = 0; i < o->ndims; i++)
		rl_graph_bind_dim(g, o->dims[i].sym, o->dims[i].v);
	if (!bind_values(g, o))
		goto fail;
	/* inputs given as tensors bind their own shapes (rlopt run); the
	 * symbols as loaded, to name one that two axes bind differently */
	isym = calloc(g->ninputs + 1, sizeof(*isym));
	if (!isym)
		goto fail;
	for (uint32_t k = 0; k < g->ninputs; k++)
		for (int d = 0; d < g->values[g->inputs[k]].shape.rank; d++)
			if (g->values[g->inputs[k]].shape.d[d].v < 0)
				isym[k][d] = g->values[g->inputs[k]].shape.d[d].sym;
	for (int i = 0; in && i < nin && (uint32_t)i < g->ninputs; i++) {
		struct rl_value *v = &g->values[g->inputs[i]];
		if (v->dtype != in[i].dtype) {
			rl_graph_error(g, NULL, RL_ERR_SHAPE, "input %d ('%s'): the tensor file holds %s, "
			               "the model wants %s", i, v->name, rl_dtype_name(in[i].dtype),
			               rl_dtype_name(v->dtype));
			goto fail;
		}
		bool ok = v->shape.rank == in[i].shape.rank;
		for (int d = 0; ok && d < v->shape.rank; d++) {
			ok = v->shape.d[d].v < 0 || v->shape.d[d].v == in[i].shape.d[d].v;
			if (!ok && isym[i][d]) {
				rl_graph_error(g, NULL, RL_ERR_SHAPE, "input %d ('%s'): dimension '%s' is %lld "
				               "on axis %d of the tensor file but was bound to %lld", i, v->name,
				               isym[i][d], (long long)in[i].shape.d[d].v, d,
				               (long long)v->shape.d[d].v);
				goto fail;
			}
		}
		if (!ok) {
			char a[128], b[128];
			rl_graph_error(g, NULL, RL_ERR_SHAPE, "input %d ('%s'): the tensor file has "
			               "shape %s, the model wants %s", i, v->name,
			               rl_shape_str(&in[i].shape, a, sizeof(a)),
			               rl_shape_str(&v->shape, b, sizeof(b)));
			goto fail;
		}
		/* a symbol on several axes (here or in an input bound before) must
		 * get one size: check every axis again after binding, naming it */
		const char *const *sym = isym[i];
		for (int d = 0; d < v->shape.rank; d++)
			if (v->shape.d[d].v < 0 && v->shape.d[d].sym)
				rl_graph_bind_dim(g, v->shape.d[d].sym, in[i].shape.d[d].v);
		for (int d = 0; d < v->shape.rank; d++) {
			if (v->shape.d[d].v == in[i].shape.d[d].v)
				continue;
			rl_graph_error(g, NULL, RL_ERR_SHAPE, "input %d ('%s'): dimension '%s' is %lld on "
			               "axis %d of the tensor file but was bound to %lld",
			               i, v->name, sym[d] ? sym[d] : "?", (long long)in[i].shape.d[d].v, d,
			               (long long)v->shape.d[d].v);
			goto fail;
		}
	}
	free(isym);
	isym = NULL;
	/* rlopt run's automatic binding (rl_cli_load_ex); an input --value
	 * bound already stays as it is */
	for (int i = 0; bind && i < nin && (uint32_t)i < g->ninputs; i++) {
		const char *nm = g->values[g->inputs[i]].name;
		bool given = false;
		for (uint32_t k = 0; k < g->nbindings; k++)
			given |= g->bindings[k].input == (uint32_t)i;
		if (bind[i] && !given &&
		    rl_graph_bind_value(g, nm, in[i].dtype, &in[i].shape, in[i].data, in[i].nbytes) != RL_OK)
			goto fail;
	}
	free(in);
	in = NULL;
	if (o->batch > 0) {
		/* every dim whose symbol reads like a batch, and any symbolic axis 0
		 * of an input */
		const char *syms[64];
		int ns = 0;
		for (uint32_t k = 0; k < g->ninputs; k++) {
			struct rl_value *v = &g->values[g->inputs[k]];
			for (int d = 0; d < v->shape.rank; d++) {
				const char *s = v->shape.d[d].sym;
				if (v->shape.d[d].v >= 0 || !s)
					continue;
				if ((d == 0 || rl_sym_looks_batch(s)) && ns < 64)
					syms[ns++] = s;
			}
		}
		for (int k = 0; k < ns; k++)
			rl_graph_bind_dim(g, syms[k], o->batch);
	}
	load_status = rl_graph_infer(g);
	if (load_status != RL_OK || rl_graph_verify(g) != RL_OK)
		goto fail;
	if (need_static) {
		for (uint32_t k = 0; k < g->ninputs; k++) {
			struct rl_value *v = &g->values[g->inputs[k]];
			for (int d = 0; d < v->shape.rank; d++)
				if (v->shape.d[d].v < 0) {
					char sb[128], hint[256];
					rl_graph_error(g, NULL, RL_ERR_SHAPE, "input '%s' has shape %s: %s",
					               v->name, rl_shape_str(&v->shape, sb, sizeof(sb)),
					               rl_unbound_hint(g, &v->shape, hint, sizeof(hint)));
					goto fail;
				}
		}
	}
	return g;
fail:
	free(isym);
	free(in);
	if (!load_quiet)
		fprintf(stderr, "rlopt: %s\n", g->err);
	rl_graph_free(g);
	return NULL;
}

bool rl_cli_machine(const struct rl_cli_opts *o, struct rl_machine *m)
{
	char err[1024];
	const char *spec = o->hw ? o->hw : rl_machine_default();
	if (rl_machine_load(spec, m, err, sizeof(err)) != RL_OK) {
		fprintf(stderr, "rlopt: %s\n", err);
		return false;
	}
	if (o->launch >= 0 && !rl_machine_set_launch(m, (enum rl_launch_mode)o->launch)) {
		fprintf(stderr, "rlopt: --launch graph: %s is a %s profile; its kernels are "
		        "function calls, only GPU kernels replay from a CUDA graph\n", m->source,
		        m->kind);
		return false;
	}
	if (o->threads > 0) {
		if (strcmp(m->kind, "cpu") != 0) {
			fprintf(stderr, "rlopt: --threads %d: %s is a %s profile; --threads sets the "
			        "threads of generated C\n", o->threads, m->source, m->kind);
			return false;
		}
		m->run_threads = o->threads < m->cores ? o->threads : m->cores;
	}
	return true;
}

bool rl_cli_optimize(struct rl_graph *g, const struct rl_cli_opts *o,
                     struct rl_machine *m, struct rl_pass_ctx *ctx)
{
	if (!rl_cli_machine(o, m))
		return false;
	rl_pass_ctx_init(ctx, m, o->opt_level);
	ctx->dump_after = o->dump_after;
	ctx->dump = stdout;
	ctx->onnx_out = o->onnx_out;
	ctx->factorize = o->factorize;
	ctx->max_rel_error = o->max_rel_error;
	ctx->quantize = o->quantize;
	if (o->quant_block)
		ctx->quant_block = o->quant_block;
	ctx->quant_scale32 = o->quant_scale32;
	struct rl_tensor cal[RL_MAX_BIND];
	for (int k = 0; k < o->ncalib; k++) {
		char err[1024];
		if (rl_tensor_read(o->calib[k], &cal[k], err, sizeof(err)) != RL_OK) {
			fprintf(stderr, "rlopt: --calibrate: %s\n", err);
			while (k--)
				rl_tensor_free(&cal[k]);
			return false;
		}
	}
	/* by the names inside the files when they name the inputs, as -i */
	const char *cn[RL_MAX_BIND] = {NULL};
	int cpos[RL_MAX_BIND];
	for (int k = 0; k < o->ncalib; k++)
		cn[k] = cal[k].name;
	if (rl_cli_match_names(g, cn, o->ncalib, cpos)) {
		struct rl_tensor tmp[RL_MAX_BIND];
		for (int k = 0; k < o->ncalib; k++)
			tmp[cpos[k]] = cal[k];
		memcpy(cal, tmp, (size_t)o->ncalib * sizeof(*cal));
	}
	ctx->calib = cal;
	ctx->ncalib = o->ncalib;
	enum rl_status st = rl_pipeline_run(g, ctx, o->passes);
	for (int k = 0; k < o->ncalib; k++)
		rl_tensor_free(&cal[k]);
	ctx->calib = NULL;
	ctx->ncalib = 0;
	if (st != RL_OK) {
		fprintf(stderr, "rlopt: %s\n", g->err);
		return false;
	}
	if (o->remarks)
		rl_remarks_print(ctx, stderr);
	return true;
}

/* The output folder must exist: a pipeline that typos a path gets an error,
 * not a folder created for it. */
bool rl_cli_check_out_dir(const char *path)
{
	char dir[PATH_MAX];
	snprintf(dir, sizeof(dir), "%s", path);
	char *slash = strrchr(dir, '/');
	if (!slash)
		return true;
	if (slash == dir)
		return true;
	*slash = 0;
	struct stat st;
	if (stat(dir, &st) != 0 || !S_ISDIR(st.st_mode)) {
		fprintf(stderr, "rlopt: %s: output folder '%s' does not exist\n", path, dir);
		return false;
	}
	return true;
}

static bool ends_with(const char *s, const char *suf)
{
	size_t a = strlen(s), b = strlen(suf);
	return a >= b && strcmp(s + a - b, suf) == 0;
}

static int cmd_main(int argc, char **argv)
{
	struct rl_cli_opts o;
	rl_cli_opts_init(&o);
	const char *model = NULL, *out = NULL, *target = NULL, *cuda_lib = NULL;
	bool static_mode = false, cublas = false;
	for (int i = 1; i < argc; i++) {
		int r = rl_cli_parse_common(&o, argc, argv, &i);
		if (r < 0)
			return RL_EXIT_USAGE;
		if (r > 0)
			continue;
		const char *v;
		if (is_flag(argv[i], "-o")) {
			if (!(v = optval(argc, argv, &i, "-o")))
				return RL_EXIT_USAGE;
			out = v;
		} else if (is_flag(argv[i], "--target")) {
			if (!(target = optval(argc, argv, &i, "--target")))
				return RL_EXIT_USAGE;
		} else if (is_flag(argv[i], "--static")) {
			static_mode = true;
		} else if (is_flag(argv[i], "--cuda-library")) {
			if (!(cuda_lib = optval(argc, argv, &i, "--cuda-library")) ||
			    !rl_cli_cuda_library(cuda_lib, &cublas))
				return RL_EXIT_USAGE;
		} else if (argv[i][0] == '-' && argv[i][1]) {
			usage_error("unknown option '%s'", argv[i]);
			return RL_EXIT_USAGE;
		} else if (!model) {
			model = argv[i];
		} else {
			usage_error("unexpected argument '%s'", argv[i]);
			return RL_EXIT_USAGE;
		}
	}
	if (!model) {
		usage_error("%s", "no model given");
		return RL_EXIT_USAGE;
	}
	if (!out) {
		usage_error("%s", "no output given: use -o OUT.c (or -o OUT.onnx)");
		return RL_EXIT_USAGE;
	}
	/* CUDA: -o X.cu or --target cuda (which wants X.cu) */
	bool to_cu = ends_with(out, ".cu");
	if (target && strcmp(target, "c") != 0 && strcmp(target, "cuda") != 0) {
		usage_error("--target wants c or cuda, not '%s'", target);
		return RL_EXIT_USAGE;
	}
	if (target && (strcmp(target, "cuda") == 0) != to_cu) {
		usage_error("%s", strcmp(target, "cuda") == 0 ? "--target cuda writes OUT.cu"
		                                              : "--target c writes OUT.c");
		return RL_EXIT_USAGE;
	}
	if (!ends_with(out, ".c") && !ends_with(out, ".onnx") && !to_cu) {
		usage_error("output '%s' must end in .c, .cu or .onnx", out);
		return RL_EXIT_USAGE;
	}
	if (cuda_lib && !to_cu) {
		usage_error("%s", "--cuda-library is for the CUDA backend: use -o OUT.cu (or --target "
		            "cuda)");
		return RL_EXIT_USAGE;
	}
	if (static_mode && !ends_with(out, ".c")) {
		usage_error("%s", "--static is for the C backend: use -o OUT.c");
		return RL_EXIT_USAGE;
	}
	if (static_mode && (o.given & RL_OPT_BIT(RL_OPT_WEIGHTS_MAX))) {
		usage_error("%s", "--static embeds every constant: --weights-max does not apply");
		return RL_EXIT_USAGE;
	}
	unsigned used = (RL_OPT_BIT(RL_OPT_COUNT_) - 1) & ~RL_OPT_BIT(RL_OPT_BATCH_LIST);
	/* --threads prices the run (passes and --report), it does not set the
	 * generated code's default (NAME_set_threads does) */
	if (!o.report)
		used &= ~RL_OPT_BIT(RL_OPT_THREADS);
	/* --value: only the C backend writes the run-time check of a bound
	 * input; an ONNX file would lose it */
	if (!ends_with(out, ".c"))
		used &= ~RL_OPT_BIT(RL_OPT_VALUE);
	if (to_cu && !rl_cli_check_used(&o, used, "rlopt MODEL -o OUT.cu"))
		return RL_EXIT_USAGE;
	if (to_cu && !rl_cli_cuda_hw(&o))
		return RL_EXIT_INPUT;
	if (!ends_with(out, ".c") && !to_cu)
		used &= ~RL_OPT_BIT(RL_OPT_WEIGHTS_MAX); /* constants stay in the ONNX file */
	else
		used &= ~RL_OPT_BIT(RL_OPT_ONNX_FORMAT);
	if (!rl_cli_check_used(&o, used, ends_with(out, ".c") ? "rlopt MODEL -o OUT.c"
	                                                      : "rlopt MODEL -o OUT.onnx"))
		return RL_EXIT_USAGE;
	if (!rl_cli_check_out_dir(out))
		return RL_EXIT_INPUT;
	/* --report FILE: the format from --format, else FILE's extension */
	enum rl_report_format rfmt = RL_REPORT_TEXT;
	if (o.report) {
		if (o.format ? !rl_report_format_parse(o.format, &rfmt)
		             : !rl_report_format_from_path(o.report, &rfmt)) {
			usage_error("--report: cannot tell the format of '%s': use .txt, .json, .svg "
			            "or .html (or --format text|json|svg|html)", o.format ? o.format : o.report);
			return RL_EXIT_USAGE;
		}
		if (!rl_cli_check_out_dir(o.report))
			return RL_EXIT_INPUT;
	}
	bool to_c = ends_with(out, ".c");
	o.onnx_out = !to_c && !to_cu;
	struct rl_graph *g = rl_cli_load(model, &o, to_c || to_cu);
	if (!g)
		return RL_EXIT_INPUT;
	char err[1024];
	enum rl_status st;
	struct rl_machine m;
	struct rl_pass_ctx ctx;
	if (!rl_cli_optimize(g, &o, &m, &ctx)) {
		rl_pass_ctx_free(&ctx);
		rl_graph_free(g);
		return RL_EXIT_INPUT;
	}
	char *rbuf = NULL;
	size_t rlen = 0;
	if (o.report) {
		struct rl_report_series se = {.batch = o.batch > 0 ? o.batch : 0, .g = g};
		struct rl_report rep = {.model = model, .m = &m, .series = &se, .nseries = 1,
		                        .ctx = &ctx};
		if (rl_report_render(&rep, rfmt, &rbuf, &rlen, err, sizeof(err)) != RL_OK) {
			fprintf(stderr, "rlopt: %s\n", err);
			rl_pass_ctx_free(&ctx);
			rl_graph_free(g);
			return RL_EXIT_INPUT;
		}
	}
	rl_pass_ctx_free(&ctx);
	if (to_c) {
		struct rl_cgen_opts co = {.prefix = NULL, .weights_max = o.weights_max,
		                          .static_mode = static_mode};
		st = rl_emit_c(g, &co, out, err, sizeof(err));
	} else if (to_cu) {
		struct rl_cuda_opts cuo = {.prefix = NULL, .weights_max = o.weights_max,
		                           .eager = m.launch_mode == RL_LAUNCH_EAGER,
		                           .cublas = cublas};
		st = rl_emit_cuda(g, &cuo, out, err, sizeof(err));
	} else {
		st = rl_onnx_write_fmt(g, out, o.onnx_format, err, sizeof(err));
	}
	if (st == RL_OK && rbuf)
		st = rl_write_file_atomic(o.report, rbuf, rlen, err, sizeof(err));
	free(rbuf);
	if (st != RL_OK) {
		fprintf(stderr, "rlopt: %s\n", err);
		rl_graph_free(g);
		return RL_EXIT_INPUT;
	}
	if (o.verbose)
		fprintf(stderr, "rlopt: wrote %s\n", out);
	rl_graph_free(g);
	return RL_EXIT_OK;
}

static int cmd_ops(bool cuda)
{
	for (int i = 0; i < RL_OP_COUNT_; i++) {
		const char *note = cuda ? rl_emit_cuda_note((enum rl_op)i) : NULL;
		if (i == RL_OP_QuantMatMul) /* internal: made by the quantize pass */
			continue;
		if (!(cuda ? rl_emit_cuda_supports((enum rl_op)i) : rl_emit_c_supports((enum rl_op)i)))
			continue;
		/* ops of other domains as the conformance driver keys them */
		const char *dom = rl_op_domain((enum rl_op)i);
		if (note)
			printf("%s%s%-22s # %s\n", dom, *dom ? ":" : "", rl_op_table[i].name, note);
		else
			printf("%s%s%s\n", dom, *dom ? ":" : "", rl_op_table[i].name);
	}
	/* lowered by the reader into the operators above */
	for (int i = 0; !cuda && rl_onnx_lowered_op(i); i++)
		printf("%s\n", rl_onnx_lowered_op(i));
	return RL_EXIT_OK;
}

static int cmd_hw(void)
{
	rl_machine_list(stdout);
	return RL_EXIT_OK;
}

static int cmd_probe(int argc, char **argv)
{
	const char *out = NULL, *cc = NULL, *cflags = "-O2";
	bool calibrate = true;
	char host[4096];
	for (int i = 1; i < argc; i++) {
		const char *v;
		if (is_flag(argv[i], "-o")) {
			if (!(v = optval(argc, argv, &i, "-o")))
				return RL_EXIT_USAGE;
			out = v;
		} else if (is_flag(argv[i], "--cc")) {
			if (!(v = optval(argc, argv, &i, "--cc")))
				return RL_EXIT_USAGE;
			cc = v;
		} else if (is_flag(argv[i], "--cflags")) {
			if (!(v = optval(argc, argv, &i, "--cflags")))
				return RL_EXIT_USAGE;
			cflags = v;
		} else if (strcmp(argv[i], "--no-calibrate") == 0) {
			calibrate = false;
		} else {
			usage_error("unknown argument '%s' for probe", argv[i]);
			return RL_EXIT_USAGE;
		}
	}
	if (!out) {
		/* the default: the host profile that --hw host and the default use */
		if (!rl_machine_host_path(host, sizeof(host))) {
			usage_error("%s", "probe: no home folder; use -o FILE.xml");
			return RL_EXIT_USAGE;
		}
		char dir[4096];
		snprintf(dir, sizeof(dir), "%s", host);
		for (char *p = dir + 1; *p; p++)
			if (*p == '/') {
				*p = 0;
				mkdir(dir, 0755);
				*p = '/';
			}
		out = host;
	}
	if (!rl_cli_check_out_dir(out))
		return RL_EXIT_INPUT;
	struct rl_machine m;
	char err[512];
	static char comment[4096];
	if (rl_probe_run_ex(&m, stdout, comment, sizeof(comment), err, sizeof(err)) != RL_OK) {
		fprintf(stderr, "rlopt: %s\n", err);
		return RL_EXIT_INPUT;
	}
	if (!cc)
		cc = getenv("CC") && *getenv("CC") ? getenv("CC") : "cc";
	/* the rates of the emitted code; without them the profile is priced
	 * from its peak (a compiler missing is not an error of the probe) */
	double pool_fork = m.fork_latency;
	if (calibrate && !rl_calibrate(&m, cc, cflags, stdout))
		printf("probe: no calibrated rates (the report will price compute from the peak)\n");
	if (m.fork_latency != pool_fork) {
		/* the figure written is the emitted pool's (tools/calib.c) */
		size_t len = strlen(comment);
		snprintf(comment + len, sizeof(comment) - len,
		         "\nfork written: %.2f us, the generated code's own pool (rl_parallel_for on\n"
		         "  2 chunks of known work per thread, calibration), not the figure above.",
		         m.fork_latency * 1e6);
	}
	if (rl_machine_write(&m, out, comment, err, sizeof(err)) != RL_OK) {
		fprintf(stderr, "rlopt: %s\n", err);
		return RL_EXIT_INPUT;
	}
	printf("probe: wrote %s\n", out);
	return RL_EXIT_OK;
}

/*
 * An installed rlopt (PREFIX/bin/rlopt, or the copy inside the Python wheel)
 * finds its profiles in ../share/rlopt/hw beside itself, wherever the prefix
 * was moved. $RLOPT_HW_DIR still wins; a binary in the build tree has no such
 * folder and keeps the compiled-in source path. Done by setting RLOPT_HW_DIR
 * before any profile loads, so `rlopt run`'s children see the same folder.
 */
static void use_installed_hw_dir(void)
{
	const char *e = getenv("RLOPT_HW_DIR");
	if (e && *e)
		return;
	char exe[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
	if (n <= 0)
		return;
	exe[n] = 0;
	char *slash = strrchr(exe, '/');
	if (!slash)
		return;
	*slash = 0;
	char dir[PATH_MAX + 32], xsd[PATH_MAX + 48], real[PATH_MAX];
	snprintf(dir, sizeof dir, "%s/../share/rlopt/hw", exe);
	snprintf(xsd, sizeof xsd, "%s/machine.xsd", dir);
	if (access(xsd, R_OK) == 0 && realpath(dir, real))
		setenv("RLOPT_HW_DIR", real, 1);
}

int main(int argc, char **argv)
{
	use_installed_hw_dir();
	if (argc < 2) {
		fputs(usage_text, stderr);
		return RL_EXIT_USAGE;
	}
	const char *c = argv[1];
	if (strcmp(c, "--help") == 0 || strcmp(c, "-h") == 0 || strcmp(c, "help") == 0) {
		fputs(usage_text, stdout);
		return RL_EXIT_OK;
	}
	if (strcmp(c, "--version") == 0) {
		printf("rlopt %s\n", RL_VERSION);
		return RL_EXIT_OK;
	}
	if (strcmp(c, "run") == 0)
		return rl_cmd_run(argc - 1, argv + 1);
	if (strcmp(c, "report") == 0)
		return rl_cmd_report(argc - 1, argv + 1);
	if (strcmp(c, "diff") == 0)
		return rl_cmd_diff(argc - 1, argv + 1);
	if (strcmp(c, "ops") == 0 && argc == 4 && strcmp(argv[2], "--target") == 0 &&
	    (strcmp(argv[3], "cuda") == 0 || strcmp(argv[3], "c") == 0))
		return cmd_ops(strcmp(argv[3], "cuda") == 0);
	if ((strcmp(c, "ops") == 0 || strcmp(c, "hw") == 0) && argc > 2) {
		fprintf(stderr, "rlopt: %s: takes no options or arguments, not '%s'\n", c, argv[2]);
		return RL_EXIT_USAGE;
	}
	if (strcmp(c, "ops") == 0)
		return cmd_ops(false);
	if (strcmp(c, "hw") == 0)
		return cmd_hw();
	if (strcmp(c, "probe") == 0)
		return cmd_probe(argc - 1, argv + 1);
	return cmd_main(argc, argv);
}
