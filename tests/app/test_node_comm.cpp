// node_comm.hpp: the grouping of a node's ranks by a key (the memory check
// sums the device needs of the ranks that share one GPU, keyed by its UUID).
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include <mpi.h>

#include "mosaic/app/node_comm.hpp"

namespace {

TEST(NodeComm, GroupColorsGroupEqualKeys) {
  EXPECT_EQ(mosaic::group_colors({"a", "b", "a", "c", "b"}), (std::vector<int>{0, 1, 0, 3, 1}));
  EXPECT_EQ(mosaic::group_colors({}), std::vector<int>{});
  // Issue 27: ranks with a per-rank CUDA_VISIBLE_DEVICES all see ordinal 0;
  // grouped by ordinal their needs were summed as if they shared one GPU.
  // Keyed by UUID, four ranks on four GPUs share with no one.
  EXPECT_EQ(mosaic::group_colors({"uuid 01", "uuid 02", "uuid 03", "uuid 04"}), (std::vector<int>{0, 1, 2, 3}));
  // ... and two ranks on one GPU under different ordinals share it.
  EXPECT_EQ(mosaic::group_colors({"uuid 07", "uuid 07"}), (std::vector<int>{0, 0}));
}

// The collective on this process's node communicator (one rank here: the
// multi-rank grouping is group_colors above).
TEST(NodeComm, ColorOfOneRankIsZero) {
  const mosaic::NodeComm node(MPI_COMM_WORLD);
  EXPECT_EQ(node.color_of("uuid 0123456789abcdef0123456789abcdef"), 0);
  EXPECT_EQ(node.color_of(std::string(200, 'x')), 0);  // longer than key_bytes: compared on its prefix
}

}  // namespace
