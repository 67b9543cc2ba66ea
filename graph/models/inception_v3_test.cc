#include "graph/models/inception_v3.h"

#include "graph/cost.h"
#include "graph/models/model_test_util.h"
#include "gtest/gtest.h"

namespace iosfarm::graph::models {
namespace {

TEST(InceptionV3Test, BuildsValidGraphsAtBatch1And4) {
  for (int64_t batch : {1, 4}) {
    SCOPED_TRACE(batch);
    StatusOr<Graph> graph = BuildInceptionV3(batch);
    ASSERT_TRUE(graph.ok()) << graph.status();
    ExpectZooContract(*graph, batch, 299);
  }
}

TEST(InceptionV3Test, MacsAndParamsMatchTorchvision) {
  StatusOr<Graph> graph = BuildInceptionV3(1);
  ASSERT_TRUE(graph.ok()) << graph.status();
  const OpCost cost = ComputeGraphCost(*graph);
  // Exact figures of torchvision.models.inception_v3(aux_logits=False) at
  // 1x3x299x299 (forward hooks); parameters 23,834,568 minus the 17,216 BN
  // channels folded into conv biases.
  EXPECT_EQ(cost.macs, 5'713'216'096);
  EXPECT_EQ(cost.params, 23'817'352);
  // Published: 5.71 GFLOPS (torchvision model table; Szegedy et al. 2016 quote
  // 5 G multiply-adds) and 27.2 M params including the 3.3 M aux head.
  ExpectNear(cost.macs, 5.71e9, 0.01);
  ExpectNear(cost.params, 23.83e6, 0.01);
}

TEST(InceptionV3Test, OpCounts) {
  StatusOr<Graph> graph = BuildInceptionV3(1);
  ASSERT_TRUE(graph.ok()) << graph.status();
  const auto ops = OpHistogram(*graph);
  // Stem 5, Mixed_5b-d 3 x 7, Mixed_6a 4, Mixed_6b-e 4 x 10, Mixed_7a 6,
  // Mixed_7b-c 2 x 9.
  EXPECT_EQ(ops.at(OpType::kConv), 94);
  EXPECT_EQ(ops.at(OpType::kConcat), 11 + 2 * 2);  // + nested ones in Mixed_7b/c
  EXPECT_EQ(ops.at(OpType::kAveragePool), 9);      // pool branches of A, C, E
  EXPECT_EQ(ops.at(OpType::kMaxPool), 4);          // 2 stem + Mixed_6a + Mixed_7a
  EXPECT_EQ(ops.at(OpType::kGemm), 1);
  EXPECT_EQ(ops.count(OpType::kRelu), 0u);  // BasicConv2d = one fused Conv
  EXPECT_EQ(graph->num_nodes(), 125);
  for (const Node& node : graph->nodes()) {
    if (node.type == OpType::kAveragePool) {
      EXPECT_TRUE(std::get<PoolAttrs>(node.attrs).count_include_pad) << node.name;
    }
  }
}

TEST(InceptionV3Test, MacsScaleLinearlyWithBatch) {
  StatusOr<Graph> one = BuildInceptionV3(1);
  StatusOr<Graph> four = BuildInceptionV3(4);
  ASSERT_TRUE(one.ok() && four.ok());
  ExpectLinearInBatch(*one, *four);
}

TEST(InceptionV3Test, RejectsBadBatch) {
  EXPECT_EQ(BuildInceptionV3(0).status().code(), absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace iosfarm::graph::models
