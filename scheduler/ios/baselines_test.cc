#include "scheduler/ios/baselines.h"

#include "graph/test_graphs.h"
#include "gtest/gtest.h"
#include "scheduler/ios/analytic_oracle.h"
#include "scheduler/ios/testing/testing_util.h"

namespace iosfarm::scheduler::ios {
namespace {

TEST(BaselinesTest, SequentialRunsOneOpPerStageInTopologicalOrder) {
  const graph::Graph graph = graph::testing::SmallBranchyGraph(false);
  auto schedule = SequentialSchedule(graph);
  ASSERT_TRUE(schedule.ok());
  EXPECT_EQ(schedule->stages.size(), 10u);
  for (const ScheduledStage& stage : schedule->stages) {
    ASSERT_EQ(stage.stage.groups.size(), 1u);
    EXPECT_EQ(stage.stage.groups[0].size(), 1u);
  }
  EXPECT_TRUE(ValidateSchedule(graph, *schedule).ok());
}

TEST(BaselinesTest, GreedyRunsEveryReadyOpUpToSGroups) {
  const graph::Graph graph = graph::testing::SmallBranchyGraph(false);
  auto schedule = GreedySchedule(graph, 8);
  ASSERT_TRUE(schedule.ok());
  // conv1, bn1, relu1, {conv2, pool}, concat, identity, gap, flatten, fc.
  ASSERT_EQ(schedule->stages.size(), 9u);
  EXPECT_EQ(schedule->stages[3].stage.groups.size(), 2u);
  EXPECT_TRUE(ValidateSchedule(graph, *schedule).ok());
  auto narrow = GreedySchedule(graph, 1);
  ASSERT_TRUE(narrow.ok());
  EXPECT_EQ(narrow->stages.size(), 10u);
  EXPECT_FALSE(GreedySchedule(graph, 0).ok());
}

TEST(BaselinesTest, GreedyRespectsTheGroupLimitOnRandomGraphs) {
  for (uint64_t seed = 1; seed <= 40; ++seed) {
    const graph::Graph graph = testing::RandomDag(seed, 12);
    for (int s : {1, 2, 3}) {
      auto schedule = GreedySchedule(graph, s);
      ASSERT_TRUE(schedule.ok());
      EXPECT_TRUE(ValidateSchedule(graph, *schedule).ok());
      for (const ScheduledStage& stage : schedule->stages) {
        EXPECT_LE(static_cast<int>(stage.stage.groups.size()), s);
      }
    }
  }
}

TEST(BaselinesTest, CostScheduleMeasuresEachSignatureOnce) {
  const graph::Graph graph = graph::testing::SmallBranchyGraph(false);
  auto schedule = SequentialSchedule(graph);
  ASSERT_TRUE(schedule.ok());
  int calls = 0;
  const StageLatencyFn analytic = MakeAnalyticOracle(graph);
  auto counting = [&](const Stage& stage) {
    ++calls;
    return analytic(stage);
  };
  ASSERT_TRUE(CostSchedule(graph, *schedule, counting).ok());
  EXPECT_EQ(calls, 10);  // ten different ops
  double sum = 0;
  for (const ScheduledStage& stage : schedule->stages) {
    EXPECT_NE(stage.signature, 0u);
    EXPECT_GT(stage.latency_ms, 0);
    sum += stage.latency_ms;
  }
  EXPECT_DOUBLE_EQ(schedule->latency_ms, sum);
  // Errors and bad latencies surface.
  EXPECT_FALSE(CostSchedule(graph, *schedule, [](const Stage&) -> StatusOr<double> {
                 return absl::InternalError("boom");
               }).ok());
  EXPECT_FALSE(CostSchedule(graph, *schedule, [](const Stage&) -> StatusOr<double> {
                 return -1.0;
               }).ok());
}

}  // namespace
}  // namespace iosfarm::scheduler::ios
