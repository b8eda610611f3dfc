"""scripts/check-kokkos (issue 37): its argument handling, without building
anything. Every bad invocation exits 2 with an error naming the bad argument
and the usage line, before any temporary directory is made."""
import os
import subprocess
import tempfile
import unittest

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
SCRIPT = os.path.join(ROOT, "scripts", "check-kokkos")


def write(path, text=""):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        f.write(text)


class CheckKokkosUsage(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.TemporaryDirectory()
        self.addCleanup(self.dir.cleanup)
        d = self.dir.name
        # Just enough of each tree for the script to recognize it.
        self.kokkos = os.path.join(d, "kokkos")
        write(os.path.join(self.kokkos, "CMakeLists.txt"), "project(Kokkos CXX)\n")
        write(os.path.join(self.kokkos, "core", "src", "Kokkos_Core.hpp"))
        self.kernels = os.path.join(d, "kokkos-kernels")
        write(os.path.join(self.kernels, "CMakeLists.txt"),
              "IF(NOT KOKKOSKERNELS_HAS_TRILINOS)\n    PROJECT(KokkosKernels VERSION 4.7.0 LANGUAGES CXX)\nENDIF()\n")
        self.empty = os.path.join(d, "empty")
        os.makedirs(self.empty)
        self.tmpdir = os.path.join(d, "tmp")  # TMPDIR of the script: must stay empty
        os.makedirs(self.tmpdir)

    def run_script(self, *args):
        env = dict(os.environ, TMPDIR=self.tmpdir)
        out = subprocess.run([SCRIPT, *args], capture_output=True, text=True, env=env, timeout=60)
        self.assertEqual(os.listdir(self.tmpdir), [], "a usage error must not make a temporary directory")
        return out

    def assert_usage(self, args, *words):
        out = self.run_script(*args)
        self.assertEqual(out.returncode, 2, out.stderr)
        self.assertIn("check-kokkos: error:", out.stderr)
        self.assertIn("usage: scripts/check-kokkos", out.stderr)
        for w in words:
            self.assertIn(w, out.stderr)
        self.assertEqual(out.stdout, "", "no matrix row for a usage error")

    def test_no_arguments(self):
        self.assert_usage([], "need KOKKOS_SRC and KOKKOSKERNELS_SRC")

    def test_one_argument(self):
        self.assert_usage([self.kokkos], "need KOKKOS_SRC and KOKKOSKERNELS_SRC", "got 1 argument")

    def test_missing_directory(self):
        missing = os.path.join(self.dir.name, "no-such-dir")
        self.assert_usage([missing, self.kernels], "KOKKOS_SRC", missing, "not a directory")
        self.assert_usage([self.kokkos, missing], "KOKKOSKERNELS_SRC", missing, "not a directory")

    def test_no_cmakelists(self):
        self.assert_usage([self.empty, self.kernels], "KOKKOS_SRC", self.empty, "no CMakeLists.txt")
        self.assert_usage([self.kokkos, self.empty], "KOKKOSKERNELS_SRC", self.empty, "no CMakeLists.txt")

    def test_trees_swapped(self):
        self.assert_usage([self.kernels, self.kokkos], "KOKKOS_SRC", self.kernels, "not a Kokkos source tree")
        self.assert_usage([self.kokkos, self.kokkos], "KOKKOSKERNELS_SRC", "not a Kokkos Kernels source tree")

    def test_option_not_a_definition(self):
        self.assert_usage([self.kokkos, self.kernels, "-DKokkos_ENABLE_OPENMP=ON", "--fast"], "'--fast'",
                          "-DNAME=VALUE")
        self.assert_usage([self.kokkos, self.kernels, "-DNOVALUE"], "'-DNOVALUE'")

    def test_device_backend_refused(self):
        for opt in ("-DKokkos_ENABLE_CUDA=ON", "-DKokkos_ENABLE_HIP:BOOL=ON", "-DKokkos_ENABLE_SYCL=1"):
            self.assert_usage([self.kokkos, self.kernels, opt], f"'{opt}'", "device backend")

    def test_help(self):
        out = self.run_script("--help")
        self.assertEqual(out.returncode, 0, out.stderr)
        self.assertIn("KOKKOS_SRC KOKKOSKERNELS_SRC", out.stdout)


if __name__ == "__main__":
    unittest.main()
