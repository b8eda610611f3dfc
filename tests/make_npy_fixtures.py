#!/usr/bin/python3
"""Writes the tiny .npy fixtures of tests/sources/test_npy.cpp into tests/fixtures/npy/.

Run with the system Python and its NumPy (the files must be written by NumPy
itself, not by our own writer):

    /usr/bin/python3 tests/make_npy_fixtures.py

The fixtures are committed; rerunning the script must reproduce them byte for
byte (test_npy does not run it). Values are chosen so that the C++ side can
recompute them exactly:

    good[i, j] = (3*i + j - 7) / 3.0     (float64, correctly rounded division)
    good_f4    = good.astype(float32)    (== static_cast<float>(double value))
"""
import os
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "fixtures", "npy")


def good(dtype):
    return ((np.arange(15, dtype=np.float64).reshape(5, 3) - 7.0) / 3.0).astype(dtype)


def write(name, array, version=(1, 0), allow_pickle=False):
    path = os.path.join(OUT, name)
    with open(path, "wb") as f:
        np.lib.format.write_array(f, array, version=version, allow_pickle=allow_pickle)
    return path


def main():
    os.makedirs(OUT, exist_ok=True)
    # Good files: every supported header version, both float widths.
    for major in (1, 2, 3):
        write(f"v{major}_f8.npy", good("<f8"), version=(major, 0))
        write(f"v{major}_f4.npy", good("<f4"), version=(major, 0))
    # Column-major storage: NumPy writes fortran_order True and the data in
    # Fortran order.
    fortran = np.asfortranarray(good("<f8"))
    assert not fortran.flags.c_contiguous
    write("fortran_f8.npy", fortran)
    # Zero rows, three features.
    write("empty_rows_f8.npy", np.zeros((0, 3), dtype="<f8"))
    # Non-finite values at known rows (0-based): NaN at (3, 1) in float64,
    # -inf at (2, 2) in float32.
    nan_f8 = good("<f8")
    nan_f8[3, 1] = np.nan
    write("nan_row3_f8.npy", nan_f8)
    inf_f4 = good("<f4")
    inf_f4[2, 2] = -np.inf
    write("inf_row2_f4.npy", inf_f4)
    # A float64 value beyond float32 range at (4, 0): finite in the file, inf
    # once converted to a float run.
    big = good("<f8")
    big[4, 0] = 1e300
    write("overflow_row4_f8.npy", big)
    # Rejected, but well-formed .npy files.
    write("big_endian_f8.npy", good(">f8"))
    write("i4.npy", np.arange(15, dtype="<i4").reshape(5, 3))
    write("c16.npy", good("<f8").astype("<c16"))
    write("f2.npy", good("<f2"))
    write("object.npy", np.array([[1, "a", None]] * 2, dtype=object), allow_pickle=True)
    write("structured.npy", np.zeros(4, dtype=[("x", "<f8"), ("y", "<f4")]))
    write("one_d_f8.npy", np.arange(7, dtype="<f8"))
    write("three_d_f8.npy", np.zeros((2, 3, 4), dtype="<f8"))
    write("scalar_f8.npy", np.array(1.5, dtype="<f8"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
