#include "graph/models/squeezenet.h"

#include "graph/cost.h"
#include "graph/models/model_test_util.h"
#include "gtest/gtest.h"

namespace iosfarm::graph::models {
namespace {

TEST(SqueezeNetTest, BuildsValidGraphsAtBatch1And4) {
  for (int64_t batch : {1, 4}) {
    SCOPED_TRACE(batch);
    StatusOr<Graph> graph = BuildSqueezeNet(batch);
    ASSERT_TRUE(graph.ok()) << graph.status();
    ExpectZooContract(*graph, batch, 224);
  }
}

TEST(SqueezeNetTest, MacsAndParamsMatchTorchvision) {
  StatusOr<Graph> graph = BuildSqueezeNet(1);
  ASSERT_TRUE(graph.ok()) << graph.status();
  const OpCost cost = ComputeGraphCost(*graph);
  // Exact figures of torchvision.models.squeezenet1_1() at 1x3x224x224 (forward
  // hooks; no BN to fold, so parameters are identical).
  EXPECT_EQ(cost.macs, 349'151'936);
  EXPECT_EQ(cost.params, 1'235'496);
  // Published: 0.35 GFLOPS and 1.24 M params (torchvision model table;
  // SqueezeNet v1.1 release notes: 2.4x less computation than v1.0's 0.86 G).
  ExpectNear(cost.macs, 0.35e9, 0.01);
  ExpectNear(cost.params, 1.235e6, 0.01);
}

TEST(SqueezeNetTest, OpCounts) {
  StatusOr<Graph> graph = BuildSqueezeNet(1);
  ASSERT_TRUE(graph.ok()) << graph.status();
  const auto ops = OpHistogram(*graph);
  EXPECT_EQ(ops.at(OpType::kConv), 26);   // conv1 + 8 fires x 3 + conv10
  EXPECT_EQ(ops.at(OpType::kConcat), 8);  // one per fire module
  EXPECT_EQ(ops.at(OpType::kMaxPool), 3);
  EXPECT_EQ(ops.at(OpType::kGlobalAveragePool), 1);
  EXPECT_EQ(ops.count(OpType::kGemm), 0u);  // no FC layer in SqueezeNet
  EXPECT_EQ(ops.count(OpType::kRelu), 0u);  // all fused into the convs
  EXPECT_EQ(graph->num_nodes(), 39);
  for (const Node& node : graph->nodes()) {
    if (node.type == OpType::kMaxPool) {
      EXPECT_TRUE(std::get<PoolAttrs>(node.attrs).ceil_mode) << node.name;
    }
  }
}

TEST(SqueezeNetTest, MacsScaleLinearlyWithBatch) {
  StatusOr<Graph> one = BuildSqueezeNet(1);
  StatusOr<Graph> four = BuildSqueezeNet(4);
  ASSERT_TRUE(one.ok() && four.ok());
  ExpectLinearInBatch(*one, *four);
}

TEST(SqueezeNetTest, RejectsBadBatch) {
  EXPECT_EQ(BuildSqueezeNet(-1).status().code(), absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace iosfarm::graph::models
