"""Writes the SYNTHETIC test fixtures tests/analysis/fixtures/synthetic_*.json.

These are hand-made result files that follow docs/result.schema.json exactly
but were NOT produced by the mini-app: every number (FOM, checksums,
diagnostics) is chosen here so that the analysis tests can check the tables
against known values. The machines ("Synthetic GPU X1", ...) do not exist.

    /usr/bin/python3 tests/analysis/make_synthetic_fixtures.py   # rewrites the files

The files are committed; test_analysis.py checks that they are what this
script writes, so edit this script, not the JSON.
"""

import json
import math
import os

HERE = os.path.dirname(os.path.abspath(__file__))
FIXTURES = os.path.join(HERE, "fixtures")

COMMIT_GPU = "5e7a1c0de5e7a1c0de5e7a1c0de5e7a1c0de0001"
COMMIT_CPU = "5e7a1c0de5e7a1c0de5e7a1c0de5e7a1c0de0002"

# runs[].memory.peak_allocated_space of each environment: Kokkos' name of the
# default execution space's memory space.
SPACES = {"cpu": "Host", "gpu1": "Cuda", "gpu2": "Cuda"}
# The mini-app's definitions (src/mosaic/app/run_output.hpp).
PEAK_ALLOCATED_DEFINITION = (
    "each rank's high-water mark of the bytes allocated through Kokkos (Views, kokkos_malloc) in the execution "
    "space's memory space during this point, from Kokkos Tools' allocate/deallocate events "
    "(util/allocation_tracker.hpp): exact, without the CUDA context or other processes")
DEVICE_USED_DEFINITION = (
    "the device's used memory (cudaMemGetInfo total - free: the CUDA context and every other process on the "
    "device included) as each phase ended, max over the ranks; null on a host backend")
CUDA_CONTEXT = 512 * 2 ** 20  # the synthetic device's used memory before the run allocates
OUTSIDE_KOKKOS = 2 * 2 ** 20  # what the vendor GEMM allocates outside Kokkos at its first call


def environment(kind):
    base = {
        "cpu_model": "Synthetic CPU Model 9000 (test fixture)",
        "cpu_cores_online": 16,
        "memory_bytes": 137438953472,
        "kokkos_version": "4.4.1",
        "kokkos_kernels_version": "4.4.1",
        "mpi_library": "Synthetic MPI 0.0 (test fixture)",
        "compiler": "synthetic-c++ 0.0",
        "build_type": "Release",
        "mosaic_version": "0.1.0",
    }
    if kind == "cpu":
        base.update(hostname="synthetic-cpu-host", gpus=[], kokkos_backends=["OpenMP", "Serial"],
                    kokkos_default_execution_space="OpenMP", kokkos_default_concurrency=16, git_commit=COMMIT_CPU)
    else:
        model, host = {"gpu1": ("Synthetic GPU X1", "synthetic-gpu-node-1"),
                       "gpu2": ("Synthetic GPU X2", "synthetic-gpu-node-2")}[kind]
        base.update(hostname=host, gpus=[{"index": i, "model": model, "memory_bytes": 85899345920,
                                          "compute_capability": "9.0"} for i in range(4)],
                    kokkos_backends=["Cuda", "Serial"], kokkos_default_execution_space="Cuda",
                    kokkos_default_concurrency=135168, git_commit=COMMIT_GPU)
    # Same key order as the schema's "required" list.
    keys = ["hostname", "cpu_model", "cpu_cores_online", "memory_bytes", "gpus", "kokkos_version",
            "kokkos_backends", "kokkos_default_execution_space", "kokkos_default_concurrency",
            "kokkos_kernels_version", "mpi_library", "compiler", "build_type", "git_commit", "mosaic_version"]
    return {k: base[k] for k in keys}


def resolved_deck(deck, overrides, d, r, dtype, mode, per_rank, total, steps, every, result, sweep):
    return {
        "problem": {"d": d, "rank": r, "dtype": dtype},
        "streams": {"mode": mode, "per_rank": per_rank, "total": total},
        "source": {"type": "synthetic", "rank": r, "lambda_max": 1.0, "lambda_min": 0.1, "noise": 0.1,
                   "noise_range": None, "drift": 1.0e-4, "mean_scale": 1.0},
        "algorithm": {"covariance_update": "exact", "subspace_direction": "precision", "eta_mu": 0.01,
                      "eta_S": 0.01, "eta_U": 0.005, "eta_s": 0.01, "gamma": 1.0, "max_step": 1.0,
                      "reorthonormalize_every": 0, "init": "data", "init_samples": 2 * r, "init_scale": 1.0},
        "run": {"steps": steps, "warmup_steps": 0, "diagnostics_every": every, "progress_every_s": 10.0, "seed": 1},
        "output": {"result": result, "state_dir": ""},
        "sweep": sweep,
        "input": {"deck": deck, "overrides": overrides},
    }


def diag(step, orth, cond, proj, clamped, nonfinite=0):
    return {
        "step": step, "sample_index": step - 1, "orthonormality_error_max": orth, "symmetry_error_max": 1e-16,
        "s_min_eig_min": 0.05, "s_max_eig_max": 0.05 * cond if cond is not None else 1.2,
        "s_condition_max": cond, "s2_min": 0.0099, "nonfinite_count": nonfinite, "clamped_steps": clamped,
        "breakdown_streams": 0,
        "accuracy": {"projector_distance_max": proj, "projector_distance_mean": proj / 2,
                     "noise_rel_error_max": 0.02, "noise_rel_error_mean": 0.01,
                     "spectrum_rel_error_max": 0.05, "spectrum_rel_error_mean": 0.03},
    }


def default_series(steps, scale=1.0):
    """Four diagnostics points at steps/4, steps/2, 3 steps/4, steps."""
    q = steps // 4
    return [diag(q, 1e-12 * scale, 20.0, 0.3 * scale, 0),
            diag(2 * q, 2e-12 * scale, 21.0, 0.1 * scale, 1),
            diag(3 * q, 3e-12 * scale, 22.0, 0.02 * scale, 1),
            diag(4 * q, 4e-12 * scale, 23.0, 0.01 * scale, 2)]


def memory(state, ranks, total_streams, space):
    """runs[].memory (schema_version 2): rank i holds n_i streams (the
    first total % ranks ranks one more) and allocates through Kokkos 3 x the
    state per stream plus (i + 1) x 4 KiB, so the last rank's peak is the
    largest; rank 0's estimate is the 3 x the state part (estimate / peak
    below 1, as measured); on Cuda the device's used memory is the context,
    the largest peak and, after the first GEMM, the vendor's workspace."""
    streams = [total_streams // ranks + (1 if i < total_streams % ranks else 0) for i in range(ranks)]
    peaks = [3 * state * n + 4096 * (i + 1) for i, n in enumerate(streams)]
    estimate = 3 * state * streams[0]
    used = None
    if space != "Host":
        top = CUDA_CONTEXT + max(peaks)
        used = [{"phase": "setup", "bytes": CUDA_CONTEXT + 2 * state * max(streams) + 4096 * ranks},
                {"phase": "start", "bytes": top}, {"phase": "warmup", "bytes": top + OUTSIDE_KOKKOS},
                {"phase": "timed_loop", "bytes": top + OUTSIDE_KOKKOS},
                {"phase": "loop_end", "bytes": top + OUTSIDE_KOKKOS}]
    return {
        "state_bytes_per_stream": state, "state_bytes_total": state * total_streams,
        "peak_allocated_bytes_per_rank": peaks, "peak_allocated_space": space,
        "peak_allocated_definition": PEAK_ALLOCATED_DEFINITION,
        "estimate_over_peak_allocated": estimate / peaks[0],
        "device_used_bytes_at_phase": used, "device_used_definition": DEVICE_USED_DEFINITION,
        "peak_rss_bytes_per_rank": [104857600] * ranks,
        "estimate_rank0": {"execution_space_bytes": estimate, "host_only_bytes": state * streams[0],
                           "streams": streams[0],
                           "items": {"engine work": 2 * state * streams[0], "state copies (host)": state * streams[0],
                                     "stream states": state * streams[0]}},
    }


def run_entry(*, deck, overrides, d, r, dtype, mode, ranks, per_rank=1, total=None, steps=1000, fom, e2e=None,
              series=None, checksums=None, passed=True, sweep_point=None, sweep_index=0, sweep_count=1,
              result="mosaic_result.json", timers=None, kernel=None, space="Cuda"):
    """timers: None for the six phases every file has (as before issue 15:
    no setup, verify, checkpoint, output, total, no timer_coverage), or
    {phase: mean seconds} with "total": every phase, written as a 2-rank run
    writes them (max 1.25 x, min 0.75 x the mean; the total, synchronized at
    the end, 1.1 x and 0.9 x), with timer_coverage; the update max must give
    the FOM. kernel: the runs[].kernel object (None: not recorded). space:
    runs[].memory.peak_allocated_space, SPACES of the document's environment
    (document() checks it; "Host": no device, device_used_bytes_at_phase
    null)."""
    total_streams = per_rank * ranks if mode == "weak" else total
    spr_min, spr_max = total_streams // ranks, -(-total_streams // ranks)
    series = series if series is not None else default_series(steps)
    e2e = e2e if e2e is not None else 0.8 * fom
    samples = steps * total_streams
    update_max = samples / fom
    scalar = 4 if dtype == "float" else 8
    state = (d + d * r + r * r + 1) * scalar
    final = series[-1]
    orth_tol = 1e-2 if dtype == "float" else 1e-8
    orth = final["orthonormality_error_max"]
    checks = [
        {"name": "orthonormality_error_max", "value": orth, "relation": "<=", "threshold": orth_tol,
         "passed": orth <= orth_tol},
        {"name": "symmetry_error_max", "value": 1e-16, "relation": "<=", "threshold": 1e-12, "passed": True},
        {"name": "s_min_eig_min", "value": 0.05, "relation": ">", "threshold": 0.0, "passed": True},
        {"name": "s2_min", "value": 0.0099, "relation": ">", "threshold": 0.0, "passed": True},
        {"name": "nonfinite_count", "value": 0.0, "relation": "==", "threshold": 0.0, "passed": True},
        {"name": "breakdown_streams", "value": 0.0, "relation": "==", "threshold": 0.0, "passed": True},
    ]
    assert passed == all(c["passed"] for c in checks)
    if checksums is None:
        checksums = [1.0 + 0.125 * s + d * 1e-6 for s in range(total_streams)]
    sweep = {"index": sweep_index, "count": sweep_count, "point": sweep_point or {}}

    def timer(mx):
        return {"max_s": mx, "min_s": 0.9 * mx, "mean_s": 0.95 * mx}
    if timers is None:
        timer_stats = {"init": timer(0.01), "warmup": timer(0.0), "generate": timer(0.1 * update_max),
                       "update": timer(update_max), "diagnostics": timer(0.001), "reduce": timer(0.0005)}
        coverage = None
    else:
        spread = {"total": (1.1, 0.9)}
        timer_stats = {p: {"max_s": spread.get(p, (1.25, 0.75))[0] * s, "min_s": spread.get(p, (1.25, 0.75))[1] * s,
                           "mean_s": s} for p, s in timers.items()}
        assert timer_stats["update"]["max_s"] == update_max
        coverage = {"accounted_fraction": sum(s for p, s in timers.items() if p != "total") / timers["total"],
                    "definition": "sum over the phases of their mean seconds over the ranks, over the mean total"}
    entry = {
        "sweep_point": sweep_point or {},
        "resolved_deck": resolved_deck(deck, overrides, d, r, dtype, mode, per_rank, total, steps,
                                       series[0]["step"] if len(series) > 1 else 0, result, sweep),
        "dtype": dtype,
        "decomposition": {
            "ranks": ranks, "mode": mode, "total_streams": total_streams, "streams_per_rank_min": spr_min,
            "streams_per_rank_max": spr_max, "imbalance": spr_max / (total_streams / ranks) - 1.0,
            "policy": "each stream is owned whole by one rank; stream states are never split, exchanged or "
                      "averaged; only statistics cross ranks"},
    }
    if kernel is not None:
        entry["kernel"] = kernel
    entry["steps"] = {"timed": steps, "warmup": 0, "init_samples": 2 * r}
    entry["timers"] = timer_stats
    if coverage is not None:
        entry["timer_coverage"] = coverage
    entry.update({
        "figure_of_merit": {"name": "update_samples_per_second", "value": fom,
                            "definition": "timed steps x total streams / max over ranks of the update-only time"},
        "throughput": {"update_samples_per_second": fom, "end_to_end_samples_per_second": e2e,
                       "per_rank_update_samples_per_second_min": 0.98 * fom / ranks,
                       "per_rank_update_samples_per_second_max": 1.02 * fom / ranks,
                       "communication_seconds_max": 0.0005},
        "diagnostics": {"final": final, "series": series},
        "memory": memory(state, ranks, total_streams, space),
        "counts": {"clamped_steps": final["clamped_steps"], "breakdown_streams": 0, "breakdowns": []},
        "verification": {"passed": passed, "checks": checks,
                         "per_stream_checksums": [{"stream_id": s, "checksum": c} for s, c in enumerate(checksums)]},
    })
    return entry


def document(name, env, deck, overrides, ranks, runs):
    for run in runs:
        assert run["memory"]["peak_allocated_space"] == SPACES[env], (name, env)
    return {
        "schema_version": 2,
        "program": "mosaic_miniapp",
        "command_line": ["mosaic_miniapp", deck] + [a for o in overrides for a in ("--set", o)],
        "deck_path": deck,
        "overrides": overrides,
        "mpi_ranks": ranks,
        "environment": environment(env),
        "status": "completed",
        "runs": runs,
    }


# The runs[].memory fields schema_version 2 added (docs/RESULT-FORMAT.md).
VERSION2_MEMORY = ("peak_allocated_bytes_per_rank", "peak_allocated_space", "peak_allocated_definition",
                   "estimate_over_peak_allocated", "device_used_bytes_at_phase", "device_used_definition")


def version1(doc):
    """The document as schema_version 1 wrote it, in place (for the tests of
    older files; no fixture is written so): runs[].memory without the
    fields of version 2 and with device_bytes_in_use_max (null on a host
    backend, else the device's used memory at loop_end)."""
    doc["schema_version"] = 1
    for run in doc["runs"]:
        mem = run["memory"]
        used = mem["device_used_bytes_at_phase"]
        device = None if used is None else used[-1]["bytes"]
        for key in VERSION2_MEMORY:
            del mem[key]
        run["memory"] = dict([("state_bytes_per_stream", mem.pop("state_bytes_per_stream")),
                              ("state_bytes_total", mem.pop("state_bytes_total")),
                              ("device_bytes_in_use_max", device)] + list(mem.items()))
    return doc


def fixtures():
    out = {}

    # Weak scaling on GPU X1: d=512, r=16, double, 4 streams per rank.
    # FOM 1000, 1900, 3600 -> efficiency 1.000, 0.950, 0.900.
    for n, fom in ((1, 1000.0), (2, 1900.0), (4, 3600.0)):
        name = "synthetic_weak_np%d.json" % n
        ov = ["problem.d=512", "problem.rank=16", "problem.dtype=double", "streams.per_rank=4", "run.steps=1000",
              "output.result=" + name]
        out[name] = document(name, "gpu1", "inputs/weak_8gpu.yaml", ov, n, [run_entry(
            deck="inputs/weak_8gpu.yaml", overrides=ov, d=512, r=16, dtype="double", mode="weak", ranks=n,
            per_rank=4, fom=fom, result=name)])

    # Strong scaling on GPU X1: d=768, r=32, double, 8 streams in all.
    # FOM 800, 1440, 2400 -> speedup 1.8, 3.0 -> efficiency 1.000, 0.900, 0.750.
    # The per-stream checksums are identical in the three files.
    strong_sums = [0.1 * (s + 1) + 1.0 / 3.0 for s in range(8)]
    for n, fom in ((1, 800.0), (2, 1440.0), (4, 2400.0)):
        name = "synthetic_strong_np%d.json" % n
        ov = ["problem.d=768", "problem.rank=32", "problem.dtype=double", "run.steps=1000", "output.result=" + name]
        out[name] = document(name, "gpu1", "inputs/strong_8gpu.yaml", ov, n, [run_entry(
            deck="inputs/strong_8gpu.yaml", overrides=ov, d=768, r=32, dtype="double", mode="strong", ranks=n,
            total=8, fom=fom, checksums=list(strong_sums), result=name)])

    # Strong scaling with a checksum mismatch, no 1-rank run (base = 2 ranks):
    # d=256, r=16, float, 8 streams; FOM 500 (np2), 900 (np4) -> efficiency 0.900.
    # Stream 5 differs by one unit in the last place at 4 ranks.
    bad_sums = [2.0 + 0.25 * s for s in range(8)]
    for n, fom in ((2, 500.0), (4, 900.0)):
        name = "synthetic_strong_mismatch_np%d.json" % n
        sums = list(bad_sums)
        if n == 4:
            sums[5] = math.nextafter(sums[5], math.inf)
        ov = ["problem.d=256", "problem.rank=16", "run.steps=1000", "output.result=" + name]
        out[name] = document(name, "gpu1", "inputs/strong_8gpu.yaml", ov, n, [run_entry(
            deck="inputs/strong_8gpu.yaml", overrides=ov, d=256, r=16, dtype="float", mode="strong", ranks=n,
            total=8, fom=fom, checksums=sums, result=name)])

    # A d sweep in one file (GPU X1, 1 rank, 8 streams, r=16, float): FOM 4000, 2000, 1000.
    ov = ["problem.rank=16", "run.steps=1000", "run.diagnostics_every=250", "sweep.problem.d=[256,512,1024]"]
    runs = [run_entry(deck="inputs/single_gpu.yaml", overrides=ov, d=d, r=16, dtype="float", mode="weak", ranks=1,
                      per_rank=8, fom=fom, sweep_point={"problem.d": d}, sweep_index=k, sweep_count=3,
                      series=default_series(1000, scale=1.0 + k), result="synthetic_sweep_d.json")
            for k, (d, fom) in enumerate(((256, 4000.0), (512, 2000.0), (1024, 1000.0)))]
    out["synthetic_sweep_d.json"] = document("synthetic_sweep_d.json", "gpu1", "inputs/single_gpu.yaml", ov, 1, runs)

    # An r sweep in one file (GPU X1, 1 rank, 8 streams, d=4096, float): FOM 3000, 1500, 600.
    ov = ["problem.d=4096", "run.steps=1000", "sweep.problem.rank=[8,32,64]"]
    runs = [run_entry(deck="inputs/rank_sweep.yaml", overrides=ov, d=4096, r=r, dtype="float", mode="weak", ranks=1,
                      per_rank=8, fom=fom, sweep_point={"problem.rank": r}, sweep_index=k, sweep_count=3,
                      result="synthetic_sweep_r.json")
            for k, (r, fom) in enumerate(((8, 3000.0), (32, 1500.0), (64, 600.0)))]
    out["synthetic_sweep_r.json"] = document("synthetic_sweep_r.json", "gpu1", "inputs/rank_sweep.yaml", ov, 1, runs)

    # Streams-per-device saturation (GPU X2, 1 rank, d=2048, r=16, float):
    # FOM 300, 580, 1000, 1050 -> fraction of max .286, .552, .952, 1 -> saturates at 4 streams.
    ov = ["problem.d=2048", "problem.rank=16", "run.steps=1000", "sweep.streams.per_rank=[1,2,4,8]"]
    runs = [run_entry(deck="inputs/single_gpu.yaml", overrides=ov, d=2048, r=16, dtype="float", mode="weak",
                      ranks=1, per_rank=p, fom=fom, sweep_point={"streams.per_rank": p}, sweep_index=k,
                      sweep_count=4, result="synthetic_saturation.json")
            for k, (p, fom) in enumerate(((1, 300.0), (2, 580.0), (4, 1000.0), (8, 1050.0)))]
    out["synthetic_saturation.json"] = document("synthetic_saturation.json", "gpu2", "inputs/single_gpu.yaml", ov, 1,
                                                runs)

    # One drifting stream family on the CPU host, the same deck on 1 and 2 ranks
    # (weak, 1 stream per rank; FOM 5000, 9000 -> efficiency 0.900). Six
    # diagnostics points; at 2 ranks cond(S) is non-finite (null) at step 3000.
    for n, fom in ((1, 5000.0), (2, 9000.0)):
        name = "synthetic_drift_np%d.json" % n
        series = [diag(1000 * k, 1e-13 * k, 10.0 + k, 0.3 / k, [0, 0, 2, 3, 3, 5][k - 1]) for k in range(1, 7)]
        if n == 2:
            series[2]["s_condition_max"] = None
            series[2]["s_max_eig_max"] = 1.0
        out[name] = document(name, "cpu", "inputs/accuracy_drift.yaml", ["output.result=" + name], n, [run_entry(
            deck="inputs/accuracy_drift.yaml", overrides=["output.result=" + name], d=256, r=8, dtype="double",
            mode="weak", ranks=n, per_rank=1, steps=6000, fom=fom, series=series, result=name, space="Host")])

    # A failed verification (orthonormality error 1e-6 > 1e-8 in double) on the CPU host.
    series = [diag(500, 1e-7, 30.0, 0.2, 0), diag(1000, 1e-6, 31.0, 0.1, 0)]
    out["synthetic_failed.json"] = document("synthetic_failed.json", "cpu", "inputs/smoke_cpu.yaml", [], 1, [run_entry(
        deck="inputs/smoke_cpu.yaml", overrides=[], d=64, r=4, dtype="double", mode="weak", ranks=1, per_rank=2,
        steps=1000, fom=12345.678, e2e=9876.5, series=series, passed=False, space="Host")])

    # Every timer (as the mini-app writes them since issue 15) and the kernel
    # object: a d sweep on the CPU host, 2 ranks, 2 streams each, 2000 steps
    # (8000 samples). d=128: the phases' means add up to 8.5 s of a 10 s
    # total (accounted 0.85); update max 5 s -> FOM 1600. d=256: twice the
    # times and a 1 s checkpoint: 18 s of 20 s (0.9); FOM 800.
    phases = {"setup": 0.5, "init": 0.25, "warmup": 0.25, "generate": 2.0, "update": 4.0, "segments": 0.0, "verify": 0.5,
              "diagnostics": 0.5, "checkpoint": 0.0, "reduce": 0.25, "output": 0.25, "total": 10.0}
    blocked = {"update": "blocked", "block_size": 16, "block_size_from": "deck", "block_gemm": "tiled",
               "reorthonormalize": "never"}
    ov = ["streams.per_rank=2", "run.steps=2000", "sweep.problem.d=[128,256]"]
    runs = []
    for k, (d, scale, checkpoint, fom, e2e) in enumerate(((128, 1.0, 0.0, 1600.0, 1000.0),
                                                         (256, 2.0, 1.0, 800.0, 500.0))):
        times = {p: scale * s for p, s in phases.items()}
        times["checkpoint"] = checkpoint
        runs.append(run_entry(deck="inputs/smoke_cpu.yaml", overrides=ov, d=d, r=8, dtype="double", mode="weak",
                              ranks=2, per_rank=2, steps=2000, fom=fom, e2e=e2e, sweep_point={"problem.d": d},
                              sweep_index=k, sweep_count=2, result="synthetic_breakdown.json", timers=times,
                              kernel=blocked, space="Host"))
    out["synthetic_breakdown.json"] = document("synthetic_breakdown.json", "cpu", "inputs/smoke_cpu.yaml", ov, 2,
                                               runs)
    return out


def render(doc):
    return json.dumps(doc, indent=1) + "\n"


def main():
    os.makedirs(FIXTURES, exist_ok=True)
    for name, doc in fixtures().items():
        with open(os.path.join(FIXTURES, name), "w", encoding="utf-8") as f:
            f.write(render(doc))
        print("wrote", os.path.join(FIXTURES, name))


if __name__ == "__main__":
    main()
