#include "worker/backends/residual_fusion.h"

#include <gtest/gtest.h>

#include "graph/test_graphs.h"
#include "scheduler/ios/testing/testing_util.h"

namespace iosfarm::worker {
namespace {

using graph::NodeId;
using scheduler::ios::Stage;
using scheduler::ios::testing::ConcurrentStage;

// All nodes of `graph` in one group, in id (topological) order.
Stage OneGroup(const graph::Graph& graph) {
  std::vector<NodeId> all;
  for (NodeId id = 0; id < graph.num_nodes(); ++id) all.push_back(id);
  return ConcurrentStage({all});
}

TEST(ResidualFusionTest, FusesTheThreeBlocksOfTheResidualGraph) {
  const graph::Graph g = graph::testing::ResidualBlocksGraph(1);
  const ResidualFusions fusions = ResidualFusions::Find(g, OneGroup(g));
  ASSERT_EQ(fusions.size(), 3);
  const ResidualFusion* b1 = fusions.AtAdd(3);
  ASSERT_NE(b1, nullptr);
  EXPECT_EQ(b1->conv, 2);
  EXPECT_EQ(b1->relu, 4);
  EXPECT_EQ(b1->residual, g.node(0).outputs[0]);
  EXPECT_EQ(b1->output, g.node(4).outputs[0]);
  const ResidualFusion* b2 = fusions.AtAdd(7);
  ASSERT_NE(b2, nullptr);
  EXPECT_EQ(b2->conv, 5);  // the first operand; the projection's output is z
  EXPECT_EQ(b2->residual, g.node(6).outputs[0]);
  EXPECT_EQ(b2->relu, 8);
  const ResidualFusion* b3 = fusions.AtAdd(10);
  ASSERT_NE(b3, nullptr);
  EXPECT_EQ(b3->conv, 9);  // the second operand
  EXPECT_EQ(b3->relu, graph::kNoNode);
  EXPECT_EQ(b3->output, g.outputs()[0]);
  for (NodeId id : {2, 4, 5, 8, 9}) EXPECT_TRUE(fusions.Absorbed(id)) << id;
  for (NodeId id : {0, 1, 3, 6, 7, 10}) EXPECT_FALSE(fusions.Absorbed(id)) << id;
}

TEST(ResidualFusionTest, NeedsConvAddAndReluInOneGroup) {
  const graph::Graph g = graph::testing::ResidualBlocksGraph(1);
  // One op per stage (the sequential schedule): nothing to fuse.
  EXPECT_EQ(ResidualFusions::Find(g, ConcurrentStage({{2}})).size(), 0);
  EXPECT_EQ(ResidualFusions::Find(g, ConcurrentStage({{3}})).size(), 0);
  // Conv and Add in different groups.
  EXPECT_EQ(ResidualFusions::Find(g, ConcurrentStage({{2}, {3, 4}})).size(), 0);
  // The Relu in another group: conv + add only.
  const ResidualFusions no_relu = ResidualFusions::Find(g, ConcurrentStage({{2, 3}, {4}}));
  ASSERT_EQ(no_relu.size(), 1);
  EXPECT_EQ(no_relu.AtAdd(3)->relu, graph::kNoNode);
  EXPECT_FALSE(no_relu.Absorbed(4));
  // Block 2 with the projection conv in another group of the stage: z is
  // not ready at the Add, and the Add cannot take the projection as the conv
  // either.
  EXPECT_EQ(ResidualFusions::Find(g, ConcurrentStage({{5, 7, 8}, {6}})).size(), 0);
  // ... but with the projection computed in an earlier stage it is an input.
  EXPECT_EQ(ResidualFusions::Find(g, ConcurrentStage({{5, 7, 8}})).size(), 1);
  // z produced later in the group than the Add (a malformed stage).
  EXPECT_EQ(ResidualFusions::Find(g, ConcurrentStage({{5, 7, 6}})).size(), 0);
}

TEST(ResidualFusionTest, LeavesNonFusablePatternsAlone) {
  // Shared conv output, broadcast add, conv with its own Relu, conv output
  // kept, Add(c, c): none fused; conv + add whose sum is a graph output:
  // fused without the Relu.
  const graph::Graph g = graph::testing::NonFusableResidualGraph();
  const ResidualFusions fusions = ResidualFusions::Find(g, OneGroup(g));
  ASSERT_EQ(fusions.size(), 1);
  const ResidualFusion* only = fusions.AtAdd(12);
  ASSERT_NE(only, nullptr);
  EXPECT_EQ(only->conv, 11);
  EXPECT_EQ(only->relu, graph::kNoNode);
}

TEST(ResidualFusionTest, MergeStagesAndMalformedStagesFuseNothing) {
  const graph::Graph g = graph::testing::ResidualBlocksGraph(1);
  Stage merge = OneGroup(g);
  merge.strategy = scheduler::ios::Strategy::kMerge;
  EXPECT_EQ(ResidualFusions::Find(g, merge).size(), 0);
  EXPECT_EQ(ResidualFusions::Find(g, ConcurrentStage({{2, 3, 42}})).size(), 0);
  EXPECT_EQ(ResidualFusions::Find(g, ConcurrentStage({{2, 3, 3}})).size(), 0);
}

}  // namespace
}  // namespace iosfarm::worker
