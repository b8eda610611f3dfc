#!/usr/bin/env python3
"""The one table of docs/PERFORMANCE.md's mosaic_bench section, made from the
log of bench/run_vendor_bench.sh (its stdout, with the `### <command>` line
before every run):

    /usr/bin/python3 bench/bench_table.py results/cpu/vendor_bench_<commit>.txt

One row per (run, d, r): the run's number in the log, dtype, GEMM kernel and
precision solve of its blocked rows, the sequential kernel's samples/s, the
blocked samples/s at every k it ran (the best in bold), best / sequential,
the phases of the blocked update at the best k (wall microseconds per sample,
all streams), and the run's vendor GEMM rate at n = 1104 in its precision
(sgemm or dgemm). Every number is
copied from the log as printed; nothing is recomputed but the best k.
"""

import re
import sys


def cells(line):
    return [c.strip() for c in line.strip().strip("|").split("|")]


def parse(lines):
    runs, run = [], None
    in_phases = False
    for line in lines:
        if line.startswith("### "):
            run = {"command": line[4:].strip(), "dtype": "", "gemm": "", "solve": "",
                   "blocked": {}, "phases": {}}
            if "mosaic_bench" in line:
                runs.append(run)
            in_phases = False
            continue
        if run is None:
            continue
        m = re.match(r"# mosaic_bench: .*concurrency \d+, (\w+), \d+ streams", line)
        if m:
            run["dtype"] = m.group(1)
        m = re.match(r"# roofline: vendor ([sd])gemm ([\d.]+) GFLOP/s", line)
        if m:
            run["vendor_" + m.group(1)] = m.group(2)
        m = re.match(r"# blocked update .*gemm (\w+), precision_solve (\w+)", line)
        if m:
            run["gemm"], run["solve"] = m.group(1), m.group(2)
        if line.startswith("# blocked: |"):
            c = cells(line[len("# blocked:"):])
            d, r, seq, k, rate, speedup = c[0], c[1], c[2], int(c[3]), c[5], c[6]
            point = run["blocked"].setdefault((d, r), {"sequential": seq, "k": {}})
            point["k"][k] = (rate, speedup)
        if line.startswith("# phases of the blocked update"):
            in_phases = True
            continue
        if in_phases and line.startswith("| ") and not line.startswith("| d |"):
            c = cells(line)
            run["phases"][(c[0], c[1], int(c[2]))] = {"block": c[4], "pack": c[5],
                                                        "products": c[6].split(" (")[0],
                                                        "coefficients": c[7], "bases": c[8].split(" (")[0]}
        elif in_phases and not line.startswith("|"):
            in_phases = line.startswith("# phases")
    return runs


def table(runs):
    ks = sorted({k for run in runs for p in run["blocked"].values() for k in p["k"]})
    head = (["run", "dtype", "d", "r", "GEMM", "solve", "sequential"] + ["k = %d" % k for k in ks] +
            ["best / sequential", "block (us/sample)", "pack", "products", "coefficients", "bases",
             "vendor GEMM of the run's precision, n=1104 (GFLOP/s)"])
    out = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for i, run in enumerate(runs, 1):
        for (d, r), p in run["blocked"].items():
            best = max(p["k"], key=lambda k: float(p["k"][k][0]))
            row = [str(i), run["dtype"], d, r, run["gemm"], run["solve"], p["sequential"]]
            for k in ks:
                if k not in p["k"]:
                    row.append("")
                else:
                    row.append(("**%s**" if k == best else "%s") % p["k"][k][0])
            row.append(p["k"][best][1])
            ph = run["phases"].get((d, r, best))
            row += [ph["block"], ph["pack"], ph["products"], ph["coefficients"], ph["bases"]] if ph else [""] * 5
            # The vendor GEMM of the run's precision (a double run prints
            # its dgemm and the sgemm too).
            row.append(run.get("vendor_d" if run["dtype"] == "double" else "vendor_s", ""))
            out.append("| " + " | ".join(row) + " |")
    return "\n".join(out)


def main(argv):
    if len(argv) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    with open(argv[1]) as f:
        runs = parse(f.read().splitlines())
    if not runs:
        print("%s: no mosaic_bench run (### line) in the log" % argv[1], file=sys.stderr)
        return 2
    print(table(runs))
    for i, run in enumerate(runs, 1):
        print("\nrun %d: `%s`" % (i, run["command"]), end="")
    print()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
