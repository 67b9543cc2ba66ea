#include "worker/backends/weights.h"

#include <cmath>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "graph/graph_builder.h"
#include "graph/test_graphs.h"

namespace iosfarm::worker {
namespace {

graph::Node ConvNode(const std::string& name, int64_t in, int64_t k, graph::Activation act) {
  graph::Node node;
  node.name = name;
  node.type = graph::OpType::kConv;
  graph::ConvAttrs a;
  a.out_channels = 32;
  a.kernel = {k, k};
  a.activation = act;
  a.has_bias = true;
  node.attrs = a;
  node.weights["W"].shape = {32, in, k, k};
  node.weights["B"].shape = {32};
  return node;
}

TEST(WeightsTest, DeterministicAndKeyedByNameAndRole) {
  const graph::Node a = ConvNode("conv", 16, 3, graph::Activation::kNone);
  const graph::Tensor w1 = MaterializeWeight(a, "W", a.weights.at("W"));
  const graph::Tensor w2 = MaterializeWeight(a, "W", a.weights.at("W"));
  EXPECT_EQ(w1.shape, (graph::Shape{32, 16, 3, 3}));
  ASSERT_EQ(w1.data.size(), 32u * 16 * 9);
  EXPECT_EQ(w1.data, w2.data);
  const graph::Node renamed = ConvNode("conv2", 16, 3, graph::Activation::kNone);
  EXPECT_NE(MaterializeWeight(renamed, "W", renamed.weights.at("W")).data, w1.data);
  EXPECT_NE(WeightSeed("conv", "W"), WeightSeed("conv", "B"));
  EXPECT_NE(WeightSeed("ab", "c"), WeightSeed("a", "bc"));
}

TEST(WeightsTest, RangesFollowFanInAndActivation) {
  const graph::Node linear = ConvNode("c", 16, 3, graph::Activation::kNone);
  const graph::Node relu = ConvNode("c", 16, 3, graph::Activation::kRelu);
  const double bound = std::sqrt(3.0 / (16 * 9));
  UniformRange r = WeightRange(linear, "W", {32, 16, 3, 3});
  EXPECT_NEAR(r.high, bound, 1e-7);
  EXPECT_NEAR(r.low, -bound, 1e-7);
  EXPECT_NEAR(WeightRange(relu, "W", {32, 16, 3, 3}).high, bound * std::sqrt(2.0), 1e-7);
  EXPECT_NEAR(WeightRange(linear, "B", {32}).high, 0.1, 1e-7);
  const graph::Tensor w = MaterializeWeight(relu, "W", relu.weights.at("W"));
  double max_abs = 0, mean = 0;
  for (float v : w.data) {
    max_abs = std::max(max_abs, std::abs(double{v}));
    mean += v;
  }
  mean /= static_cast<double>(w.data.size());
  EXPECT_LE(max_abs, bound * std::sqrt(2.0));
  EXPECT_GT(max_abs, 0.9 * bound * std::sqrt(2.0));
  EXPECT_NEAR(mean, 0.0, 0.02);

  graph::Node bn;
  bn.name = "bn";
  bn.type = graph::OpType::kBatchNormalization;
  bn.attrs = graph::BatchNormAttrs{};
  EXPECT_EQ(WeightRange(bn, "var", {8}).low, 0.8f);
  EXPECT_EQ(WeightRange(bn, "mean", {8}).high, 0.1f);

  graph::Node gemm;
  gemm.type = graph::OpType::kGemm;
  gemm.attrs = graph::GemmAttrs{1, 1, false, true};  // B [N, K] = [10, 300]
  EXPECT_NEAR(WeightRange(gemm, "B", {10, 300}).high, 0.1, 1e-7);
}

TEST(WeightsTest, KeepsExistingDataAndFillsTheRest) {
  const graph::Graph with = graph::testing::SmallBranchyGraph(/*with_data=*/true);
  const graph::Graph filled = MaterializeWeights(with);
  for (graph::NodeId n = 0; n < with.num_nodes(); ++n) {
    for (const auto& [role, tensor] : with.node(n).weights) {
      EXPECT_EQ(filled.node(n).weights.at(role).data, tensor.data);
    }
  }
  const graph::Graph without = graph::testing::SmallBranchyGraph(/*with_data=*/false);
  const graph::Graph materialized = MaterializeWeights(without);
  for (graph::NodeId n = 0; n < without.num_nodes(); ++n) {
    EXPECT_TRUE(NeedsMaterialization(without.node(n)) || without.node(n).weights.empty());
    EXPECT_FALSE(NeedsMaterialization(materialized.node(n)));
    for (const auto& [role, tensor] : materialized.node(n).weights) {
      EXPECT_EQ(static_cast<int64_t>(tensor.data.size()), tensor.num_elements());
    }
  }
}

TEST(WeightsTest, CacheDrawsOnceAndGivesMaterializeWeightsValues) {
  const graph::Node a = ConvNode("conv", 16, 3, graph::Activation::kRelu);
  WeightCache cache;
  const auto w = cache.Draw(a, "W", a.weights.at("W").shape);
  EXPECT_EQ(*w, MaterializeWeight(a, "W", a.weights.at("W")).data);
  EXPECT_EQ(cache.Draw(a, "W", a.weights.at("W").shape), w);  // the same entry
  EXPECT_EQ(*cache.Draw(a, "B", a.weights.at("B").shape),
            MaterializeWeight(a, "B", a.weights.at("B")).data);
  EXPECT_EQ(cache.misses(), 2);
  EXPECT_EQ(cache.hits(), 1);
  EXPECT_EQ(cache.bytes(), (32 * 16 * 3 * 3 + 32) * static_cast<int64_t>(sizeof(float)));
  // Same name and role in another graph, another range (fan-in, activation)
  // or size: other values, never the cached ones.
  const graph::Node wider = ConvNode("conv", 32, 3, graph::Activation::kRelu);
  EXPECT_EQ(*cache.Draw(wider, "W", wider.weights.at("W").shape),
            MaterializeWeight(wider, "W", wider.weights.at("W")).data);
  const graph::Node linear = ConvNode("conv", 16, 3, graph::Activation::kNone);
  EXPECT_EQ(*cache.Draw(linear, "W", linear.weights.at("W").shape),
            MaterializeWeight(linear, "W", linear.weights.at("W")).data);
  EXPECT_EQ(cache.misses(), 4);
  // A stage's random inputs: RandomTensor's values.
  EXPECT_EQ(*cache.DrawRandom({2, 3, 5}, 77), RandomTensor({2, 3, 5}, 77).data);
}

TEST(WeightsTest, CacheDropsTheOldestPastItsCapacity) {
  const graph::Node a = ConvNode("a", 16, 3, graph::Activation::kNone);
  const graph::Node b = ConvNode("b", 16, 3, graph::Activation::kNone);
  const int64_t w_bytes = 32 * 16 * 3 * 3 * static_cast<int64_t>(sizeof(float));
  WeightCache cache(w_bytes + w_bytes / 2);  // room for one W
  const auto first = cache.Draw(a, "W", a.weights.at("W").shape);
  cache.Draw(b, "W", b.weights.at("W").shape);
  EXPECT_EQ(cache.bytes(), w_bytes);
  EXPECT_EQ(*cache.Draw(a, "W", a.weights.at("W").shape), *first);  // drawn again
  EXPECT_EQ(cache.misses(), 3);
  EXPECT_EQ(cache.hits(), 0);
  // A weight larger than the whole cache is drawn and not kept.
  WeightCache tiny(16);
  EXPECT_EQ(*tiny.Draw(a, "W", a.weights.at("W").shape), *first);
  EXPECT_EQ(tiny.bytes(), 0);
}

TEST(WeightsTest, InputsAreUniformAndSeeded) {
  const graph::Graph g = graph::testing::SmallBranchyGraph(false);
  const auto a = MakeGraphInputs(g, 1);
  const auto b = MakeGraphInputs(g, 1);
  const auto c = MakeGraphInputs(g, 2);
  ASSERT_EQ(a.size(), 1u);
  EXPECT_EQ(a[0].shape, (graph::Shape{1, 8, 16, 16}));
  EXPECT_EQ(a[0].data, b[0].data);
  EXPECT_NE(a[0].data, c[0].data);
  float lo = 1, hi = -1;
  for (float v : a[0].data) {
    lo = std::min(lo, v);
    hi = std::max(hi, v);
  }
  EXPECT_GE(lo, -1.0f);
  EXPECT_LT(hi, 1.0f);
  EXPECT_LT(lo, -0.95f);
  EXPECT_GT(hi, 0.95f);
  // Fixed values pin the generator across platforms and refactors: weights
  // materialised by another build or backend must be the same.
  std::vector<float> fixed(3);
  FillUniform(42, 0.0f, 1.0f, fixed);
  EXPECT_FLOAT_EQ(fixed[0], 0.343291879f);
  EXPECT_FLOAT_EQ(fixed[1], 0.95574671f);
  EXPECT_FLOAT_EQ(fixed[2], 0.486349523f);
  EXPECT_EQ(WeightSeed("conv", "W"), 13246911639380631221ULL);
}

}  // namespace
}  // namespace iosfarm::worker
