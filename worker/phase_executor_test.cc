#include "worker/phase_executor.h"

#include <thread>
#include <variant>

#include "common/strings.h"
#include "gmock/gmock.h"
#include "graph/models/zoo.h"
#include "graph/test_graphs.h"
#include "gtest/gtest.h"
#include "scheduler/ios/testing/testing_util.h"
#include "worker/backends/sim/sim_backend.h"
#include "worker/backends/sim/sim_test_graphs.h"
#include "worker/worker_testing.h"

namespace iosfarm::worker {
namespace {

using ::testing::HasSubstr;
using scheduler::ios::Stage;
using testing::BaselineJson;
using testing::BuildPhase;
using testing::GreedyStages;
using testing::MeasurePhase;
using testing::ProfilePhase;

class PhaseExecutorTest : public testing::SimExecutorTest {};

TEST_F(PhaseExecutorTest, BuildThenProfileGivesOneLatencyPerStageWithItsSignature) {
  for (const char* model : {"squeezenet", "inception_v3"}) {
    SCOPED_TRACE(model);
    graph::Graph graph = *graph::models::BuildZooModel(model, 1);
    std::vector<Stage> stages = GreedyStages(graph);
    ASSERT_GT(stages.size(), 3u);
    PhaseOrder build = BuildPhase(1, 7, StrCat(model, "-b1"), graph, stages);
    PhaseReport built = executor_->Execute(build);
    ASSERT_TRUE(built.ok) << built.error;
    EXPECT_EQ(built.phase_id, 1);
    EXPECT_EQ(built.plans_built, static_cast<int>(stages.size()));

    PhaseReport profiled = executor_->Execute(ProfilePhase(2, 7, StrCat(model, "-b1")));
    ASSERT_TRUE(profiled.ok) << profiled.error;
    EXPECT_EQ(profiled.phase_id, 2);
    const std::vector<scheduler::ios::Signature>& signatures =
        std::get<BuildOrder>(build.work).signatures;
    ASSERT_EQ(profiled.stages.size(), signatures.size());
    for (size_t i = 0; i < profiled.stages.size(); ++i) {
      const MeasuredStage& measured = profiled.stages[i];
      const LatencyStats& latency = measured.latency;
      EXPECT_EQ(measured.signature, signatures[i]) << "stage " << i;
      EXPECT_EQ(measured.signature, *scheduler::ios::StageSignature(graph, stages[i]))
          << "stage " << i;
      EXPECT_GT(latency.median_ms, 0) << "stage " << i;
      EXPECT_LE(latency.p10_ms, latency.median_ms);
      EXPECT_GE(latency.p90_ms, latency.median_ms);
      EXPECT_EQ(latency.repeats, 3);
      // The sim backend's model of the stage as the worker built it
      // (canonical order, which the signature assumes).
      Stage canonical = stages[i];
      ASSERT_TRUE(scheduler::ios::CanonicalizeStage(graph, canonical).ok());
      EXPECT_NEAR(latency.median_ms, *backend_->StageLatencyMs(graph, canonical), 1e-9);
    }
    EXPECT_TRUE(profiled.error.empty());
  }
}

TEST_F(PhaseExecutorTest, BuildsMergeAndConcurrentStages) {
  sim::testing::TwoConvs two = sim::testing::MakeTwoConvs(16, 14, 3);
  auto merge = scheduler::ios::testing::MergeStage(two.graph, {two.a, two.b});
  ASSERT_TRUE(merge.ok()) << merge.status();
  std::vector<Stage> stages = {*merge,
                               scheduler::ios::testing::ConcurrentStage({{two.b}, {two.a}})};
  PhaseOrder build = BuildPhase(1, 1, "b", two.graph, stages);
  ASSERT_EQ(std::get<BuildOrder>(build.work).stages[0].strategy,
            scheduler::ios::Strategy::kMerge);
  PhaseReport built = executor_->Execute(build);
  ASSERT_TRUE(built.ok) << built.error;
  EXPECT_EQ(built.plans_built, 2);
  PhaseReport profiled = executor_->Execute(ProfilePhase(2, 1, "b"));
  ASSERT_TRUE(profiled.ok) << profiled.error;
  ASSERT_EQ(profiled.stages.size(), 2u);
  EXPECT_NE(profiled.stages[0].signature, profiled.stages[1].signature);
}

TEST_F(PhaseExecutorTest, MalformedBuildOrdersFailNamingWhat) {
  graph::Graph graph = graph::testing::SmallBranchyGraph(false);
  const std::vector<Stage> stages = GreedyStages(graph);
  PhaseOrder build = BuildPhase(3, 1, "b", graph, stages);
  build.batch_id.clear();
  PhaseReport report = executor_->Execute(build);
  EXPECT_FALSE(report.ok);
  EXPECT_EQ(report.phase_id, 3);
  EXPECT_EQ(report.error, "build: INVALID_ARGUMENT: no batch_id");

  build = BuildPhase(3, 1, "b", graph, stages);
  std::get<BuildOrder>(build.work).graph.reset();
  EXPECT_THAT(executor_->Execute(build).error, HasSubstr("build: INVALID_ARGUMENT: "));
  EXPECT_THAT(executor_->Execute(build).error, HasSubstr("no graph"));

  build = BuildPhase(3, 1, "b", graph, stages);
  std::get<BuildOrder>(build.work).signatures.pop_back();
  EXPECT_THAT(executor_->Execute(build).error,
              HasSubstr(StrCat("the order has ", stages.size(), " stages but ",
                               stages.size() - 1, " signatures")));

  PhaseOrder measure = MeasurePhase(4, graph, {});
  std::get<MeasureOrder>(measure.work).graph.reset();
  EXPECT_THAT(executor_->Execute(measure).error, HasSubstr("measure: INVALID_ARGUMENT: "));
  EXPECT_EQ(executor_->num_batches(), 0);
}

TEST_F(PhaseExecutorTest, ProfileOfAnUnknownBatchFails) {
  PhaseReport result = executor_->Execute(ProfilePhase(9, 1, "never-built"));
  EXPECT_FALSE(result.ok);
  EXPECT_EQ(result.phase_id, 9);
  EXPECT_THAT(result.error, HasSubstr("profile: NOT_FOUND: unknown batch 'never-built'"));
  EXPECT_EQ(result.stages.size(), 0u);
}

TEST_F(PhaseExecutorTest, MeasuresSequentialAndGreedySchedules) {
  graph::Graph graph = *graph::models::BuildZooModel("squeezenet", 1);
  std::vector<NamedSchedule> schedules;
  for (const char* kind : {"sequential", "greedy"}) {
    schedules.push_back(NamedSchedule{kind, BaselineJson(graph, kind)});
  }
  PhaseReport result = executor_->Execute(MeasurePhase(5, graph, std::move(schedules)));
  ASSERT_TRUE(result.ok) << result.error;
  EXPECT_EQ(result.phase_id, 5);
  ASSERT_EQ(result.schedules.size(), 2u);
  EXPECT_EQ(result.schedules[0].name, "sequential");
  EXPECT_EQ(result.schedules[1].name, "greedy");
  for (const MeasuredSchedule& measured : result.schedules) {
    EXPECT_GT(measured.latency.median_ms, 0) << measured.name;
    EXPECT_EQ(measured.latency.repeats, 3) << measured.name;
  }
  EXPECT_EQ(result.stages.size(), 0u);
}

// A backend that runs schedules on a sim backend and notes how it was asked
// to run them; it times stages as CUDA graphs when told to say so.
class RunRecordingBackend : public Backend {
 public:
  explicit RunRecordingBackend(bool graph_timed)
      : sim_(*sim::SimBackend::Create({})), graph_timed_(graph_timed) {}
  std::string name() const override { return "recording"; }
  std::string device_description() const override { return "sim, runs recorded"; }
  Status CheckSupported(const graph::Graph& graph) const override {
    return sim_->CheckSupported(graph);
  }
  bool times_stages_as_graphs() const override { return graph_timed_; }
  std::vector<bool> cuda_graph_runs;

 protected:
  StatusOr<std::vector<std::unique_ptr<StagePlan>>> DoBuild(
      const graph::Graph&, const std::vector<scheduler::ios::Stage>&) override {
    return absl::UnimplementedError("runs only");
  }
  StatusOr<std::vector<LatencyStats>> DoProfile(const std::vector<const StagePlan*>&,
                                                const ProfileOptions&) override {
    return absl::UnimplementedError("runs only");
  }
  StatusOr<RunResult> DoRunSchedule(const graph::Graph& graph,
                                    const scheduler::ios::Schedule& schedule,
                                    const RunOptions& options) override {
    cuda_graph_runs.push_back(options.cuda_graph);
    RunOptions plain = options;
    plain.cuda_graph = false;  // sim takes no CUDA graphs
    return sim_->RunSchedule(graph, schedule, plain);
  }

 private:
  std::unique_ptr<sim::SimBackend> sim_;
  bool graph_timed_;
};

// Schedules searched with graph-timed stages are measured as one graph, the
// way their stages were timed; others eagerly.
TEST(PhaseExecutorMeasureTest, RunsSchedulesAsGraphsWhereStagesWereTimedAsGraphs) {
  graph::Graph graph = *graph::models::BuildZooModel("squeezenet", 1);
  for (bool graph_timed : {false, true}) {
    SCOPED_TRACE(graph_timed ? "graph-timed stages" : "eager stages");
    RunRecordingBackend backend(graph_timed);
    PhaseExecutor executor(backend);
    PhaseReport result = executor.Execute(
        MeasurePhase(5, graph,
                     {NamedSchedule{"sequential", BaselineJson(graph, "sequential")},
                      NamedSchedule{"greedy", BaselineJson(graph, "greedy")}}));
    ASSERT_TRUE(result.ok) << result.error;
    EXPECT_EQ(result.schedules.size(), 2u);
    EXPECT_EQ(backend.cuda_graph_runs, std::vector<bool>(2, graph_timed));
  }
}

TEST_F(PhaseExecutorTest, MeasureOfABadScheduleNamesIt) {
  graph::Graph graph = *graph::models::BuildZooModel("squeezenet", 1);
  graph::Graph other = graph::testing::SmallBranchyGraph(false);
  PhaseOrder measure =
      MeasurePhase(6, graph,
                   {NamedSchedule{"sequential", BaselineJson(graph, "sequential")},
                    // made for another graph
                    NamedSchedule{"ios", BaselineJson(other, "greedy")}});
  PhaseReport result = executor_->Execute(measure);
  EXPECT_FALSE(result.ok);
  EXPECT_THAT(result.error, HasSubstr("schedule 'ios': "));
  EXPECT_EQ(result.schedules.size(), 0u);

  std::get<MeasureOrder>(measure.work).schedules[1].schedule_json = "{not json";
  result = executor_->Execute(measure);
  EXPECT_FALSE(result.ok);
  EXPECT_THAT(result.error, HasSubstr("schedule 'ios': "));
}

TEST_F(PhaseExecutorTest, ANewBatchDropsTheJobsProfiledOnesAndKeepsItsBatchesOut) {
  graph::Graph graph = graph::testing::SmallBranchyGraph(false);
  const auto stages = GreedyStages(graph);
  ASSERT_TRUE(executor_->Execute(BuildPhase(1, 1, "job1-a", graph, stages)).ok);
  ASSERT_TRUE(executor_->Execute(BuildPhase(2, 2, "job2-a", graph, stages)).ok);
  ASSERT_TRUE(executor_->Execute(ProfilePhase(3, 1, "job1-a")).ok);
  ASSERT_TRUE(executor_->Execute(BuildPhase(4, 1, "job1-b", graph, stages)).ok);
  EXPECT_FALSE(executor_->HasBatch("job1-a"));  // profiled: done with
  EXPECT_TRUE(executor_->HasBatch("job1-b"));
  EXPECT_TRUE(executor_->HasBatch("job2-a"));
  // Two batches of one job out at once on this worker: both are profiled.
  ASSERT_TRUE(executor_->Execute(BuildPhase(5, 1, "job1-c", graph, stages)).ok);
  EXPECT_EQ(executor_->num_batches(), 3);
  EXPECT_TRUE(executor_->Execute(ProfilePhase(6, 1, "job1-b")).ok);
  EXPECT_TRUE(executor_->Execute(ProfilePhase(7, 1, "job1-c")).ok);
  EXPECT_FALSE(executor_->Execute(ProfilePhase(8, 1, "job1-a")).ok);
  // A rebuild replaces the batch of the same id.
  ASSERT_TRUE(executor_->Execute(BuildPhase(9, 2, "job2-a", graph, stages)).ok);
  EXPECT_TRUE(executor_->Execute(ProfilePhase(10, 2, "job2-a")).ok);
}

TEST_F(PhaseExecutorTest, KeepsAtMostMaxBatches) {
  graph::Graph graph = graph::testing::SmallBranchyGraph(false);
  const auto stages = GreedyStages(graph);
  for (int job = 1; job <= PhaseExecutor::kMaxBatches + 3; ++job) {
    ASSERT_TRUE(executor_->Execute(BuildPhase(job, job, StrCat("b", job), graph, stages)).ok);
  }
  EXPECT_EQ(executor_->num_batches(), PhaseExecutor::kMaxBatches);
  EXPECT_FALSE(executor_->HasBatch("b1"));
  EXPECT_TRUE(executor_->HasBatch(StrCat("b", PhaseExecutor::kMaxBatches + 3)));
}

TEST_F(PhaseExecutorTest, ProfiledBatchesAreEvictedBeforeUnprofiledOnes) {
  graph::Graph graph = graph::testing::SmallBranchyGraph(false);
  const auto stages = GreedyStages(graph);
  // b1 (oldest) waits for its profile; b2 has been profiled.
  ASSERT_TRUE(executor_->Execute(BuildPhase(1, 1, "b1", graph, stages)).ok);
  ASSERT_TRUE(executor_->Execute(BuildPhase(2, 2, "b2", graph, stages)).ok);
  ASSERT_TRUE(executor_->Execute(ProfilePhase(3, 2, "b2")).ok);
  for (int job = 3; job <= PhaseExecutor::kMaxBatches; ++job) {
    ASSERT_TRUE(executor_->Execute(BuildPhase(job + 10, job, StrCat("b", job), graph, stages)).ok);
  }
  // The table is full: the next build evicts the profiled b2, not b1.
  ASSERT_TRUE(executor_->Execute(BuildPhase(99, 99, "b99", graph, stages)).ok);
  EXPECT_EQ(executor_->num_batches(), PhaseExecutor::kMaxBatches);
  EXPECT_TRUE(executor_->HasBatch("b1"));
  EXPECT_FALSE(executor_->HasBatch("b2"));
  EXPECT_TRUE(executor_->Execute(ProfilePhase(100, 1, "b1")).ok);
}

TEST_F(PhaseExecutorTest, BuildsWhileProfiling) {
  graph::Graph graph = *graph::models::BuildZooModel("squeezenet", 1);
  const auto stages = GreedyStages(graph);
  ASSERT_TRUE(executor_->Execute(BuildPhase(1, 1, "a", graph, stages)).ok);
  PhaseReport profiled;
  std::thread device([&] {
    for (int i = 0; i < 5; ++i) profiled = executor_->Execute(ProfilePhase(10 + i, 1, "a"));
  });
  for (int job = 2; job < 8; ++job) {
    EXPECT_TRUE(executor_->Execute(BuildPhase(job, job, StrCat("j", job), graph, stages)).ok);
  }
  device.join();
  EXPECT_TRUE(profiled.ok) << profiled.error;
  EXPECT_EQ(profiled.stages.size(), stages.size());
}

TEST(PhaseOrderTest, NamesKindsAndLanes) {
  EXPECT_EQ(PhaseName(PhaseOrder{1, 1, "b", BuildOrder{}}), "build");
  EXPECT_EQ(PhaseName(PhaseOrder{1, 1, "b", ProfileOrder{}}), "profile");
  EXPECT_EQ(PhaseName(PhaseOrder{1, 1, "", MeasureOrder{}}), "measure");
  EXPECT_FALSE(NeedsDevice(PhaseOrder{1, 1, "b", BuildOrder{}}));
  EXPECT_TRUE(NeedsDevice(PhaseOrder{1, 1, "b", ProfileOrder{}}));
  EXPECT_TRUE(NeedsDevice(PhaseOrder{1, 1, "", MeasureOrder{}}));
}

TEST(FailedReportTest, OneLineNamingPhaseAndCode) {
  PhaseReport report =
      FailedReport(12, "build", absl::FailedPreconditionError("first\r\nsecond\nthird"));
  EXPECT_EQ(report.phase_id, 12);
  EXPECT_FALSE(report.ok);
  EXPECT_EQ(report.error, "build: FAILED_PRECONDITION: first; second; third");
}

}  // namespace
}  // namespace iosfarm::worker
