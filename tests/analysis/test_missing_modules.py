"""Without matplotlib (or numpy) a command that draws stops with one line and
exit status 2 naming the interpreter and the remedy; tables (collect,
--no-plots) still work. Each command runs in a separate process in which
sys.modules[<module>] = None, so that importing it fails as if it were not
installed."""

import os
import subprocess
import sys
import unittest

import analysis_test_support as S

# argv: module to hide, the interpreter path to report, then "-m" MODULE ARGS... or SCRIPT ARGS...
WRAPPER = """
import runpy, sys
sys.modules[sys.argv[1]] = None
if sys.argv[2] != "-":
    sys.executable = sys.argv[2]
if sys.argv[3] == "-m":
    sys.argv = [sys.argv[4]] + sys.argv[5:]
    runpy.run_module(sys.argv[0], run_name="__main__", alter_sys=True)
else:
    sys.argv = sys.argv[3:]
    runpy.run_path(sys.argv[0], run_name="__main__")
"""
OTHER_PYTHON = "/opt/other/bin/python3"  # an interpreter that is not /usr/bin/python3
FX = os.path.relpath(S.FIXTURES, S.REPO)


def fixture(name):
    return os.path.join(FX, name)


def run_without(module, args, executable=OTHER_PYTHON):
    env = dict(os.environ, MPLBACKEND="Agg", PYTHONDONTWRITEBYTECODE="1")
    return subprocess.run([sys.executable, "-c", WRAPPER, module, executable] + args, cwd=S.REPO, env=env,
                          capture_output=True, text=True, timeout=120)


class MissingMatplotlibTest(S.TempDirTest):
    COMMANDS = [
        ("breakdown", [fixture("synthetic_breakdown.json")]),
        ("sweep", [fixture("synthetic_sweep_d.json")]),
        ("saturation", [fixture("synthetic_saturation.json")]),
        ("scaling", [fixture("synthetic_weak_np1.json"), fixture("synthetic_weak_np2.json")]),
        ("stability", [fixture("synthetic_drift_np1.json")]),
    ]

    def test_figures_need_matplotlib_and_say_so(self):
        for cmd, inputs in self.COMMANDS:
            p = run_without("matplotlib", ["-m", "analysis." + cmd] + inputs + ["--out", self.tmp])
            self.assertEqual(p.returncode, 2, (cmd, p.stderr))
            self.assertEqual(p.stderr.strip(), (
                "analysis.%s: error: matplotlib is not installed for this interpreter (%s): install Debian's "
                "python3-matplotlib, or run /usr/bin/python3 -m analysis.%s; --no-plots skips the figures") % (
                    cmd, OTHER_PYTHON, cmd))
            self.assertNotIn("Traceback", p.stderr)
        self.assertEqual(os.listdir(self.tmp), [])

    def test_the_interpreter_named_is_this_one(self):
        p = run_without("matplotlib", ["-m", "analysis.sweep", fixture("synthetic_sweep_d.json"), "--out", self.tmp],
                        executable="-")
        self.assertEqual(p.returncode, 2, p.stderr)
        self.assertIn("matplotlib is not installed for this interpreter (%s): install Debian's python3-matplotlib"
                      % sys.executable, p.stderr)

    def test_accuracy_without_matplotlib(self):
        # The drift fixture is a synthetic run with 6 truth diagnostics: one accuracy point.
        args = ["-m", "analysis.accuracy", fixture("synthetic_drift_np1.json"), "--out", self.tmp]
        p = run_without("matplotlib", args)
        self.assertEqual(p.returncode, 2, p.stderr)
        self.assertIn("error: matplotlib is not installed", p.stderr)
        p = run_without("matplotlib", args + ["--no-plots"])
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertIn("# Accuracy map", p.stdout)

    def test_tables_work_without_matplotlib(self):
        p = run_without("matplotlib", ["-m", "analysis.collect", FX])
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertIn("23 run(s) from 15 file(s)", p.stdout)
        for cmd, inputs in self.COMMANDS:
            p = run_without("matplotlib", ["-m", "analysis." + cmd] + inputs + ["--no-plots", "--out", self.tmp])
            self.assertEqual(p.returncode, 0, (cmd, p.stderr))
            self.assertIn("|---|", p.stdout, cmd)
        self.assertEqual(os.listdir(self.tmp), [])
        # The script form, too.
        p = run_without("matplotlib", [os.path.join("analysis", "breakdown.py"), fixture("synthetic_breakdown.json"),
                                       "--no-plots"])
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertIn("synthetic_breakdown.json #1", p.stdout)


class MissingNumpyTest(S.TempDirTest):
    def test_states_and_npy_example(self):
        p = run_without("numpy", [os.path.join("analysis", "npy_example.py"), "--workdir", self.tmp])
        self.assertEqual(p.returncode, 2, p.stderr)
        self.assertEqual(p.stderr.strip(), "npy_example: error: numpy is not installed for this interpreter (%s): "
                         "install Debian's python3-numpy, or run /usr/bin/python3 analysis/npy_example.py"
                         % OTHER_PYTHON)
        self.assertEqual(os.listdir(self.tmp), [])  # stopped before writing anything
        script = os.path.join(self.tmp, "load.py")
        with open(script, "w", encoding="utf-8") as f:
            f.write("import sys\nsys.path.insert(0, %r)\nfrom analysis import common, states\n"
                    "try:\n    states.load_states(%r)\nexcept common.AnalysisError as e:\n"
                    "    print(e)\n    sys.exit(2)\n" % (S.REPO, self.tmp))
        p = run_without("numpy", [script])
        self.assertEqual(p.returncode, 2, p.stderr)
        self.assertIn("numpy is not installed for this interpreter (%s): install Debian's python3-numpy"
                      % OTHER_PYTHON, p.stdout)
        self.assertNotIn("--no-plots", p.stdout)

    def test_collect_works_without_numpy(self):
        p = run_without("numpy", ["-m", "analysis.collect", fixture("synthetic_weak_np1.json")])
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertIn("synthetic_weak_np1.json", p.stdout)


if __name__ == "__main__":
    unittest.main()
