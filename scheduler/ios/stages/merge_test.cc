#include "scheduler/ios/stages/merge.h"

#include "graph/graph_builder.h"
#include "graph/test_graphs.h"
#include "gtest/gtest.h"
#include "scheduler/ios/op_dag.h"
#include "scheduler/ios/testing/testing_util.h"

namespace iosfarm::scheduler::ios {
namespace {

using graph::ConvSpec;
using graph::GraphBuilder;

ConvSpec Spec(int64_t channels, std::array<int64_t, 2> kernel, std::array<int64_t, 2> padding) {
  ConvSpec spec;
  spec.out_channels = channels;
  spec.kernel = kernel;
  spec.padding = padding;
  spec.activation = graph::Activation::kRelu;
  return spec;
}

graph::NodeId Node(const graph::Graph& graph, const std::string& name) {
  return graph::testing::NodeNamed(graph, name);
}

TEST(MergeTest, MergesOneByThreeThreeByOneAndThreeByThree) {
  // IOPS's example: 1x3 + 3x1 + 3x3 on one tensor, "same" padding.
  GraphBuilder b("m");
  auto x = b.Input("x", {1, 16, 14, 14});
  b.Output(b.Conv(x, Spec(8, {1, 3}, {0, 1}), "a"));
  b.Output(b.Conv(x, Spec(4, {3, 1}, {1, 0}), "b"));
  b.Output(b.Conv(x, Spec(12, {3, 3}, {1, 1}), "c"));
  const graph::Graph graph = *std::move(b).Finish();
  auto merged = MergeConvs(graph, {Node(graph, "a"), Node(graph, "b"), Node(graph, "c")});
  ASSERT_TRUE(merged.ok()) << merged.status();
  EXPECT_EQ(merged->attrs.kernel, (std::array<int64_t, 2>{3, 3}));
  EXPECT_EQ(merged->attrs.pads, (std::array<int64_t, 4>{1, 1, 1, 1}));
  EXPECT_EQ(merged->attrs.out_channels, 24);
  EXPECT_EQ(merged->attrs.activation, graph::Activation::kRelu);
  EXPECT_TRUE(merged->attrs.has_bias);
  ASSERT_EQ(merged->branches.size(), 3u);
  EXPECT_EQ(merged->branches[0].kernel_offset, (std::array<int64_t, 2>{1, 0}));  // 1x3: middle row
  EXPECT_EQ(merged->branches[1].kernel_offset, (std::array<int64_t, 2>{0, 1}));  // 3x1: middle column
  EXPECT_EQ(merged->branches[2].kernel_offset, (std::array<int64_t, 2>{0, 0}));
  EXPECT_EQ(merged->branches[0].channel_begin, 0);
  EXPECT_EQ(merged->branches[0].channel_end, 8);
  EXPECT_EQ(merged->branches[1].channel_begin, 8);
  EXPECT_EQ(merged->branches[2].channel_end, 24);
  // All three share one merge class.
  const uint64_t key = MergeClassKey(graph, graph.node(Node(graph, "a")));
  EXPECT_NE(key, 0u);
  EXPECT_EQ(MergeClassKey(graph, graph.node(Node(graph, "b"))), key);
  EXPECT_EQ(MergeClassKey(graph, graph.node(Node(graph, "c"))), key);
}

TEST(MergeTest, RejectsIllegalMerges) {
  GraphBuilder b("m");
  auto x = b.Input("x", {1, 16, 14, 14});
  auto y = b.Input("y", {1, 16, 14, 14});
  b.Output(b.Conv(x, Spec(8, {3, 3}, {1, 1}), "base"));
  b.Output(b.Conv(y, Spec(8, {3, 3}, {1, 1}), "other_input"));
  ConvSpec strided = Spec(8, {3, 3}, {1, 1});
  strided.stride = {2, 2};
  b.Output(b.Conv(x, strided, "strided"));
  ConvSpec dilated = Spec(8, {3, 3}, {2, 2});
  dilated.dilation = {2, 2};
  b.Output(b.Conv(x, dilated, "dilated"));
  ConvSpec grouped = Spec(16, {3, 3}, {1, 1});
  grouped.groups = 16;
  b.Output(b.Conv(x, grouped, "grouped"));
  ConvSpec linear = Spec(8, {3, 3}, {1, 1});
  linear.activation = graph::Activation::kNone;
  b.Output(b.Conv(x, linear, "no_relu"));
  // 1x1 without padding: output 14x14 like base, but a 1x1 centred in a 3x3
  // needs pad 1 - 1 = 0 ... i.e. base's pads (1) = 0 + 1: this one is legal.
  b.Output(b.Conv(x, Spec(8, {1, 1}, {0, 0}), "pointwise"));
  // 3x3 "valid": output 12x12, pads do not line up.
  b.Output(b.Conv(x, Spec(8, {3, 3}, {0, 0}), "valid"));
  // 2x2: cannot be centred in a 3x3.
  ConvSpec even = Spec(8, {2, 2}, {0, 0});
  even.pads = {0, 0, 1, 1};
  b.Output(b.Conv(x, even, "even"));
  b.Output(b.Relu(x, "relu"));
  const graph::Graph graph = *std::move(b).Finish();
  const graph::NodeId base = Node(graph, "base");
  EXPECT_TRUE(MergeConvs(graph, {base, Node(graph, "pointwise")}).ok());
  for (const char* name :
       {"other_input", "strided", "dilated", "grouped", "no_relu", "valid", "even", "relu"}) {
    SCOPED_TRACE(name);
    const graph::NodeId other = Node(graph, name);
    const auto merged = MergeConvs(graph, {base, other});
    EXPECT_EQ(merged.status().code(), absl::StatusCode::kFailedPrecondition);
    EXPECT_NE(merged.status().message().find(name), absl::string_view::npos)
        << merged.status();
    EXPECT_NE(MergeClassKey(graph, graph.node(other)),
              MergeClassKey(graph, graph.node(base)));
  }
  EXPECT_FALSE(MergeConvs(graph, {base}).ok());
  EXPECT_FALSE(MergeConvs(graph, {base, base}).ok());
}

// MergeClassKey is exactly MergeConvs' legality, pair by pair, on random
// graphs full of convolutions that share inputs.
TEST(MergeTest, ClassKeyAgreesWithMergeConvs) {
  int legal = 0, illegal = 0;
  for (uint64_t seed = 1; seed <= 60; ++seed) {
    const graph::Graph graph = testing::RandomDag(seed, 14);
    std::vector<graph::NodeId> convs;
    for (graph::NodeId id = 0; id < graph.num_nodes(); ++id) {
      if (graph.node(id).type == graph::OpType::kConv) convs.push_back(id);
    }
    for (size_t i = 0; i < convs.size(); ++i) {
      for (size_t j = i + 1; j < convs.size(); ++j) {
        const bool same_key = MergeClassKey(graph, graph.node(convs[i])) ==
                              MergeClassKey(graph, graph.node(convs[j]));
        const bool ok = MergeConvs(graph, {convs[i], convs[j]}).ok();
        EXPECT_EQ(same_key, ok) << graph.node(convs[i]).name << " " << graph.node(convs[j]).name;
        (ok ? legal : illegal)++;
      }
    }
  }
  EXPECT_GT(legal, 20);
  EXPECT_GT(illegal, 20);
}

}  // namespace
}  // namespace iosfarm::scheduler::ios
