#!/usr/bin/env python3
"""Where a CNN's time goes: rlopt's generated C against onnxruntime, kernel by kernel.

For each model this

  1. generates C with rlopt (default -O2; --rlopt-args adds flags) and builds it
     twice with `cc -std=c11 -O2` and bench/timing_harness.c: as generated (the
     whole-model time) and with the run function instrumented, each kernel call
     bracketed by clock_gettime(CLOCK_MONOTONIC) (a vDSO read, about 20 ns; the
     thread CPU clock is a system call in this VM), samples kept per kernel;
  2. runs onnxruntime (CPUExecutionProvider, ORT_ENABLE_ALL, 1 intra-op thread,
     sequential) with SessionOptions.enable_profiling and reads the per-node
     `*_kernel_time` durations (microseconds, whole ones) from its JSON;
  3. aligns the two: each of our kernels names the ONNX nodes it replaces (its
     comment); each ORT node is named after one of the model's nodes (suffixes
     such as `_nchwc` stripped; else the node writing the tensor of that name;
     else the longest model node name that prefixes it).
     An ORT node lands on the row of our kernel that runs that model node; a
     node we fold away (BatchNormalization into the Conv's weights) follows its
     input's producer; a node we run as a view (Flatten, Reshape) gets a row
     with no kernel of ours; ORT nodes of no model node (ReorderInput/Output:
     its NCHWc layout changes) get rows of their own.

Both sides run one thread (--threads T: T on both sides, the whole-model line
then in wall-clock time, as a T-thread run's calling-thread CPU time would
leave the workers out). Per kernel it prints the minimum over the runs (and
with --median the median): the least disturbed figure on a shared machine,
where wall times of whole runs are not valid; a kernel of a few microseconds
is rarely preempted, and the minimum drops the runs that were. The sums of the
columns are sums of per-kernel minima (below a whole run's minimum); the
whole-model line below them is the uninstrumented build's minimum thread CPU
time per run (timing_harness cpu_min_s) and onnxruntime's minimum thread CPU
time per run without profiling, both the best of --rounds interleaved rounds.

Usage: bench_cnn_split.py [--rlopt build/rlopt] [--models resnet_small,light_resnet50]
                          [--runs N] [--rounds R] [--threads T] [--median] [--rlopt-args ARGS]
                          [--work DIR] [--keep]
  a model is an example name (examples/NAME.onnx), a light_* model of the onnx
  wheel, or a path to an .onnx file.
"""
import argparse
import collections
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
import time

import numpy as np
import onnx

HERE = os.path.dirname(os.path.abspath(__file__))
SOURCE = os.path.normpath(os.path.join(HERE, ".."))
sys.dont_write_bytecode = True
sys.path.insert(0, os.path.join(SOURCE, "tests", "py"))
import rltest  # noqa: E402
import bench_ort  # noqa: E402  (ort_session)

CALL = re.compile(r"^(\s+)(k(\d+)_\w*)\((.*)\);\s*$")

# the instrumentation: samples per kernel call site, written at exit
SPLIT_C = r"""
/* ---- bench_cnn_split.py: per-kernel wall time of each run ---- */
#include <time.h>
#define RL_SPLIT_MAX 8192
static double rl_split_s[RL_SPLIT_N][RL_SPLIT_MAX];
static int rl_split_cnt[RL_SPLIT_N];
static const char *const rl_split_name[RL_SPLIT_N] = {RL_SPLIT_NAMES};
static double rl_split_now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}
static void rl_split_add(int i, double dt)
{
    if (rl_split_cnt[i] < RL_SPLIT_MAX)
        rl_split_s[i][rl_split_cnt[i]++] = dt;
}
static int rl_split_cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}
__attribute__((destructor)) static void rl_split_dump(void)
{
    const char *path = getenv("RL_SPLIT_OUT");
    FILE *f = path ? fopen(path, "w") : NULL;
    if (!f)
        return;
    for (int i = 0; i < RL_SPLIT_N; i++) {
        int n = rl_split_cnt[i];
        if (n == 0)
            continue;
        qsort(rl_split_s[i], (size_t)n, sizeof(double), rl_split_cmp);
        fprintf(f, "%s %d %.9f %.9f\n", rl_split_name[i], n, rl_split_s[i][0], rl_split_s[i][n / 2]);
    }
    fclose(f);
}
"""


class BenchError(Exception):
    pass


def sh(cmd, timeout=1800, env=None, what=None):
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=env)
    if r.returncode != 0:
        raise BenchError(f"{what or cmd[0]}: exit {r.returncode}: {(r.stderr or r.stdout).strip()[-800:]}")
    return r.stdout


def model_path(name, work):
    if os.path.exists(name):
        return name
    ex = os.path.join(SOURCE, "examples", name + ".onnx")
    if os.path.exists(ex):
        return ex
    p = os.path.join(rltest.onnx_data_dir(), "light", name + ".onnx")
    if os.path.exists(p):
        return p
    raise BenchError(f"unknown model {name!r} (an example name, a light_* model or a path)")


# ---- our side -------------------------------------------------------------------


def kernel_nodes(text):
    """{kernel id 'k13': [model node names]} from the comment above each kernel,
    and the names of the nodes run as views"""
    nodes, pending = {}, None
    lines = text.splitlines()
    i = 0
    while i < len(lines):
        ln = lines[i]
        m = re.match(r"^/\* fused: \w+ '([^']*)'", ln) or re.match(r"^/\* fused\b", ln)
        if m:
            pending = []
            i += 1
            while i < len(lines) and lines[i].startswith(" *   '"):
                pending.append(re.match(r" \*   '([^']*)'", lines[i]).group(1))
                i += 1
            continue
        m = re.match(r"^/\* node '([^']*)' \(", ln)
        if m:
            pending = [m.group(1)]
        m = re.match(r"^static .*\b(k\d+)_\w*\(", ln)
        if m and pending is not None:
            nodes.setdefault(m.group(1), pending)
            pending = None
        i += 1
    views = re.findall(r"/\* '([^']*)' \(\w+\): a view of", text)
    return nodes, views


def instrument(text, prefix):
    """the run function with every kernel call timed; returns (text, [kernel names])"""
    start = text.find(f"\nint {prefix}_run_v(")
    if start < 0:
        raise BenchError(f"no {prefix}_run_v in the generated C")
    end = text.find("\n}\n", start)
    body = text[start:end].split("\n")
    names = []
    for j, ln in enumerate(body):
        m = CALL.match(ln)
        if not m:
            continue
        ind, name = m.group(1), m.group(2)
        body[j] = (f"{ind}{{ double rl_t0_ = rl_split_now(); {ln.strip()} "
                   f"rl_split_add({len(names)}, rl_split_now() - rl_t0_); }}")
        names.append(name)
    if not names:
        raise BenchError("no kernel calls in the run function")
    head = SPLIT_C.replace("RL_SPLIT_NAMES", ", ".join(f'"{n}"' for n in names)) \
                  .replace("RL_SPLIT_N", str(len(names)))
    return text[:start] + "\n" + head + "\n".join(body) + text[end:], names


class Ours:
    def __init__(self, a, name, path, work):
        # a model given as a path works in a folder named after its file
        self.dir = os.path.join(work, os.path.splitext(os.path.basename(name))[0])
        os.makedirs(self.dir, exist_ok=True)
        c = os.path.join(self.dir, "m.c")
        sh([a.rlopt, path, "-o", c] + shlex.split(a.rlopt_args), what=f"rlopt {name}")
        with open(c) as f:
            text = f.read()
        with open(os.path.join(self.dir, "m.h")) as f:
            hdr = f.read()
        self.upper = re.search(r"#define (\w+)_NUM_INPUTS ", hdr).group(1)
        self.threads = re.search(r"\bm_set_threads\s*\(", hdr) is not None
        self.nthreads = a.threads
        self.nodes, self.views = kernel_nodes(text)
        split, self.order = instrument(text, "m")
        with open(os.path.join(self.dir, "split.c"), "w") as f:
            f.write(split)
        w = os.path.join(self.dir, "m.weights")
        self.weights = ["--weights", w] if os.path.exists(w) else []
        self.exe = self.build("m.c", "plain")
        self.split_exe = self.build("split.c", "split")

    def build(self, src, tag):
        exe = os.path.join(self.dir, tag)
        sh([os.environ.get("CC", "cc"), "-std=c11", "-O2", "-I", self.dir, '-DRL_MODEL_HEADER="m.h"',
            "-DRL_PREFIX=m", f"-DRL_PREFIX_UC={self.upper}"] +
           (["-DRL_HAVE_THREADS"] if self.threads else []) +
           [os.path.join(HERE, "timing_harness.c"), os.path.join(self.dir, src), "-o", exe, "-lm",
            "-pthread"], what=f"cc {src}")
        return exe

    def run(self, exe, runs, env=None):
        out = sh([exe, "--runs", str(runs), "--warmup", "3"] + self.weights +
                 (["--threads", str(self.nthreads)] if self.threads else []), env=env, what=os.path.basename(exe))
        return dict(ln.split()[:2] for ln in out.splitlines() if len(ln.split()) >= 2)

    def split(self, runs):
        """{kernel name: (min_s, median_s)} over runs"""
        out = os.path.join(self.dir, "split.txt")
        self.run(self.split_exe, runs, dict(os.environ, RL_SPLIT_OUT=out))
        res = {}
        with open(out) as f:
            for ln in f:
                k, _n, mn, med = ln.split()
                res[k] = (float(mn), float(med))
        return res


# ---- onnxruntime ------------------------------------------------------------------


def ort_session(path, profile, prefix=None, threads=1):
    sess = bench_ort.ort_session(path, threads, prefix if profile else None)
    rng = np.random.default_rng(1)
    bind = sess.io_binding()
    for i in sess.get_inputs():
        shape = [d if isinstance(d, int) and d > 0 else 1 for d in i.shape]
        if i.type != "tensor(float)":
            raise BenchError(f"input {i.name}: {i.type}; this tool feeds float32 only")
        bind.bind_cpu_input(i.name, rng.uniform(-1, 1, shape).astype(np.float32))
    for o in sess.get_outputs():
        bind.bind_output(o.name, "cpu")
    for _ in range(3):
        sess.run_with_iobinding(bind)
    return sess, bind


def ort_split(path, runs, work, threads=1):
    """[(ORT node name, op, min_s, median_s)] in execution order"""
    sess, bind = ort_session(path, True, os.path.join(work, "ort_profile"), threads)
    for _ in range(runs):
        sess.run_with_iobinding(bind)
    prof = sess.end_profiling()
    with open(prof) as f:
        events = json.load(f)
    durs, ops, order = collections.defaultdict(list), {}, []
    for e in events:
        if e.get("cat") != "Node" or not e.get("name", "").endswith("_kernel_time"):
            continue
        n = e["name"][:-len("_kernel_time")]
        if n not in ops:
            order.append(n)
        ops[n] = e.get("args", {}).get("op_name", "?")
        durs[n].append(e["dur"] * 1e-6)
    out = []
    for n in order:
        v = sorted(durs[n])
        out.append((n, ops[n], v[0], v[len(v) // 2]))
    return out


def ort_model_cpu(path, runs, threads=1):
    """least thread CPU time per run (1 thread) or least wall time (more)"""
    sess, bind = ort_session(path, False, None, threads)
    clock = time.thread_time if threads == 1 else time.perf_counter
    best = None
    for _ in range(runs):
        t0 = clock()
        sess.run_with_iobinding(bind)
        t = clock() - t0
        best = t if best is None else min(best, t)
    return best


# ---- alignment ----------------------------------------------------------------------


def align(model, ours, ort_nodes):
    """rows [(label, our kernel or None, [ORT entries])]"""
    names = {n.name for n in model.graph.node}
    producer = {o: n for n in model.graph.node for o in n.output}
    byname = {n.name: n for n in model.graph.node}
    covered = {}
    for k, ns in ours.nodes.items():
        for n in ns:
            covered.setdefault(n, k)
    kid = {re.match(r"k\d+", k).group(0): k for k in ours.order}
    rows = collections.OrderedDict((k, []) for k in ours.order)
    extra = collections.OrderedDict()

    def model_node(ort_name):
        if ort_name in names:
            return ort_name
        base = re.sub(r"_nchwc$", "", ort_name)
        if base in names:
            return base
        if base in producer:  # named after the tensor it writes (light_*: r2 of node n2)
            return producer[base].name
        best = None
        for n in names:
            if ort_name.startswith(n) and (best is None or len(n) > len(best)):
                best = n
        return best

    for e in ort_nodes:
        n = model_node(e[0])
        k = None
        seen = 0
        while n is not None and seen < 8:
            if n in covered and covered[n] in kid:
                k = kid[covered[n]]
                break
            if n in ours.views:
                break
            nd = byname[n]
            p = producer.get(nd.input[0]) if nd.input else None
            n = p.name if p is not None else None
            seen += 1
        if k is not None:
            rows[k].append(e)
        else:
            label = (f"(view) {model_node(e[0])}" if model_node(e[0]) in ours.views
                     else f"(ORT only) {e[1]}")
            extra.setdefault(label, []).append(e)
    return [(k, k, v) for k, v in rows.items()] + [(lab, None, v) for lab, v in extra.items()]


def report(a, name, path, work):
    model = onnx.load(path, load_external_data=False)
    ours = Ours(a, name, path, work)
    best_split, best_ort, best_model = {}, {}, [None, None]
    for _ in range(a.rounds):
        s = ours.split(a.runs)
        for k, v in s.items():
            best_split[k] = v if k not in best_split else (min(best_split[k][0], v[0]),
                                                           min(best_split[k][1], v[1]))
        for n, op, mn, med in ort_split(path, a.runs, work, a.threads):
            b = best_ort.get(n)
            best_ort[n] = (n, op, mn, med) if b is None else (n, op, min(b[2], mn), min(b[3], med))
        m = float(ours.run(ours.exe, a.runs)["cpu_min_s" if a.threads == 1 else "min_s"])
        o = ort_model_cpu(path, a.runs, a.threads)
        best_model = [m if best_model[0] is None else min(best_model[0], m),
                      o if best_model[1] is None else min(best_model[1], o)]
    col = 3 if a.median else 2
    idx = 1 if a.median else 0
    rows = align(model, ours, list(best_ort.values()))
    stat = "median" if a.median else "min"
    print(f"\n== {name}: per kernel, {stat} over {a.runs} runs (best of {a.rounds} rounds), "
          f"{a.threads} thread{'s' if a.threads > 1 else ''}, microseconds")
    print(f"{'our kernel':44s} {'ours':>8s}  {'ORT nodes (op)':44s} {'ORT':>8s} {'ours/ORT':>8s}")
    tot_o, tot_r = 0.0, 0.0
    for label, k, ents in rows:
        us = best_split[k][idx] * 1e6 if k else 0.0
        ru = sum(e[col] for e in ents) * 1e6
        tot_o += us
        tot_r += ru
        desc = ", ".join(f"{e[0]} ({e[1]})" for e in ents) or "-"
        ratio = f"{us / ru:8.2f}" if ru > 0 and us > 0 else f"{'':8s}"
        print(f"{label[:44]:44s} {us:8.1f}  {desc[:44]:44s} {ru:8.1f} {ratio}")
    print(f"{'sum of kernels':44s} {tot_o:8.1f}  {'':44s} {tot_r:8.1f} {tot_o / tot_r:8.2f}")
    whole = "thread CPU" if a.threads == 1 else "wall-clock"
    print(f"{'whole model, ' + whole + ' min per run':44s} {best_model[0] * 1e6:8.1f}  {'':44s} "
          f"{best_model[1] * 1e6:8.1f} {best_model[0] / best_model[1]:8.2f}", flush=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rlopt", default=os.path.join(SOURCE, "build", "rlopt"))
    ap.add_argument("--models", default="resnet_small,light_resnet50")
    ap.add_argument("--runs", type=int, default=200)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--threads", type=int, default=1,
                    help="threads on both sides (default 1)")
    ap.add_argument("--median", action="store_true", help="medians per kernel instead of minima")
    ap.add_argument("--rlopt-args", default="", help="more rlopt flags, e.g. '-O0'")
    ap.add_argument("--work", help="keep the generated files here")
    ap.add_argument("--keep", action="store_true", help="keep the temporary folder")
    a = ap.parse_args()
    if a.threads < 1:
        ap.error("--threads must be a positive integer")
    work = a.work or tempfile.mkdtemp(prefix="cnn_split_")
    os.makedirs(work, exist_ok=True)
    try:
        for name in [m.strip() for m in a.models.split(",") if m.strip()]:
            report(a, name, model_path(name, work), work)
    except (BenchError, subprocess.TimeoutExpired) as e:
        print(f"bench_cnn_split: {e}", file=sys.stderr)
        return 1
    finally:
        if not a.work and not a.keep:
            shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
