"""What the tests of the Python checkers in scripts/ share."""
import subprocess
import sys


def assert_repository_clean(test, script):
    """`script` (a checker that prints "<N> findings" on stderr) run on the
    repository itself exits 0 with no finding."""
    out = subprocess.run([sys.executable, script], capture_output=True, text=True)
    test.assertEqual(out.returncode, 0, out.stdout + out.stderr)
    test.assertIn(" 0 findings", out.stderr)
