"""The commands run as `python3 -m analysis.<cmd>` and as `python3 analysis/<cmd>.py`
from the repository root (separate processes, as a user runs them)."""

import os
import subprocess
import sys
import unittest

import analysis_test_support as S

COMMANDS = ["collect", "scaling", "sweep", "saturation", "stability", "accuracy", "breakdown", "noise"]


def run(args):
    env = dict(os.environ, MPLBACKEND="Agg")
    return subprocess.run([sys.executable] + args, cwd=S.REPO, env=env, capture_output=True, text=True,
                          timeout=120)


class CliTest(unittest.TestCase):
    def test_help(self):
        for cmd in COMMANDS:
            p = run(["-m", "analysis." + cmd, "--help"])
            self.assertEqual(p.returncode, 0, p.stderr)
            self.assertIn("usage: python3 -m analysis." + cmd, p.stdout)
            self.assertIn("RESULT", p.stdout)
        p = run([os.path.join("analysis", "collect.py"), "--help"])
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertIn("--csv FILE", p.stdout)

    def test_script_form_runs_and_reports_a_checksum_mismatch(self):
        fx = os.path.relpath(S.FIXTURES, S.REPO)
        p = run([os.path.join("analysis", "scaling.py"), "--no-plots",
                 os.path.join(fx, "synthetic_strong_mismatch_np2.json"),
                 os.path.join(fx, "synthetic_strong_mismatch_np4.json")])
        self.assertEqual(p.returncode, 1, p.stderr)
        self.assertIn("MISMATCH", p.stdout)

    def test_usage_errors(self):
        p = run(["-m", "analysis.collect"])
        self.assertEqual(p.returncode, 2)
        self.assertIn("the following arguments are required: RESULT", p.stderr)
        p = run(["-m", "analysis.sweep", "no_such_file.json"])
        self.assertEqual(p.returncode, 2)
        self.assertIn("analysis.sweep: error: no_such_file.json: cannot read", p.stderr)


if __name__ == "__main__":
    unittest.main()
