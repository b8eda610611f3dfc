"""What the dataset builders share: a Debian binary package fetched into a
cache (apt-get download, run in the cache directory) or given as a .deb,
unpacked with dpkg -x into a temporary directory, its version, sha256 and
licence; and the dataset written as OUTDIR/<dataset>.npy (float64 unless
told otherwise, C order, shape (samples, features)) with the provenance
sidecar OUTDIR/<dataset>.json (write_dataset, or its pieces package_fields,
save_array, array_fields and write_sidecar for builders whose files differ);
the command line they share (argument_parser, positive).

Defaults, relative to the repository root whatever the working directory:
the output inputs/real_data/<dataset>, the .deb cache inputs/real_data/debian.
"""

import argparse
import contextlib
import glob
import hashlib
import json
import os
import subprocess
import tempfile

from analysis import common as C
from analysis import rdata

DATA_ROOT = os.path.join(C.REPO_ROOT, "inputs", "real_data")
DEFAULT_CACHE = os.path.join(DATA_ROOT, "debian")


def numpy():
    try:
        import numpy
    except ImportError:
        raise C.missing_module("numpy", figures=False) from None
    return numpy


def argument_parser(module, doc, package, dataset, outputs=None):
    """The builders' common command line: [OUTDIR] [--deb PATH] [--cache DIR].
    OUTDIR's help names `outputs`, the files written there (default:
    "<dataset>.npy and <dataset>.json")."""
    if outputs is None:
        outputs = "%s.npy and %s.json" % (dataset, dataset)
    parser = argparse.ArgumentParser(prog="python3 -m " + module, description=doc,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("outdir", nargs="?", default=os.path.join(DATA_ROOT, dataset),
                        help="directory for %s, created (default: %%(default)s)" % outputs)
    parser.add_argument("--deb", help="the %s .deb to use instead of the cache or apt-get download" % package)
    parser.add_argument("--cache", default=DEFAULT_CACHE,
                        help="directory that keeps the downloaded .deb for later runs (default: %(default)s)")
    return parser


def positive(text):
    """argparse type: a positive integer."""
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value <= 0:
        raise argparse.ArgumentTypeError("expected a positive integer, got %r" % text)
    return value


def sha256_file(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def fetch_deb(package, cache):
    """The package's .deb in cache: the one already there, else apt-get
    download's (run in cache, so that apt-get names the file)."""
    os.makedirs(cache, exist_ok=True)
    pattern = os.path.join(cache, package + "_*.deb")
    debs = glob.glob(pattern)
    if not debs:
        try:
            subprocess.run(["apt-get", "download", package], cwd=cache, check=True, stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, universal_newlines=True)
        except FileNotFoundError:
            raise C.AnalysisError("apt-get not found: give the %s .deb with --deb" % package) from None
        except subprocess.CalledProcessError as e:
            raise C.AnalysisError("apt-get download %s (in %s) failed: %s" % (
                package, cache, " ".join(e.stderr.strip().splitlines()[-1:]))) from None
        debs = glob.glob(pattern)
    if len(debs) != 1:
        raise C.AnalysisError("%s: expected one %s_*.deb, found %d (%s): remove the stale ones or give --deb" % (
            cache, package, len(debs), ", ".join(sorted(os.path.basename(d) for d in debs)) or "none"))
    return debs[0]


def licence(copyright_text):
    """The licence lines of a Debian copyright file: every unindented
    License: line and Copyright line (machine-readable "Copyright:" fields
    with their continuation lines joined, and free-form "Copyright (C) ..."
    lines of older files), in the file's order."""
    out = []
    continuing = False
    for line in copyright_text.splitlines():
        if continuing and line.startswith((" ", "\t")) and line.strip() not in ("", "."):
            out[-1] += " " + line.strip()
            continue
        continuing = line.startswith("Copyright:")
        if line.startswith(("Copyright", "License:")):
            out.append(line.strip())
    return out


class Package:
    """An unpacked .deb: root (valid inside unpacked() only), the package's
    name, the .deb's path, version and sha256, and its copyright file's
    licence lines."""

    def __init__(self, name, root, deb):
        self.name, self.root, self.deb = name, root, deb
        self.sha256 = sha256_file(deb)
        self.copyright_file = "usr/share/doc/%s/copyright" % name
        try:
            subprocess.run(["dpkg", "-x", deb, root], check=True, stderr=subprocess.PIPE, universal_newlines=True)
            self.version = subprocess.run(["dpkg-deb", "-f", deb, "Version"], check=True, stdout=subprocess.PIPE,
                                          stderr=subprocess.PIPE, universal_newlines=True).stdout.strip()
        except (OSError, subprocess.CalledProcessError) as e:
            raise C.AnalysisError("%s: cannot unpack: %s" % (deb, (getattr(e, "stderr", None) or str(e)).strip()))
        with open(self.path(self.copyright_file), encoding="utf-8", errors="replace") as f:
            self.licence = licence(f.read())

    def path(self, inside):
        """The unpacked file `inside` (a path in the package)."""
        path = os.path.join(self.root, inside)
        if not os.path.isfile(path):
            raise C.AnalysisError("%s (%s %s) has no file %s" % (os.path.basename(self.deb), self.name, self.version,
                                                                  inside))
        return path

    def read(self, reader, *inside):
        """reader(paths of the files `inside`), an R reader of analysis.rdata,
        with its errors naming the package's files."""
        try:
            return reader(*[self.path(p) for p in inside])
        except (OSError, rdata.RDataError) as e:
            raise C.AnalysisError("%s in %s: %s" % (" + ".join(inside), os.path.basename(self.deb), e)) from None


@contextlib.contextmanager
def unpacked(package, deb=None, cache=DEFAULT_CACHE):
    """The Package of `deb` (default: fetch_deb(package, cache)), unpacked in a
    temporary directory removed on leaving."""
    deb = os.path.abspath(deb) if deb else fetch_deb(package, cache)
    if not os.path.isfile(deb):
        raise C.AnalysisError("%s: no such .deb" % deb)
    with tempfile.TemporaryDirectory(prefix=package + "_") as tmp:
        yield Package(package, os.path.join(tmp, "root"), deb)


def numeric_column(vector, what):
    """An R double or integer vector as float64, NA as NaN."""
    np = numpy()
    if not isinstance(vector, rdata.RVector) or vector.rtype not in ("double", "integer"):
        raise C.AnalysisError("%s: expected a double or integer vector, found %s" % (
            what, getattr(vector, "rtype", type(vector).__name__)))
    return np.array([np.nan if v is None else v for v in vector], dtype=np.float64)


def check_increasing(days, what):
    for k in range(1, len(days)):
        if days[k] <= days[k - 1]:
            raise C.AnalysisError("%s: the dates are not increasing at row %d (%s after %s)" % (
                what, k + 1, days[k], days[k - 1]))


def package_fields(dataset, pkg):
    """The sidecar's first fields: the dataset's name, then the Package's
    name, version, .deb (file name) and its sha256, copyright file and
    licence lines."""
    return {"dataset": dataset, "package": pkg.name, "version": pkg.version, "deb": os.path.basename(pkg.deb),
            "deb_sha256": pkg.sha256, "copyright_file": pkg.copyright_file, "licence": pkg.licence}


def save_array(path, x, dtype):
    """Writes the .npy `path` (its directory created): x as `dtype`, C order.
    Returns the file's sha256."""
    np = numpy()
    directory = os.path.dirname(path)
    if directory:
        os.makedirs(directory, exist_ok=True)
    np.save(path, np.ascontiguousarray(x, dtype=dtype), allow_pickle=False)
    return sha256_file(path)


def array_fields(npy, shape, dtype, sha256, nan_fraction):
    """The sidecar's fields on the .npy written: its file name, shape, dtype,
    order (C), sha256 and NaN fraction."""
    return {"npy": os.path.basename(npy), "shape": list(shape), "dtype": str(dtype), "order": "C",
            "npy_sha256": sha256, "nan_fraction": float(nan_fraction)}


def write_sidecar(path, meta):
    """Writes the sidecar `path`: meta as JSON, indent 1, in meta's order."""
    with open(path, "w", encoding="utf-8") as f:
        json.dump(meta, f, indent=1)
        f.write("\n")


def write_dataset(outdir, dataset, x, pkg, provenance, dtype="float64"):
    """Writes OUTDIR/<dataset>.npy (x as `dtype`, C order) and the sidecar
    OUTDIR/<dataset>.json: the package's provenance and licence
    (package_fields), then `provenance` (source files, object, conversion
    parameters, columns, time span), then the array's shape, dtype, sha256
    of the .npy file and NaN fraction (array_fields). Returns (path of the
    .npy, the sidecar's dict)."""
    np = numpy()
    x = np.ascontiguousarray(x, dtype=dtype)
    if x.ndim != 2 or 0 in x.shape:
        raise C.AnalysisError("%s: expected a non-empty (samples, features) array, got shape %s" % (dataset, x.shape))
    npy = os.path.join(outdir, dataset + ".npy")
    sha256 = save_array(npy, x, dtype)
    meta = package_fields(dataset, pkg)
    meta.update(provenance)
    meta.update(array_fields(npy, x.shape, x.dtype, sha256, np.isnan(x).mean()))
    write_sidecar(os.path.join(outdir, dataset + ".json"), meta)
    return npy, meta


def summary(module, npy, meta):
    """The line a builder prints: what it wrote, from what, under which licence."""
    span = meta.get("time_span")
    return "%s: wrote %s: %d x %d, %.2f%% NaN%s (%s %s; %s)" % (
        module, npy, meta["shape"][0], meta["shape"][1], 100 * meta["nan_fraction"],
        ", %s to %s" % (span["first"], span["last"]) if span else "", meta["package"], meta["version"],
        ", ".join(sorted({line for line in meta["licence"] if line.startswith("License:")})) or "no License: line")
