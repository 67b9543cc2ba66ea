#include "worker/backends/merged_conv_weights.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "graph/graph_builder.h"
#include "scheduler/ios/stages/merge.h"

namespace iosfarm::worker {
namespace {

using ::testing::HasSubstr;

// x [1,2,5,5] -> conv1x3 "a" (1 out, bias) and conv3x3 "b" (2 out, no bias),
// weights 1, 2, 3, ... per conv.
graph::Graph TwoConvs() {
  graph::GraphBuilder b("two");
  graph::ValueId x = b.Input("x", {1, 2, 5, 5});
  graph::ConvSpec a;
  a.out_channels = 1;
  a.kernel = {1, 3};
  a.padding = {0, 1};
  b.Output(b.Conv(x, a, "a"));
  graph::ConvSpec c;
  c.out_channels = 2;
  c.kernel = {3, 3};
  c.padding = {1, 1};
  c.bias = false;
  b.Output(b.Conv(x, c, "b"));
  graph::Graph g = *std::move(b).Finish();
  for (graph::NodeId n = 0; n < 2; ++n) {
    for (auto& [role, t] : g.mutable_node(n).weights) {
      t.data.resize(static_cast<size_t>(t.num_elements()));
      for (size_t i = 0; i < t.data.size(); ++i) t.data[i] = static_cast<float>(i + 1);
    }
  }
  return g;
}

TEST(MergedConvWeightsTest, CentresSmallKernelsAndStacksChannels) {
  const graph::Graph g = TwoConvs();
  auto merged = scheduler::ios::MergeConvs(g, {0, 1});
  ASSERT_TRUE(merged.ok()) << merged.status();
  auto w = AssembleMergedConvWeights(g, *merged);
  ASSERT_TRUE(w.ok()) << w.status();
  EXPECT_EQ(w->weight.shape, (graph::Shape{3, 2, 3, 3}));
  // Branch a (channel 0): its 1x3 kernel sits in the middle row.
  const auto at = [&](int o, int c, int i, int j) {
    return w->weight.data[static_cast<size_t>(((o * 2 + c) * 3 + i) * 3 + j)];
  };
  EXPECT_EQ(at(0, 0, 0, 0), 0);
  EXPECT_EQ(at(0, 0, 1, 0), 1);
  EXPECT_EQ(at(0, 0, 1, 2), 3);
  EXPECT_EQ(at(0, 1, 1, 1), 5);
  EXPECT_EQ(at(0, 1, 2, 2), 0);
  // Branch b (channels 1, 2): copied as is.
  EXPECT_EQ(at(1, 0, 0, 0), 1);
  EXPECT_EQ(at(2, 1, 2, 2), 36);
  // Bias: a's own, zero for b.
  EXPECT_EQ(w->bias.shape, (graph::Shape{3}));
  EXPECT_EQ(w->bias.data, (std::vector<float>{1, 0, 0}));
}

TEST(MergedConvWeightsTest, RejectsADescriptionThatDoesNotFit) {
  const graph::Graph g = TwoConvs();
  auto merged = scheduler::ios::MergeConvs(g, {0, 1});
  ASSERT_TRUE(merged.ok());
  scheduler::ios::MergedConv bad = *merged;
  bad.branches[0].kernel_offset = {0, 1};
  auto w = AssembleMergedConvWeights(g, bad);
  EXPECT_EQ(w.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(w.status().message(), HasSubstr("branch 'a' kernel 1x3 at offset (0,1)"));
  bad = *merged;
  bad.branches[1].channel_end = 4;
  EXPECT_THAT(AssembleMergedConvWeights(g, bad).status().message(), HasSubstr("'b' weight"));
}

}  // namespace
}  // namespace iosfarm::worker
