#include "graph/models/nasnet_a.h"

#include <string>

#include "graph/cost.h"
#include "graph/models/model_test_util.h"
#include "gtest/gtest.h"

namespace iosfarm::graph::models {
namespace {

// Shape of the output of the node named `name`.
Shape OutputShape(const Graph& graph, const std::string& name) {
  for (const Node& node : graph.nodes()) {
    if (node.name == name) return graph.value(node.outputs[0]).shape;
  }
  ADD_FAILURE() << "no node " << name;
  return {};
}

TEST(NasNetALargeTest, BuildsValidGraphsAtBatch1And4) {
  for (int64_t batch : {1, 4}) {
    SCOPED_TRACE(batch);
    StatusOr<Graph> graph = BuildNasNetALarge(batch);
    ASSERT_TRUE(graph.ok()) << graph.status();
    ExpectZooContract(*graph, batch, 331);
    EXPECT_EQ(graph->name(), "nasnet_a");
  }
}

TEST(NasNetALargeTest, MacsAndParamsMatchThePaper) {
  StatusOr<Graph> graph = BuildNasNetALarge(1);
  ASSERT_TRUE(graph.ok()) << graph.status();
  const OpCost cost = ComputeGraphCost(*graph);
  // Our exact figures (recorded in nasnet_a.h).
  EXPECT_EQ(cost.macs, 23'783'414'658);
  EXPECT_EQ(cost.params, 88'654'816);
  // Zoph et al. 2018, Table 2: NASNet-A (6 @ 4032), 331x331: 23.8 B mult-adds
  // and 88.9 M params (1001 classes, BN unfolded; folding removes ~0.2 M).
  ExpectNear(cost.macs, 23.8e9, 0.005);
  ExpectNear(cost.params, 88.9e6, 0.005);
}

TEST(NasNetALargeTest, OpCountsAndCellShapes) {
  StatusOr<Graph> graph = BuildNasNetALarge(1);
  ASSERT_TRUE(graph.ok()) << graph.status();
  const auto ops = OpHistogram(*graph);
  // 18 normal cells x 5 separable branches + 4 reduction/stem cells x 5, each
  // branch two separable convs.
  EXPECT_EQ(CountDepthwiseConvs(*graph), (18 * 5 + 4 * 5) * 2);
  EXPECT_EQ(ops.at(OpType::kConv), 488);
  EXPECT_EQ(ops.at(OpType::kAdd), 22 * 5);
  EXPECT_EQ(ops.at(OpType::kRelu), 154);
  EXPECT_EQ(ops.at(OpType::kAveragePool), 70);
  EXPECT_EQ(ops.at(OpType::kMaxPool), 8);
  EXPECT_EQ(ops.at(OpType::kConcat), 22 + 4);  // cells + factorized reductions
  EXPECT_EQ(ops.at(OpType::kPad), 4);
  EXPECT_EQ(ops.at(OpType::kSlice), 4);
  EXPECT_EQ(ops.at(OpType::kGemm), 1);
  EXPECT_EQ(graph->num_nodes(), 867);
  EXPECT_EQ(OutputShape(*graph, "conv0"), (Shape{1, 96, 165, 165}));
  EXPECT_EQ(OutputShape(*graph, "cell_stem_0/concat"), (Shape{1, 168, 83, 83}));
  EXPECT_EQ(OutputShape(*graph, "cell_stem_1/concat"), (Shape{1, 336, 42, 42}));
  EXPECT_EQ(OutputShape(*graph, "cell_5/concat"), (Shape{1, 1008, 42, 42}));
  EXPECT_EQ(OutputShape(*graph, "reduction_cell_0/concat"), (Shape{1, 1344, 21, 21}));
  EXPECT_EQ(OutputShape(*graph, "cell_11/concat"), (Shape{1, 2016, 21, 21}));
  EXPECT_EQ(OutputShape(*graph, "reduction_cell_1/concat"), (Shape{1, 2688, 11, 11}));
  EXPECT_EQ(OutputShape(*graph, "cell_17/concat"), (Shape{1, 4032, 11, 11}));
}

TEST(NasNetALargeTest, SkipReductionLayerInput) {
  // Large: the cell after a reduction reads, as "prev", the output of the cell
  // two before the reduction (cell_4 for cell_6), through a factorized reduction.
  StatusOr<Graph> graph = BuildNasNetALarge(1);
  ASSERT_TRUE(graph.ok()) << graph.status();
  for (const Node& node : graph->nodes()) {
    if (node.name != "cell_6/prev/relu") continue;
    const Value& in = graph->value(node.inputs[0]);
    EXPECT_EQ(in.name, "cell_4/concat");
    return;
  }
  ADD_FAILURE() << "no cell_6/prev/relu";
}

TEST(NasNetALargeTest, MacsScaleLinearlyWithBatch) {
  StatusOr<Graph> one = BuildNasNetALarge(1);
  StatusOr<Graph> four = BuildNasNetALarge(4);
  ASSERT_TRUE(one.ok() && four.ok());
  ExpectLinearInBatch(*one, *four);
}

TEST(NasNetAMobileTest, BuildsValidGraphsAtBatch1And4) {
  for (int64_t batch : {1, 4}) {
    SCOPED_TRACE(batch);
    StatusOr<Graph> graph = BuildNasNetAMobile(batch);
    ASSERT_TRUE(graph.ok()) << graph.status();
    ExpectZooContract(*graph, batch, 224);
    EXPECT_EQ(graph->name(), "nasnet_a_mobile");
  }
}

TEST(NasNetAMobileTest, MacsAndParamsMatchThePaper) {
  StatusOr<Graph> graph = BuildNasNetAMobile(1);
  ASSERT_TRUE(graph.ok()) << graph.status();
  const OpCost cost = ComputeGraphCost(*graph);
  EXPECT_EQ(cost.macs, 563'638'816);
  EXPECT_EQ(cost.params, 5'271'609);
  // Zoph et al. 2018, Table 3: NASNet-A (4 @ 1056), 224x224: 564 M mult-adds
  // and 5.3 M params.
  ExpectNear(cost.macs, 564e6, 0.005);
  ExpectNear(cost.params, 5.3e6, 0.01);
}

TEST(NasNetAMobileTest, OpCountsAndSamePadding) {
  StatusOr<Graph> graph = BuildNasNetAMobile(1);
  ASSERT_TRUE(graph.ok()) << graph.status();
  const auto ops = OpHistogram(*graph);
  EXPECT_EQ(CountDepthwiseConvs(*graph), (12 * 5 + 4 * 5) * 2);
  EXPECT_EQ(ops.at(OpType::kConv), 356);
  EXPECT_EQ(ops.at(OpType::kAdd), 16 * 5);
  EXPECT_EQ(graph->num_nodes(), 639);
  EXPECT_EQ(OutputShape(*graph, "conv0"), (Shape{1, 32, 111, 111}));
  EXPECT_EQ(OutputShape(*graph, "cell_stem_1/concat"), (Shape{1, 88, 28, 28}));
  EXPECT_EQ(OutputShape(*graph, "cell_11/concat"), (Shape{1, 1056, 7, 7}));
  // Stride-2 on an even size (stem 1 at 56x56): TF SAME puts the extra pixel
  // bottom/right, as the PyTorch port's ZeroPad2d-and-crop does.
  for (const Node& node : graph->nodes()) {
    if (node.name == "cell_stem_1/comb0_left/sep1/dw") {
      EXPECT_EQ(std::get<ConvAttrs>(node.attrs).pads,
                (std::array<int64_t, 4>{1, 1, 2, 2}));
    }
    if (node.name == "cell_stem_0/comb0_left/sep1/dw") {  // 111x111: symmetric
      EXPECT_EQ(std::get<ConvAttrs>(node.attrs).pads,
                (std::array<int64_t, 4>{2, 2, 2, 2}));
    }
  }
}

TEST(NasNetAMobileTest, MacsScaleLinearlyWithBatch) {
  StatusOr<Graph> one = BuildNasNetAMobile(1);
  StatusOr<Graph> four = BuildNasNetAMobile(4);
  ASSERT_TRUE(one.ok() && four.ok());
  ExpectLinearInBatch(*one, *four);
}

TEST(NasNetATest, RejectsBadBatchAndConfig) {
  EXPECT_EQ(BuildNasNetALarge(0).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(BuildNasNetAMobile(5000).status().code(), absl::StatusCode::kInvalidArgument);
  NasNetAConfig bad = NasNetAMobileConfig();
  bad.penultimate_filters = 1000;  // not a multiple of 24
  EXPECT_EQ(BuildNasNetA(1, bad).status().code(), absl::StatusCode::kInvalidArgument);
  bad = NasNetAMobileConfig();
  bad.cells_per_stack = 0;
  EXPECT_EQ(BuildNasNetA(1, bad).status().code(), absl::StatusCode::kInvalidArgument);
  bad = NasNetAMobileConfig();
  bad.image_size = 16;
  EXPECT_EQ(BuildNasNetA(1, bad).status().code(), absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace iosfarm::graph::models
