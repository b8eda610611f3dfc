#!/usr/bin/python3
"""Markdown tables from a bench/run_reference_masked_study.sh log: one row
per run (its label), the mean +- sd over the seeds of every metric, or with
--sweep the missing-fraction sweep as one table per d (projector distance,
and the smallest debiased eigenvalue's bias, per mode).

    /usr/bin/python3 bench/reference_study_table.py LOG [--sweep]
"""
import re
import sys


MEAN = re.compile(r"(\w+) ([-+]?[\d.]+|nan) \+- ([\d.]+|nan)")


def runs(path):
    """{label: {metric: (mean, sd)}} from the log's "mean" lines."""
    label = None
    out = {}
    for line in open(path):
        m = re.match(r"^(\S+): d \d+", line)
        if m:
            label = m.group(1)
        elif label and line.strip().startswith("mean"):
            out[label] = {k: (float(a), float(b)) for k, a, b in MEAN.findall(line)}
            label = None
    return out


def fmt(v, signed=False):
    mean, sd = v
    if mean != mean:  # nan: not measured in this run
        return ""
    if signed:
        return f"{mean:+.3f} ± {sd:.3f}"
    return f"{mean:.4f} ± {sd:.4f}"


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    table = runs(sys.argv[1])
    if "--sweep" in sys.argv:
        for d in ("256", "1024"):
            print(f"\nd = {d}: projector distance (smallest debiased eigenvalue's bias)\n")
            print("| missing | posterior | project | zero_fill | drop |")
            print("|---|---|---|---|---|")
            for f in ("0", "0.05", "0.2", "0.5", "0.8"):
                cells = []
                for mode in ("posterior", "project", "zero_fill", "drop"):
                    v = table.get(f"sweep-d{d}-f{f}-{mode}")
                    cells.append("" if v is None else f"{v['dist'][0]:.4f} ({v['eig_r_bias'][0]:+.3f})")
                print(f"| {float(f) * 100:g}% | " + " | ".join(cells) + " |")
        return
    print("| run | dist | s2_bias | eig_r_bias | dist_end | kept |")
    print("|---|---|---|---|---|---|")
    for label, v in table.items():
        if label.startswith("sweep-"):
            continue
        print(f"| {label} | {fmt(v['dist'])} | {fmt(v['s2_bias'], True)} | {fmt(v['eig_r_bias'], True)} | "
              f"{fmt(v['dist_end'])} | {fmt(v['kept'])} |")


main()
