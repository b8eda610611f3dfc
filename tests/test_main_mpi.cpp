// GoogleTest entry point for the test executables that need MPI (they run
// as one process, on MPI_COMM_SELF or a one-rank MPI_COMM_WORLD): MPI
// around Kokkos, both initialized once per process.
#include <mpi.h>

#include <gtest/gtest.h>
#include <Kokkos_Core.hpp>

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  ::testing::InitGoogleTest(&argc, argv);
  Kokkos::initialize(argc, argv);
  int rc = RUN_ALL_TESTS();
  Kokkos::finalize();
  MPI_Finalize();
  return rc;
}
