#!/usr/bin/env python3
"""Checks of `rlopt probe`: the profile it writes loads and prices a model,
its levels are ordered, and the last level's capacity is the one measured.

- Runs `rlopt probe --no-calibrate -o P.xml` once (about 7 s on 2 cores; the
  calibration compiles and times generated code and is left to the benches).
- The file is a profile `rlopt report --hw P.xml` takes (exit 0, a JSON
  report whose machine is the probed host); its memory levels are L1, L2,
  (L3,) DRAM with capacities strictly increasing and every bandwidth > 0.
- L3 capacity: sysfs gives the cache of the chip (in a VM, of the host); the
  probe reads sets growing by 1.25x on one thread and records the largest
  before the first read below the midpoint of the smallest set's rate and
  main memory's. When the comment says it recorded a smaller capacity
  ("L3 capacity: X per instance, not sysfs's Y"), X < Y, the profile's
  capacity is X times a whole number of instances (within the comment's
  three digits), and the rates it quotes agree with the rule: the set past
  X read below the midpoint, the smallest set more than 1.25x main memory.
  Otherwise the capacity is sysfs's: at most the per-instance size times the
  CPUs the probe ran on (never more than sysfs says).
- Bad input: an unknown argument (exit 1, its message naming it) and an output folder
  that does not exist (exit 2); neither leaves a file behind.

Timings are machine facts, not asserted (shared, noisy machines); only the
relations the probe's own rule implies are.

Ends with "N passed, N failed, N skipped"; exits non-zero on a failure.
"""

import json
import os
import re
import sys
import xml.etree.ElementTree as ET

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import rltest  # noqa: E402

UNITS = {"KiB": 1024, "MiB": 1024 ** 2, "GiB": 1024 ** 3}
SIZE = r"([0-9.]+) (KiB|MiB|GiB)"


Checks = rltest.Checks


def size_of(num, unit):
    return float(num) * UNITS[unit]


def sysfs_l3():
    """(per-instance bytes, CPUs sharing one) of cpu0's level-3 cache, or None."""
    base = "/sys/devices/system/cpu/cpu0/cache"
    try:
        for idx in sorted(os.listdir(base)):
            d = os.path.join(base, idx)
            with open(os.path.join(d, "level")) as f:
                if f.read().strip() != "3":
                    continue
            with open(os.path.join(d, "size")) as f:
                s = f.read().strip()
            m = re.fullmatch(r"(\d+)([KMG]?)", s)
            if not m:
                return None
            mult = {"": 1, "K": 1024, "M": 1024 ** 2, "G": 1024 ** 3}[m.group(2)]
            return int(m.group(1)) * mult
    except OSError:
        return None
    return None


def check_profile(c, rlopt, source, work):
    path = os.path.join(work, "P.xml")
    r = rltest.run([rlopt, "probe", "--no-calibrate", "-o", path], 300)
    if not c.check("probe: exit 0 and a file", r.ok and os.path.exists(path), r.describe()):
        return
    with open(path) as f:
        text = f.read()
    root = ET.fromstring(text)
    levels = root.findall("./memory/level")
    names = [lv.get("name") for lv in levels]
    c.check("levels: L1, L2, (L3,) DRAM", names in (["L1", "L2", "L3", "DRAM"], ["L1", "L2", "DRAM"]),
            str(names))
    caps = [float(lv.get("capacity")) for lv in levels]
    c.check("levels: capacities strictly increasing", all(a < b for a, b in zip(caps, caps[1:])),
            str(caps))
    bws = [float(lv.get(k)) for lv in levels for k in ("read_bw", "write_bw")]
    c.check("levels: every bandwidth > 0", all(b > 0 for b in bws), str(bws))

    rep = rltest.run([rlopt, "report", os.path.join(source, "examples", "mlp.onnx"), "--hw", path,
                      "--format", "json"], 120)
    ok = rep.ok
    if ok:
        try:
            j = json.loads(rep.stdout)
            ok = j["machine"]["name"] == root.get("name") and j["total"]["time_s"] > 0
        except (ValueError, KeyError, TypeError):
            ok = False
    c.check("report --hw P.xml: exit 0, priced on the probed host", ok, rep.describe())

    if "L3" not in names:
        c.tally.add("skip")
        print("skip L3 capacity: this machine has no L3 the probe could tell from L2")
        return
    cap = caps[names.index("L3")]
    per = sysfs_l3()
    m = re.search(r"L3 capacity: " + SIZE + r" per instance, not sysfs's " + SIZE +
                  r": one thread read\s+([0-9.]+) GB/s over " + SIZE + r", ([0-9.]+) over " +
                  SIZE + r", main memory ([0-9.]+)", text)
    if m:
        x, y = size_of(m.group(1), m.group(2)), size_of(m.group(3), m.group(4))
        r0, rmiss, rd = float(m.group(5)), float(m.group(8)), float(m.group(11))
        past = size_of(m.group(9), m.group(10))
        c.check("L3 measured: smaller than sysfs's", x < y, f"{x} vs {y}")
        if per:
            c.check("L3 measured: the comment's sysfs size is sysfs's", abs(y - per) <= 0.005 * per,
                    f"{y} vs {per}")
        inst = cap / x
        c.check("L3 measured: the profile's capacity is it times whole instances",
                round(inst) >= 1 and abs(inst - round(inst)) <= 0.01 * round(inst), f"{cap} / {x}")
        c.check("L3 measured: the set past it is larger", past > x, f"{past} vs {x}")
        # the comment's rates carry one decimal: allow that rounding
        c.check("L3 measured: the set past it read below the midpoint",
                rmiss <= 0.5 * (r0 + rd) + 0.1, f"{rmiss} vs ({r0} + {rd}) / 2")
        c.check("L3 measured: the smallest set clearly faster than main memory",
                r0 >= 1.25 * rd - 0.1, f"{r0} vs {rd}")
    else:
        if per:
            cpus = len(os.sched_getaffinity(0))
            c.check("L3 from sysfs: at most the per-instance size x the probe's CPUs",
                    cap <= per * cpus * 1.001, f"{cap} vs {per} x {cpus}")
        else:
            c.tally.add("skip")
            print("skip L3 from sysfs: no sysfs cache information here")


def check_bad(c, rlopt, work):
    out = os.path.join(work, "bad.xml")
    r = rltest.run([rlopt, "probe", "--no-such-flag", "-o", out], 60)
    first = (r.stderr.strip().splitlines() or [""])[0]
    c.check("bad: unknown argument, exit 1, the first line names it",
            r.returncode == 1 and "--no-such-flag" in first and not os.path.exists(out),
            r.describe())
    missing = os.path.join(work, "no", "such", "folder", "p.xml")
    r = rltest.run([rlopt, "probe", "--no-calibrate", "-o", missing], 300)
    c.check("bad: output folder missing, exit 2, nothing written",
            r.returncode == 2 and not os.path.exists(missing), r.describe())


def main():
    def body(c, args, work):
        check_profile(c, args.rlopt, args.source, work)
        check_bad(c, args.rlopt, work)
    return rltest.check_main(__doc__, "rlopt-probe.", body)


if __name__ == "__main__":
    sys.exit(main())
