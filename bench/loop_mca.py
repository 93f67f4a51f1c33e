#!/usr/bin/env python3
"""loop_mca.py - instructions and llvm-mca cycles per iteration of the hot loop
of each ISA clone of a generated kernel, for speed evidence on a machine whose
timings are not valid (shared, or a VM without hardware counters).

    loop_mca.py MODEL.onnx KERNEL_PREFIX [--rlopt build/rlopt] [--cc cc]
                [--rlopt-args "-O2"] [--keep DIR]

Generates the C (`rlopt MODEL -o`), compiles it with `CC -std=c11 -O2 -S` as
users compile it, and for every function whose name starts with KERNEL_PREFIX
(its target clones included: NAME.arch_x86_64_v4, NAME.arch_x86_64_v3,
NAME.default) takes the longest loop closed by a backward branch and runs it
through llvm-mca (-mcpu: icelake-server for the AVX-512 clone, znver3 for the
others: llvm-mca 14 models no Zen 4). Prints one line per function:

    k0_fused_abs__add_out_range.arch_x86_64_v4 [icelake-server]: 105 instructions/iter, 53.3 cycles/iter

It also counts scalar float compares ((v)(u)comiss) in each loop: a clone
that lowers a vector select lane by lane shows them (see emit_rt.c, rl_vif).
Exit status 0, or 1 when something fails to generate or compile.

The ew_chain model of bench_kernels.py, for instance:

    build/venv/bin/python -c "import sys; sys.path.insert(0, 'bench'); \
        import bench_kernels as b; b.ew_chain_model('/tmp/ew_chain.onnx')"
    build/venv/bin/python bench/loop_mca.py /tmp/ew_chain.onnx k0_
"""
import argparse
import os
import re
import shlex
import subprocess
import sys
import tempfile


def loops(asm, prefix):
    """(function, [instruction lines of its longest backward-branch loop])"""
    lines = asm.split("\n")
    i = 0
    while i < len(lines):
        m = re.match(r"^([A-Za-z_][\w.]*):$", lines[i])
        if not m or not m.group(1).startswith(prefix) or m.group(1).endswith(".resolver"):
            i += 1
            continue
        fn, start = m.group(1), i
        end = start
        while end < len(lines) and not (lines[end].strip().startswith(".size") and fn in lines[end]):
            end += 1
        body = lines[start:end]
        labels = {l[:-1]: k for k, l in enumerate(body) if re.match(r"^\.L\w+:$", l)}
        best = None
        for k, l in enumerate(body):
            b = re.match(r"^\s+j\w+\s+(\.L\w+)$", l)
            if b and b.group(1) in labels and labels[b.group(1)] < k:
                s = labels[b.group(1)]
                if best is None or k - s > best[1] - best[0]:
                    best = (s, k)
        if best:
            yield fn, [l for l in body[best[0] + 1:best[1] + 1]
                       if l.strip() and not l.strip().startswith(".") and not re.match(r"^\.L\w+:$", l)]
        i = end + 1


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("model")
    ap.add_argument("prefix")
    ap.add_argument("--rlopt", default="build/rlopt")
    ap.add_argument("--cc", default=os.environ.get("CC", "cc"))
    ap.add_argument("--rlopt-args", default="")
    ap.add_argument("--keep", help="write the .c and .s here")
    a = ap.parse_args()
    d = a.keep or tempfile.mkdtemp(prefix="loop_mca_")
    os.makedirs(d, exist_ok=True)
    c, s = os.path.join(d, "m.c"), os.path.join(d, "m.s")
    try:
        subprocess.run([a.rlopt, a.model, "-o", c] + shlex.split(a.rlopt_args), check=True)
        subprocess.run([a.cc, "-std=c11", "-O2", "-S", c, "-o", s], check=True)
    except (subprocess.CalledProcessError, OSError) as e:
        print(f"loop_mca.py: {e}", file=sys.stderr)
        return 1
    with open(s) as f:
        asm = f.read()
    for fn, loop in loops(asm, a.prefix):
        cpu = "icelake-server" if "x86_64_v4" in fn else "znver3"
        scalar = sum(1 for l in loop if re.match(r"^\s+v?u?comiss\s", l))
        r = subprocess.run(["llvm-mca", f"-mcpu={cpu}", "-iterations=200"], input="\n".join(loop) + "\n",
                           capture_output=True, text=True)
        t = re.search(r"Total Cycles:\s+(\d+)", r.stdout)
        cyc = f"{int(t.group(1)) / 200:.1f} cycles/iter" if t else "llvm-mca failed"
        print(f"{fn} [{cpu}]: {len(loop)} instructions/iter, {cyc}, {scalar} scalar compares")
    return 0


if __name__ == "__main__":
    sys.exit(main())
