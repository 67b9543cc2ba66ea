#include "graph/models/randwire.h"

#include <string>
#include <string_view>

#include "gmock/gmock.h"
#include "graph/cost.h"
#include "graph/models/model_test_util.h"
#include "gtest/gtest.h"

namespace iosfarm::graph::models {
namespace {

using ::testing::HasSubstr;

RandWireOptions RegularWithChannels(int64_t channels) {
  RandWireOptions options;
  options.channels = channels;
  return options;
}

// Stride-2 depthwise convs: one per input node of every random stage.
int CountStridedDepthwiseConvs(const Graph& graph) {
  int strided = 0;
  for (const Node& node : graph.nodes()) {
    if (node.type != OpType::kConv) continue;
    const auto& attrs = std::get<ConvAttrs>(node.attrs);
    if (attrs.groups > 1 && attrs.stride[0] == 2) ++strided;
  }
  return strided;
}

bool SameGraph(const Graph& a, const Graph& b) {
  if (a.name() != b.name() || a.num_nodes() != b.num_nodes() ||
      a.num_values() != b.num_values()) {
    return false;
  }
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

TEST(RandWireTest, BuildsValidGraphsAtBatch1And4InBothRegimes) {
  for (const RandWireOptions& options : {RandWireOptions{}, RandWireOptions::Small()}) {
    for (int64_t batch : {1, 4}) {
      SCOPED_TRACE(batch);
      StatusOr<Graph> graph = BuildRandWire(batch, options);
      ASSERT_TRUE(graph.ok()) << graph.status();
      ExpectZooContract(*graph, batch, 224);
    }
  }
}

TEST(RandWireTest, DefaultIsTheRegularRegimeWithC154) {
  const RandWireOptions options;
  EXPECT_EQ(options.regime, RandWireRegime::kRegular);
  EXPECT_EQ(options.channels, 154);
  EXPECT_EQ(options.nodes, 32);
  EXPECT_EQ(options.seed, kRandWireSeed);
  const RandWireOptions small = RandWireOptions::Small();
  EXPECT_EQ(small.regime, RandWireRegime::kSmall);
  EXPECT_EQ(small.channels, 78);
  EXPECT_EQ(small.nodes, 32);

  StatusOr<Graph> a = BuildRandWire(1);
  StatusOr<Graph> b = BuildRandWire(1, RandWireOptions{});
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_EQ(a->name(), "randwire");
  EXPECT_TRUE(SameGraph(*a, *b));
  StatusOr<Graph> c = BuildRandWire(1, small);
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->name(), "randwire_small");
}

TEST(RandWireTest, RegularMacsAndParamsNearThePaper) {
  StatusOr<Graph> graph = BuildRandWire(1);
  ASSERT_TRUE(graph.ok()) << graph.status();
  const OpCost cost = ComputeGraphCost(*graph);
  // Our exact figures for the default seed (recorded in randwire.h).
  EXPECT_EQ(cost.macs, 7'901'217'584);
  EXPECT_EQ(cost.params, 63'304'317);
  // Xie et al. 2019, Table 4 (regular regime, RandWire-WS C=154, the
  // ResNet-101-sized one): 7.9 B FLOPs (multiply-adds) and 61.5 M params, for
  // their own random graphs. MACs depend on the wiring only through the
  // number of input nodes and move little; params move more, because every
  // input node of conv5 has a 616->1232 instead of a 1232->1232 pointwise
  // conv (0.76 M params, 1.2%): over seeds 1..20 they span 59.6..63.4 M.
  ExpectNear(cost.macs, 7.9e9, 0.01);
  ExpectNear(cost.params, 61.5e6, 0.035);
  // Wang et al., IOPS, Table 5: RandWire (IOS's randwire_large) 8.06 G.
  ExpectNear(cost.macs, 8.06e9, 0.025);
}

TEST(RandWireTest, RegularC109NearThePaper) {
  StatusOr<Graph> graph = BuildRandWire(1, RegularWithChannels(109));
  ASSERT_TRUE(graph.ok()) << graph.status();
  ExpectZooContract(*graph, 1, 224);
  const OpCost cost = ComputeGraphCost(*graph);
  EXPECT_EQ(cost.macs, 4'015'406'648);
  EXPECT_EQ(cost.params, 32'817'751);
  // Xie et al. 2019, Table 4 (RandWire-WS C=109): 4.0 B FLOPs, 31.9 M params.
  ExpectNear(cost.macs, 4.0e9, 0.01);
  ExpectNear(cost.params, 31.9e6, 0.035);
}

TEST(RandWireTest, SmallMacsAndParamsNearThePaper) {
  StatusOr<Graph> graph = BuildRandWire(1, RandWireOptions::Small());
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

TEST(RandWireTest, RegularOpCountsOfDefaultSeed) {
  StatusOr<Graph> graph = BuildRandWire(1);
  ASSERT_TRUE(graph.ok()) << graph.status();
  const auto ops = OpHistogram(*graph);
  // Random stages of 16 + 32 + 32 + 32 = 112 nodes (IOPS, Table 1: RandWire
  // has 112 convs), each Relu + depthwise + pointwise conv.
  EXPECT_EQ(CountDepthwiseConvs(*graph), 112);
  EXPECT_EQ(ops.at(OpType::kConv), 1 + 112 * 2 + 1);
  EXPECT_EQ(ops.at(OpType::kRelu), 112 + 1);
  // Per stage: edges - nodes with inputs + output nodes - 1, i.e.
  // (32 - 13 + 2) + (64 - 25 + 7) + (64 - 27 + 6) + (64 - 28 + 5) - 4.
  EXPECT_EQ(ops.at(OpType::kAdd), 147);
  EXPECT_EQ(ops.at(OpType::kGlobalAveragePool), 1);
  EXPECT_EQ(ops.at(OpType::kGemm), 1);
  EXPECT_EQ(graph->num_nodes(), 489);
  // Input nodes of the four stages: 3 + 7 + 5 + 4.
  EXPECT_EQ(CountStridedDepthwiseConvs(*graph), 19);
}

TEST(RandWireTest, SmallOpCountsOfDefaultSeed) {
  StatusOr<Graph> graph = BuildRandWire(1, RandWireOptions::Small());
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
  // Input nodes of the three stages: 5 + 7 + 5.
  EXPECT_EQ(CountStridedDepthwiseConvs(*graph), 17);
}

// Every conv of stage `prefix` ("conv2/" ...) has output [1, channels, hw, hw].
void ExpectStageShapes(const Graph& graph, std::string_view prefix, int64_t channels,
                       int64_t hw, int expected_convs) {
  SCOPED_TRACE(std::string(prefix));
  int convs = 0;
  for (const Node& node : graph.nodes()) {
    if (node.type != OpType::kConv || !std::string_view(node.name).starts_with(prefix)) {
      continue;
    }
    ++convs;
    const Shape& out = graph.value(node.outputs[0]).shape;
    const bool depthwise = std::get<ConvAttrs>(node.attrs).groups > 1;
    if (!depthwise) {
      EXPECT_EQ(out, (Shape{1, channels, hw, hw})) << node.name;
    }
    EXPECT_EQ(out[2], hw) << node.name;
  }
  EXPECT_EQ(convs, expected_convs);
}

TEST(RandWireTest, RegularStagesFollowTable2) {
  StatusOr<Graph> graph = BuildRandWire(1);
  ASSERT_TRUE(graph.ok()) << graph.status();
  // conv1: 3x3/2 Conv-BN to C/2, no fused ReLU (the next nodes start with one).
  const Node& conv1 = graph->node(0);
  ASSERT_EQ(conv1.name, "conv1");
  EXPECT_EQ(std::get<ConvAttrs>(conv1.attrs).activation, Activation::kNone);
  EXPECT_EQ(graph->value(conv1.outputs[0]).shape, (Shape{1, 77, 112, 112}));
  ExpectStageShapes(*graph, "conv2/", 154, 56, 2 * 16);
  ExpectStageShapes(*graph, "conv3/", 308, 28, 2 * 32);
  ExpectStageShapes(*graph, "conv4/", 616, 14, 2 * 32);
  ExpectStageShapes(*graph, "conv5/", 1232, 7, 2 * 32);
  ExpectStageShapes(*graph, "head/", 1280, 7, 1);
}

TEST(RandWireTest, SmallStagesFollowTable2) {
  StatusOr<Graph> graph = BuildRandWire(1, RandWireOptions::Small());
  ASSERT_TRUE(graph.ok()) << graph.status();
  const Node& conv1 = graph->node(0);
  ASSERT_EQ(conv1.name, "conv1");
  EXPECT_EQ(std::get<ConvAttrs>(conv1.attrs).activation, Activation::kRelu);
  ExpectStageShapes(*graph, "conv2", 78, 56, 1);
  ExpectStageShapes(*graph, "conv3/", 78, 28, 2 * 32);
  ExpectStageShapes(*graph, "conv4/", 156, 14, 2 * 32);
  ExpectStageShapes(*graph, "conv5/", 312, 7, 2 * 32);
}

TEST(RandWireTest, SameSeedGivesIdenticalGraphInBothRegimes) {
  for (const RandWireOptions& options : {RandWireOptions{}, RandWireOptions::Small()}) {
    SCOPED_TRACE(options.regime == RandWireRegime::kSmall ? "small" : "regular");
    StatusOr<Graph> a = BuildRandWire(2, options);
    StatusOr<Graph> b = BuildRandWire(2, options);
    ASSERT_TRUE(a.ok() && b.ok());
    EXPECT_TRUE(SameGraph(*a, *b));

    RandWireOptions other = options;
    other.seed = 7;
    StatusOr<Graph> c = BuildRandWire(2, other);
    ASSERT_TRUE(c.ok()) << c.status();
    ExpectZooContract(*c, 2, 224);
    EXPECT_FALSE(SameGraph(*a, *c));
    // Same node operations, so the same number of separable convs.
    EXPECT_EQ(CountDepthwiseConvs(*c), CountDepthwiseConvs(*a));
  }
}

TEST(RandWireTest, MacsScaleLinearlyWithBatchInBothRegimes) {
  for (const RandWireOptions& options : {RandWireOptions{}, RandWireOptions::Small()}) {
    StatusOr<Graph> one = BuildRandWire(1, options);
    StatusOr<Graph> four = BuildRandWire(4, options);
    ASSERT_TRUE(one.ok() && four.ok());
    ExpectLinearInBatch(*one, *four);
  }
}

TEST(RandWireTest, RejectsBadArguments) {
  EXPECT_EQ(BuildRandWire(0).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(BuildRandWire(4097).status().code(), absl::StatusCode::kInvalidArgument);
  RandWireOptions odd_k;
  odd_k.k = 3;
  EXPECT_EQ(BuildRandWire(1, odd_k).status().code(), absl::StatusCode::kInvalidArgument);
  RandWireOptions no_channels;
  no_channels.channels = 1;
  EXPECT_EQ(BuildRandWire(1, no_channels).status().code(),
            absl::StatusCode::kInvalidArgument);
  RandWireOptions bad_regime;
  bad_regime.regime = static_cast<RandWireRegime>(7);
  EXPECT_EQ(BuildRandWire(1, bad_regime).status().code(),
            absl::StatusCode::kInvalidArgument);

  // N = 8: the regular regime's first stage would have 4 nodes, too few for
  // k = 4; the small regime's stages have 8 and are fine.
  RandWireOptions tiny;
  tiny.nodes = 8;
  const Status status = BuildRandWire(1, tiny).status();
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(status.message()), HasSubstr("conv2"));
  tiny.regime = RandWireRegime::kSmall;
  StatusOr<Graph> small = BuildRandWire(1, tiny);
  ASSERT_TRUE(small.ok()) << small.status();
  ExpectZooContract(*small, 1, 224);
}

}  // namespace
}  // namespace iosfarm::graph::models
