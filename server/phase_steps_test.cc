// The meaning of each phase's outcome for its job, without a coordinator.
#include "server/phase_steps.h"

#include "graph/models/zoo.h"
#include "gtest/gtest.h"

namespace iosfarm::server {
namespace {

namespace farm = scheduler::farm;

TEST(PhaseStepsTest, EnumerateOutcomesBecomeTheLifecyclesWordsAndAProgressLine) {
  JobRow progress;
  progress.blocks_done = 3;
  progress.blocks_total = 8;
  PhaseStep batch = ServerPhaseStep(farm::PhaseKind::kEnumerate, absl::OkStatus(),
                                    JobRunner::Next::kBuild, progress, 64, 0);
  EXPECT_EQ(batch.end.outcome, farm::PhaseOutcome::kOk);
  EXPECT_EQ(batch.end.enumerated, farm::Enumerated::kBatch);
  EXPECT_EQ(batch.message, "enumerated a batch of 64 stages to measure");

  PhaseStep done = ServerPhaseStep(farm::PhaseKind::kEnumerate, absl::OkStatus(),
                                   JobRunner::Next::kMeasure, progress, 0, 0);
  EXPECT_EQ(done.end.enumerated, farm::Enumerated::kSearchDone);
  PhaseStep wait = ServerPhaseStep(farm::PhaseKind::kEnumerate, absl::OkStatus(),
                                   JobRunner::Next::kWait, progress, 0, 0);
  EXPECT_EQ(wait.end.enumerated, farm::Enumerated::kWait);
  PhaseStep slice = ServerPhaseStep(farm::PhaseKind::kEnumerate, absl::OkStatus(),
                                    JobRunner::Next::kContinue, progress, 0, 0);
  EXPECT_EQ(slice.end.enumerated, farm::Enumerated::kSliceOver);
  EXPECT_EQ(slice.message, "searching: 3 of 8 blocks solved");

  PhaseStep failed = ServerPhaseStep(farm::PhaseKind::kEnumerate,
                                     absl::ResourceExhaustedError("over budget"), std::nullopt,
                                     progress, 0, 0);
  EXPECT_EQ(failed.end.outcome, farm::PhaseOutcome::kFailed);
  EXPECT_EQ(failed.end.error, "over budget");
  EXPECT_FALSE(failed.end.rejected_answer);
}

TEST(PhaseStepsTest, AnUpdateRefusingTheWorkersAnswerIsTheWorkersFault) {
  const JobRow progress;
  PhaseStep rejected = ServerPhaseStep(farm::PhaseKind::kUpdate,
                                       absl::InvalidArgumentError("worker w1 returned 3 latencies"),
                                       std::nullopt, progress, 0, 0);
  EXPECT_EQ(rejected.end.outcome, farm::PhaseOutcome::kFailed);
  EXPECT_TRUE(rejected.end.rejected_answer);
  PhaseStep store_failed = ServerPhaseStep(farm::PhaseKind::kUpdate,
                                           absl::UnavailableError("disk full"), std::nullopt,
                                           progress, 0, 0);
  EXPECT_FALSE(store_failed.end.rejected_answer);
  PhaseStep stored = ServerPhaseStep(farm::PhaseKind::kUpdate, absl::OkStatus(), std::nullopt,
                                     progress, 0, 17);
  EXPECT_EQ(stored.end.outcome, farm::PhaseOutcome::kOk);
  EXPECT_EQ(stored.message, "stored 17 measured stages");
}

TEST(PhaseStepsTest, WorkerReportsNameTheWorkerAndWhatFailed) {
  PhaseReport failed;
  failed.error = "out of memory";
  PhaseStep step = WorkerPhaseStep(farm::PhaseKind::kBuild, "w2", failed, absl::OkStatus());
  EXPECT_EQ(step.end.outcome, farm::PhaseOutcome::kFailed);
  EXPECT_EQ(step.end.worker, "w2");
  EXPECT_EQ(step.end.error, "build on w2 failed: out of memory");

  PhaseReport profiled;
  profiled.ok = true;
  profiled.latencies.resize(5);
  EXPECT_EQ(WorkerPhaseStep(farm::PhaseKind::kProfile, "w2", profiled, absl::OkStatus()).message,
            "profiled 5 stages on w2");

  PhaseReport measured;
  measured.ok = true;
  PhaseStep refused = WorkerPhaseStep(farm::PhaseKind::kMeasure, "w2", measured,
                                      absl::InvalidArgumentError("worker w2 measured 1 schedules"));
  EXPECT_EQ(refused.end.outcome, farm::PhaseOutcome::kFailed);  // retried elsewhere
  EXPECT_EQ(refused.end.error, "worker w2 measured 1 schedules");
  EXPECT_EQ(WorkerPhaseStep(farm::PhaseKind::kMeasure, "w2", measured, absl::OkStatus()).end.outcome,
            farm::PhaseOutcome::kOk);

  PhaseStep lost = LostWorkerStep(farm::PhaseKind::kProfile, "w3", "no heartbeat for 5 s");
  EXPECT_EQ(lost.end.outcome, farm::PhaseOutcome::kWorkerLost);
  EXPECT_EQ(lost.end.kind, farm::PhaseKind::kProfile);
  EXPECT_EQ(lost.message, "worker w3 lost (no heartbeat for 5 s); re-queued");
}

TEST(PhaseStepsTest, TheCrashLoopGuardCountsOnlyServerPhasesAndRefusesPastTheLimit) {
  JobRow row;
  row.phase = "profile";
  row.resumes = 10;
  EXPECT_FALSE(CountsAsResume(row));
  EXPECT_FALSE(ResumeRefusal(row, 3).has_value());  // a worker phase never counts
  row.phase = "enumerate";
  row.resumes = 3;
  EXPECT_TRUE(CountsAsResume(row));
  EXPECT_FALSE(ResumeRefusal(row, 3).has_value());
  row.resumes = 4;
  std::optional<std::string> refusal = ResumeRefusal(row, 3);
  ASSERT_TRUE(refusal.has_value());
  EXPECT_NE(refusal->find("stopped 4 times"), std::string::npos) << *refusal;
  EXPECT_NE(refusal->find("--max-resumes"), std::string::npos) << *refusal;
}

TEST(PhaseStepsTest, OrdersCarryTheSettingsAndRefuseServerPhasesAndEarlyMeasures) {
  auto graph = graph::models::BuildZooModel("squeezenet", 1);
  ASSERT_TRUE(graph.ok()) << graph.status();
  JobRow job;
  job.id = 7;
  job.device_key = "k";
  auto runner =
      JobRunner::Create(job, std::move(*graph), FarmSearchBudget(), /*cores=*/0, {}, nullptr);
  ASSERT_TRUE(runner.ok()) << runner.status();
  ProfileSettings profile, measure;
  profile.min_repeats = 5;
  measure.max_seconds = 3;

  farm::Assignment assignment;
  assignment.phase = 11;
  assignment.job = 7;
  assignment.kind = farm::PhaseKind::kProfile;
  auto order = MakePhaseOrder(assignment, nullptr, **runner, "7/0", profile, measure);
  ASSERT_TRUE(order.ok()) << order.status();
  EXPECT_EQ(order->phase_id, 11);
  EXPECT_EQ(order->batch_id, "7/0");
  EXPECT_EQ(order->profile.min_repeats, 5);

  assignment.kind = farm::PhaseKind::kBuild;
  assignment.batch = 3;
  BuildRequest build;
  build.graph = std::make_shared<const std::string>("graph bytes");
  build.stages.resize(2);
  order = MakePhaseOrder(assignment, &build, **runner, "7/3", profile, measure);
  ASSERT_TRUE(order.ok()) << order.status();
  EXPECT_EQ(order->build.graph, build.graph);  // shared, not copied
  EXPECT_EQ(order->build.stages.size(), 2u);
  const auto no_batch = MakePhaseOrder(assignment, nullptr, **runner, "7/3", profile, measure);
  EXPECT_TRUE(absl::IsFailedPrecondition(no_batch.status()));
  EXPECT_NE(std::string(no_batch.status().message()).find("batch 3 is not out"), std::string::npos);

  assignment.kind = farm::PhaseKind::kMeasure;  // the search has not run
  EXPECT_TRUE(absl::IsFailedPrecondition(
      MakePhaseOrder(assignment, nullptr, **runner, "7/0", profile, measure).status()));
  assignment.kind = farm::PhaseKind::kEnumerate;
  auto server_phase = MakePhaseOrder(assignment, nullptr, **runner, "7/0", profile, measure);
  EXPECT_TRUE(absl::IsInvalidArgument(server_phase.status()));
  EXPECT_NE(std::string(server_phase.status().message()).find("enumerate"), std::string::npos);
}

}  // namespace
}  // namespace iosfarm::server
