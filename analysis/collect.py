"""collect: every run of any mix of mosaic_miniapp result files (single runs
and sweeps) in one table: a Markdown table on stdout and, with --csv, a CSV
file with full-precision numbers.

    python3 -m analysis.collect results/*.json --csv runs.csv
"""

import argparse
import os
import sys

if __package__ in (None, ""):
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from analysis import common as C

CSV_HEADERS = [
    "file", "run_index", "deck", "overrides", "status", "hostname", "machine", "backend", "git_commit",
    "d", "r", "dtype", "mode", "ranks", "streams_total", "streams_per_rank", "streams_per_rank_min",
    "streams_per_rank_max", "steps", "sweep_point", "algorithm", "kernel", "block_size", "block_gemm",
    "reorthonormalize", "precision_solve", "concurrency",
    "fom_update_samples_per_s", "end_to_end_samples_per_s", "efficiency", "efficiency_base_ranks",
    "orthonormality_error_max", "s_condition_max", "clamped_steps", "projector_distance_max",
    "verification", "failed_checks",
]

# The configuration fields (common.CONFIGURATION_FIELDS) that differ between
# the runs are columns after the sweep point; the others are said once below the table.
MD_HEADERS_BEFORE_CONFIGURATION = [
    "file", "d", "r", "dtype", "mode", "ranks", "streams total", "streams/rank", "steps", "sweep point",
]
MD_HEADERS_AFTER_CONFIGURATION = [
    "FOM (update samples/s)", "end-to-end samples/s", "efficiency", "orth. err", "cond(S)",
    "clamped steps", "proj. dist.", "verification",
]


def _csv_num(x):
    return "" if C.isnan(x) else repr(float(x))


def csv_row(r):
    return [
        r.path, r.run_index, r.deck_path, " ".join(r.overrides), r.status, r.hostname, r.machine, r.backend,
        r.git_commit, r.d, r.r, r.dtype, r.mode, r.ranks, r.streams_total, C.fmt_count(r.streams_per_rank),
        r.spr_min, r.spr_max, r.steps, "" if r.sweep_label == "-" else r.sweep_label, r.algorithm,
        r.kernel, r.block_size, "" if r.block_gemm is None else r.block_gemm, r.reorthonormalize, r.precision_solve,
        "" if r.concurrency is None else r.concurrency,
        _csv_num(r.fom), _csv_num(r.end_to_end), _csv_num(r.efficiency),
        "" if r.efficiency_base_ranks is None else r.efficiency_base_ranks,
        _csv_num(r.orthonormality_error), _csv_num(r.s_condition), r.clamped_steps, _csv_num(r.projector_distance),
        "PASSED" if r.passed else "FAILED", " ".join(r.failed_checks),
    ]


def md_row(r, shown):
    eff = C.fmt_eff(r.efficiency)
    if eff and r.efficiency_base_ranks != 1:
        eff += " (base %d ranks)" % r.efficiency_base_ranks
    configuration = dict(r.configuration)
    return [
        r.label(), r.d, r.r, r.dtype, r.mode, r.ranks, r.streams_total, C.fmt_count(r.streams_per_rank), r.steps,
        r.sweep_label,
    ] + [configuration[f] for f in shown] + [
        C.fmt_rate(r.fom), C.fmt_rate(r.end_to_end), eff, C.fmt_sci(r.orthonormality_error),
        C.fmt_sci(r.s_condition), r.clamped_steps, C.fmt_sci(r.projector_distance), r.verification,
    ]


def build(records):
    """(markdown text, csv text) for the records; sets their efficiencies."""
    C.assign_efficiencies(records)
    keys = [r.configuration for r in records]
    shown = C.varying_fields(keys, C.CONFIGURATION_FIELDS)
    md = C.md_table(MD_HEADERS_BEFORE_CONFIGURATION + list(shown) + MD_HEADERS_AFTER_CONFIGURATION,
                    [md_row(r, shown) for r in records])
    failed = [r for r in records if not r.passed]
    shared = C.shared_text(keys, C.CONFIGURATION_FIELDS)
    notes = [
        "",
        "%d run(s) from %d file(s); %d PASSED, %d FAILED." % (
            len(records), len(set(r.path for r in records)), len(records) - len(failed), len(failed)),
    ]
    if shared:
        notes.append("Every run: %s." % shared)
    notes += [
        "FOM = timed steps x total streams / max over ranks of the update time. Efficiency = "
        "(FOM/ranks) / (FOM/ranks at the smallest rank count) within runs that differ only in the rank "
        "count (see analysis.scaling); empty when there is no such baseline.",
    ]
    for r in failed:
        notes.append("FAILED: %s: %s" % (r.label(), ", ".join(r.failed_checks) or "verification.passed is false"))
    return md + "\n" + "\n".join(notes) + "\n", C.csv_text(CSV_HEADERS, [csv_row(r) for r in records])


def main(argv=None):
    p = argparse.ArgumentParser(
        prog="python3 -m analysis.collect",
        description="Tabulate every run of mosaic_miniapp result files: key parameters, figure of merit "
                    "(update samples/s), end-to-end samples/s, parallel efficiency where a baseline exists, "
                    "final diagnostics and verification status. Markdown on stdout; CSV with --csv.")
    C.add_common_arguments(p, out=False)
    p.add_argument("--csv", metavar="FILE", help="also write the table as CSV (full precision) to FILE")
    args = p.parse_args(argv)
    if args.csv:
        C.check_output_file(args.csv)
    records = C.load_records(args.inputs, validate=args.validate)
    md, csv = build(records)
    if args.csv:
        C.write_text(args.csv, csv)
    sys.stdout.write(md)
    if args.csv:
        print("\nCSV written to %s" % args.csv)
    return 0


if __name__ == "__main__":
    sys.exit(C.main_wrapper("analysis.collect", main, None))
