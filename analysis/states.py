"""Reading the final-state files a run writes into output.state_dir.

A state set is the .npy files of docs/INPUT_DECK.md plus its manifest
states.json. The mini-app writes a new set into state_dir/.incoming and
swaps it in by renames, the manifest last (src/mosaic/io/state_files.hpp,
write_state_files). A directory without the manifest holds an incomplete
set: a run died inside that swap, and its files may be of two different runs
(the new mu.npy beside the previous U.npy). load_states refuses such a set, and a set whose
files are not those the manifest records (size, CRC-32, shape).

    from analysis.states import load_states
    states, manifest = load_states("run/states")   # states["U"]: (streams, d, r)

numpy is imported by load_states (a missing numpy: analysis.common.AnalysisError).
"""

import json
import os
import zlib

MANIFEST = "states.json"
FORMAT = "mosaic-states"
FORMAT_VERSION = 1


class StateSetError(Exception):
    """A state directory that does not hold one complete state set."""


def _crc32(path):
    crc = 0
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 24), b""):
            crc = zlib.crc32(block, crc)
    return crc


def read_manifest(state_dir):
    """The parsed states.json of state_dir; StateSetError if it is missing or
    not a state-set manifest."""
    path = os.path.join(state_dir, MANIFEST)
    if not os.path.exists(path):
        raise StateSetError(
            f"{path}: missing: the state set in {state_dir} is incomplete (a run stopped while swapping it in, "
            f"or it was written before the mini-app wrote manifests); its .npy files may come from different "
            f"runs and are not used")
    try:
        with open(path) as f:
            manifest = json.load(f)
    except (OSError, ValueError) as e:
        raise StateSetError(f"{path}: not a readable state-set manifest ({e})") from None
    if not isinstance(manifest, dict) or manifest.get("format") != FORMAT:
        raise StateSetError(f"{path}: not a state-set manifest (expected format {FORMAT!r})")
    if manifest.get("format_version") != FORMAT_VERSION:
        raise StateSetError(f"{path}: format_version {manifest.get('format_version')!r}, "
                            f"this reader reads {FORMAT_VERSION}")
    return manifest


def load_states(state_dir):
    """Every array of the state set in state_dir, keyed by name without
    ".npy" (mu, U, S, s2, stream_ids, steps, status), and the manifest.
    Raises StateSetError naming the file at fault."""
    try:
        import numpy as np
    except ImportError:
        from analysis import common
        raise common.missing_module("numpy", figures=False) from None

    manifest = read_manifest(state_dir)
    states = {}
    for entry in manifest["files"]:
        path = os.path.join(state_dir, entry["name"])
        if not os.path.exists(path):
            raise StateSetError(f"{path}: missing (listed in {os.path.join(state_dir, MANIFEST)})")
        size = os.path.getsize(path)
        if size != entry["bytes"]:
            raise StateSetError(f"{path}: {size} bytes, the manifest records {entry['bytes']} "
                                f"(replaced or truncated after the set was written)")
        crc = _crc32(path)
        if crc != entry["crc32"]:
            raise StateSetError(f"{path}: CRC-32 {crc:08x}, the manifest records {entry['crc32']:08x} "
                                f"(replaced or corrupted after the set was written)")
        array = np.load(path)
        if list(array.shape) != entry["shape"]:
            raise StateSetError(f"{path}: shape {array.shape}, the manifest records {tuple(entry['shape'])}")
        states[entry["name"][:-len(".npy")]] = array
    return states, manifest
