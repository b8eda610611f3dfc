"""rdata: a reader of R's saved workspaces (.rda / .RData: "RDX2" or "RDX3"
then R's XDR serialization, version 2 or 3, compressed by gzip, bzip2 or
xz), enough for the datasets Debian's r-cran-* packages ship: vectors
(logical, integer, double, complex, character, list), pairlists,
attributes, S4 objects, symbols and the references between them. Language
objects, closures, environments other than the global/base/empty ones and
ALTREP compact sequences are read as far as their fields go (environments
become a dict of their frame) so that a workspace holding one still loads.

R's missing values: NA_real_ and NaN are both NaN in the result (a float
list or numpy array), NA_integer_ and NA logical are None.

    objs = rdata.load("air.rda")    # {name: value}
    value.attrs                      # an RVector's attributes (dict)
"""

import bz2
import gzip
import lzma
import math
import struct

NILVALUE, EMPTYENV, BASEENV, GLOBALENV, UNBOUNDVALUE, MISSINGARG, BASENAMESPACE = 254, 242, 241, 253, 252, 251, 247
REFSXP, PERSISTSXP, PACKAGESXP, NAMESPACESXP, ALTREP, ATTRLIST, ATTRLANG = 255, 247, 250, 249, 238, 239, 240
NA_INT = -(2 ** 31)


class RDataError(Exception):
    pass


class RVector(list):
    """An R vector: the values, its R type name and its attributes."""

    def __init__(self, values, rtype, attrs=None):
        super().__init__(values)
        self.rtype = rtype
        self.attrs = attrs or {}


class RObject:
    """Anything else (S4 objects, environments, language objects): a type and fields."""

    def __init__(self, rtype, attrs=None, **fields):
        self.rtype = rtype
        self.attrs = attrs or {}
        self.fields = fields


def decompress(data):
    for magic, fn in ((b"\x1f\x8b", gzip.decompress), (b"BZh", bz2.decompress), (b"\xfd7zXZ", lzma.decompress)):
        if data.startswith(magic):
            return fn(data)
    return data


class _Reader:
    def __init__(self, data):
        self.b, self.pos, self.refs = data, 0, []

    def take(self, n):
        if self.pos + n > len(self.b):
            raise RDataError("truncated: %d bytes wanted at offset %d of %d" % (n, self.pos, len(self.b)))
        out = self.b[self.pos:self.pos + n]
        self.pos += n
        return out

    def int(self):
        return struct.unpack(">i", self.take(4))[0]

    def length(self):
        n = self.int()
        if n == -1:  # a long vector: two more words
            hi, lo = struct.unpack(">II", self.take(8))
            n = (hi << 32) + lo
        return n

    def string(self):
        n = self.int()
        return None if n == -1 else self.take(n).decode("utf-8", "replace")

    def attributes(self, has_attr):
        if not has_attr:
            return {}
        return _pairlist_dict(self.item())

    def item(self):
        flags = self.int()
        t, has_attr, has_tag = flags & 0xFF, bool(flags & (1 << 9)), bool(flags & (1 << 10))
        if t in (NILVALUE, EMPTYENV, BASEENV, GLOBALENV, UNBOUNDVALUE, MISSINGARG, BASENAMESPACE):
            return None
        if t == REFSXP:
            index = flags >> 8 or self.int()
            return self.refs[index - 1]
        if t in (PACKAGESXP, NAMESPACESXP):
            self.int()  # 0: a string vector follows
            obj = RObject("namespace", info=[self.string() for _ in range(self.int())])
            self.refs.append(obj)
            return obj
        if t == 1:  # SYMSXP
            sym = self.item()
            self.refs.append(sym)
            return sym
        if t == 9:  # CHARSXP
            return self.string()
        if t in (2, 6, 17, ATTRLIST, ATTRLANG):  # pairlist-like: LISTSXP, LANGSXP, DOTSXP
            attrs = self.attributes(has_attr)
            tag = self.item() if has_tag else None
            car = self.item()
            cdr = self.item()
            return RObject("pairlist", attrs, tag=tag, car=car, cdr=cdr)
        if t == 4:  # ENVSXP
            obj = RObject("environment")
            self.refs.append(obj)
            self.int()  # locked
            obj.fields.update(enclos=self.item(), frame=self.item(), hashtab=self.item())
            obj.attrs = _pairlist_dict(self.item())
            return obj
        if t in (3, 5):  # CLOSXP, PROMSXP
            attrs = self.attributes(has_attr)
            env = self.item() if has_tag else None
            return RObject("closure" if t == 3 else "promise", attrs, env=env, car=self.item(), cdr=self.item())
        if t == 25:  # S4SXP
            return RObject("S4", self.attributes(has_attr))
        if t == ALTREP:
            info, state, attr = self.item(), self.item(), self.item()
            return RObject("altrep", _pairlist_dict(attr), info=info, state=state)
        if t in (10, 13):  # LGLSXP, INTSXP
            n = self.length()
            values = [None if v == NA_INT else (bool(v) if t == 10 else v)
                      for v in struct.unpack(">%di" % n, self.take(4 * n))]
            return RVector(values, "logical" if t == 10 else "integer", self.attributes(has_attr))
        if t == 14:  # REALSXP: NA_real_ and NaN both NaN
            n = self.length()
            values = struct.unpack(">%dd" % n, self.take(8 * n))
            return RVector(values, "double", self.attributes(has_attr))
        if t == 15:  # CPLXSXP
            n = self.length()
            v = struct.unpack(">%dd" % (2 * n), self.take(16 * n))
            return RVector([complex(v[2 * i], v[2 * i + 1]) for i in range(n)], "complex", self.attributes(has_attr))
        if t in (16, 19, 20):  # STRSXP, VECSXP, EXPRSXP
            n = self.length()
            values = [self.item() for _ in range(n)]
            return RVector(values, {16: "character", 19: "list", 20: "expression"}[t], self.attributes(has_attr))
        if t == 24:  # RAWSXP
            n = self.length()
            return RVector(list(self.take(n)), "raw", self.attributes(has_attr))
        if t == 21:  # BCODESXP: byte code, not needed for data
            raise RDataError("byte-compiled code (BCODESXP) at offset %d is not supported" % self.pos)
        raise RDataError("unknown R type %d at offset %d" % (t, self.pos - 4))


def _pairlist_dict(node):
    out = {}
    while isinstance(node, RObject) and node.rtype == "pairlist":
        out[node.fields.get("tag")] = node.fields.get("car")
        node = node.fields.get("cdr")
    return out


def loads(data):
    """{name: value} of a saved workspace's bytes (compressed or not)."""
    data = decompress(data)
    if data[:5] not in (b"RDX2\n", b"RDX3\n"):
        raise RDataError("not an R workspace (it starts %r, not RDX2 or RDX3)" % data[:5])
    r = _Reader(data[5:])
    if r.take(2) != b"X\n":
        raise RDataError("only R's XDR (big-endian binary) serialization is supported")
    version = r.int()
    r.int()  # the R version that wrote it
    r.int()  # the oldest R version that reads it
    if version == 3:
        r.string()  # the native encoding
    elif version != 2:
        raise RDataError("serialization version %d is not supported (2 or 3)" % version)
    return _pairlist_dict(r.item())


def load(path):
    with open(path, "rb") as f:
        return loads(f.read())


def is_missing(v):
    """True for R's NA (integer, logical) or a NaN (NA_real_, NaN)."""
    return v is None or (isinstance(v, float) and math.isnan(v))
