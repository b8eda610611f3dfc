"""results/README.md lists every file of results/ by its exact name, and
names no path that is not there (the project's rule: "results/README.md
lists every file with its command").

Checked, with the standard library only:

- every entry of results/cpu/ (each file; each subdirectory as one entry,
  e.g. real_data_36df805acdba/), every file of results/plots/ and
  results/cuda_build/, and every results/*.md, *.csv and *.sh (README.md
  itself aside) is named in results/README.md by its exact file name: a
  brace pattern (`np{1,2}.json`) or a glob (`*_10k_*.txt`) names none of
  the files it stands for;
- every path in backticks in results/README.md that starts with cpu/,
  plots/ or cuda_build/ exists (a brace pattern is expanded and a glob
  must match at least one entry): no stale entry.
"""

import fnmatch
import os
import re
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
RESULTS = os.path.join(REPO, "results")
README = os.path.join(RESULTS, "README.md")

# The folders whose entries must each be named, and the top-level suffixes.
LISTED_DIRS = ("cpu", "plots", "cuda_build")
TOP_LEVEL_SUFFIXES = (".md", ".csv", ".sh")
# The backticked paths checked for existence start with one of these.
PATH_PREFIXES = tuple(d + "/" for d in LISTED_DIRS)

# A character that may be part of a file name: a name is only "named" where
# it is not part of a longer one.
_NAME_CHAR = r"[A-Za-z0-9_.\-]"


def read_readme():
    with open(README, encoding="utf-8") as f:
        return f.read()


def expected_names():
    """(folder shown in messages, entry name, is a directory) for every
    entry results/README.md must name."""
    entries = []
    for folder in LISTED_DIRS:
        path = os.path.join(RESULTS, folder)
        if not os.path.isdir(path):
            continue
        for name in sorted(os.listdir(path)):
            if name.startswith(".") or name == "__pycache__":
                continue
            is_dir = os.path.isdir(os.path.join(path, name))
            entries.append((folder + "/", name, is_dir))
    for name in sorted(os.listdir(RESULTS)):
        if name == "README.md" or not os.path.isfile(os.path.join(RESULTS, name)):
            continue
        if name.endswith(TOP_LEVEL_SUFFIXES):
            entries.append(("", name, False))
    return entries


def names_exactly(text, name, is_dir=False):
    """Whether text names name exactly: not as part of a longer name (a
    period that ends a sentence may follow, an extension may not), for a
    directory with or without its trailing slash."""
    pattern = r"(?<!%s)%s" % (_NAME_CHAR, re.escape(name))
    if is_dir:
        pattern += r"/?"
    # Not followed by another name character, nor by a period that starts
    # an extension or a brace pattern (`name.{json,txt}`).
    pattern += r"(?![A-Za-z0-9_\-{])(?!\.[A-Za-z0-9_{])"
    if not is_dir:
        pattern += r"(?!/)"
    return re.search(pattern, text) is not None


def expand_braces(pattern):
    """Shell brace expansion of pattern (`a{b,c}d` -> abd, acd; nested
    braces are expanded innermost first through recursion)."""
    depth = 0
    start = None
    for i, ch in enumerate(pattern):
        if ch == "{":
            if depth == 0:
                start = i
            depth += 1
        elif ch == "}" and depth > 0:
            depth -= 1
            if depth == 0:
                body = pattern[start + 1:i]
                alternatives, level, last = [], 0, 0
                for j, c in enumerate(body):
                    if c == "{":
                        level += 1
                    elif c == "}":
                        level -= 1
                    elif c == "," and level == 0:
                        alternatives.append(body[last:j])
                        last = j + 1
                alternatives.append(body[last:])
                if len(alternatives) < 2:  # `{x}` is no brace pattern
                    return [pattern[:i + 1] + p for p in expand_braces(pattern[i + 1:])]
                head, tail = pattern[:start], pattern[i + 1:]
                out = []
                for alt in alternatives:
                    out.extend(expand_braces(head + alt + tail))
                return out
    return [pattern]


def backticked_paths(text):
    """Every backticked span of text that starts with cpu/, plots/ or
    cuda_build/ (its first word: a span may go on with words after the
    path). Code spans may run over a line break."""
    paths = []
    for span in re.findall(r"`([^`]+)`", text):
        span = " ".join(span.split())
        if span.startswith(PATH_PREFIXES):
            paths.append(span.split(" ")[0])
    return paths


def path_exists(relative):
    """Whether results/<relative> exists; a glob must match an entry."""
    relative = relative.rstrip("/")
    if any(c in relative for c in "*?["):
        folder, leaf = os.path.split(relative)
        full = os.path.join(RESULTS, folder)
        if any(c in folder for c in "*?[") or not os.path.isdir(full):
            return False
        return any(fnmatch.fnmatchcase(n, leaf) for n in os.listdir(full))
    return os.path.exists(os.path.join(RESULTS, relative))


def stale_paths(text):
    """The backticked paths (or, for a brace pattern, the expansions) of
    text that are not in results/."""
    stale = []
    for path in backticked_paths(text):
        for one in expand_braces(path):
            if not path_exists(one):
                stale.append(one if one == path else "%s (from %s)" % (one, path))
    return sorted(set(stale))


class NamesExactlyTest(unittest.TestCase):
    """The matching rules on small texts, so that the index checks below
    mean what they say."""

    def test_exact_name_in_backticks_or_prose(self):
        self.assertTrue(names_exactly("see `cpu/a_np1.json` here", "a_np1.json"))
        self.assertTrue(names_exactly("ends with a_np1.json.", "a_np1.json"))
        self.assertTrue(names_exactly("(a_np1.json, b.txt)", "a_np1.json"))

    def test_brace_patterns_and_globs_do_not_count(self):
        self.assertFalse(names_exactly("`cpu/a_np{1,2}.json`", "a_np1.json"))
        self.assertFalse(names_exactly("`cpu/a.{json,txt}`", "a.json"))
        self.assertFalse(names_exactly("`cpu/a.{json,txt}`", "a.txt"))
        self.assertFalse(names_exactly("`cpu/a_*.txt`", "a_1.txt"))

    def test_part_of_a_longer_name_does_not_count(self):
        self.assertFalse(names_exactly("bench_missing_study.txt", "missing_study.txt"))
        self.assertFalse(names_exactly("study.json.gz", "study.json"))
        self.assertFalse(names_exactly("x_study.txt", "study.txt"))

    def test_directories_with_or_without_slash(self):
        self.assertTrue(names_exactly("`cpu/real_data_1/`:", "real_data_1", is_dir=True))
        self.assertTrue(names_exactly("in real_data_1 there", "real_data_1", is_dir=True))
        self.assertFalse(names_exactly("real_data_12/", "real_data_1", is_dir=True))

    def test_brace_expansion(self):
        self.assertEqual(expand_braces("a_np{1,2}.json"), ["a_np1.json", "a_np2.json"])
        self.assertEqual(expand_braces("x.{json,txt}"), ["x.json", "x.txt"])
        self.assertEqual(expand_braces("{a,b}_{1,2}"), ["a_1", "a_2", "b_1", "b_2"])
        self.assertEqual(expand_braces("plain.txt"), ["plain.txt"])

    def test_backticked_paths(self):
        text = "`cpu/a.json` and `plots/b.png`, `inputs/c.yaml`, `cuda_build/d.txt` and `cpu/e\nf.txt`"
        self.assertEqual(backticked_paths(text), ["cpu/a.json", "plots/b.png", "cuda_build/d.txt", "cpu/e"])


class ResultsIndexTest(unittest.TestCase):
    def setUp(self):
        if not os.path.isfile(README):
            self.skipTest("no results/README.md in this tree")
        self.text = read_readme()

    def test_every_result_file_is_named_in_the_readme(self):
        missing = [folder + name + ("/" if is_dir else "")
                   for folder, name, is_dir in expected_names()
                   if not names_exactly(self.text, name, is_dir)]
        if missing:
            self.fail("results/README.md does not name these %d entries of results/ by their exact names (brace "
                      "patterns and globs do not count):\n  %s" % (len(missing), "\n  ".join(missing)))

    def test_no_stale_path_in_the_readme(self):
        stale = stale_paths(self.text)
        if stale:
            self.fail("results/README.md names these %d paths in backticks that are not in results/:\n  %s"
                      % (len(stale), "\n  ".join(stale)))


if __name__ == "__main__":
    unittest.main()
