// A round's free GPUs by the nodes jobs may use (libmorph/policy/free_cells.h).
#include "libmorph/policy/free_cells.h"

#include <gtest/gtest.h>

#include "policy_support.h"

namespace morph::policy {
namespace {

// Four big nodes and two small ones; job 0 may use nodes 0-1 (a partition), job 1 nodes
// 1-2 and 4, job 2 any node, job 3 the same nodes as job 0. By GPU type and the node
// sets that hold them: big {0} (job 0's set), {1} (both sets), {2} (job 1's), {3}
// (none); small {4} (job 1's), {5} (none).
TEST(FreeCells, SplitAGpuTypesNodesByTheJobsThatMayUseThem) {
  ClusterView v;
  v.nodes = test::nodes("4x8xbig+2x4xsmall");
  const NodePool pool(v.nodes);
  v.jobs.resize(4);
  v.jobs[0].nodes_allowed = {true, true, false, false, false, false};
  v.jobs[1].nodes_allowed = {false, true, true, false, true, false};
  v.jobs[3].nodes_allowed = v.jobs[0].nodes_allowed;
  const FreeCells cells(v, pool);
  ASSERT_EQ(cells.cells(), 6);
  const int big = pool.type_of(0), small = pool.type_of(4);
  for (int n = 0; n < 6; ++n) {
    EXPECT_EQ(cells.cell_of_node(n), n);  // every node its own cell here
    EXPECT_EQ(cells.type_of(n), n < 4 ? big : small);
    EXPECT_EQ(cells.capacity(n), n < 4 ? 8 : 4);
  }
  // Fewer node sets first: what a job takes there, fewer others could have used.
  EXPECT_EQ(cells.order(0, big), (std::vector<int>{0, 1}));
  EXPECT_EQ(cells.order(3, big), (std::vector<int>{0, 1}));
  EXPECT_EQ(cells.order(1, big), (std::vector<int>{2, 1}));
  EXPECT_EQ(cells.order(1, small), (std::vector<int>{4}));
  EXPECT_EQ(cells.order(2, big), (std::vector<int>{3, 0, 2, 1}));
  EXPECT_EQ(cells.order(0, small), (std::vector<int>{}));
  EXPECT_EQ(cells.of_type(small), (std::vector<int>{5, 4}));
  EXPECT_TRUE(cells.reaches(2, 5));
  EXPECT_FALSE(cells.reaches(0, 2));
  EXPECT_TRUE(cells.reaches(1, 1));
}

// Without restricted jobs a GPU type is one cell: the round counts free GPUs per type, as
// Morphling's Algorithm 1 does; nodes that the same jobs may use share a cell.
TEST(FreeCells, WithoutPartitionsEachGpuTypeIsOneCell) {
  ClusterView v;
  v.nodes = test::nodes("3x8xbig+2x4xsmall");
  const NodePool pool(v.nodes);
  v.jobs.resize(2);
  FreeCells cells(v, pool);
  ASSERT_EQ(cells.cells(), 2);
  EXPECT_EQ(cells.capacity(cells.cell_of_node(0)), 24);
  EXPECT_EQ(cells.capacity(cells.cell_of_node(4)), 8);
  v.jobs[1].nodes_allowed = {true, true, false, true, true};
  cells = FreeCells(v, pool);
  ASSERT_EQ(cells.cells(), 3);
  EXPECT_EQ(cells.cell_of_node(0), cells.cell_of_node(1));
  EXPECT_EQ(cells.capacity(cells.cell_of_node(0)), 16);
  EXPECT_EQ(cells.cell_of_node(3), cells.cell_of_node(4));
}

}  // namespace
}  // namespace morph::policy
