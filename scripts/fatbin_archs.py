#!/usr/bin/env python3
"""The GPU code images in a Cuda object or executable: one line per kind
(sm_XX native code, compute_XX PTX) with its count, read from the fatbin
headers (magic 0xBA55ED50) the way the CUDA driver finds them, so a build
can be checked for native code where cuobjdump is not installed.

  scripts/fatbin_archs.py FILE...

Exit status 0, 1 where a file has no fatbin, 2 for a usage error."""
import struct
import sys
from collections import Counter

FATBIN_MAGIC = 0xBA55ED50
KIND = {1: "compute", 2: "sm"}  # 1: PTX (JIT-compiled by the driver), 2: ELF (native code)


def images(data):
    """(kind, arch) of every image of every fatbin in data."""
    out = []
    at = data.find(struct.pack("<I", FATBIN_MAGIC))
    while at >= 0:
        _, _, header_size, fat_size = struct.unpack_from("<IHHQ", data, at)
        entry, end = at + header_size, at + header_size + fat_size
        while entry + 32 <= min(end, len(data)):
            kind, _, entry_header, size = struct.unpack_from("<HHIQ", data, entry)
            (arch,) = struct.unpack_from("<I", data, entry + 28)
            if kind not in KIND or entry_header < 32:
                break
            out.append((KIND[kind], arch))
            entry += entry_header + size
        at = data.find(struct.pack("<I", FATBIN_MAGIC), max(end, at + 4))
    return out


def main(argv):
    if not argv:
        print(__doc__, file=sys.stderr)
        return 2
    rc = 0
    for path in argv:
        with open(path, "rb") as f:
            found = Counter(f"{kind}_{arch}" for kind, arch in images(f.read()))
        if not found:
            print(f"{path}: no fatbin")
            rc = 1
        else:
            print(f"{path}: " + ", ".join(f"{k} x{n}" for k, n in sorted(found.items())))
    return rc


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
