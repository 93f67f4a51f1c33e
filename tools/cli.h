/*
 * cli.h - shared pieces of the `rlopt` command line (tools/ only).
 *
 * Exit codes (documented in README and --help):
 *   0  success
 *   1  usage error (unknown flag, missing argument, bad flag value)
 *   2  bad or unsupported input (model, profile, tensor file, output path)
 *   3  `rlopt diff --fail-on-slowdown` found a slowdown
 *   4  the generated program failed to compile, crashed or timed out (run)
 */
#ifndef RL_CLI_H
#define RL_CLI_H

#include "ir.h"
#include "machine.h"

enum {
	RL_EXIT_OK = 0,
	RL_EXIT_USAGE = 1,
	RL_EXIT_INPUT = 2,
	RL_EXIT_SLOWDOWN = 3,
	RL_EXIT_RUNTIME = 4,
};

#define RL_MAX_BIND 32

/* The shared options, as bits of rl_cli_opts.given: each command states the
 * ones it uses (rl_cli_check_used) and any other is a usage error, never
 * silently ignored. */
enum rl_cli_opt {
	RL_OPT_BATCH,         /* --batch N */
	RL_OPT_BATCH_LIST,    /* --batch N,N,... (two or more) */
	RL_OPT_SHAPE,         /* --shape */
	RL_OPT_DIM,           /* --dim */
	RL_OPT_HW,            /* --hw */
	RL_OPT_WEIGHTS_MAX,   /* --weights-max */
	RL_OPT_PASSES,        /* --passes */
	RL_OPT_DUMP_AFTER,    /* --dump-after */
	RL_OPT_REPORT,        /* --report */
	RL_OPT_FORMAT,        /* --format */
	RL_OPT_OLEVEL,        /* -O0 / -O1 / -O2 */
	RL_OPT_FACTORIZE,     /* --factorize */
	RL_OPT_MAX_REL_ERROR, /* --max-rel-error */
	RL_OPT_REMARKS,       /* --remarks */
	RL_OPT_VERBOSE,       /* -v */
	/* weight quantization (passes/quantize.c) */
	RL_OPT_QUANTIZE,      /* --quantize */
	RL_OPT_BLOCK,         /* --block */
	RL_OPT_SCALE_TYPE,    /* --scale-type f16|f32 */
	RL_OPT_CALIBRATE,     /* --calibrate */
	RL_OPT_ONNX_FORMAT,   /* --onnx-format */
	RL_OPT_LAUNCH,        /* --launch eager|graph */
	RL_OPT_VALUE,         /* --value NAME=FILE.pb (generated code only) */
	RL_OPT_SEQ,           /* --seq NAME=LEN, --optional NAME */
	RL_OPT_THREADS,       /* --threads N */
	RL_OPT_COUNT_,
};
#define RL_OPT_BIT(x) (1u << (x))
/* --threads N takes 1..RL_CLI_MAX_THREADS (a 96-core profile is priced at
 * up to 96); `rlopt run` further caps it at the generated runtime's 64 */
#define RL_CLI_MAX_THREADS 4096

/* Options shared by every subcommand that loads a model. */
struct rl_cli_opts {
	int batch;                 /* --batch N (first of a list); -1 unset */
	int64_t batches[16];       /* --batch 1,8,64 */
	int nbatches;
	struct {
		const char *name;
		struct rl_shape shape;
	} shapes[RL_MAX_BIND];     /* --shape NAME=1x3x224x224 */
	int nshapes;
	struct {
		const char *sym;
		int64_t v;
	} dims[RL_MAX_BIND];       /* --dim SYMBOL=N */
	int ndims;
	const char *hw;            /* --hw NAME|FILE.xml */
	int opt_level;             /* -O0 / -O1 / -O2 */
	const char *passes;        /* --passes a,b,c */
	const char *dump_after;    /* --dump-after PASS */
	bool remarks;              /* --remarks */
	const char *report;        /* --report FILE */
	const char *format;        /* --format text|json|svg|html */
	long long weights_max;     /* --weights-max BYTES (C backend side file) */
	bool onnx_out;             /* the result is written as ONNX (-o OUT.onnx) */
	bool factorize;            /* --factorize: apply accepted factorizations */
	double max_rel_error;      /* --max-rel-error E (default 1e-2) */
	/* weight quantization (passes/quantize.c) */
	int quantize;              /* --quantize: enum rl_quant_mode (ir/qweights.h) */
	int quant_block;           /* --block 32|64|128 (default 32) */
	int quant_scale32;         /* --scale-type f32 (default f16) */
	const char *calib[RL_MAX_BIND]; /* --calibrate IN.pb[,IN.pb...], per graph input */
	int ncalib;
	int onnx_format;           /* --onnx-format: 0 qdq, 1 matmulnbits */
	int threads;               /* --threads N: the threads the generated code runs
	                              with (rlopt run) and the prediction assumes
	                              (report); 0 = every core */
	int launch;                /* --launch: enum rl_launch_mode; -1 = the profile's
	                              default (graph on a GPU, calls on a CPU) */
	struct {
		const char *name;
		const char *path;
	} values[RL_MAX_BIND];     /* --value NAME=FILE.pb: bind an input's data */
	int nvalues;
	struct {
		const char *name;
		int len;           /* -1: --optional NAME alone */
	} seqs[RL_MAX_BIND];       /* --seq NAME=LEN, --optional NAME (frontends/onnx/onnx.h) */
	int nseqs;
	bool verbose;
	unsigned given;            /* RL_OPT_BIT of every shared option given */
	const char *given_as[RL_OPT_COUNT_]; /* its spelling, for messages */
};

void rl_cli_opts_init(struct rl_cli_opts *o);
/*
 * Try to consume one shared option at argv[*i]. Returns 1 if consumed (and
 * advances *i past its value), 0 if not a shared option, -1 on a usage error
 * (message printed).
 */
int rl_cli_parse_common(struct rl_cli_opts *o, int argc, char **argv, int *i);
/*
 * Every shared option given must be in `used` (RL_OPT_BIT set) and the ones
 * that only mean something together must come together (-O with --passes,
 * --max-rel-error without --factorize, ...). Else prints one line,
 * "rlopt: CMD: option 'X' is not used by CMD" or the conflict, and returns
 * false (exit 1).
 */
bool rl_cli_check_used(const struct rl_cli_opts *o, unsigned used, const char *cmd);
/* Parse "1x3x224x224"; false on garbage. */
bool rl_cli_parse_dims(const char *s, struct rl_shape *out);
/* Parse "1,8,64"; false on garbage. */
bool rl_cli_parse_list(const char *s, int64_t *out, int max, int *n);

/* Load, bind (--batch, --shape, --dim), infer, verify. Prints the error and
 * returns NULL on failure. */
struct rl_graph *rl_cli_load(const char *path, const struct rl_cli_opts *o,
                             bool need_static);

/* Same, binding the inputs to the files paths[0..npaths), one per graph
 * input (rlopt run): a tensor file binds the symbolic dims of its input, a
 * SequenceProto a sequence input's length and element shapes, an
 * OptionalProto an optional input's presence. files[0..npaths) receive
 * what was read (rl_value_file_free each, also on failure); their tensors,
 * in order, are g->inputs'. With auto_bind, an integer input tensor of at
 * most RL_AUTO_BIND_MAX elements whose value decides a shape that inference
 * cannot fix otherwise is bound to its data (rl_graph_bind_value), with a
 * line on stderr saying so. */
#define RL_AUTO_BIND_MAX 64
struct rl_value_file;
/* Graph input positions for n tensors by their names (pos[i] for the i-th);
 * false when a name is empty, unknown or repeated, or n is not the input
 * count: then the order given stands. */
bool rl_cli_match_names(const struct rl_graph *g, const char *const *names, int n, int *pos);
struct rl_graph *rl_cli_load_ex(const char *path, const struct rl_cli_opts *o,
                                bool need_static, const char *const *paths, int npaths,
                                struct rl_value_file *files, bool auto_bind);
/* Run the pass pipeline per -O/--passes/--dump-after/--remarks, on the
 * machine from --hw (or the default). Prints the error; returns false. */
struct rl_pass_ctx;
bool rl_cli_optimize(struct rl_graph *g, const struct rl_cli_opts *o,
                     struct rl_machine *m, struct rl_pass_ctx *ctx);
/* Load the --hw profile (or the default); prints the error. */
bool rl_cli_machine(const struct rl_cli_opts *o, struct rl_machine *m);
/* The folder of an output path must exist; prints the error. */
bool rl_cli_check_out_dir(const char *path);

/* CUDA (cuda_cli.c): --hw defaults to a GPU profile; a CPU profile is
 * refused with one line. */
bool rl_cli_cuda_hw(struct rl_cli_opts *o);
/* --cuda-library V: cublas or none (rlopt's own kernels, the default) into
 * *cublas; anything else prints a usage error and returns false (exit 1). */
bool rl_cli_cuda_library(const char *v, bool *cublas);

int rl_cmd_run(int argc, char **argv);
/* Run argv (argv[0] looked up in PATH) with stdout and stderr to the file
 * log, in cwd (NULL: here), killed after timeout_s. Returns the wait status
 * (0: exited 0), -1 on time-out, -2 when it could not start. */
int rl_cli_run_child(char *const argv[], const char *log, const char *cwd, int timeout_s);
/* Time the code rlopt emits for each calibrated class (tools/calib.c) with
 * `cc cflags` on one thread and store the rates in m; false (m untouched,
 * a line to log) when it could not. */
bool rl_calibrate(struct rl_machine *m, const char *cc, const char *cflags, FILE *log);
int rl_cmd_report(int argc, char **argv);
int rl_cmd_diff(int argc, char **argv);

#endif /* RL_CLI_H */
