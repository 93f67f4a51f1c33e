#!/usr/bin/env python3
"""Real models shipped inside PyPI packages, end to end against onnxruntime.

The models are the ones users bring first: they were not written here, they
ship in the wheels of these packages (pinned in scripts/deps.sh, installed
with --no-deps into the build's venv):

    rapidocr_onnxruntime  PP-OCRv4 text detection (DB), direction classifier,
                          PP-OCRv4 recognition (SVTR, attention)       vision/OCR
    ddddocr               captcha OCR (CNN + bidirectional LSTM), YOLO
                          detector                                     vision/OCR
    nudenet               YOLOv8n detector at 320                      vision
    magika                file-type classifier over 2048 bytes         bytes/text
    silero-vad            voice activity detection (If branches on the
                          sample rate, LSTM; three exports)            speech

Each model is found in its installed package (never in this repository),
copied into BUILD/real_models/, and run with realistic inputs made here from
a fixed seed: a document-like image for the OCR and detection models, a
byte string of source text for magika, a voiced signal for the VAD (with
zero state and sr 16000). Symbolic dims are bound with --shape. The
reference is onnxruntime's CPU provider; then

    rlopt run MODEL -i in_K.pb ... --shape NAME=DIMS ... -d OUT -v [--rlopt-args]

and every output is compared (rtol 1e-3, atol 1e-4; shape and dtype exact).
One line per model: package==version, node count, generate s, compile s,
run ms (wall, from `rlopt run -v`), the CPU seconds of the whole `rlopt
run` (a measure that holds on a loaded machine), max abs and rel error;
then the ops it uses.
A package that is not installed is a SKIP with the reason, never silent. A
model that cannot run is listed with its written reason (XFAIL, counted as
skipped; an XFAIL that passes is reported).

Input sizes are chosen so the whole suite stays under about 4 minutes on 2
idle cores (generation is fast; compiling the embedded weights dominates):
the OCR detector at 1x3x320x320, the recognizer at 1x3x48x320, the
detectors at their 320/416 sizes. -k selects models, --rlopt-args=-O0 runs
them unoptimized; --o0 also runs the cheap models (speech, bytes) at -O0.
"""

import collections
import fnmatch
import importlib.metadata
import importlib.util
import os
import re
import resource
import shlex
import shutil
import sys
import tempfile
import time

import numpy as np
import onnx

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import rltest  # noqa: E402


# ---- realistic inputs -------------------------------------------------------


def document_image(rng, h, w, channels=3):
    """A page-like image in [0, 1], HWC: light paper with a little noise and
    shading, lines of dark glyph-sized strokes, one coloured block."""
    y = np.linspace(0, 1, h)[:, None]
    x = np.linspace(0, 1, w)[None, :]
    base = 0.88 + 0.06 * np.sin(2.0 * x + 1.3 * y)
    img = np.repeat(base[:, :, None], channels, axis=2)
    img += rng.normal(0, 0.02, img.shape)
    line_h = max(6, h // 10)
    for top in range(line_h // 2, h - line_h, int(line_h * 1.6)):
        col = int(rng.integers(2, max(3, w // 8)))
        while col < w - 4:
            gw = int(rng.integers(2, max(3, line_h)))
            gh = int(rng.integers(line_h // 2, line_h))
            ink = rng.uniform(0.05, 0.25)
            img[top + line_h - gh:top + line_h, col:col + max(1, gw // 3)] = ink
            img[top + line_h - gh:top + line_h - gh + 2, col:col + gw] = ink
            col += gw + int(rng.integers(1, 4))
            if rng.random() < 0.12:
                col += line_h  # a space between words
    if channels == 3 and h > 32 and w > 32:
        t, l = h // 2, w // 2
        img[t:t + h // 6, l:l + w // 5] = rng.uniform(0.2, 0.8, 3)
    return np.clip(img, 0, 1)


def nchw(img, mean, std):
    a = (img - np.asarray(mean)) / np.asarray(std)
    return a.transpose(2, 0, 1)[None].astype(np.float32)


def ocr_det_input(rng):  # rapidocr: ImageNet mean/std on RGB in [0, 1]
    return {"x": nchw(document_image(rng, 320, 320), [0.485, 0.456, 0.406],
                      [0.229, 0.224, 0.225])}


def ocr_line_input(h, w):
    def make(rng):  # rapidocr cls/rec: (x - 0.5) / 0.5 on one text line
        return {"x": nchw(document_image(rng, h, w), 0.5, 0.5)}
    return make


def captcha_input(rng):  # ddddocr: grayscale, height 64, (x - 0.5) / 0.5
    img = document_image(rng, 64, 160, channels=1)
    return {"input1": ((img - 0.5) / 0.5).transpose(2, 0, 1)[None].astype(np.float32)}


def detector_input(name, size):
    def make(rng):  # YOLO exports: RGB in [0, 1], no normalization
        return {name: nchw(document_image(rng, size, size), 0.0, 1.0)}
    return make


MAGIKA_TEXT = (
    b"#include <stdio.h>\n\n/* count the lines of a file */\n"
    b"int main(int argc, char **argv)\n{\n    FILE *f = fopen(argv[1], \"r\");\n"
    b"    int c, n = 0;\n    if (!f)\n        return 1;\n    while ((c = fgetc(f)) != EOF)\n"
    b"        n += c == '\\n';\n    printf(\"%d\\n\", n);\n    fclose(f);\n    return 0;\n}\n")


def magika_input(rng):
    """magika's layout (standard_v3_3): the first 1024 and the last 1024 bytes
    of the stripped content, padded with the token 256."""
    del rng
    data = MAGIKA_TEXT.strip()
    beg = list(data[:1024]) + [256] * max(0, 1024 - len(data))
    end = [256] * max(0, 1024 - len(data)) + list(data[-1024:])
    return {"bytes": np.array([beg + end], dtype=np.int32)}


def voice(rng, n, sr=16000):
    """A voiced frame: a 140 Hz glottal-like harmonic series under a syllable
    envelope, with a little noise (amplitude like normalized speech)."""
    t = np.arange(n) / sr
    f0 = 140.0 * (1 + 0.05 * np.sin(2 * np.pi * 3 * t))
    phase = 2 * np.pi * np.cumsum(f0) / sr
    s = sum((0.6 / k) * np.sin(k * phase + k) for k in range(1, 12))
    env = 0.5 + 0.5 * np.sin(np.pi * np.arange(n) / n)
    return (0.15 * env * s + rng.normal(0, 0.004, n)).astype(np.float32)


def vad_input(with_sr, n=512):
    def make(rng):
        feeds = {"input": voice(rng, n)[None], "state": np.zeros((2, 1, 128), np.float32)}
        if with_sr:
            feeds["sr"] = np.array(16000, dtype=np.int64)
        return feeds
    return make


def vad_seq_input(rng):
    return {"input": voice(rng, 4 * 576).reshape(4, 576),
            "h": np.zeros((1, 1, 128), np.float32), "c": np.zeros((1, 1, 128), np.float32)}


# ---- the models -------------------------------------------------------------

# name, distribution, import name, file inside the package, kind, inputs,
# run at -O0 too with --o0 (cheap), expected-failure reason (None: must pass)
Model = collections.namedtuple("Model", "name dist module file kind inputs o0 xfail")

MODELS = [
    Model("ppocrv4_det", "rapidocr_onnxruntime", "rapidocr_onnxruntime",
          "models/ch_PP-OCRv4_det_infer.onnx", "OCR text detection", ocr_det_input, False, None),
    Model("ppocr_cls", "rapidocr_onnxruntime", "rapidocr_onnxruntime",
          "models/ch_ppocr_mobile_v2.0_cls_infer.onnx", "OCR direction classifier",
          ocr_line_input(48, 192), False, None),
    Model("ppocrv4_rec", "rapidocr_onnxruntime", "rapidocr_onnxruntime",
          "models/ch_PP-OCRv4_rec_infer.onnx", "OCR text recognition",
          ocr_line_input(48, 320), False, None),
    Model("ddddocr_ocr", "ddddocr", "ddddocr", "common.onnx", "captcha OCR (CNN+LSTM)",
          captcha_input, False, None),
    Model("ddddocr_det", "ddddocr", "ddddocr", "common_det.onnx", "detector (YOLO)",
          detector_input("images", 416), False, None),
    Model("ddddocr_old", "ddddocr", "ddddocr", "common_old.onnx", "captcha OCR, quantized",
          captcha_input, False,
          "uses com.microsoft DynamicQuantizeLSTM, an onnxruntime contrib operator "
          "outside the ONNX standard (rlopt reads the ai.onnx domain only)"),
    Model("nudenet_320n", "nudenet", "nudenet", "320n.onnx", "detector (YOLOv8n)",
          detector_input("images", 320), False, None),
    Model("magika", "magika", "magika", "models/standard_v3_3/model.onnx",
          "file-type classifier", magika_input, True, None),
    Model("silero_vad", "silero-vad", "silero_vad", "data/silero_vad.onnx",
          "speech VAD (If, LSTM)", vad_input(True), True, None),
    Model("silero_vad_ifless", "silero-vad", "silero_vad", "data/silero_vad_op18_ifless.onnx",
          "speech VAD (opset 18)", vad_input(True), True, None),
    Model("silero_vad_seq", "silero-vad", "silero_vad", "data/silero_vad_16k_sequence.onnx",
          "speech VAD (sequence)", vad_seq_input, True, None),
]


def find_model(m):
    """(path, version) of the model file in the installed package, or
    (None, reason)."""
    try:
        version = importlib.metadata.version(m.dist)
    except importlib.metadata.PackageNotFoundError:
        return None, (f"package {m.dist} is not installed (scripts/deps.sh --test installs "
                      f"it with pip --no-deps)")
    spec = importlib.util.find_spec(m.module)
    if spec is None or not spec.submodule_search_locations:
        return None, f"{m.dist}=={version} is installed but module {m.module} is not found"
    for d in spec.submodule_search_locations:
        p = os.path.join(d, m.file)
        if os.path.isfile(p):
            return p, version
    return None, f"{m.dist}=={version} does not ship {m.module}/{m.file}"


def copy_model(src, dest_dir, name):
    """Copy into the build folder (models stay out of the repository); an
    unchanged copy is reused."""
    os.makedirs(dest_dir, exist_ok=True)
    dst = os.path.join(dest_dir, name + ".onnx")
    st = os.stat(src)
    if not (os.path.exists(dst) and os.path.getsize(dst) == st.st_size
            and os.path.getmtime(dst) >= st.st_mtime):
        tmp = dst + ".tmp"
        shutil.copyfile(src, tmp)
        os.replace(tmp, dst)
    return dst


def ops_used(model):
    """Counter of op types, inside subgraphs too ('domain:Op' off ai.onnx)."""
    c = collections.Counter()

    def walk(g):
        for n in g.node:
            c[f"{n.domain}:{n.op_type}" if n.domain not in ("", "ai.onnx") else n.op_type] += 1
            for a in n.attribute:
                if a.type == onnx.AttributeProto.GRAPH:
                    walk(a.g)
                for sg in a.graphs:
                    walk(sg)
    walk(model.graph)
    return c


TIMES = re.compile(r"generate ([0-9.]+) s .*compile ([0-9.]+) s, run ([0-9.]+) ms")


def check(m, path, args, extra, work):
    """Returns (status, message)."""
    model = onnx.load(path, load_external_data=False)
    inits = {i.name for i in model.graph.initializer}
    names = [vi.name for vi in model.graph.input if vi.name not in inits]
    feeds = m.inputs(np.random.default_rng(args.seed))
    if sorted(feeds) != sorted(names):
        return "fail", f"driver: inputs {sorted(feeds)} but the model wants {names}"
    feeds = {n: feeds[n] for n in names}
    ref = rltest.ort_reference(path, feeds)
    d = os.path.join(work, m.name + ("_O0" if "-O0" in extra else ""))
    shutil.rmtree(d, ignore_errors=True)
    os.makedirs(d)
    out = os.path.join(d, "out")
    cmd = [args.rlopt, "run", path]
    for k, (n, a) in enumerate(feeds.items()):
        p = os.path.join(d, f"in_{k}.pb")
        rltest.write_pb(p, a, n)
        cmd += ["-i", p]
        if a.ndim:
            cmd += ["--shape", f"{n}={'x'.join(str(s) for s in a.shape)}"]
    cmd += ["-d", out, "-v"] + extra
    ru0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    r = rltest.run(cmd, timeout=args.timeout)
    ru1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (ru1.ru_utime + ru1.ru_stime) - (ru0.ru_utime + ru0.ru_stime)
    if not r.ok:
        return "fail", f"rlopt run ({r.seconds:.1f} s): {r.describe(args.stderr_lines)}"
    tm = TIMES.search(r.stderr or "")
    times = (f"generate {float(tm.group(1)):.1f} s, compile {float(tm.group(2)):.1f} s, "
             f"run {float(tm.group(3)):.0f} ms" if tm else f"total {r.seconds:.1f} s")
    times += f" (cpu {cpu:.1f} s)"
    outputs = [o.name for o in model.graph.output]
    err, worst_abs, worst_rel = rltest.compare_outputs(out, outputs, ref, args.rtol, args.atol)
    if err:
        return "fail", f"{err} ({times})"
    return "pass", f"{times}; max abs err {worst_abs:.2g}, max rel err {worst_rel:.2g}"


def main():
    ap = rltest.make_parser(__doc__.split("\n\n")[0])
    rltest.add_model_args(ap)
    ap.add_argument("--o0", action="store_true",
                    help="also run the cheap models (speech, bytes) at -O0")
    args = ap.parse_args()
    if not args.rlopt:
        ap.error("--rlopt is required")
    extra = shlex.split(args.rlopt_args)
    build = args.build or os.getcwd()
    models_dir = os.path.join(build, "real_models")

    try:
        import onnxruntime  # noqa: F401
    except ImportError:
        print("SKIP all: onnxruntime is not installed in this Python (the reference)")
        print("0 passed, 0 failed, 1 skipped")
        return 0

    tally = rltest.Tally()
    work = tempfile.mkdtemp(prefix="rlopt-real.")
    t_all = time.monotonic()
    try:
        chosen = [m for m in MODELS
                  if not args.patterns or any(fnmatch.fnmatchcase(m.name, p) for p in args.patterns)]
        if not chosen:
            print("no model matches the -k patterns")
        w = max([len(m.name) for m in chosen] + [1]) + 4
        for m in chosen:
            src, info = find_model(m)
            if src is None:
                tally.add("skip")
                print(f"SKIP {m.name:<{w}} {info}", flush=True)
                continue
            path = copy_model(src, models_dir, m.name)
            model = onnx.load(path, load_external_data=False)
            ops = ops_used(model)
            head = f"{m.dist}=={info}, {m.kind}, {sum(ops.values())} nodes"
            runs = [("", extra)]
            if args.o0 and m.o0 and "-O0" not in extra:
                runs.append((" -O0", extra + ["-O0"]))
            for tag, ex in runs:
                if m.xfail:
                    status, msg = "skip", f"XFAIL: {m.xfail}"
                    if not any(":" in o for o in ops):  # the reason no longer holds: try it
                        status, msg = check(m, path, args, ex, work)
                        status, msg = ("fail", f"XPASS (remove the xfail): {msg}") \
                            if status == "pass" else ("skip", f"XFAIL: {m.xfail}; {msg}")
                else:
                    try:
                        status, msg = check(m, path, args, ex, work)
                    except Exception as e:  # a bug here must not hide the other models
                        status, msg = "fail", f"driver error: {type(e).__name__}: {e}"
                tally.add(status)
                print(f"{status.upper():4} {m.name + tag:<{w}} {head}; {msg}", flush=True)
            print("       ops: " + ", ".join(f"{o} {n}" for o, n in sorted(ops.items())), flush=True)
    finally:
        if args.keep:
            print(f"work folder kept: {work}")
        else:
            shutil.rmtree(work, ignore_errors=True)
    print(f"total {time.monotonic() - t_all:.0f} s; models copied to {models_dir}")
    return tally.finish()


if __name__ == "__main__":
    sys.exit(main())
