#include "graph/models/resnet50.h"

#include "graph/cost.h"
#include "graph/models/model_test_util.h"
#include "gtest/gtest.h"

namespace iosfarm::graph::models {
namespace {

TEST(ResNet50Test, BuildsValidGraphsAtBatch1And4) {
  for (int64_t batch : {1, 4}) {
    SCOPED_TRACE(batch);
    StatusOr<Graph> graph = BuildResNet50(batch);
    ASSERT_TRUE(graph.ok()) << graph.status();
    ExpectZooContract(*graph, batch, 224);
  }
}

TEST(ResNet50Test, MacsAndParamsMatchTorchvision) {
  StatusOr<Graph> graph = BuildResNet50(1);
  ASSERT_TRUE(graph.ok()) << graph.status();
  const OpCost cost = ComputeGraphCost(*graph);
  // Exact figures of torchvision.models.resnet50() at 1x3x224x224, counted with
  // forward hooks (conv: out elements x in/groups x kh x kw; linear: out x in);
  // parameters 25,557,032 minus the 26,560 BN channels folded into conv biases.
  EXPECT_EQ(cost.macs, 4'089'184'256);
  EXPECT_EQ(cost.params, 25'530'472);
  // Published: 4.09 GFLOPS (multiply-adds) and 25.6 M params (torchvision model
  // table; He et al. 2016 Table 1 gives 3.8e9 for v1 with stride on the 1x1).
  ExpectNear(cost.macs, 4.09e9, 0.01);
  ExpectNear(cost.params, 25.557e6, 0.01);
}

TEST(ResNet50Test, OpCounts) {
  StatusOr<Graph> graph = BuildResNet50(1);
  ASSERT_TRUE(graph.ok()) << graph.status();
  const auto ops = OpHistogram(*graph);
  EXPECT_EQ(ops.at(OpType::kConv), 53);  // 1 + 16 bottlenecks x 3 + 4 projections
  EXPECT_EQ(ops.at(OpType::kAdd), 16);
  EXPECT_EQ(ops.at(OpType::kRelu), 16);  // after each residual add; others fused
  EXPECT_EQ(ops.at(OpType::kMaxPool), 1);
  EXPECT_EQ(ops.at(OpType::kGlobalAveragePool), 1);
  EXPECT_EQ(ops.at(OpType::kGemm), 1);
  EXPECT_EQ(ops.count(OpType::kBatchNormalization), 0u);
  EXPECT_EQ(graph->num_nodes(), 89);
  int fused_relu = 0;
  for (const Node& node : graph->nodes()) {
    if (node.type != OpType::kConv) continue;
    const auto& attrs = std::get<ConvAttrs>(node.attrs);
    EXPECT_TRUE(attrs.has_bias) << node.name;
    fused_relu += attrs.activation == Activation::kRelu ? 1 : 0;
  }
  EXPECT_EQ(fused_relu, 1 + 16 * 2);
}

TEST(ResNet50Test, MacsScaleLinearlyWithBatch) {
  StatusOr<Graph> one = BuildResNet50(1);
  StatusOr<Graph> four = BuildResNet50(4);
  ASSERT_TRUE(one.ok() && four.ok());
  ExpectLinearInBatch(*one, *four);
}

TEST(ResNet50Test, RejectsBadBatch) {
  EXPECT_EQ(BuildResNet50(0).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(BuildResNet50(4097).status().code(), absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace iosfarm::graph::models
