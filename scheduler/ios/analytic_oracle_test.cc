#include "scheduler/ios/analytic_oracle.h"

#include "graph/graph_builder.h"
#include "graph/test_graphs.h"
#include "gtest/gtest.h"
#include "scheduler/ios/stages/merge.h"

namespace iosfarm::scheduler::ios {
namespace {

graph::NodeId Node(const graph::Graph& graph, const std::string& name) {
  return graph::testing::NodeNamed(graph, name);
}

// Two small 3x3 convs on one 8x8 tensor (latency-bound) and one big conv.
graph::Graph TwoConvs() {
  graph::GraphBuilder b("two");
  auto x = b.Input("x", {1, 64, 8, 8});
  graph::ConvSpec spec;
  spec.out_channels = 64;
  spec.kernel = {3, 3};
  spec.padding = {1, 1};
  b.Output(b.Conv(x, spec, "a"));
  b.Output(b.Conv(x, spec, "b"));
  auto big = b.Input("big", {1, 256, 56, 56});
  spec.out_channels = 256;
  b.Output(b.Conv(big, spec, "c"));
  return *std::move(b).Finish();
}

TEST(AnalyticOracleTest, ConcurrencyHelpsSmallOpsAndMergeIsCosted) {
  const graph::Graph graph = TwoConvs();
  const graph::NodeId a = Node(graph, "a"), b = Node(graph, "b");
  Stage alone{Strategy::kConcurrent, {{a}}, std::nullopt};
  Stage both{Strategy::kConcurrent, {{a}, {b}}, std::nullopt};
  Stage chained{Strategy::kConcurrent, {{a, b}}, std::nullopt};
  auto t_alone = AnalyticStageLatency(graph, alone);
  auto t_both = AnalyticStageLatency(graph, both);
  auto t_chained = AnalyticStageLatency(graph, chained);
  ASSERT_TRUE(t_alone.ok() && t_both.ok() && t_chained.ok());
  EXPECT_GT(*t_alone, 0);
  EXPECT_LT(*t_both, 2 * *t_alone);  // two streams beat two stages
  EXPECT_LT(*t_both, *t_chained);    // and one stream
  Stage merged{Strategy::kMerge, {{a}, {b}}, std::nullopt};
  merged.merged = *MergeConvs(graph, {a, b});
  auto t_merged = AnalyticStageLatency(graph, merged);
  ASSERT_TRUE(t_merged.ok());
  EXPECT_GT(*t_merged, 0);
  EXPECT_LT(*t_merged, 2 * *t_alone);
  // The precomputed oracle agrees with the direct function.
  const StageLatencyFn oracle = MakeAnalyticOracle(graph);
  EXPECT_DOUBLE_EQ(*oracle(both), *t_both);
  EXPECT_DOUBLE_EQ(*oracle(merged), *t_merged);
}

TEST(AnalyticOracleTest, BigOpsSaturateTheDevice) {
  const graph::Graph graph = TwoConvs();
  const graph::NodeId c = Node(graph, "c");
  Stage big{Strategy::kConcurrent, {{c}}, std::nullopt};
  auto t = AnalyticStageLatency(graph, big);
  ASSERT_TRUE(t.ok());
  // 256x9 MACs per output, 256x56x56 outputs: ~3.7 GFLOP at 14 TFLOP/s.
  EXPECT_NEAR(*t, 3.7e9 / 14e12 * 1e3, 0.02);
}

TEST(AnalyticOracleTest, RejectsMalformedStages) {
  const graph::Graph graph = TwoConvs();
  EXPECT_FALSE(AnalyticStageLatency(graph, Stage{}).ok());
  Stage bad{Strategy::kConcurrent, {{12345}}, std::nullopt};
  EXPECT_FALSE(AnalyticStageLatency(graph, bad).ok());
  Stage merge_without{Strategy::kMerge, {{Node(graph, "a")}, {Node(graph, "b")}}, std::nullopt};
  EXPECT_FALSE(AnalyticStageLatency(graph, merge_without).ok());
  Stage single_core{Strategy::kConcurrent, {{Node(graph, "a")}}, std::nullopt, true};
  ASSERT_TRUE(AnalyticStageLatency(graph, Stage{Strategy::kConcurrent, {{Node(graph, "a")}}}).ok());
  const Status refused = AnalyticStageLatency(graph, single_core).status();
  EXPECT_EQ(refused.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(std::string(refused.message()).find("single-core"), std::string::npos);
  EXPECT_FALSE(MakeAnalyticOracle(graph)(single_core).ok());
}

}  // namespace
}  // namespace iosfarm::scheduler::ios
