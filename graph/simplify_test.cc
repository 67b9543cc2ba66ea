#include "graph/simplify.h"

#include <cmath>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "graph/graph_builder.h"
#include "graph/test_graphs.h"
#include "graph/validate.h"

namespace iosfarm::graph {
namespace {

const Node* Find(const Graph& g, std::string_view name) {
  for (const Node& node : g.nodes()) {
    if (node.name == name) return &node;
  }
  return nullptr;
}

int Count(const Graph& g, OpType type) {
  int n = 0;
  for (const Node& node : g.nodes()) n += node.type == type;
  return n;
}

TEST(SimplifyTest, FoldsBatchNormFusesReluAndRemovesIdentity) {
  Graph g = testing::SmallBranchyGraph(false);
  auto simplified = Simplify(g);
  ASSERT_TRUE(simplified.ok()) << simplified.status();
  EXPECT_EQ(Count(*simplified, OpType::kBatchNormalization), 0);
  EXPECT_EQ(Count(*simplified, OpType::kRelu), 0);
  EXPECT_EQ(Count(*simplified, OpType::kIdentity), 0);
  EXPECT_EQ(simplified->num_nodes(), g.num_nodes() - 3);
  const Node* conv1 = Find(*simplified, "conv1");
  ASSERT_NE(conv1, nullptr);
  const auto& attrs = std::get<ConvAttrs>(conv1->attrs);
  EXPECT_TRUE(attrs.has_bias);
  EXPECT_EQ(attrs.activation, Activation::kRelu);
  EXPECT_EQ(conv1->weights.at("B").shape, (Shape{16}));
  // The fused conv's output keeps the name of the last fused node.
  EXPECT_EQ(simplified->value(conv1->outputs[0]).name, "relu1");
  EXPECT_TRUE(Validate(*simplified).ok());
}

// Reference conv at one output position (no padding needed at the centre).
TEST(SimplifyTest, BatchNormFoldingIsNumericallyExact) {
  Graph g = testing::SmallBranchyGraph(true);
  auto simplified = Simplify(g, SimplifyOptions{true, false});
  ASSERT_TRUE(simplified.ok()) << simplified.status();
  const Node* before = Find(g, "conv1");
  const Node* bn = Find(g, "bn1");
  const Node* after = Find(*simplified, "conv1");
  ASSERT_TRUE(before && bn && after);
  EXPECT_EQ(Count(*simplified, OpType::kRelu), 1);  // fusion disabled
  const float eps = std::get<BatchNormAttrs>(bn->attrs).epsilon;
  // Evaluate y = BN(conv(x)) and conv'(x) on a ones input for every channel.
  const int64_t per_channel = 8 * 3 * 3;
  for (int64_t o = 0; o < 16; ++o) {
    float dot_before = 0, dot_after = 0;
    for (int64_t i = 0; i < per_channel; ++i) {
      dot_before += before->weights.at("W").data[o * per_channel + i];
      dot_after += after->weights.at("W").data[o * per_channel + i];
    }
    const float expected = (dot_before - bn->weights.at("mean").data[o]) *
                               bn->weights.at("scale").data[o] /
                               std::sqrt(bn->weights.at("var").data[o] + eps) +
                           bn->weights.at("bias").data[o];
    EXPECT_NEAR(dot_after + after->weights.at("B").data[o], expected, 1e-5) << o;
  }
}

TEST(SimplifyTest, KeepsActivationWhenConvOutputHasOtherReaders) {
  GraphBuilder b("g");
  ValueId x = b.Input("x", {1, 4, 8, 8});
  ConvSpec spec;
  spec.out_channels = 4;
  ValueId c = b.Conv(x, spec, "conv");
  ValueId r = b.Relu(c, "relu");
  b.Output(b.Add(c, r, "add"));
  auto simplified = Simplify(*std::move(b).Finish());
  ASSERT_TRUE(simplified.ok());
  EXPECT_EQ(Count(*simplified, OpType::kRelu), 1);
}

TEST(SimplifyTest, DropsDeadNodesAndKeepsOutputNames) {
  GraphBuilder b("g");
  ValueId x = b.Input("x", {1, 4, 8, 8});
  b.Relu(x, "unused");
  ValueId s = b.Sigmoid(x, "sig");
  ValueId out = b.AddNode(OpType::kIdentity, NoAttrs{}, {s}, "logits")[0];
  b.Output(out);
  auto simplified = Simplify(*std::move(b).Finish());
  ASSERT_TRUE(simplified.ok());
  EXPECT_EQ(simplified->num_nodes(), 1);
  EXPECT_EQ(simplified->value(simplified->outputs()[0]).name, "logits");
}

}  // namespace
}  // namespace iosfarm::graph

namespace iosfarm::graph {
namespace {

TEST(SimplifyTest, FoldsZeroPadIntoAveragePoolAndConv) {
  GraphBuilder b("g");
  ValueId x = b.Input("x", {1, 4, 8, 8});
  ValueId p1 = b.Pad(x, {0, 0, 1, 1, 0, 0, 1, 1}, "pad1");
  ValueId pool = b.AveragePool(p1, {3, 3}, {1, 1}, {0, 0, 0, 0}, false, "avg");
  ValueId p2 = b.Pad(pool, {0, 0, 0, 1, 0, 0, 2, 0}, "pad2");
  ConvSpec spec;
  spec.out_channels = 4;
  spec.kernel = {3, 3};
  spec.pads = {1, 0, 0, 1};
  ValueId conv = b.Conv(p2, spec, "conv");
  // A Pad on the channel axis stays.
  ValueId p3 = b.Pad(conv, {0, 1, 0, 0, 0, 0, 0, 0}, "pad_channels");
  b.Output(b.Conv(p3, ConvSpec{.out_channels = 2}, "conv2"));
  Graph g = *std::move(b).Finish();
  auto simplified = Simplify(g);
  ASSERT_TRUE(simplified.ok()) << simplified.status();
  EXPECT_EQ(Count(*simplified, OpType::kPad), 1);
  const auto& pool_attrs = std::get<PoolAttrs>(Find(*simplified, "avg")->attrs);
  EXPECT_EQ(pool_attrs.pads, (std::array<int64_t, 4>{1, 1, 1, 1}));
  EXPECT_TRUE(pool_attrs.count_include_pad);
  const auto& conv_attrs = std::get<ConvAttrs>(Find(*simplified, "conv")->attrs);
  EXPECT_EQ(conv_attrs.pads, (std::array<int64_t, 4>{1, 1, 2, 1}));
  // Shapes are unchanged by the folding.
  EXPECT_EQ(simplified->value(simplified->outputs()[0]).shape,
            g.value(g.outputs()[0]).shape);
}

}  // namespace
}  // namespace iosfarm::graph
