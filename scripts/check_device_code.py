#!/usr/bin/env python3
"""Static checks for the faults a host-only build cannot see (issues 27, 36).

On a host backend every View is reachable from host code, so a CPU build
runs code that aborts or throws on a GPU, or rounds differently from run to
run there. Four rules over the C++ of src/, miniapp/ and bench/ (or the
files given):

  layout     every Kokkos::View names its layout (LayoutRight, LayoutLeft,
             LayoutStride, or a layout type of another View): the default
             layout is LayoutRight on host backends and LayoutLeft on Cuda,
             so a default-layout View is a different array on the device.
  transfer   no create_mirror / create_mirror_view / create_mirror_view_and_copy,
             and no deep_copy from one View to another, outside
             src/mosaic/engine/transfer.hpp (the one host/device copy helper, which
             copies spans only). deep_copy(view, value) fills stay allowed: the
             second argument must be a literal or a functional cast such as
             double(x), T(0), std::int64_t(-1).
  host-access  no address of a View element (&v(i, j), &obj.v(b, 0, 0)) in
             host code, i.e. outside KOKKOS_*FUNCTION bodies and KOKKOS_LAMBDA
             / KOKKOS_CLASS_LAMBDA bodies: on a device that evaluates
             View::operator() on the host and aborts. Host code takes
             v.data() and strides instead.
  vendor-gemm  no KokkosBlas::gemm (nor `using namespace KokkosBlas` or an
             alias of that namespace, which would hide it) outside
             src/mosaic/engine/strided_gemm.hpp
             (the backend layer's GEMM, issue 36): on a GPU Kokkos Kernels'
             gemm("T", "N") of a small product splits each dot product over
             teams and adds the parts with atomics, so its rounding changes
             from run to run; the backend calls cuBLAS on Cuda instead.

The tests (tests/) are held to the layout rule only: they pass Views to the
same interfaces and are compiled for Cuda too.

A line may carry "device-check: allow <rule> (<why>)" in a comment for a
reviewed exception. Exit status 0 when clean, 1 with one line per finding
("file:line: rule: message"), 2 for a usage error.

  scripts/check_device_code.py [--root DIR] [FILE ...]
"""
import argparse
import os
import re
import sys

DEFAULT_DIRS = ("src", "miniapp", "bench")
LAYOUT_ONLY_DIRS = ("tests",)
TRANSFER_HELPER = os.path.join("src", "mosaic", "engine", "transfer.hpp")
GEMM_BACKEND = os.path.join("src", "mosaic", "engine", "strided_gemm.hpp")
DEVICE_MARKERS = ("KOKKOS_INLINE_FUNCTION", "KOKKOS_FUNCTION", "KOKKOS_FORCEINLINE_FUNCTION",
                  "KOKKOS_LAMBDA", "KOKKOS_CLASS_LAMBDA")


def strip_comments_and_strings(text):
    """The text with comments and string/char literals blanked (newlines and
    lengths kept, so offsets map to the same lines)."""
    out = []
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            out.append(" " * (j - i))
            i = j
        elif text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            out.append(re.sub(r"[^\n]", " ", text[i:j]))
            i = j
        elif c == '"' or (c == "'" and not (i > 0 and (text[i - 1].isalnum()))):
            # R"(...)" raw strings are not used in these sources.
            j = i + 1
            while j < n and text[j] != c:
                j += 2 if text[j] == "\\" else 1
            j = min(j + 1, n)
            out.append(c + re.sub(r"[^\n]", " ", text[i + 1:j - 1]) + (c if j - 1 > i else ""))
            i = j
        else:
            out.append(c)
            i += 1
    return "".join(out)


def matching(text, start, open_ch, close_ch):
    """Index just past the bracket matching text[start] (an opening one)."""
    depth = 0
    for k in range(start, len(text)):
        if text[k] == open_ch:
            depth += 1
        elif text[k] == close_ch:
            depth -= 1
            if depth == 0:
                return k + 1
    return len(text)


def split_top_level(args):
    """Split a template or call argument list at its top-level commas."""
    parts, depth, cur = [], 0, []
    for c in args:
        if c in "<([{":
            depth += 1
        elif c in ">)]}":
            depth -= 1
        if c == "," and depth == 0:
            parts.append("".join(cur))
            cur = []
        else:
            cur.append(c)
    parts.append("".join(cur))
    return [p.strip() for p in parts]


def line_of(text, offset):
    return text.count("\n", 0, offset) + 1


def allowed(raw_lines, line, rule):
    return f"device-check: allow {rule}" in raw_lines[line - 1]


def check_layout(path, code, raw_lines):
    for m in re.finditer(r"\bKokkos::View\s*<", code):
        open_at = m.end() - 1
        close_at = matching(code, open_at, "<", ">")
        args = split_top_level(code[open_at + 1:close_at - 1])
        if not any("Layout" in a or "array_layout" in a for a in args[1:]):
            line = line_of(code, m.start())
            if not allowed(raw_lines, line, "layout"):
                yield line, "layout", (f"Kokkos::View<{', '.join(args)}> has the default layout (LayoutRight on "
                                       "host backends, LayoutLeft on Cuda): name it")


FILL_VALUE = re.compile(r"^(-?[0-9.][0-9.eEfFuUlLxX+-]*|(typename\s+)?[A-Za-z_][\w:]*(<[^()]*>)?\s*\(.*\)|"
                        r"(true|false|nullptr))$", re.S)
NOT_A_CAST = re.compile(r"^(Kokkos::)?(subview|create_mirror\w*|View)\b")


def check_transfer(path, code, raw_lines, rel):
    if rel == TRANSFER_HELPER:
        return
    for m in re.finditer(r"\bcreate_mirror(_view)?(_and_copy)?\s*\(", code):
        line = line_of(code, m.start())
        if not allowed(raw_lines, line, "transfer"):
            yield line, "transfer", (f"{m.group(0).rstrip('( ')}: copy between the host and the execution space "
                                     "with mosaic::transfer (transfer.hpp), which copies spans only")
    for m in re.finditer(r"\bdeep_copy\s*\(", code):
        open_at = m.end() - 1
        args = split_top_level(code[open_at + 1:matching(code, open_at, "(", ")") - 1])
        value = args[-1] if len(args) >= 2 else ""
        if FILL_VALUE.match(value) and not NOT_A_CAST.match(value):
            continue
        line = line_of(code, m.start())
        if not allowed(raw_lines, line, "transfer"):
            yield line, "transfer", (f"deep_copy(..., {value}): a View-to-View copy; use mosaic::transfer "
                                     "(a fill takes a literal or a cast such as T(0))")


def device_body_ranges(code):
    """[start, end) offsets of the bodies of device functions and lambdas:
    a '{' whose declaration (the text since the last ';', '{' or '}') names
    a KOKKOS_*FUNCTION or KOKKOS_*LAMBDA marker."""
    ranges = []
    k, n = 0, len(code)
    while k < n:
        if code[k] == "{":
            j = k - 1
            while j >= 0 and code[j] not in ";{}":
                j -= 1
            head = code[j + 1:k]
            if any(re.search(r"\b" + mk + r"\b", head) for mk in DEVICE_MARKERS):
                end = matching(code, k, "{", "}")
                ranges.append((k, end))
                k = end
                continue
        k += 1
    return ranges


ELEMENT_ADDRESS = re.compile(r"(?<![\w&)\]>])&\s*((?:[A-Za-z_]\w*\s*(?:\.|->)\s*)*[A-Za-z_]\w*)\s*\(")


def check_host_access(path, code, raw_lines):
    device = device_body_ranges(code)

    def in_device(offset):
        return any(a <= offset < b for a, b in device)

    # Only inside function bodies: a '&' in a declaration (T& f(...)) follows
    # a type name and is excluded by the lookbehind on word characters.
    for m in ELEMENT_ADDRESS.finditer(code):
        if in_device(m.start()):
            continue
        name = m.group(1)
        if name.split(".")[-1].split("->")[-1].strip() in ("operator",):
            continue
        line = line_of(code, m.start())
        if not allowed(raw_lines, line, "host-access"):
            yield line, "host-access", (f"&{name}(...) in host code: on a device the element access aborts; "
                                        "take .data() and strides instead")


def check_vendor_gemm(path, code, raw_lines, rel):
    if rel == GEMM_BACKEND:
        return
    # The call, and the two ways to spell it without the namespace.
    for m in re.finditer(r"\bKokkosBlas\s*::\s*gemm\b|\busing\s+namespace\s+KokkosBlas\b|"
                         r"\bnamespace\s+\w+\s*=\s*(::\s*)?KokkosBlas\b", code):
        line = line_of(code, m.start())
        if not allowed(raw_lines, line, "vendor-gemm"):
            yield line, "vendor-gemm", ("KokkosBlas::gemm outside the backend layer: on a GPU its small products "
                                        "accumulate with atomics (rounding that changes from run to run); "
                                        "use mosaic::strided_gemm (strided_gemm.hpp)")


def sources(root, files):
    """(path, every rule) for each file to check."""
    if files:
        for f in files:
            yield os.path.abspath(f), True
        return
    for dirs, all_rules in ((DEFAULT_DIRS, True), (LAYOUT_ONLY_DIRS, False)):
        for d in dirs:
            for dirpath, _, names in sorted(os.walk(os.path.join(root, d))):
                for name in sorted(names):
                    if name.endswith((".hpp", ".cpp", ".h", ".cc")):
                        yield os.path.join(dirpath, name), all_rules


def check_file(path, root, all_rules=True):
    with open(path, encoding="utf-8") as f:
        raw = f.read()
    code = strip_comments_and_strings(raw)
    raw_lines = raw.split("\n")
    rel = os.path.relpath(path, root)
    findings = []
    findings += check_layout(path, code, raw_lines)
    if all_rules:
        findings += check_transfer(path, code, raw_lines, rel)
        findings += check_host_access(path, code, raw_lines)
        findings += check_vendor_gemm(path, code, raw_lines, rel)
    return [(rel, line, rule, msg) for line, rule, msg in findings]


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--root", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."),
                    help="the repository root (default: this script's ..)")
    ap.add_argument("files", nargs="*", help="files to check (default: the C++ of src/, miniapp/, bench/)")
    args = ap.parse_args(argv)
    root = os.path.abspath(args.root)
    findings = []
    count = 0
    for path, all_rules in sources(root, args.files):
        count += 1
        findings += check_file(path, root, all_rules)
    for rel, line, rule, msg in sorted(findings):
        print(f"{rel}:{line}: {rule}: {msg}")
    if not count:
        print("check_device_code: no C++ file found", file=sys.stderr)
        return 2
    print(f"check_device_code: {count} files, {len(findings)} findings", file=sys.stderr)
    return 1 if findings else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
