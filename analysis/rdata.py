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
import zlib

# R's serialize.c: the special items' type codes.
NILVALUE, EMPTYENV, BASEENV, GLOBALENV, UNBOUNDVALUE, MISSINGARG, BASENAMESPACE = 254, 242, 241, 253, 252, 251, 250
REFSXP, PERSISTSXP, PACKAGESXP, NAMESPACESXP, ALTREP, ATTRLIST, ATTRLANG = 255, 247, 248, 249, 238, 239, 240
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
            obj = RObject("namespace", info=[self.item() for _ in range(self.int())])  # CHARSXP items
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
    return _pairlist_dict(_serialization(_Reader(data[5:])).item())


def _serialization(r):
    """The reader r past the header of the serialization it starts with."""
    if r.take(2) != b"X\n":
        raise RDataError("only R's XDR (big-endian binary) serialization is supported")
    version = r.int()
    r.int()  # the R version that wrote it
    r.int()  # the oldest R version that reads it
    if version == 3:
        r.string()  # the native encoding
    elif version != 2:
        raise RDataError("serialization version %d is not supported (2 or 3)" % version)
    return r


def load(path):
    with open(path, "rb") as f:
        return loads(f.read())


# R's lazy-load databases, what R CMD INSTALL makes of a package's data/ (and
# help/): NAME.rdx is saveRDS() of list(variables = {name: c(offset, length)},
# references = {name: c(offset, length)}, compressed = TRUE, 2 or 3), and
# NAME.rdb holds the serialized values at those byte ranges, each compressed
# as R_compress1/2/3 in R's src/main/connections.c write it: a 4-byte
# big-endian length of the serialization, then (compressed = TRUE) a zlib
# stream, or (2, 3) a type byte and the stream: '0' stored, '1' zlib,
# '2' bzip2, 'Z' (3 only) raw LZMA2 with xz's preset 6.
_LZMA2_RAW = [{"id": lzma.FILTER_LZMA2, "preset": 6}]
_ENTRY_CODECS = {b"0": lambda b: b, b"1": zlib.decompress, b"2": bz2.decompress,
                 b"Z": lambda b: lzma.decompress(b, format=lzma.FORMAT_RAW, filters=_LZMA2_RAW)}


class _LazyReader(_Reader):
    """The reader of one lazy-load entry: R writes the environments an entry
    refers to through its persistence hook (PERSISTSXP, then a string vector:
    the environment's name in the index's references)."""

    def __init__(self, data, environment):
        super().__init__(data)
        self.environment = environment

    def item(self):
        # The persistence hook's items, which _Reader.item does not read:
        # the flags' low byte (big-endian) is PERSISTSXP.
        flags = self.b[self.pos:self.pos + 4]
        if len(flags) < 4 or flags[3] != PERSISTSXP:
            return super().item()
        self.take(4)
        if self.int() != 0:
            raise RDataError("malformed persistent reference at offset %d" % (self.pos - 4))
        names = [self.item() for _ in range(self.int())]
        obj = self.environment(names[0])
        self.refs.append(obj)
        return obj


class _LazyLoadDB:
    def __init__(self, rdb_path, rdx_path):
        self.rdb_path = rdb_path
        with open(rdx_path, "rb") as f:
            index = _serialization(_Reader(decompress(f.read()))).item()
        names = index.attrs.get("names") if isinstance(index, RVector) else None
        if not names or "variables" not in names:
            raise RDataError("%s: not a lazy-load index (no list with 'variables')" % rdx_path)
        fields = dict(zip(names, index))
        self.variables = _keys(fields["variables"])
        self.references = _keys(fields.get("references"))
        self.compressed = int((fields.get("compressed") or [True])[0])
        with open(rdb_path, "rb") as f:
            self.rdb = f.read()
        self.environments = {}

    def fetch(self, key):
        offset, length = key
        blob = self.rdb[offset:offset + length]
        if len(blob) != length:
            raise RDataError("%s: entry at %d+%d is past the end (%d bytes)" % (self.rdb_path, offset, length,
                                                                               len(self.rdb)))
        if self.compressed:
            size = struct.unpack(">I", blob[:4])[0]
            if self.compressed == 1:
                codec, blob = zlib.decompress, blob[4:]
            else:
                kind, blob = blob[4:5], blob[5:]
                codec = _ENTRY_CODECS.get(kind)
                if codec is None:
                    raise RDataError("%s: entry at %d has compression type %r (expected '0', '1', '2' or 'Z')" % (
                        self.rdb_path, offset, kind))
            try:
                blob = codec(blob)
            except (zlib.error, OSError, lzma.LZMAError, ValueError) as e:
                raise RDataError("%s: entry at %d does not decompress: %s" % (self.rdb_path, offset, e))
            if len(blob) != size:
                raise RDataError("%s: entry at %d is %d bytes decompressed, its header says %d" % (
                    self.rdb_path, offset, len(blob), size))
        return _serialization(_LazyReader(blob, self.environment)).item()

    def environment(self, name):
        """The environment references[name], as R's lazyLoadDBexec rebuilds
        it: registered before its entry is read, which may refer back to it."""
        if name in self.environments:
            return self.environments[name]
        if name not in self.references:
            raise RDataError("%s: an entry refers to environment %r, which the index lacks" % (self.rdb_path, name))
        env = self.environments[name] = RObject("environment")
        data = self.fetch(self.references[name])
        parts = dict(zip(data.attrs.get("names") or [], data))
        bindings = parts.get("bindings") or []
        env.fields.update(enclos=parts.get("enclos"), frame=dict(zip(bindings.attrs.get("names") or [], bindings)))
        env.attrs = _pairlist_dict(parts.get("attributes"))
        return env


def _keys(named_list):
    """{name: (offset, length)} of an index's variables or references."""
    if not named_list:
        return {}
    return {name: (int(key[0]), int(key[1])) for name, key in zip(named_list.attrs["names"], named_list)}


def load_lazy(rdb_path, rdx_path, name):
    """The object `name` of the lazy-load database rdb_path (index rdx_path).
    Environments it refers to become RObject("environment") whose "frame"
    field is a dict of their bindings."""
    db = _LazyLoadDB(rdb_path, rdx_path)
    if name not in db.variables:
        raise RDataError("%s: no object %r (it has: %s)" % (rdb_path, name, ", ".join(sorted(db.variables))))
    return db.fetch(db.variables[name])


def is_missing(v):
    """True for R's NA (integer, logical) or a NaN (NA_real_, NaN)."""
    return v is None or (isinstance(v, float) and math.isnan(v))
