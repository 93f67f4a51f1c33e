#!/usr/bin/env python3
"""loop_mca.py - instructions and llvm-mca cycles per iteration of the hot loop
of each ISA clone of a generated kernel, for speed evidence on a machine whose
timings are not valid (shared, or a VM without hardware counters).

    loop_mca.py MODEL.onnx KERNEL_PREFIX [--rlopt build/rlopt] [--cc cc]
                [--rlopt-args "-O2"] [--cflags "-std=c11 -O2"] [--keep DIR]
                [--min-instructions N]

Generates the C (`rlopt MODEL -o`), compiles it with `CC -std=c11 -O2 -S` as
users compile it (--cflags "-O3 -march=native" for the reference build), and for every function whose name starts with KERNEL_PREFIX
(its target clones included: NAME.arch_x86_64_v4, NAME.arch_x86_64_v3,
NAME.default) takes each innermost loop closed by a conditional backward
branch (of at least N instructions, default 12) and runs it through llvm-mca
(-mcpu: icelake-server for the AVX-512 clone, znver3 for the others: llvm-mca
14 models no Zen 4). Prints one line per loop, in the order of the code; a
kernel with a Sqrt has two, its x86-64-v4 copy first (see emit_fused.c; only
that copy runs on a CPU with x86-64-v4, only the second one elsewhere):

    k0_fused_abs__add_out_range.arch_x86_64_v4 [icelake-server]: 75 instructions/iter, 42.7 cycles/iter, 0 scalar compares

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


def loops(asm, prefix, min_len=12):
    """(function, [instruction lines of one loop]) for every innermost loop:
    the code from a label to a conditional branch back to it, holding no
    other such loop of min_len instructions or more (an unconditional `jmp`
    back is block layout, not a loop). A kernel can have several, e.g. a Sqrt kernel's x86-64-v4 copy
    of its loop beside the plain one (emit_fused.c): each is given."""
    lines = asm.split("\n")
    i = 0
    while i < len(lines):
        # GCC: NAME.arch_x86_64_v4:  Clang: "NAME.arch_x86-64-v4.0": or NAME.avx512f.0:
        m = re.match(r'^"?([A-Za-z_][\w.\-]*)"?:', lines[i])
        if not m or not m.group(1).startswith(prefix) or m.group(1).endswith(".resolver"):
            i += 1
            continue
        fn, start = m.group(1), i
        end = start
        while end < len(lines) and not (lines[end].strip().startswith(".size") and fn in lines[end]):
            end += 1
        # Clang's assembly carries "# ..." comments after labels and instructions
        body = [re.sub(r"\s+#.*$", "", l) for l in lines[start:end]]
        labels = {l[:-1]: k for k, l in enumerate(body) if re.match(r"^\.L\w+:$", l)}
        def insns(s, k):
            return [l for l in body[s + 1:k + 1]
                    if l.strip() and not l.strip().startswith((".", "#"))
                    and not re.match(r"^\.L\w+:$", l)]
        spans = []
        for k, l in enumerate(body):
            b = re.match(r"^\s+j(?!mp)\w+\s+(\.L\w+)$", l)
            if b and b.group(1) in labels and labels[b.group(1)] < k:
                spans.append((labels[b.group(1)], k))
        for s, k in spans:
            # an outer loop whose inner loops are short (the lane loops of a
            # select the vectorizer left as loops) counts as the loop
            if any(s <= s2 and k2 <= k and (s2, k2) != (s, k) and len(insns(s2, k2)) >= min_len
                   for s2, k2 in spans):
                continue
            yield fn, insns(s, k)
        i = end + 1


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("model")
    ap.add_argument("prefix")
    ap.add_argument("--rlopt", default="build/rlopt")
    ap.add_argument("--cc", default=os.environ.get("CC", "cc"))
    ap.add_argument("--rlopt-args", default="")
    ap.add_argument("--cflags", default="-std=c11 -O2",
                    help="compiler flags (default: -std=c11 -O2, as users compile; "
                         "'-O3 -march=native' gives the loops the O2/O3n ratio compares against)")
    ap.add_argument("--keep", help="write the .c and .s here")
    ap.add_argument("--min-instructions", type=int, default=12,
                    help="leave out loops shorter than this (address and tail loops)")
    a = ap.parse_args()
    d = a.keep or tempfile.mkdtemp(prefix="loop_mca_")
    os.makedirs(d, exist_ok=True)
    c, s = os.path.join(d, "m.c"), os.path.join(d, "m.s")
    try:
        subprocess.run([a.rlopt, a.model, "-o", c] + shlex.split(a.rlopt_args), check=True)
        subprocess.run([a.cc] + shlex.split(a.cflags) + ["-S", c, "-o", s], check=True)
    except (subprocess.CalledProcessError, OSError) as e:
        print(f"loop_mca.py: {e}", file=sys.stderr)
        return 1
    with open(s) as f:
        asm = f.read()
    for fn, loop in loops(asm, a.prefix, a.min_instructions):
        if len(loop) < a.min_instructions:
            continue
        # the x86-64-v4 copy of a Sqrt loop has AVX-512 in every clone
        cpu = ("icelake-server" if "x86_64_v4" in fn or "avx512" in fn or any("%zmm" in l for l in loop)
               else "znver3")
        scalar = sum(1 for l in loop if re.match(r"^\s+v?u?comiss\s", l))
        r = subprocess.run(["llvm-mca", f"-mcpu={cpu}", "-iterations=200"], input="\n".join(loop) + "\n",
                           capture_output=True, text=True)
        t = re.search(r"Total Cycles:\s+(\d+)", r.stdout)
        cyc = f"{int(t.group(1)) / 200:.1f} cycles/iter" if t else "llvm-mca failed"
        print(f"{fn} [{cpu}]: {len(loop)} instructions/iter, {cyc}, {scalar} scalar compares")
    return 0


if __name__ == "__main__":
    sys.exit(main())
