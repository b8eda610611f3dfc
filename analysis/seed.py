"""seed: the seed project's published reference figures, as data with their
source, for the comparison columns and reference points of analysis.sweep
and analysis.saturation.

Every figure is the seed project's PyTorch implementation on one NVIDIA GB10
GPU, float32, 8 streams, in samples/s as published: the published figures do
not say which phases their timer covered, while this code's figure of merit
(runs[].figure_of_merit.value) times the update alone, so a ratio of the two
compares like with like only as far as the seed's timer did too. Source: the
project's issue 33 and COLLABORATION.md (docs/PERFORMANCE.md, "Reference point"). They were not
measured by this code or on this project's machines: a GPU number quoted for
orientation, never a measurement of ours.

    >>> from analysis import seed
    >>> seed.seed_figure(8192, 64, 8, "float")
    5210.0
    >>> seed.seed_figure(8192, 64, 8, "double") is None
    True
"""

from collections import OrderedDict

LABEL = "seed, GB10, PyTorch"
# In figures: the seed's points are a GPU's (this code's may be a CPU's), and
# its published samples/s do not say what its timer covered.
PLOT_LABEL = LABEL + " (GPU; timer scope not stated)"
SOURCE = "the project's issue 33 and COLLABORATION.md"
IMPLEMENTATION = "seed project's PyTorch implementation"
DEVICE = "one NVIDIA GB10 GPU"
DTYPE = "float32"
STREAMS = 8
UNIT = "samples/s as published (timer scope not stated)"

# (d, r) -> samples/s, all at 8 streams, float32, one GB10.
D_LADDER_RANK = 64
D_LADDER = OrderedDict([(2048, 12794.0), (4096, 9014.0), (8192, 5210.0), (16384, 2654.0)])
R_LADDER_D = 8192
R_LADDER = OrderedDict([(32, 9758.0), (64, 5210.0), (128, 2444.0)])

FIGURES = OrderedDict()
for _d, _v in D_LADDER.items():
    FIGURES[(_d, D_LADDER_RANK)] = _v
for _r, _v in R_LADDER.items():
    FIGURES[(R_LADDER_D, _r)] = _v

# This code's names for float32 (runs[].dtype is "float").
_FLOAT = ("float", "float32", "fp32", "single")


def source_note():
    """One sentence that says what the seed figures are and where they come from."""
    return ("Seed figures (%s): %s, %s, %s, %d streams, %s; source: %s. Not measured by this code." % (
        LABEL, IMPLEMENTATION, DEVICE, DTYPE, STREAMS, UNIT, SOURCE))


def is_float32(dtype):
    return str(dtype).lower() in _FLOAT


def seed_figure(d, r, streams, dtype):
    """The seed's samples/s as published (timer scope not stated: UNIT) at
    (d, r) with `streams` streams on one device in `dtype`, or None when the
    seed published none (another stream count, dtype, d or r)."""
    if streams is None or float(streams) != STREAMS or not is_float32(dtype):
        return None
    return FIGURES.get((int(d), int(r)))


def matches_seed_configuration(rec):
    """A run (common.Record) comparable with the seed's configuration: one
    rank (one device), 8 streams, float32. The seed ran 8 streams on one GPU;
    a multi-rank run's FOM is over several devices."""
    return rec.ranks == 1 and rec.streams_total == STREAMS and is_float32(rec.dtype)


def seed_figure_for(rec):
    """seed_figure() for a run (common.Record): its d, r, total streams and
    dtype, on one rank only (matches_seed_configuration); None otherwise."""
    if not matches_seed_configuration(rec):
        return None
    return seed_figure(rec.d, rec.r, rec.streams_total, rec.dtype)


def ladder(x_name, fixed):
    """The seed's points along d at r = fixed (x_name "d") or along r at d =
    fixed (x_name "r"): [(x, samples/s)], empty when the seed has no ladder
    there."""
    if x_name == "d":
        return sorted((d, v) for (d, r), v in FIGURES.items() if r == fixed)
    if x_name == "r":
        return sorted((r, v) for (d, r), v in FIGURES.items() if d == fixed)
    raise ValueError("x_name must be 'd' or 'r', not %r" % x_name)
