// Concurrent and merge stages on every backend, compared with the reference
// executor running the same ops one by one.
#include <gtest/gtest.h>

#include <functional>
#include <string>
#include <tuple>

#include "graph/graph_builder.h"
#include "graph/test_graphs.h"
#include "scheduler/ios/stages/merge.h"
#include "scheduler/ios/testing/testing_util.h"
#include "tests/conformance/conformance_backends.h"
#include "tests/conformance/conformance_util.h"

namespace iosfarm::conformance {
namespace {

using ::iosfarm::scheduler::ios::testing::ConcurrentStage;
using ::iosfarm::scheduler::ios::testing::MergeStage;
using ::iosfarm::scheduler::ios::testing::ScheduleOf;
using graph::GraphBuilder;
using graph::NodeId;
using graph::ValueId;
using graph::testing::ConvSpecOf;
using scheduler::ios::Schedule;
using scheduler::ios::Stage;
using scheduler::ios::Strategy;

struct StageCase {
  std::string name;
  graph::Graph graph;
  Schedule schedule;
};

// x -> {conv3x3 -> conv1x1 | maxpool} -> concat.
StatusOr<StageCase> TwoGroups() {
  GraphBuilder b("two_groups");
  ValueId x = b.Input("x", {1, 16, 14, 14});
  ValueId a =
      b.Conv(b.Conv(x, ConvSpecOf(24, {3, 3}, {1, 1}), "a1"), ConvSpecOf(16, {1, 1}, {0, 0}), "a2");
  ValueId p = b.MaxPool(x, {3, 3}, {1, 1}, {1, 1, 1, 1}, "pool");
  b.Output(b.Concat({a, p}, 1, "cat"));
  ASSIGN_OR_RETURN(graph::Graph g, std::move(b).Finish());
  Schedule s = ScheduleOf({ConcurrentStage({{0, 1}, {2}}), ConcurrentStage({{3}})});
  return StageCase{"concurrent_two_groups", std::move(g), std::move(s)};
}

// x -> {conv3x3 -> conv1x1 | avgpool | conv1x1 -> relu} -> concat, batch 2.
StatusOr<StageCase> ThreeGroups() {
  GraphBuilder b("three_groups");
  ValueId x = b.Input("x", {2, 32, 10, 10});
  ValueId a =
      b.Conv(b.Conv(x, ConvSpecOf(32, {3, 3}, {1, 1}), "a1"), ConvSpecOf(16, {1, 1}, {0, 0}), "a2");
  ValueId p = b.AveragePool(x, {3, 3}, {1, 1}, {1, 1, 1, 1}, false, "pool");
  ValueId c =
      b.Relu(b.Conv(x, ConvSpecOf(24, {1, 1}, {0, 0}, graph::Activation::kNone), "c1"), "c2");
  b.Output(b.Concat({a, p, c}, 1, "cat"));
  ASSIGN_OR_RETURN(graph::Graph g, std::move(b).Finish());
  Schedule s = ScheduleOf({ConcurrentStage({{0, 1}, {2}, {3, 4}}), ConcurrentStage({{5}})});
  return StageCase{"concurrent_three_groups", std::move(g), std::move(s)};
}

// Two branches joined by an Add in the next stage, then a head.
StatusOr<StageCase> ResidualGroups() {
  GraphBuilder b("residual");
  ValueId x = b.Input("x", {1, 24, 8, 8});
  ValueId a = b.Conv(x, ConvSpecOf(24, {3, 3}, {1, 1}), "a");
  ValueId c = b.Conv(x, ConvSpecOf(24, {1, 1}, {0, 0}, graph::Activation::kNone), "c");
  ValueId sum = b.Add(a, c, "add");
  ValueId flat = b.Flatten(b.GlobalAveragePool(sum, "gap"), 1, "flat");
  b.Output(b.Linear(flat, 5, "fc"));
  ASSIGN_OR_RETURN(graph::Graph g, std::move(b).Finish());
  Schedule s = ScheduleOf({ConcurrentStage({{0}, {1}}), ConcurrentStage({{2}}), ConcurrentStage({{3}}),
                   ConcurrentStage({{4}}), ConcurrentStage({{5}})});
  return StageCase{"concurrent_then_add", std::move(g), std::move(s)};
}

// x -> conv1x1, conv3x3, conv1x3, conv3x1 (one merge) -> concat.
StatusOr<StageCase> MergedFour() {
  GraphBuilder b("merged_four");
  ValueId x = b.Input("x", {1, 24, 9, 9});
  std::vector<ValueId> outs = {
      b.Conv(x, ConvSpecOf(16, {1, 1}, {0, 0}), "m1x1"),
      b.Conv(x, ConvSpecOf(20, {3, 3}, {1, 1}, graph::Activation::kRelu, false), "m3x3"),
      b.Conv(x, ConvSpecOf(8, {1, 3}, {0, 1}), "m1x3"),
      b.Conv(x, ConvSpecOf(12, {3, 1}, {1, 0}), "m3x1")};
  b.Output(b.Concat(outs, 1, "cat"));
  ASSIGN_OR_RETURN(graph::Graph g, std::move(b).Finish());
  ASSIGN_OR_RETURN(Stage merge, MergeStage(g, {0, 1, 2, 3}));
  Schedule s = ScheduleOf({merge, ConcurrentStage({{4}})});
  return StageCase{"merged_1x1_3x3_1x3_3x1", std::move(g), std::move(s)};
}

// Strided merge whose outputs are graph outputs, clip activation, no bias.
StatusOr<StageCase> MergedStrided() {
  GraphBuilder b("merged_strided");
  ValueId x = b.Input("x", {1, 16, 15, 15});
  graph::ConvSpec one = ConvSpecOf(8, {1, 1}, {0, 0}, graph::Activation::kClip, false);
  one.stride = {2, 2};
  one.clip_min = -0.1f;
  one.clip_max = 0.2f;
  graph::ConvSpec five = one;
  five.out_channels = 4;
  five.kernel = {5, 5};
  five.padding = {2, 2};
  b.Output(b.Conv(x, one, "s1x1"));
  b.Output(b.Conv(x, five, "s5x5"));
  ASSIGN_OR_RETURN(graph::Graph g, std::move(b).Finish());
  ASSIGN_OR_RETURN(Stage merge, MergeStage(g, {0, 1}));
  Schedule s = ScheduleOf({merge});
  return StageCase{"merged_strided_clip", std::move(g), std::move(s)};
}

// A merge stage feeding a concurrent stage.
StatusOr<StageCase> MergeThenConcurrent() {
  GraphBuilder b("merge_then_concurrent");
  ValueId x = b.Input("x", {1, 32, 10, 10});
  ValueId a = b.Conv(x, ConvSpecOf(16, {1, 1}, {0, 0}), "ma");
  ValueId c = b.Conv(x, ConvSpecOf(24, {3, 3}, {1, 1}), "mc");
  ValueId a2 = b.Conv(a, ConvSpecOf(16, {3, 3}, {1, 1}), "a2");
  ValueId c2 = b.MaxPool(c, {2, 2}, {2, 2}, {0, 0, 0, 0}, "c2");
  ValueId a3 = b.MaxPool(a2, {2, 2}, {2, 2}, {0, 0, 0, 0}, "a3");
  b.Output(b.Concat({a3, c2}, 1, "cat"));
  ASSIGN_OR_RETURN(graph::Graph g, std::move(b).Finish());
  ASSIGN_OR_RETURN(Stage merge, MergeStage(g, {0, 1}));
  Schedule s = ScheduleOf({merge, ConcurrentStage({{2, 4}, {3}}), ConcurrentStage({{5}})});
  return StageCase{"merge_then_concurrent", std::move(g), std::move(s)};
}

// All nodes of `graph` in one group of one stage, in id (topological) order.
Schedule OneGroupSchedule(const graph::Graph& graph) {
  std::vector<NodeId> all;
  for (NodeId id = 0; id < graph.num_nodes(); ++id) all.push_back(id);
  return ScheduleOf({ConcurrentStage({all})});
}

// Three residual blocks in one group: the backends fuse Conv + Add (+ Relu)
// (worker/backends/residual_fusion.h), batch 2.
StatusOr<StageCase> FusedResidualBlocks() {
  graph::Graph g = graph::testing::ResidualBlocksGraph(2);
  Schedule s = OneGroupSchedule(g);
  return StageCase{"fused_residual_blocks", std::move(g), std::move(s)};
}

// Conv -> Add patterns that must not fuse, in one group.
StatusOr<StageCase> UnfusableResiduals() {
  graph::Graph g = graph::testing::NonFusableResidualGraph();
  Schedule s = OneGroupSchedule(g);
  return StageCase{"unfusable_residuals", std::move(g), std::move(s)};
}

const std::vector<std::function<StatusOr<StageCase>()>>& StageCases() {
  static const auto* const kCases = new std::vector<std::function<StatusOr<StageCase>()>>{
      TwoGroups,     ThreeGroups,          ResidualGroups,      MergedFour,
      MergedStrided, MergeThenConcurrent, FusedResidualBlocks, UnfusableResiduals};
  return *kCases;
}

const char* const kCaseNames[] = {"concurrent_two_groups", "concurrent_three_groups",
                                  "concurrent_then_add",   "merged_1x1_3x3_1x3_3x1",
                                  "merged_strided_clip",   "merge_then_concurrent",
                                  "fused_residual_blocks", "unfusable_residuals"};

class StageConformanceTest : public ::testing::TestWithParam<std::tuple<std::string, size_t>> {
 protected:
  const std::string& backend_name() const { return std::get<0>(GetParam()); }
  StatusOr<StageCase> MakeCase() const { return StageCases()[std::get<1>(GetParam())](); }
};

TEST_P(StageConformanceTest, ScheduleMatchesReference) {
  IOSFARM_BACKEND_OR_SKIP(backend, backend_name(), /*needs_values=*/true);
  auto c = MakeCase();
  ASSERT_TRUE(c.ok()) << c.status();
  Status valid = scheduler::ios::ValidateSchedule(c->graph, c->schedule);
  ASSERT_TRUE(valid.ok()) << valid;
  for (uint64_t seed : {1, 2}) {
    Status status = RunAndCompare(*backend, c->graph, c->schedule, c->name, seed);
    EXPECT_TRUE(status.ok()) << status;
  }
}

TEST_P(StageConformanceTest, BuildsAndProfilesTheStages) {
  IOSFARM_BACKEND_OR_SKIP(backend, backend_name(), /*needs_values=*/false);
  auto c = MakeCase();
  ASSERT_TRUE(c.ok()) << c.status();
  std::vector<Stage> stages;
  for (const auto& s : c->schedule.stages) stages.push_back(s.stage);
  auto plans = backend->Build(c->graph, stages);
  ASSERT_TRUE(plans.ok()) << plans.status();
  std::vector<const worker::StagePlan*> views;
  for (const auto& plan : *plans) views.push_back(plan.get());
  auto stats = backend->Profile(views, QuickProfile());
  ASSERT_TRUE(stats.ok()) << stats.status();
  ASSERT_EQ(stats->size(), stages.size());
  for (const auto& s : *stats) EXPECT_GT(s.median_ms, 0);
}

TEST(StageCaseNamesTest, MatchTheCases) {
  ASSERT_EQ(std::size(kCaseNames), StageCases().size());
  for (size_t i = 0; i < StageCases().size(); ++i) {
    auto c = StageCases()[i]();
    ASSERT_TRUE(c.ok()) << c.status();
    EXPECT_EQ(c->name, kCaseNames[i]);
  }
}

INSTANTIATE_TEST_SUITE_P(
    Stages, StageConformanceTest,
    BackendsTimesCaseIndices(StageCases().size()),
    [](const ::testing::TestParamInfo<StageConformanceTest::ParamType>& info) {
      return std::get<0>(info.param) + "_" + kCaseNames[std::get<1>(info.param)];
    });

}  // namespace
}  // namespace iosfarm::conformance
