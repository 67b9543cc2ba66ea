// Helpers shared by the worker daemon's tests (header-only, tests only):
// wire assignments made from graphs and stages as the server would make them.
#ifndef IOSFARM_WORKER_WORKER_TESTING_H_
#define IOSFARM_WORKER_WORKER_TESTING_H_

#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "graph/graph.h"
#include "graph/serialize.h"
#include "iosfarm/v1/farm.pb.h"
#include "scheduler/ios/analytic_oracle.h"
#include "scheduler/ios/baselines.h"
#include "scheduler/ios/schedule_json.h"
#include "scheduler/ios/signature.h"
#include "scheduler/ios/stage.h"

namespace iosfarm::worker::testing {

inline v1::StageSpec SpecOf(const graph::Graph& graph, const scheduler::ios::Stage& stage) {
  v1::StageSpec spec;
  spec.set_strategy(std::string(scheduler::ios::StrategyName(stage.strategy)));
  for (const auto& group : stage.groups) {
    v1::StageGroup* out = spec.add_groups();
    for (graph::NodeId op : group) out->add_ops(op);
  }
  auto signature = scheduler::ios::StageSignature(graph, stage);
  EXPECT_TRUE(signature.ok()) << signature.status();
  spec.set_signature(signature.ok() ? *signature : 0);
  return spec;
}

inline v1::PhaseAssignment BuildAssignment(int64_t phase_id, int64_t job_id,
                                           const std::string& batch_id,
                                           const graph::Graph& graph,
                                           const std::vector<scheduler::ios::Stage>& stages) {
  v1::PhaseAssignment assignment;
  assignment.set_phase_id(phase_id);
  assignment.set_job_id(job_id);
  assignment.set_batch_id(batch_id);
  v1::BuildAssignment* build = assignment.mutable_build();
  build->set_graph(graph::SerializeGraph(graph));
  for (const auto& stage : stages) *build->add_stages() = SpecOf(graph, stage);
  return assignment;
}

// Quick profiling: 1 warm-up, 3 timed runs.
inline v1::ProfileOptions QuickProfile() {
  v1::ProfileOptions options;
  options.set_warmup(1);
  options.set_min_repeats(3);
  options.set_max_repeats(3);
  return options;
}

inline v1::PhaseAssignment ProfileAssignment(int64_t phase_id, int64_t job_id,
                                             const std::string& batch_id) {
  v1::PhaseAssignment assignment;
  assignment.set_phase_id(phase_id);
  assignment.set_job_id(job_id);
  assignment.set_batch_id(batch_id);
  *assignment.mutable_profile()->mutable_options() = QuickProfile();
  return assignment;
}

// The stages of the greedy baseline of `graph` (at most `max_groups` wide).
inline std::vector<scheduler::ios::Stage> GreedyStages(const graph::Graph& graph,
                                                       int max_groups = 8) {
  std::vector<scheduler::ios::Stage> stages;
  auto schedule = scheduler::ios::GreedySchedule(graph, max_groups);
  EXPECT_TRUE(schedule.ok()) << schedule.status();
  if (schedule.ok()) {
    for (auto& scheduled : schedule->stages) stages.push_back(std::move(scheduled.stage));
  }
  return stages;
}

// A baseline schedule ("sequential" or "greedy") of `graph` as schedule JSON,
// costed with the analytic oracle.
inline std::string BaselineJson(const graph::Graph& graph, const std::string& kind) {
  auto schedule = kind == "sequential" ? scheduler::ios::SequentialSchedule(graph)
                                       : scheduler::ios::GreedySchedule(graph, 8);
  EXPECT_TRUE(schedule.ok()) << schedule.status();
  if (!schedule.ok()) return "";
  Status costed =
      scheduler::ios::CostSchedule(graph, *schedule, scheduler::ios::MakeAnalyticOracle(graph));
  EXPECT_TRUE(costed.ok()) << costed;
  return scheduler::ios::ScheduleToJson(
             graph, *schedule, scheduler::ios::MakeScheduleMetadata(graph, "sim", kind, nullptr))
      .dump();
}

}  // namespace iosfarm::worker::testing

#endif  // IOSFARM_WORKER_WORKER_TESTING_H_
