#!/usr/bin/python3
"""An alpha-beta model of the mini-app's communication at scale (issue 36
item 3; docs/PERFORMANCE.md, "Communication"): the share of a run's wall
time spent in MPI collectives for the headline decks (inputs/weak_8gpu.yaml,
inputs/strong_8gpu.yaml) at 8, 64, 512 and 4,096 GPUs, one rank per GPU.

The traffic is the mini-app's, as bench/mpi_call_counter.cpp counted it on
this machine at commit 69c5d12 (the smoke deck on one rank, streams.per_rank
2 and 4, run.diagnostics_every 0 and 500:
results/cpu/communication_69c5d12e44e1_1rank_*.txt). Per rank:
  - per block: one MPI_Iallreduce of 8 bytes (the stop/checkpoint agreement),
    acted on one block later, so its latency is hidden behind a block;
  - per diagnostics point: one MPI_Allreduce of 448 bytes (PackedAllreduce),
    2 MPI_Gather of 4 bytes, 2 MPI_Gatherv of 8 and 40 bytes per stream of
    the rank (the prequential sums' ids and values), one MPI_Bcast of 40
    bytes;
  - once (the driver's start, the init windows, the run's end and its final
    diagnostics point, the communication ledger's reduction): 11
    MPI_Allreduce (1,800 bytes in all, and 8 bytes per stream of the run in
    one of them: the init windows' samples used, by stream id), 7 MPI_Bcast
    (1,359 bytes), 9 MPI_Gather (36 bytes), 9 MPI_Gatherv (82 bytes + 64
    bytes per stream of the rank).
Costs (P ranks, m bytes, L = ceil(log2 P)): an allreduce 2 L (alpha + m
beta) (Open MPI runs an allreduce of a non-commutative operation, as the
packed one is, as a reduce and a broadcast; taken for every allreduce); a
broadcast L (alpha + m beta); a gather to rank 0 L alpha + (P - 1) m beta
(the root receives every rank's part). The network's parameters are assumptions, not measurements: alpha =
2 us and 1/beta = 24 GB/s (InfiniBand HDR, 200 Gb/s, MPI small-message
latency across a switch; every rank taken as off-node, which overstates
the 8 GPUs of one node). The compute time per GPU is an assumption too: the
PyTorch benchmark's 5,210 samples/s on one GB10 (d 8192, r 64, float), and
10x that for a GPU that runs the mini-app faster; no GPU ran the mini-app
here. What the model leaves out, and the measurements on this machine show
dominating a short run: the time a rank waits at a collective for a slower
rank (imbalance), which no network makes shorter.

    /usr/bin/python3 bench/communication_model.py [--alpha-us 2] [--gbytes-per-s 24] [--rate 5210,52100]
        [--diagnostics-every 0]
"""
import argparse
import math

DECKS = {  # deck: (streams per rank at P ranks, steps + warm-up)
    "weak_8gpu (16 streams per GPU)": (lambda p: 16, 101000),
    "strong_8gpu (128 streams in all)": (lambda p: 128 / p if p <= 128 else None, 101000),
}
BLOCK = 128  # block_size: auto at d 8192, r 64 (docs/PERFORMANCE.md)


def seconds(p, streams, points, alpha, beta):
    """The collectives' time of one run on p ranks (streams per rank, diagnostics points besides the last)."""
    total_streams = p * streams
    levels = math.ceil(math.log2(p)) if p > 1 else 0
    gather = lambda m: levels * alpha + (p - 1) * m * beta  # noqa: E731
    allreduce = lambda m: 2 * levels * (alpha + m * beta)  # noqa: E731
    broadcast = lambda m: levels * (alpha + m * beta)  # noqa: E731
    per_point = allreduce(448) + 2 * gather(4) + gather(8 * streams) + gather(40 * streams) + broadcast(40)
    end = (10 * allreduce(1800 / 11) + allreduce(1800 / 11 + 8 * total_streams) + 7 * broadcast(1359 / 7)
           + 9 * gather(4) + 9 * gather((82 + 64 * streams) / 9))
    return points * per_point + end


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--alpha-us", type=float, default=2.0)
    ap.add_argument("--gbytes-per-s", type=float, default=24.0)
    ap.add_argument("--rate", default="5210,52100", help="assumed update samples/s per GPU, comma-separated")
    ap.add_argument("--diagnostics-every", type=int, default=0)
    args = ap.parse_args()
    alpha, beta = args.alpha_us * 1e-6, 1.0 / (args.gbytes_per_s * 1e9)
    rates = [float(r) for r in args.rate.split(",")]
    print("alpha %.3g us, 1/beta %.3g GB/s, diagnostics every %d steps; per-block agreement hidden behind a block "
          "(its latency L alpha against the block's time in the last column)" % (
              args.alpha_us, args.gbytes_per_s, args.diagnostics_every))
    print("| deck | GPUs | streams per GPU | rate per GPU (samples/s, assumed) | run's compute (s) | "
          "collectives (s) | share | agreement latency / block time |")
    print("|---|---|---|---|---|---|---|---|")
    for deck, (per_rank, steps) in DECKS.items():
        for p in (8, 64, 512, 4096):
            streams = per_rank(p)
            if streams is None or streams < 1:
                print("| %s | %d | refused: strong mode needs at least one stream per rank (config.cpp) | | | | | |" % (deck, p))
                continue
            points = steps // args.diagnostics_every if args.diagnostics_every > 0 else 0
            for rate in rates:
                compute = streams * steps / rate
                comm = seconds(p, streams, points, alpha, beta)
                block = streams * BLOCK / rate
                latency = math.ceil(math.log2(p)) * alpha
                print("| %s | %d | %g | %g | %.4g | %.3g | %.2g | %.2g |" % (
                    deck, p, streams, rate, compute, comm, comm / (compute + comm), latency / block))


if __name__ == "__main__":
    main()
