"""`cmake --install`, the installed binary and the CMake package, as a user
meets them.

1. Installs the build tree into a temporary prefix and checks the layout:
   bin/rlopt, share/rlopt/hw (every profile and the schema),
   share/man/man1/rlopt.1, lib/cmake/rlopt.
2. The installed binary finds its profiles beside itself (../share/rlopt/hw),
   with RLOPT_HW_DIR unset, and still obeys RLOPT_HW_DIR when set.
3. The man page covers every option `rlopt --help` prints, and groff reads it
   without warnings.
4. examples/cmake_project is configured against the prefix with
   find_package(rlopt), built (rlopt_add_model generates mlp_opt.c at build
   time) and run; its argmax matches onnxruntime on the same input.
5. Regeneration: a second build does not rerun rlopt; changing MLP_OPTIONS
   (-O2 to -O0) or touching the model does, and the generated banner follows.
6. Hostile or wrong arguments to rlopt_add_model (BATCH, HW, NAME, OPTIONS)
   stop the configure with one clear line.

Ends with "N passed, N failed, N skipped"; exits non-zero on any failure.
"""

import os
import re
import shutil
import sys
import tempfile
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import rltest  # noqa: E402


class Checks:
    def __init__(self, verbose):
        self.tally = rltest.Tally()
        self.verbose = verbose

    def __call__(self, name, ok, detail=""):
        self.tally.add("pass" if ok else "fail")
        if not ok:
            print(f"FAIL {name}" + (f"\n    {detail}" if detail else ""), flush=True)
        elif self.verbose:
            print(f"ok   {name}", flush=True)
        return ok


def banner(path):
    with open(path, encoding="utf-8", errors="replace") as f:
        return "".join(f.readline() for _ in range(5))


def help_options(rlopt):
    """Every option spelled in `rlopt --help` (-o, --batch, -O0, ...)."""
    r = rltest.run([rlopt, "--help"], 30)
    return sorted(set(re.findall(r"(?<![\w-])(--?[A-Za-z][\w-]*)", r.stdout))), r


def man_text(path):
    """The roff source with font escapes removed and \\- as -."""
    with open(path, encoding="utf-8") as f:
        s = f.read()
    s = re.sub(r"\\f[BIRP]", "", s).replace("\\-", "-").replace("\\&", "")
    return s


def main():
    ap = rltest.make_parser(__doc__)
    args = ap.parse_args()
    c = Checks(args.verbose)
    src, build = os.path.abspath(args.source), os.path.abspath(args.build)
    cmake = shutil.which("cmake")
    if not cmake or not args.rlopt:
        print("cmake or --rlopt missing")
        c("prerequisites", False)
        return c.tally.finish()
    tmp = tempfile.mkdtemp(prefix="rlopt-install-")
    try:
        run_all(c, args, src, build, cmake, tmp)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return c.tally.finish()


def run_all(c, args, src, build, cmake, tmp):
    prefix = os.path.join(tmp, "prefix")
    env = {k: v for k, v in os.environ.items() if k not in ("RLOPT_HW_DIR", "CMAKE_PREFIX_PATH")}

    # 1. install and layout
    r = rltest.run([cmake, "--install", build, "--prefix", prefix], 300, env=env)
    if not c("cmake --install", r.ok, r.describe()):
        return
    exe = os.path.join(prefix, "bin", "rlopt")
    hw = os.path.join(prefix, "share", "rlopt", "hw")
    c("bin/rlopt is executable", os.access(exe, os.X_OK))
    shipped = sorted(f for f in os.listdir(os.path.join(src, "hw")) if f.endswith((".xml", ".xsd")))
    got = sorted(os.listdir(hw)) if os.path.isdir(hw) else []
    c("share/rlopt/hw holds every profile and the schema", got == shipped, f"{got} vs {shipped}")
    man = os.path.join(prefix, "share", "man", "man1", "rlopt.1")
    c("share/man/man1/rlopt.1", os.path.isfile(man))
    cfg = [d for d in ("lib", "lib64") if os.path.isfile(
        os.path.join(prefix, d, "cmake", "rlopt", "rlopt-config.cmake"))]
    c("lib/cmake/rlopt/rlopt-config.cmake", bool(cfg))

    # 2. profiles relative to the installed binary
    r = rltest.run([exe, "hw"], 60, cwd=tmp, env=env)
    c("installed `rlopt hw` lists PREFIX/share/rlopt/hw",
      r.ok and f"machine profiles in {os.path.realpath(hw)}:" in r.stdout, r.describe() + r.stdout[:200])
    r = rltest.run([exe, "report", os.path.join(src, "examples", "mlp.onnx"), "--hw", "h100"], 120,
                   cwd=tmp, env=env)
    c("installed `rlopt report --hw h100`", r.ok and "on h100" in r.stdout, r.describe())
    moved = os.path.join(tmp, "moved")
    shutil.copytree(prefix, moved, symlinks=True)
    r = rltest.run([os.path.join(moved, "bin", "rlopt"), "hw"], 60, cwd=tmp, env=env)
    c("a moved prefix still finds its profiles",
      r.ok and os.path.realpath(os.path.join(moved, "share", "rlopt", "hw")) in r.stdout, r.describe())
    shutil.rmtree(moved, ignore_errors=True)
    empty = os.path.join(tmp, "emptyhw")
    os.mkdir(empty)
    r = rltest.run([exe, "hw"], 60, cwd=tmp, env=dict(env, RLOPT_HW_DIR=empty))
    c("RLOPT_HW_DIR still wins", r.ok and empty in r.stdout, r.describe() + r.stdout[:200])

    # 3. the man page
    opts, r = help_options(exe)
    text = man_text(man) if os.path.isfile(man) else ""
    missing = [o for o in opts if not re.search(r"(?<![\w-])" + re.escape(o) + r"(?![\w-])", text)]
    c("man page covers every option of --help", r.ok and len(opts) > 20 and not missing,
      f"missing: {missing}")
    for cmd in ("run", "report", "diff", "ops", "hw", "probe"):
        c(f"man page covers `rlopt {cmd}`", re.search(r"rlopt\s+" + cmd + r"\b", text) is not None)
    groff = shutil.which("groff")
    if groff and text:
        r = rltest.run([groff, "-man", "-Tutf8", "-ww", "-z", man], 60)
        c("groff -man -ww reads rlopt.1 without warnings", r.ok and not r.stderr.strip(), r.stderr[:500])
    else:
        c.tally.add("skip")
        print("skip: groff not installed, man page not linted")

    # 4. the example project against the installed package
    proj = os.path.join(src, "examples", "cmake_project")
    exb = os.path.join(tmp, "example")
    model = os.path.join(tmp, "mlp.onnx")
    shutil.copy(os.path.join(src, "examples", "mlp.onnx"), model)
    gen = os.path.join(exb, "rlopt", "mlp_demo", "mlp_opt.c")
    demo = os.path.join(exb, "mlp_demo")

    def configure(*defs):
        return rltest.run([cmake, "-S", proj, "-B", exb, f"-DCMAKE_PREFIX_PATH={prefix}",
                           f"-DMLP_MODEL={model}"] + list(defs), 300, env=env)

    def build():
        return rltest.run([cmake, "--build", exb], 600, env=env)

    r = configure()
    if not c("configure examples/cmake_project with find_package(rlopt)", r.ok, r.describe(20)):
        return
    r = build()
    if not c("build examples/cmake_project", r.ok and os.path.isfile(gen), r.describe(20) + r.stdout[-1500:]):
        return
    r = rltest.run([demo], 120)
    m = re.search(r"argmax: (\d+)", r.stdout)
    c("mlp_demo runs and prints an argmax", r.ok and m, r.describe())
    try:
        import onnxruntime as ort
        x = np.array([((i % 17) - 8) / 8.0 for i in range(256)], np.float32).reshape(1, 256)
        ref = ort.InferenceSession(model, providers=["CPUExecutionProvider"]).run(None, {"x": x})[0]
        c("mlp_demo's argmax matches onnxruntime", m and int(m.group(1)) == int(np.argmax(ref)),
          f"demo {m and m.group(1)} vs ort {int(np.argmax(ref))}")
    except ImportError:
        c.tally.add("skip")
        print("skip: onnxruntime not importable, argmax not checked")

    # 5. regeneration
    b0, t0 = banner(gen), os.stat(gen).st_mtime_ns
    r = build()
    c("an unchanged rebuild does not rerun rlopt",
      r.ok and os.stat(gen).st_mtime_ns == t0 and "rlopt: generating" not in r.stdout, r.stdout[-800:])
    r1 = configure("-DMLP_OPTIONS=-O0")
    r = build()
    b1 = banner(gen)
    c("changing OPTIONS (-O2 -> -O0) regenerates: the banner changes",
      r1.ok and r.ok and "rlopt: generating" in r.stdout and b1 != b0, f"{b0!r}\n    {b1!r}")
    r = rltest.run([demo], 120)
    m0 = re.search(r"argmax: (\d+)", r.stdout)
    c("the -O0 build gives the same argmax", r.ok and m and m0 and m0.group(1) == m.group(1), r.describe())
    t1 = os.stat(gen).st_mtime_ns
    time.sleep(1.1)
    os.utime(model)
    r = build()
    c("touching the model regenerates", r.ok and os.stat(gen).st_mtime_ns != t1 and
      "rlopt: generating" in r.stdout, r.stdout[-800:])
    r1 = configure("-DMLP_OPTIONS=-O2")
    r = build()
    c("back to -O2: the first banner again", r1.ok and r.ok and banner(gen) == b0)

    # 6. bad arguments to rlopt_add_model stop the configure with one line
    bad = os.path.join(tmp, "bad")
    os.mkdir(bad)
    cases = [
        ("BATCH 0", "BATCH 0", "BATCH '0' is not a positive integer"),
        ("BATCH with a shell command", 'BATCH "1;$(touch pwned)"', "is not a positive integer"),
        ("HW with a path escape", 'HW "../../etc/passwd"', "is neither a profile name"),
        ("HW starting with a dash", 'HW "-O0"', "is neither a profile name"),
        ("NAME not a C identifier", 'NAME "a-b"', "is not a C identifier"),
        ("OPTIONS choosing the output", "OPTIONS -o x.c", "may not contain '-o'"),
        ("a missing model", None, "not found"),
    ]
    for title, extra, want in cases:
        mdl = model if extra is not None else os.path.join(tmp, "absent.onnx")
        with open(os.path.join(bad, "CMakeLists.txt"), "w") as f:
            f.write("cmake_minimum_required(VERSION 3.20)\nproject(bad LANGUAGES C)\n"
                    "find_package(rlopt CONFIG REQUIRED)\n"
                    f'file(WRITE "${{CMAKE_BINARY_DIR}}/m.c" "int main(void){{return 0;}}\\n")\n'
                    'add_executable(app "${CMAKE_BINARY_DIR}/m.c")\n'
                    f'rlopt_add_model(app "{mdl}" {extra or ""})\n')
        bb = os.path.join(tmp, "bad-build")
        shutil.rmtree(bb, ignore_errors=True)
        r = rltest.run([cmake, "-S", bad, "-B", bb, f"-DCMAKE_PREFIX_PATH={prefix}"], 300, cwd=tmp, env=env)
        said = " ".join(r.stderr.split())  # CMake wraps its messages
        c(f"rlopt_add_model rejects {title}", not r.ok and want in said and
          not os.path.exists(os.path.join(tmp, "pwned")), r.describe(12))


if __name__ == "__main__":
    sys.exit(main())
