"""scripts/check_device_code.py's rules on the patterns of issue 27's three
device faults (as they stood at commit 3d51b9f) and on the code that
replaced them, which must pass."""
import os
import subprocess
import sys
import tempfile
import textwrap
import unittest

from lint_support import assert_repository_clean

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
SCRIPT = os.path.join(ROOT, "scripts", "check_device_code.py")


def findings(code, name="src/mosaic/example.hpp"):
    """The checker's finding lines for one file holding `code`."""
    with tempfile.TemporaryDirectory() as root:
        path = os.path.join(root, name)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w") as f:
            f.write(textwrap.dedent(code))
        run = subprocess.run([sys.executable, SCRIPT, "--root", root, path], capture_output=True, text=True)
        lines = [l for l in run.stdout.splitlines() if l]
        assert (run.returncode == 1) == bool(lines), (run.returncode, run.stdout, run.stderr)
        return lines


class Fault1HostAccess(unittest.TestCase):
    # blocked_step.hpp:1111 at 3d51b9f: host code evaluating the
    # execution-space View U at (b, 0, 0).
    OLD = """
        template <class Base> struct F {
          void gemm_materialize(int b) const {
            KokkosBlas::gemm("N", "N", Scalar(1), Yn, Wn, Scalar(0), typename VendorWork::matrix(&base.U(b, 0, 0), d, r));
          }
        };
    """

    def test_old_code_is_found(self):
        out = [l for l in findings(self.OLD) if ": host-access: " in l]
        self.assertEqual(len(out), 1, out)
        self.assertIn(":4: host-access: &base.U(...)", out[0])

    def test_data_and_stride_pass(self):
        out = findings(self.OLD.replace("&base.U(b, 0, 0)", "stream_block_data(base.U, b)"))
        self.assertEqual([l for l in out if ": host-access: " in l], [])

    def test_device_bodies_may_take_element_addresses(self):
        code = """
            template <class V> struct K {
              KOKKOS_INLINE_FUNCTION void operator()(const int b) const { const double* p = &v(b, 0); }
              void launch() const {
                Kokkos::parallel_for(n, KOKKOS_LAMBDA(const int i) { double* q = &w.Y(i, 0); });
              }
              const std::vector<int>& ids() const { return ids_; }
            };
        """
        self.assertEqual(findings(code), [])

    def test_a_reviewed_exception_is_marked(self):
        code = "void f() { double* p = &h(0, 0); }  // device-check: allow host-access (h is a host copy)\n"
        self.assertEqual(findings(code), [])
        self.assertEqual(len(findings("void f() { double* p = &h(0, 0); }\n")), 1)


class Fault2DefaultLayout(unittest.TestCase):
    # synthetic_source.hpp:384 and stream_source.hpp:95 at 3d51b9f: sample
    # blocks of the default layout (LayoutLeft on Cuda), and
    # reference_check.hpp:95's mirror of one stream's rows of such a block.
    def test_old_code_is_found(self):
        code = """
            using out_block_view = Kokkos::View<Scalar***, memory_space>;  // B x n x d
            void consume(const block_view& X) {
              const auto rows = Kokkos::subview(X, local_, Kokkos::ALL(), Kokkos::ALL());
              const auto h = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), rows);
            }
        """
        out = findings(code)
        self.assertEqual(len(out), 2, out)
        self.assertIn(":2: layout: Kokkos::View<Scalar***, memory_space>", out[0])
        self.assertIn(":5: transfer: create_mirror_view_and_copy", out[1])

    def test_named_layouts_pass(self):
        code = """
            using out_block_view = Kokkos::View<Scalar***, Kokkos::LayoutRight, memory_space>;
            using block_view = Kokkos::View<const Scalar***, Kokkos::LayoutStride,
                                            memory_space>;
            template <class V> using host_t = Kokkos::View<typename V::non_const_data_type, typename V::array_layout>;
            using scratch = Kokkos::View<double*, Kokkos::LayoutRight, scratch_space, Kokkos::MemoryUnmanaged>;
        """
        self.assertEqual(findings(code), [])

    def test_a_nested_template_argument_is_not_a_layout(self):
        out = findings("Kokkos::View<std::array<double, 2>*, Kokkos::HostSpace> v;\n")
        self.assertEqual(len(out), 1, out)

    def test_tests_are_held_to_the_layout_rule_only(self):
        with tempfile.TemporaryDirectory() as root:
            os.makedirs(os.path.join(root, "tests"))
            with open(os.path.join(root, "tests", "t.cpp"), "w") as f:
                f.write("Kokkos::View<double**> X;\nauto h = Kokkos::create_mirror_view_and_copy(S(), X);\n")
            run = subprocess.run([sys.executable, SCRIPT, "--root", root], capture_output=True, text=True)
            self.assertEqual(run.returncode, 1)
            self.assertEqual(len(run.stdout.splitlines()), 1, run.stdout)
            self.assertIn("tests/t.cpp:1: layout", run.stdout)


class Fault3NonContiguousCopies(unittest.TestCase):
    # synthetic_source.hpp:408 at 3d51b9f: truths_on_host mirrored V0_, a
    # column range of the column-major [V0 W0].
    def test_old_code_is_found(self):
        code = """
            std::vector<SyntheticTruth> truths_on_host() const {
              const auto hV = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), V0_);
              auto h = Kokkos::create_mirror_view(v);
              Kokkos::deep_copy(v, h);
            }
        """
        out = findings(code)
        self.assertEqual([l.split(": ")[1] for l in out], ["transfer"] * 3, out)

    def test_fills_and_the_helper_pass(self):
        code = """
            void f() {
              const auto hV = transfer::to_host(V0_);
              Kokkos::deep_copy(sb.steps, std::int64_t(0));
              Kokkos::deep_copy(work.stream_seconds, 0.0);
              Kokkos::deep_copy(Kokkos::subview(v, b), typename V::non_const_value_type(value));
              Kokkos::deep_copy(b, 1.0f);
            }
        """
        self.assertEqual(findings(code), [])
        # ... and the helper itself may copy.
        self.assertEqual(findings("void f() { Kokkos::deep_copy(out, packed); }\n", "src/mosaic/engine/transfer.hpp"), [])

    def test_a_view_to_view_deep_copy_is_found(self):
        for call in ("Kokkos::deep_copy(dev_, host_[cur_]);", "Kokkos::deep_copy(out, Kokkos::subview(v, b));",
                     "Kokkos::deep_copy(first_bad, f.n);"):
            self.assertEqual(len(findings("void f() { %s }\n" % call)), 1, call)


class Fault4DeviceGemmAtomics(unittest.TestCase):
    # init_data.hpp:154 at cf57670 (issue 36): the init window's Gram matrices
    # by KokkosBlas::gemm("T", "N") on execution-space views, which Kokkos
    # Kernels runs on a GPU as a dot-based GEMM adding partial sums with
    # atomics for M N < 1600 (n0 = 2r: every r < 20).
    OLD = """
        template <class Scalar, class ExecSpace>
        void init_data_batch() {
          for (int b = 0; b < B; ++b) {
            const matrix Yb(Y.data() + std::size_t(b) * per_stream, d, n0);
            KokkosBlas::gemm("T", "N", 1.0 / double(n0), Yb, Yb, 0.0, matrix(K.data(), n0, n0));
          }
        }
    """

    def test_old_code_is_found(self):
        out = findings(self.OLD)
        self.assertEqual(len(out), 1, out)
        self.assertIn(":6: vendor-gemm: KokkosBlas::gemm outside the backend layer", out[0])

    def test_every_spelling_is_found(self):
        for code in ("void f() { KokkosBlas :: gemm(\"N\", \"N\", 1.0, A, B, 0.0, C); }\n",
                     "using KokkosBlas::gemm;\n", "auto* f = &KokkosBlas::gemm<A, B, C>;\n",
                     "using namespace KokkosBlas;\nvoid f() { gemm(ta, tb, 1.0, A, B, 0.0, C); }\n",
                     "namespace KB = ::KokkosBlas;\nvoid f() { KB::gemm(ta, tb, 1.0, A, B, 0.0, C); }\n"):
            out = findings(code)
            self.assertEqual([l.split(": ")[1] for l in out], ["vendor-gemm"], code)

    def test_the_backend_comments_and_strided_gemm_pass(self):
        self.assertEqual(findings(self.OLD, "src/mosaic/engine/strided_gemm.hpp"), [])
        code = """
            // not KokkosBlas::gemm: the backend's GEMM
            void f() {
              std::printf("KokkosBlas::gemm\\n");
              mosaic::strided_gemm_over_streams<ExecSpace>(gram);
            }
        """
        self.assertEqual(findings(code), [])

    def test_a_reviewed_exception_is_marked(self):
        code = "void f() { KokkosBlas::gemm(a, b, 1.0, H, H, 0.0, G); }  // device-check: allow vendor-gemm (host)\n"
        self.assertEqual(findings(code), [])


class TheTree(unittest.TestCase):
    def test_the_repository_is_clean(self):
        assert_repository_clean(self, SCRIPT)


if __name__ == "__main__":
    unittest.main()
