#include "graph/models/randwire.h"

#include "graph/cost.h"
#include "graph/models/model_test_util.h"
#include "gtest/gtest.h"

namespace iosfarm::graph::models {
namespace {

TEST(RandWireTest, BuildsValidGraphsAtBatch1And4) {
  for (int64_t batch : {1, 4}) {
    SCOPED_TRACE(batch);
    StatusOr<Graph> graph = BuildRandWire(batch);
    ASSERT_TRUE(graph.ok()) << graph.status();
    ExpectZooContract(*graph, batch, 224);
  }
}

TEST(RandWireTest, MacsAndParamsNearThePaper) {
  StatusOr<Graph> graph = BuildRandWire(1);
  ASSERT_TRUE(graph.ok()) << graph.status();
  const OpCost cost = ComputeGraphCost(*graph);
  // Our exact figures for the default seed (recorded in randwire.h).
  EXPECT_EQ(cost.macs, 578'715'404);
  EXPECT_EQ(cost.params, 5'632'886);
  // Xie et al. 2019, Table 3 (small regime, RandWire-WS C=78): 583 M FLOPs
  // (multiply-adds) and 5.6 M params, for their own random seeds.
  ExpectNear(cost.macs, 583e6, 0.015);
  ExpectNear(cost.params, 5.6e6, 0.015);
}

TEST(RandWireTest, OpCountsOfDefaultSeed) {
  StatusOr<Graph> graph = BuildRandWire(1);
  ASSERT_TRUE(graph.ok()) << graph.status();
  const auto ops = OpHistogram(*graph);
  // 3 stages x 32 nodes, each Relu + depthwise + pointwise conv.
  EXPECT_EQ(CountDepthwiseConvs(*graph), 96);
  EXPECT_EQ(ops.at(OpType::kConv), 2 + 96 * 2 + 1);
  EXPECT_EQ(ops.at(OpType::kRelu), 96 + 1);
  // Per stage: edges - nodes with inputs + output nodes - 1, i.e.
  // (64 - 27 + 4) + (64 - 25 + 6) + (64 - 27 + 5).
  EXPECT_EQ(ops.at(OpType::kAdd), 128);
  EXPECT_EQ(ops.at(OpType::kGemm), 1);
  EXPECT_EQ(graph->num_nodes(), 423);
  // Stride-2 depthwise convs = input nodes of the three stages (5 + 7 + 5).
  int strided = 0;
  for (const Node& node : graph->nodes()) {
    if (node.type != OpType::kConv) continue;
    const auto& attrs = std::get<ConvAttrs>(node.attrs);
    if (attrs.groups > 1 && attrs.stride[0] == 2) ++strided;
  }
  EXPECT_EQ(strided, 17);
}

bool SameGraph(const Graph& a, const Graph& b) {
  if (a.num_nodes() != b.num_nodes() || a.num_values() != b.num_values()) return false;
  for (NodeId i = 0; i < a.num_nodes(); ++i) {
    const Node& x = a.node(i);
    const Node& y = b.node(i);
    if (x.name != y.name || x.type != y.type || !(x.attrs == y.attrs) ||
        x.inputs != y.inputs || x.outputs != y.outputs) {
      return false;
    }
  }
  for (ValueId v = 0; v < a.num_values(); ++v) {
    if (a.value(v).shape != b.value(v).shape) return false;
  }
  return true;
}

TEST(RandWireTest, SameSeedGivesIdenticalGraph) {
  StatusOr<Graph> a = BuildRandWire(2);
  StatusOr<Graph> b = BuildRandWire(2, RandWireOptions{});
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_TRUE(SameGraph(*a, *b));

  RandWireOptions other;
  other.seed = 7;
  StatusOr<Graph> c = BuildRandWire(2, other);
  ASSERT_TRUE(c.ok()) << c.status();
  ExpectZooContract(*c, 2, 224);
  EXPECT_FALSE(SameGraph(*a, *c));
  // Same node operations, so the same number of separable convs.
  EXPECT_EQ(CountDepthwiseConvs(*c), 96);
}

TEST(RandWireTest, MacsScaleLinearlyWithBatch) {
  StatusOr<Graph> one = BuildRandWire(1);
  StatusOr<Graph> four = BuildRandWire(4);
  ASSERT_TRUE(one.ok() && four.ok());
  ExpectLinearInBatch(*one, *four);
}

TEST(RandWireTest, RejectsBadArguments) {
  EXPECT_EQ(BuildRandWire(0).status().code(), absl::StatusCode::kInvalidArgument);
  RandWireOptions odd_k;
  odd_k.k = 3;
  EXPECT_EQ(BuildRandWire(1, odd_k).status().code(), absl::StatusCode::kInvalidArgument);
  RandWireOptions no_channels;
  no_channels.channels = 1;
  EXPECT_EQ(BuildRandWire(1, no_channels).status().code(),
            absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace iosfarm::graph::models
