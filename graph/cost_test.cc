#include "graph/cost.h"

#include <gtest/gtest.h>

#include "graph/graph_builder.h"

namespace iosfarm::graph {
namespace {

TEST(CostTest, ConvMacsCountGroupsAndKernel) {
  GraphBuilder b("g");
  ValueId x = b.Input("x", {2, 32, 10, 10});
  ConvSpec spec;
  spec.out_channels = 64;
  spec.kernel = {3, 3};
  spec.padding = {1, 1};
  spec.groups = 4;
  spec.activation = Activation::kRelu;
  ValueId y = b.Conv(x, spec, "conv");
  b.Output(y);
  Graph g = *std::move(b).Finish();
  OpCost cost = ComputeOpCost(g, g.node(0));
  const int64_t outputs = 2 * 64 * 10 * 10;
  EXPECT_EQ(cost.macs, outputs * (32 / 4) * 9);
  EXPECT_EQ(cost.flops, 2 * cost.macs + outputs /*bias*/ + outputs /*relu*/);
  EXPECT_EQ(cost.params, 64 * 8 * 9 + 64);
  EXPECT_EQ(cost.bytes_written, 4 * outputs);
  EXPECT_EQ(cost.bytes_read, 4 * (2 * 32 * 10 * 10 + cost.params));
}

TEST(CostTest, GemmPoolAndElementwise) {
  GraphBuilder b("g");
  ValueId x = b.Input("x", {4, 8, 6, 6});
  ValueId p = b.MaxPool(x, {2, 2}, {2, 2}, {0, 0, 0, 0}, "pool");
  ValueId s = b.Add(p, p, "add");
  ValueId f = b.Flatten(s, 1, "flat");
  ValueId fc = b.Linear(f, 5, "fc");
  b.Output(fc);
  Graph g = *std::move(b).Finish();
  EXPECT_EQ(ComputeOpCost(g, g.node(0)).flops, 4 * 8 * 3 * 3 * 4);
  EXPECT_EQ(ComputeOpCost(g, g.node(1)).flops, 4 * 8 * 3 * 3);
  EXPECT_EQ(ComputeOpCost(g, g.node(2)).flops, 0);
  OpCost fc_cost = ComputeOpCost(g, g.node(3));
  EXPECT_EQ(fc_cost.macs, 4 * 5 * 72);
  EXPECT_EQ(fc_cost.params, 5 * 72 + 5);
  OpCost total = ComputeGraphCost(g);
  EXPECT_EQ(total.macs, fc_cost.macs);
  EXPECT_EQ(total.params, fc_cost.params);
}

}  // namespace
}  // namespace iosfarm::graph
