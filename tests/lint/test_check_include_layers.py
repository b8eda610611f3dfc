"""scripts/check_include_layers.py: the folders' 'May include:' lines held
against a small tree, each rule made to fire, and the repository clean."""
import os
import subprocess
import sys
import tempfile
import unittest

from lint_support import assert_repository_clean

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
SCRIPT = os.path.join(ROOT, "scripts", "check_include_layers.py")

# A tree of three folders, bottom to top: base <- mid <- top.
RULES = {"base": "nothing", "mid": "base", "top": "base, mid"}


def run(files, rules=RULES):
    """(exit status, finding lines) of the script on a tree holding `files`
    ({path under src/mosaic/: text}) and a README per folder of `rules`
    (None: no README)."""
    with tempfile.TemporaryDirectory() as root:
        base = os.path.join(root, "src", "mosaic")
        for folder, may in rules.items():
            os.makedirs(os.path.join(base, folder), exist_ok=True)
            if may is not None:
                with open(os.path.join(base, folder, "README.md"), "w") as f:
                    f.write(f"# {folder}/\n\nWhat lives here.\n\nMay include: {may}\n")
        for rel, text in files.items():
            path = os.path.join(base, rel)
            os.makedirs(os.path.dirname(path), exist_ok=True)
            with open(path, "w") as f:
                f.write(text)
        out = subprocess.run([sys.executable, SCRIPT, "--root", root], capture_output=True, text=True)
        return out.returncode, [l for l in out.stdout.splitlines() if l]


CLEAN = {
    "base/a.hpp": "#pragma once\n#include <vector>\n",
    "mid/b.hpp": '#pragma once\n#include "mosaic/base/a.hpp"\n',
    "top/c.cpp": '#include "mosaic/mid/b.hpp"\n#include "mosaic/base/a.hpp"\n#include "mosaic/top/d.hpp"\n',
    "top/d.hpp": "#pragma once\n",
    "top/impl/e.hpp": '#pragma once\n#include "mosaic/top/d.hpp"\n',
    "top/f.hpp": '#include "mosaic/top/impl/e.hpp"\n',
}


class IncludeLayers(unittest.TestCase):
    def test_downward_and_same_folder_includes_pass(self):
        self.assertEqual(run(CLEAN), (0, []))

    def test_an_include_pointing_up_is_a_layer_finding(self):
        rc, lines = run({**CLEAN, "base/a.hpp": '#pragma once\n#include "mosaic/mid/b.hpp"\n'})
        self.assertEqual(rc, 1)
        self.assertEqual(len(lines), 1)
        self.assertIn("src/mosaic/base/a.hpp:2: layer:", lines[0])
        self.assertIn("base/ may include nothing", lines[0])

    def test_a_sibling_not_listed_is_a_layer_finding(self):
        rules = {**RULES, "side": "base"}
        rc, lines = run({**CLEAN, "side/e.hpp": '#include "mosaic/mid/b.hpp"\n'}, rules)
        self.assertEqual(rc, 1)
        self.assertIn("src/mosaic/side/e.hpp:1: layer: #include \"mosaic/mid/b.hpp\": side/ may include base", lines[0])

    def test_a_bare_or_short_include_is_a_form_finding(self):
        for spelling in ('"a.hpp"', '"mosaic/a.hpp"', '"../base/a.hpp"'):
            rc, lines = run({**CLEAN, "mid/b.hpp": f"#include {spelling}\n"})
            self.assertEqual(rc, 1, spelling)
            self.assertIn("src/mosaic/mid/b.hpp:1: form:", lines[0])

    def test_an_include_of_no_file_is_a_missing_finding(self):
        rc, lines = run({**CLEAN, "top/d.hpp": '#include "mosaic/base/gone.hpp"\n'})
        self.assertEqual(rc, 1)
        self.assertIn("src/mosaic/top/d.hpp:1: missing:", lines[0])

    def test_a_file_outside_every_folder_is_a_placement_finding(self):
        rc, lines = run({**CLEAN, "loose.hpp": "#pragma once\n"})
        self.assertEqual(rc, 1)
        self.assertIn("src/mosaic/loose.hpp:0: placement:", lines[0])

    def test_a_folder_without_its_rule_is_a_readme_finding(self):
        rc, lines = run(CLEAN, {**RULES, "mid": None})
        self.assertEqual(rc, 1)
        self.assertTrue(any("src/mosaic/mid/README.md:0: readme:" in l for l in lines), lines)

    def test_a_rule_naming_no_folder_is_a_readme_finding(self):
        rc, lines = run(CLEAN, {**RULES, "top": "base, mid, nowhere"})
        self.assertEqual(rc, 1)
        self.assertTrue(any("names nowhere/" in l for l in lines), lines)

    def test_rules_that_form_a_cycle_are_a_readme_finding(self):
        rc, lines = run(CLEAN, {**RULES, "base": "top"})
        self.assertEqual(rc, 1)
        self.assertTrue(any("cycle" in l and "base/README.md" in l for l in lines), lines)

    def test_the_repository_is_clean(self):
        assert_repository_clean(self, SCRIPT)


if __name__ == "__main__":
    unittest.main()
