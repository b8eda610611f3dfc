#!/usr/bin/env python3
"""The folders of src/mosaic/ include one way only (issue 29, item 1).

Each folder of src/mosaic/ has a README.md whose line

    May include: <folder>, <folder>, ...      (or "May include: nothing")

names the other folders its files may include; the README is the rule and
this script holds the code to it. Findings ("file:line: rule: message"):

  layer      a file includes a header of a folder its README does not list
  form       a project include that is not "mosaic/<folder>/<path>" (the one
             spelling that names the folder, so every edge is visible; a
             folder's internals live in a subfolder such as engine/impl/)
  missing    "mosaic/<folder>/<path>" names no file of the tree
  placement  a source file directly in src/mosaic/, outside every folder
  readme     a folder without a README.md or without its "May include:" line,
             a listed folder that does not exist, or a cycle between folders
             (the arrows must point one way)

Checked: the C++ of src/mosaic/. Exit status 0 when clean, 1 with one line
per finding, 2 for a usage error.

  scripts/check_include_layers.py [--root DIR]
"""
import argparse
import os
import re
import sys

INCLUDE = re.compile(r'^\s*#\s*include\s*"([^"]+)"')
MAY_INCLUDE = re.compile(r"^May include:\s*(.*?)\s*$", re.MULTILINE)
CXX = (".hpp", ".cpp", ".h", ".cc")


def folder_rules(base):
    """({folder: set of folders it may include}, findings)."""
    rules, findings = {}, []
    for name in sorted(os.listdir(base)):
        path = os.path.join(base, name)
        if not os.path.isdir(path):
            continue
        readme = os.path.join(path, "README.md")
        rel = os.path.join("src", "mosaic", name, "README.md")
        if not os.path.isfile(readme):
            findings.append((rel, 0, "readme", f"folder {name}/ has no README.md saying what lives there "
                                                "and its 'May include:' line"))
            rules[name] = set()
            continue
        with open(readme, encoding="utf-8") as f:
            m = MAY_INCLUDE.search(f.read())
        if not m:
            findings.append((rel, 0, "readme", "no 'May include: <folder>, ...' line (or 'May include: nothing')"))
            rules[name] = set()
            continue
        listed = [w.strip().strip("`/") for w in m.group(1).split(",") if w.strip()]
        rules[name] = set() if listed == ["nothing"] else set(listed)
    for name, allowed in rules.items():
        for other in sorted(allowed - set(rules)):
            findings.append((os.path.join("src", "mosaic", name, "README.md"), 0, "readme",
                             f"'May include:' names {other}/, which is not a folder of src/mosaic/"))
    # The arrows point one way: no folder reaches itself through the rules.
    def reaches(start):
        seen, todo = set(), list(rules.get(start, ()))
        while todo:
            f = todo.pop()
            if f not in seen and f in rules:
                seen.add(f)
                todo += rules[f]
        return seen
    for name in rules:
        if name in reaches(name):
            findings.append((os.path.join("src", "mosaic", name, "README.md"), 0, "readme",
                             f"{name}/ reaches itself through the 'May include:' lines: the folders form a cycle"))
    return rules, findings


def check(root):
    base = os.path.join(root, "src", "mosaic")
    if not os.path.isdir(base):
        return None, []
    rules, findings = folder_rules(base)
    count = 0
    for dirpath, _, names in sorted(os.walk(base)):
        for name in sorted(names):
            if not name.endswith(CXX):
                continue
            count += 1
            path = os.path.join(dirpath, name)
            rel = os.path.relpath(path, root)
            folder = os.path.relpath(dirpath, base).split(os.sep)[0]
            if dirpath == base:
                findings.append((rel, 0, "placement", f"{name} lies in src/mosaic/ itself: every file belongs to "
                                                      f"one of its folders ({', '.join(sorted(rules))})"))
                continue
            with open(path, encoding="utf-8") as f:
                lines = f.read().split("\n")
            for i, line in enumerate(lines, 1):
                m = INCLUDE.match(line)
                if not m:
                    continue
                target = m.group(1)
                parts = target.split("/")
                if len(parts) < 3 or parts[0] != "mosaic":
                    findings.append((rel, i, "form", f'#include "{target}": include the project\'s headers as '
                                                     '"mosaic/<folder>/<path>"'))
                    continue
                other = parts[1]
                if not os.path.isfile(os.path.join(base, *parts[1:])):
                    findings.append((rel, i, "missing", f'#include "{target}": no such file in src/mosaic/'))
                    continue
                if other != folder and other not in rules.get(folder, set()):
                    listed = ", ".join(sorted(rules.get(folder, set()))) or "nothing"
                    findings.append((rel, i, "layer", f'#include "{target}": {folder}/ may include {listed} '
                                                      f"(src/mosaic/{folder}/README.md), not {other}/"))
    return count, findings


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--root", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."),
                    help="the repository root (default: this script's ..)")
    args = ap.parse_args(argv)
    root = os.path.abspath(args.root)
    count, findings = check(root)
    if not count:
        print(f"check_include_layers: no C++ file under {os.path.join(root, 'src', 'mosaic')}", file=sys.stderr)
        return 2
    for rel, line, rule, msg in sorted(findings):
        print(f"{rel}:{line}: {rule}: {msg}")
    print(f"check_include_layers: {count} files, {len(findings)} findings", file=sys.stderr)
    return 1 if findings else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
