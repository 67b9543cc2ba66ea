// Test-only checks of a block's solution, shared by the exhaustive DP's and
// the bounded search's tests (gtest expectations).
#ifndef IOSFARM_SCHEDULER_IOS_TESTING_BLOCK_SOLUTION_CHECKS_H_
#define IOSFARM_SCHEDULER_IOS_TESTING_BLOCK_SOLUTION_CHECKS_H_

#include "gtest/gtest.h"
#include "scheduler/ios/block_dp.h"
#include "scheduler/ios/latency_oracle.h"
#include "scheduler/ios/schedule.h"

namespace iosfarm::scheduler::ios::testing {

inline Schedule ToSchedule(const BlockSolution& solution) {
  Schedule schedule;
  for (const PlannedStage& planned : solution.stages) {
    schedule.stages.push_back({planned.stage, 0, planned.signature, planned.latency_ms});
  }
  return schedule;
}

// A valid schedule of `graph` within the options' bounds (concurrent stages
// only without merge), each stage's latency the oracle's, summing to the
// solution's. Returns the number of merge stages.
inline int ExpectWellFormed(const graph::Graph& graph, const BlockSolution& solution,
                            const DpOptions& options, const StageLatencyFn& oracle) {
  const Schedule schedule = ToSchedule(solution);
  EXPECT_TRUE(ValidateSchedule(graph, schedule).ok()) << ValidateSchedule(graph, schedule);
  double sum = 0;
  int merges = 0;
  for (const PlannedStage& planned : solution.stages) {
    sum += planned.latency_ms;
    EXPECT_LE(static_cast<int>(planned.stage.groups.size()), options.bounds.max_groups);
    for (const auto& group : planned.stage.groups) {
      EXPECT_LE(static_cast<int>(group.size()), options.bounds.max_group_ops);
    }
    if (!options.enable_merge) {
      EXPECT_EQ(planned.stage.strategy, Strategy::kConcurrent);
    }
    merges += planned.stage.strategy == Strategy::kMerge ? 1 : 0;
    EXPECT_NEAR(*oracle(planned.stage), planned.latency_ms, 1e-12);
  }
  EXPECT_NEAR(sum, solution.latency_ms, 1e-9);
  return merges;
}

}  // namespace iosfarm::scheduler::ios::testing

#endif  // IOSFARM_SCHEDULER_IOS_TESTING_BLOCK_SOLUTION_CHECKS_H_
