#include "worker/phase_executor.h"

#include <thread>

#include "common/strings.h"
#include "gmock/gmock.h"
#include "graph/models/zoo.h"
#include "graph/test_graphs.h"
#include "gtest/gtest.h"
#include "scheduler/ios/testing_util.h"
#include "worker/backends/sim/sim_backend.h"
#include "worker/backends/sim/sim_test_graphs.h"
#include "worker/worker_testing.h"

namespace iosfarm::worker {
namespace {

using ::testing::HasSubstr;
using testing::BaselineJson;
using testing::BuildAssignment;
using testing::GreedyStages;
using testing::ProfileAssignment;

class PhaseExecutorTest : public ::testing::Test {
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

TEST_F(PhaseExecutorTest, BuildThenProfileGivesOneLatencyPerStageWithItsSignature) {
  for (const char* model : {"squeezenet", "inception_v3"}) {
    SCOPED_TRACE(model);
    graph::Graph graph = *graph::models::BuildZooModel(model, 1);
    std::vector<scheduler::ios::Stage> stages = GreedyStages(graph);
    ASSERT_GT(stages.size(), 3u);
    v1::PhaseAssignment build = BuildAssignment(1, 7, StrCat(model, "-b1"), graph, stages);
    v1::PhaseResult built = executor_->Execute(build);
    ASSERT_TRUE(built.ok()) << built.error();
    EXPECT_EQ(built.phase_id(), 1);
    EXPECT_EQ(built.plans_built(), static_cast<int>(stages.size()));

    v1::PhaseResult profiled = executor_->Execute(ProfileAssignment(2, 7, StrCat(model, "-b1")));
    ASSERT_TRUE(profiled.ok()) << profiled.error();
    EXPECT_EQ(profiled.phase_id(), 2);
    ASSERT_EQ(profiled.latencies_size(), build.build().stages_size());
    for (int i = 0; i < profiled.latencies_size(); ++i) {
      const v1::StageLatency& latency = profiled.latencies(i);
      EXPECT_EQ(latency.signature(), build.build().stages(i).signature()) << "stage " << i;
      EXPECT_GT(latency.median_ms(), 0) << "stage " << i;
      EXPECT_LE(latency.p10_ms(), latency.median_ms());
      EXPECT_GE(latency.p90_ms(), latency.median_ms());
      EXPECT_EQ(latency.repeats(), 3);
      // The sim backend's model of the stage as the worker built it
      // (canonical order, which the signature assumes).
      scheduler::ios::Stage canonical = stages[i];
      ASSERT_TRUE(scheduler::ios::CanonicalizeStage(graph, canonical).ok());
      EXPECT_NEAR(latency.median_ms(), *backend_->StageLatencyMs(graph, canonical), 1e-9);
    }
    EXPECT_TRUE(profiled.error().empty());
  }
}

TEST_F(PhaseExecutorTest, BuildsMergeAndConcurrentStages) {
  sim::testing::TwoConvs two = sim::testing::MakeTwoConvs(16, 14, 3);
  auto merge = scheduler::ios::testing::MergeStage(two.graph, {two.a, two.b});
  ASSERT_TRUE(merge.ok()) << merge.status();
  std::vector<scheduler::ios::Stage> stages = {
      *merge, scheduler::ios::testing::ConcurrentStage({{two.b}, {two.a}})};
  v1::PhaseAssignment build = BuildAssignment(1, 1, "b", two.graph, stages);
  // The merged description is the worker's to compute; the wire has none.
  ASSERT_EQ(build.build().stages(0).strategy(), "merge");
  v1::PhaseResult built = executor_->Execute(build);
  ASSERT_TRUE(built.ok()) << built.error();
  EXPECT_EQ(built.plans_built(), 2);
  v1::PhaseResult profiled = executor_->Execute(ProfileAssignment(2, 1, "b"));
  ASSERT_TRUE(profiled.ok()) << profiled.error();
  ASSERT_EQ(profiled.latencies_size(), 2);
  EXPECT_NE(profiled.latencies(0).signature(), profiled.latencies(1).signature());
}

TEST_F(PhaseExecutorTest, SignatureMismatchFailsNamingTheStage) {
  graph::Graph graph = *graph::models::BuildZooModel("squeezenet", 1);
  v1::PhaseAssignment build = BuildAssignment(3, 1, "b", graph, GreedyStages(graph));
  auto* stage = build.mutable_build()->mutable_stages(2);
  stage->set_signature(stage->signature() ^ 1);
  v1::PhaseResult result = executor_->Execute(build);
  EXPECT_FALSE(result.ok());
  EXPECT_EQ(result.phase_id(), 3);
  EXPECT_THAT(result.error(), HasSubstr("stage 2: signature mismatch"));
  EXPECT_THAT(result.error(), HasSubstr("build"));
  EXPECT_EQ(result.error().find('\n'), std::string::npos);
  EXPECT_FALSE(executor_->HasBatch("b"));
}

TEST_F(PhaseExecutorTest, InvalidStagesFailWithTheirIndex) {
  graph::Graph graph = graph::testing::SmallBranchyGraph(false);
  const std::vector<scheduler::ios::Stage> stages = GreedyStages(graph);
  {
    v1::PhaseAssignment build = BuildAssignment(1, 1, "b", graph, stages);
    build.mutable_build()->mutable_stages(1)->mutable_groups(0)->add_ops(999);
    v1::PhaseResult result = executor_->Execute(build);
    EXPECT_FALSE(result.ok());
    EXPECT_THAT(result.error(), HasSubstr("stage 1: group 0: node id 999 out of range"));
  }
  {
    v1::PhaseAssignment build = BuildAssignment(1, 1, "b", graph, stages);
    build.mutable_build()->mutable_stages(0)->set_strategy("parallel");
    v1::PhaseResult result = executor_->Execute(build);
    EXPECT_FALSE(result.ok());
    EXPECT_THAT(result.error(), HasSubstr("stage 0: unknown strategy 'parallel'"));
  }
  {
    // Two ops that cannot merge (the first stage of the graph is one conv).
    v1::PhaseAssignment build = BuildAssignment(1, 1, "b", graph, stages);
    v1::StageSpec* spec = build.mutable_build()->mutable_stages(0);
    spec->set_strategy("merge");
    spec->add_groups()->add_ops(stages[1].groups[0][0]);
    v1::PhaseResult result = executor_->Execute(build);
    EXPECT_FALSE(result.ok());
    EXPECT_THAT(result.error(), HasSubstr("stage 0: "));
  }
  EXPECT_EQ(executor_->num_batches(), 0);
}

TEST_F(PhaseExecutorTest, ProfileOfAnUnknownBatchFails) {
  v1::PhaseResult result = executor_->Execute(ProfileAssignment(9, 1, "never-built"));
  EXPECT_FALSE(result.ok());
  EXPECT_EQ(result.phase_id(), 9);
  EXPECT_THAT(result.error(), HasSubstr("profile: NOT_FOUND: unknown batch 'never-built'"));
  EXPECT_EQ(result.latencies_size(), 0);
}

TEST_F(PhaseExecutorTest, MalformedGraphBytesFail) {
  graph::Graph graph = graph::testing::SmallBranchyGraph(false);
  v1::PhaseAssignment build = BuildAssignment(1, 1, "b", graph, GreedyStages(graph));
  build.mutable_build()->set_graph("\x08\xff\xff garbage");
  v1::PhaseResult result = executor_->Execute(build);
  EXPECT_FALSE(result.ok());
  EXPECT_THAT(result.error(), HasSubstr("build: INVALID_ARGUMENT: graph: "));

  build.mutable_build()->clear_graph();
  result = executor_->Execute(build);
  EXPECT_FALSE(result.ok());
  EXPECT_THAT(result.error(), HasSubstr("no graph"));

  v1::PhaseAssignment measure;
  measure.set_phase_id(2);
  measure.mutable_measure()->set_graph("not a graph");
  result = executor_->Execute(measure);
  EXPECT_FALSE(result.ok());
  EXPECT_THAT(result.error(), HasSubstr("measure: "));
}

TEST_F(PhaseExecutorTest, MeasuresSequentialAndGreedySchedules) {
  graph::Graph graph = *graph::models::BuildZooModel("squeezenet", 1);
  v1::PhaseAssignment assignment;
  assignment.set_phase_id(5);
  v1::MeasureAssignment* measure = assignment.mutable_measure();
  measure->set_graph(graph::SerializeGraph(graph));
  *measure->mutable_options() = testing::QuickProfile();
  for (const char* kind : {"sequential", "greedy"}) {
    v1::NamedSchedule* named = measure->add_schedules();
    named->set_name(kind);
    named->set_schedule_json(BaselineJson(graph, kind));
  }
  v1::PhaseResult result = executor_->Execute(assignment);
  ASSERT_TRUE(result.ok()) << result.error();
  ASSERT_EQ(result.schedules_size(), 2);
  EXPECT_EQ(result.schedules(0).name(), "sequential");
  EXPECT_EQ(result.schedules(1).name(), "greedy");
  for (const v1::ScheduleLatency& latency : result.schedules()) {
    EXPECT_GT(latency.median_ms(), 0) << latency.name();
    EXPECT_EQ(latency.repeats(), 3) << latency.name();
  }
  EXPECT_EQ(result.latencies_size(), 0);
}

TEST_F(PhaseExecutorTest, MeasureOfABadScheduleNamesIt) {
  graph::Graph graph = *graph::models::BuildZooModel("squeezenet", 1);
  graph::Graph other = graph::testing::SmallBranchyGraph(false);
  v1::PhaseAssignment assignment;
  v1::MeasureAssignment* measure = assignment.mutable_measure();
  measure->set_graph(graph::SerializeGraph(graph));
  v1::NamedSchedule* good = measure->add_schedules();
  good->set_name("sequential");
  good->set_schedule_json(BaselineJson(graph, "sequential"));
  v1::NamedSchedule* bad = measure->add_schedules();
  bad->set_name("ios");
  bad->set_schedule_json(BaselineJson(other, "greedy"));  // made for another graph
  v1::PhaseResult result = executor_->Execute(assignment);
  EXPECT_FALSE(result.ok());
  EXPECT_THAT(result.error(), HasSubstr("schedule 'ios': "));
  EXPECT_EQ(result.schedules_size(), 0);

  bad->set_schedule_json("{not json");
  result = executor_->Execute(assignment);
  EXPECT_FALSE(result.ok());
  EXPECT_THAT(result.error(), HasSubstr("schedule 'ios': "));
}

TEST_F(PhaseExecutorTest, ANewBatchReplacesTheJobsOlderOnes) {
  graph::Graph graph = graph::testing::SmallBranchyGraph(false);
  const auto stages = GreedyStages(graph);
  ASSERT_TRUE(executor_->Execute(BuildAssignment(1, 1, "job1-a", graph, stages)).ok());
  ASSERT_TRUE(executor_->Execute(BuildAssignment(2, 2, "job2-a", graph, stages)).ok());
  ASSERT_TRUE(executor_->Execute(BuildAssignment(3, 1, "job1-b", graph, stages)).ok());
  EXPECT_FALSE(executor_->HasBatch("job1-a"));
  EXPECT_TRUE(executor_->HasBatch("job1-b"));
  EXPECT_TRUE(executor_->HasBatch("job2-a"));
  EXPECT_EQ(executor_->num_batches(), 2);
  EXPECT_FALSE(executor_->Execute(ProfileAssignment(4, 1, "job1-a")).ok());
  EXPECT_TRUE(executor_->Execute(ProfileAssignment(5, 1, "job1-b")).ok());
}

TEST_F(PhaseExecutorTest, KeepsAtMostMaxBatches) {
  graph::Graph graph = graph::testing::SmallBranchyGraph(false);
  const auto stages = GreedyStages(graph);
  for (int job = 1; job <= PhaseExecutor::kMaxBatches + 3; ++job) {
    ASSERT_TRUE(executor_->Execute(BuildAssignment(job, job, StrCat("b", job), graph, stages)).ok());
  }
  EXPECT_EQ(executor_->num_batches(), PhaseExecutor::kMaxBatches);
  EXPECT_FALSE(executor_->HasBatch("b1"));
  EXPECT_TRUE(executor_->HasBatch(StrCat("b", PhaseExecutor::kMaxBatches + 3)));
}

TEST_F(PhaseExecutorTest, ProfiledBatchesAreEvictedBeforeUnprofiledOnes) {
  graph::Graph graph = graph::testing::SmallBranchyGraph(false);
  const auto stages = GreedyStages(graph);
  // b1 (oldest) waits for its profile; b2 has been profiled.
  ASSERT_TRUE(executor_->Execute(BuildAssignment(1, 1, "b1", graph, stages)).ok());
  ASSERT_TRUE(executor_->Execute(BuildAssignment(2, 2, "b2", graph, stages)).ok());
  ASSERT_TRUE(executor_->Execute(ProfileAssignment(3, 2, "b2")).ok());
  for (int job = 3; job <= PhaseExecutor::kMaxBatches; ++job) {
    ASSERT_TRUE(executor_->Execute(BuildAssignment(job + 10, job, StrCat("b", job), graph, stages)).ok());
  }
  // The table is full: the next build evicts the profiled b2, not b1.
  ASSERT_TRUE(executor_->Execute(BuildAssignment(99, 99, "b99", graph, stages)).ok());
  EXPECT_EQ(executor_->num_batches(), PhaseExecutor::kMaxBatches);
  EXPECT_TRUE(executor_->HasBatch("b1"));
  EXPECT_FALSE(executor_->HasBatch("b2"));
  EXPECT_TRUE(executor_->Execute(ProfileAssignment(100, 1, "b1")).ok());
}

TEST_F(PhaseExecutorTest, AnEmptyAssignmentFails) {
  v1::PhaseAssignment assignment;
  assignment.set_phase_id(4);
  v1::PhaseResult result = executor_->Execute(assignment);
  EXPECT_FALSE(result.ok());
  EXPECT_EQ(result.phase_id(), 4);
  EXPECT_THAT(result.error(), HasSubstr("no build, profile or measure"));
}

TEST_F(PhaseExecutorTest, BuildsWhileProfiling) {
  graph::Graph graph = *graph::models::BuildZooModel("squeezenet", 1);
  const auto stages = GreedyStages(graph);
  ASSERT_TRUE(executor_->Execute(BuildAssignment(1, 1, "a", graph, stages)).ok());
  v1::PhaseResult profiled;
  std::thread device([&] {
    for (int i = 0; i < 5; ++i) profiled = executor_->Execute(ProfileAssignment(10 + i, 1, "a"));
  });
  for (int job = 2; job < 8; ++job) {
    EXPECT_TRUE(executor_->Execute(BuildAssignment(job, job, StrCat("j", job), graph, stages)).ok());
  }
  device.join();
  EXPECT_TRUE(profiled.ok()) << profiled.error();
  EXPECT_EQ(profiled.latencies_size(), static_cast<int>(stages.size()));
}

TEST(ProfileOptionsFromProtoTest, ZeroFieldsMeanDefaults) {
  const ProfileOptions defaults;
  ProfileOptions options = ProfileOptionsFromProto(v1::ProfileOptions());
  EXPECT_EQ(options.warmup, defaults.warmup);
  EXPECT_EQ(options.min_repeats, defaults.min_repeats);
  EXPECT_EQ(options.max_repeats, defaults.max_repeats);
  EXPECT_EQ(options.stable_fraction, defaults.stable_fraction);
  EXPECT_EQ(options.max_seconds, defaults.max_seconds);
  v1::ProfileOptions wire;
  wire.set_warmup(1);
  wire.set_min_repeats(2);
  wire.set_max_repeats(5);
  wire.set_stable_fraction(0.5);
  wire.set_max_seconds(0.25);
  options = ProfileOptionsFromProto(wire);
  EXPECT_EQ(options.warmup, 1);
  EXPECT_EQ(options.min_repeats, 2);
  EXPECT_EQ(options.max_repeats, 5);
  EXPECT_EQ(options.stable_fraction, 0.5);
  EXPECT_EQ(options.max_seconds, 0.25);
}

}  // namespace
}  // namespace iosfarm::worker
