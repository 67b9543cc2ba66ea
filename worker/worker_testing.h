// Helpers shared by the worker's tests (header-only, tests only): phase
// orders made from graphs and stages as the server would ask for them, in
// the worker's domain types (phase_order.h). wire_testing.h has their wire
// forms.
#ifndef IOSFARM_WORKER_WORKER_TESTING_H_
#define IOSFARM_WORKER_WORKER_TESTING_H_

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "graph/graph.h"
#include "gtest/gtest.h"
#include "scheduler/ios/analytic_oracle.h"
#include "scheduler/ios/baselines.h"
#include "scheduler/ios/schedule_json.h"
#include "scheduler/ios/stages/signature.h"
#include "scheduler/ios/stages/stage.h"
#include "worker/backends/sim/sim_backend.h"
#include "worker/phase_executor.h"
#include "worker/phase_order.h"

namespace iosfarm::worker::testing {

// A PhaseExecutor on a sim backend with default options, fresh per test.
class SimExecutorTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto backend = sim::SimBackend::Create({});
    ASSERT_TRUE(backend.ok()) << backend.status();
    backend_ = *std::move(backend);
    executor_ = std::make_unique<PhaseExecutor>(*backend_);
  }

  std::unique_ptr<sim::SimBackend> backend_;
  std::unique_ptr<PhaseExecutor> executor_;
};

// A build of `stages` of `graph`, each canonicalised with its signature, as
// the worker's wire decoding hands it to the executor.
inline PhaseOrder BuildPhase(int64_t phase_id, int64_t job_id, const std::string& batch_id,
                             const graph::Graph& graph,
                             const std::vector<scheduler::ios::Stage>& stages) {
  BuildOrder build;
  build.graph = std::make_shared<const graph::Graph>(graph);
  for (scheduler::ios::Stage stage : stages) {
    auto signature = scheduler::ios::CanonicalizeStage(graph, stage);
    EXPECT_TRUE(signature.ok()) << signature.status();
    build.signatures.push_back(signature.ok() ? *signature : 0);
    build.stages.push_back(std::move(stage));
  }
  return PhaseOrder{phase_id, job_id, batch_id, std::move(build)};
}

// Quick profiling: 1 warm-up, 3 timed runs.
inline ProfileOptions QuickProfile() {
  ProfileOptions options;
  options.warmup = 1;
  options.min_repeats = 3;
  options.max_repeats = 3;
  return options;
}

inline PhaseOrder ProfilePhase(int64_t phase_id, int64_t job_id, const std::string& batch_id) {
  return PhaseOrder{phase_id, job_id, batch_id, ProfileOrder{QuickProfile()}};
}

// A measure of `schedules` of `graph`, profiled quickly.
inline PhaseOrder MeasurePhase(int64_t phase_id, const graph::Graph& graph,
                               std::vector<NamedSchedule> schedules) {
  MeasureOrder measure;
  measure.graph = std::make_shared<const graph::Graph>(graph);
  measure.schedules = std::move(schedules);
  measure.options = QuickProfile();
  return PhaseOrder{phase_id, 0, "", std::move(measure)};
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
