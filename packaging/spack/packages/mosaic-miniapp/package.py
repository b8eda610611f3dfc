# Spack package of the MOSAIC mini-app, kept in this repository (a Spack repo:
# packaging/spack). From a clone, in a Spack environment (spack develop needs
# one):
#   spack repo add packaging/spack
#   spack env create -d . && spack env activate .
#   spack add mosaic-miniapp@main +cuda cuda_arch=90          # or +openmp ~cuda
#   spack develop --path $PWD mosaic-miniapp@main
#   spack install
# Written against the Spack 0.2x package API (CMakePackage, CudaPackage from
# spack.package); Spack 1.x moved the build systems to spack_repo.builtin and
# wants an api: entry in repo.yaml. Not run here: the project's machines have
# no Spack.
# The package builds with the Kokkos and Kokkos Kernels that Spack provides
# (4.x/5.x; Cuda builds through Kokkos' nvcc_wrapper) and installs what
# `cmake --install` installs: bin/mosaic_miniapp, bin/mosaic_bench, the decks
# and analysis scripts under share/mosaic_miniapp, and lib/cmake/mosaic.
from spack.package import *


class MosaicMiniapp(CMakePackage, CudaPackage):
    """MOSAIC streaming low-rank covariance mini-app: many independent ordered
    data streams advanced with the MOSAIC update on Kokkos (OpenMP or Cuda),
    whole streams spread over MPI ranks."""

    maintainers("mosaic-miniapp")
    license("UNKNOWN")

    # No public download: build from a clone with `spack develop` (above).
    version("main")

    variant("openmp", default=True, description="Kokkos OpenMP backend for the host")
    variant("tests", default=False, description="Build the GoogleTest suite (ctest)")

    depends_on("cxx", type="build")
    depends_on("cmake@3.25:", type="build")
    depends_on("mpi")
    depends_on("yaml-cpp")
    depends_on("nlohmann-json")
    depends_on("googletest", when="+tests")
    # the analysis tests (ctest analysis.*) run the system python3 with these
    depends_on("python@3:", type="test", when="+tests")
    depends_on("py-numpy", type="test", when="+tests")
    depends_on("py-matplotlib", type="test", when="+tests")
    depends_on("py-jsonschema", type="test", when="+tests")
    depends_on("kokkos@4:")
    depends_on("kokkos-kernels@4:")
    depends_on("kokkos+openmp", when="+openmp")
    depends_on("kokkos-kernels+openmp", when="+openmp")
    # Cuda: Kokkos with its nvcc_wrapper, and device lambdas (a variant up to
    # Kokkos 4; always on from 5), for the same GPU architecture as this package.
    depends_on("kokkos+cuda+wrapper", when="+cuda")
    depends_on("kokkos+cuda_lambda", when="+cuda ^kokkos@:4")
    depends_on("kokkos-kernels+cuda", when="+cuda")
    for arch in CudaPackage.cuda_arch_values:
        depends_on(f"kokkos cuda_arch={arch}", when=f"+cuda cuda_arch={arch}")
        depends_on(f"kokkos-kernels cuda_arch={arch}", when=f"+cuda cuda_arch={arch}")
    conflicts("+cuda cuda_arch=none", msg="+cuda needs cuda_arch=<the GPU's compute capability, e.g. 90>")

    def cmake_args(self):
        spec = self.spec
        args = [
            self.define("Kokkos_ROOT", spec["kokkos"].prefix),
            self.define("KokkosKernels_ROOT", spec["kokkos-kernels"].prefix),
            self.define_from_variant("MOSAIC_ENABLE_TESTS", "tests"),
            # Spack's compiler wrappers set the target; -march=native would
            # tie the binary to the build host.
            self.define("MOSAIC_NATIVE_ARCH", False),
        ]
        if spec.satisfies("+cuda"):
            # Kokkos' nvcc_wrapper (kokkos+wrapper) as the C++ compiler.
            args.append(self.define("CMAKE_CXX_COMPILER", spec["kokkos"].kokkos_cxx))
        return args
