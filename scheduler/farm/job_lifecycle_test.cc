#include "scheduler/farm/job_lifecycle.h"

#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace iosfarm::scheduler::farm {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

PhaseEnd Ok(PhaseKind kind, std::string worker = "") {
  PhaseEnd end;
  end.kind = kind;
  end.worker = std::move(worker);
  return end;
}

PhaseEnd Enumerate(Enumerated enumerated) {
  PhaseEnd end = Ok(PhaseKind::kEnumerate);
  end.enumerated = enumerated;
  return end;
}

PhaseEnd Ended(PhaseKind kind, PhaseOutcome outcome, std::string error = "boom") {
  PhaseEnd end = Ok(kind, ResourceClassOf(kind) == ResourceClass::kServerCpu ? "" : "w1");
  end.outcome = outcome;
  end.error = std::move(error);
  return end;
}

TEST(JobLifecycleTest, TwoBatchesThenTheMeasure) {
  JobLifecycle job(3);
  std::vector<std::string> steps = {DescribeStep(job.Start())};
  for (int batch = 0; batch < 2; ++batch) {
    steps.push_back(DescribeStep(job.Next(Enumerate(Enumerated::kBatch))));
    EXPECT_TRUE(job.batch_pending());
    steps.push_back(DescribeStep(job.Next(Ok(PhaseKind::kBuild, "w2"))));
    steps.push_back(DescribeStep(job.Next(Ok(PhaseKind::kProfile, "w2"))));
    steps.push_back(DescribeStep(job.Next(Ok(PhaseKind::kUpdate))));
    EXPECT_FALSE(job.batch_pending());
  }
  steps.push_back(DescribeStep(job.Next(Enumerate(Enumerated::kSearchDone))));
  EXPECT_TRUE(job.measuring());
  steps.push_back(DescribeStep(job.Next(Ok(PhaseKind::kMeasure, "w1"))));
  EXPECT_THAT(steps, ElementsAre("enqueue enumerate", "enqueue build", "enqueue profile@w2",
                                 "enqueue update", "enqueue enumerate", "enqueue build",
                                 "enqueue profile@w2", "enqueue update", "enqueue enumerate",
                                 "enqueue measure", "done"));
  EXPECT_EQ(job.attempts(), 0);
}

TEST(JobLifecycleTest, WaitParksAndASliceOverEnumeratesAgain) {
  JobLifecycle job(3);
  job.Start();
  EXPECT_EQ(DescribeStep(job.Next(Enumerate(Enumerated::kSliceOver))), "enqueue enumerate");
  EXPECT_EQ(DescribeStep(job.Next(Enumerate(Enumerated::kWait))), "park");
  EXPECT_EQ(DescribeStep(job.Woken()), "enqueue enumerate");
  EXPECT_EQ(DescribeStep(job.Next(Enumerate(Enumerated::kBatch))), "enqueue build");
}

TEST(JobLifecycleTest, ALostWorkerRebuildsTheBatchOrMeasuresAgainWithoutAnAttempt) {
  JobLifecycle job(1);
  job.Start();
  job.Next(Enumerate(Enumerated::kBatch));
  EXPECT_EQ(DescribeStep(job.Next(Ended(PhaseKind::kBuild, PhaseOutcome::kWorkerLost))),
            "enqueue build");
  job.Next(Ok(PhaseKind::kBuild, "w1"));
  EXPECT_EQ(DescribeStep(job.Next(Ended(PhaseKind::kProfile, PhaseOutcome::kWorkerLost))),
            "enqueue build");  // the profile's batch lived on the lost worker
  job.Next(Ok(PhaseKind::kBuild, "w2"));
  job.Next(Ok(PhaseKind::kProfile, "w2"));
  job.Next(Ok(PhaseKind::kUpdate));
  job.Next(Enumerate(Enumerated::kSearchDone));
  EXPECT_EQ(DescribeStep(job.Next(Ended(PhaseKind::kMeasure, PhaseOutcome::kWorkerLost))),
            "enqueue measure");
  EXPECT_EQ(job.attempts(), 0);
  EXPECT_EQ(DescribeStep(job.Next(Ok(PhaseKind::kMeasure, "w2"))), "done");
}

TEST(JobLifecycleTest, FailedWorkerPhasesAndRejectedAnswersCostAttemptsUntilTheJobFails) {
  JobLifecycle job(3);
  job.Start();
  job.Next(Enumerate(Enumerated::kBatch));
  EXPECT_EQ(DescribeStep(job.Next(Ended(PhaseKind::kBuild, PhaseOutcome::kFailed))),
            "enqueue build (retry)");
  job.Next(Ok(PhaseKind::kBuild, "w1"));
  job.Next(Ok(PhaseKind::kProfile, "w1"));
  PhaseEnd rejected = Ended(PhaseKind::kUpdate, PhaseOutcome::kFailed, "NaN latency from w1");
  rejected.rejected_answer = true;
  EXPECT_EQ(DescribeStep(job.Next(rejected)), "enqueue build (retry)");
  EXPECT_EQ(job.attempts(), 2);
  const LifecycleStep last = job.Next(Ended(PhaseKind::kBuild, PhaseOutcome::kFailed, "oom"));
  EXPECT_EQ(last.action, LifecycleStep::Action::kFail);
  EXPECT_EQ(last.error, "gave up after 3 failed worker phases; last: oom");
}

TEST(JobLifecycleTest, AServerPhaseFailureFailsTheJobAtOnce) {
  for (PhaseKind kind : {PhaseKind::kEnumerate, PhaseKind::kUpdate}) {
    JobLifecycle job(3);
    job.Start();
    const LifecycleStep step =
        job.Next(Ended(kind, PhaseOutcome::kFailed, "the search needs more than 12 signatures"));
    EXPECT_EQ(step.action, LifecycleStep::Action::kFail) << PhaseKindName(kind);
    EXPECT_THAT(step.error, HasSubstr("more than 12 signatures"));
    EXPECT_EQ(job.attempts(), 0);
  }
  JobLifecycle unnamed(1);
  EXPECT_EQ(unnamed.Next(Ended(PhaseKind::kEnumerate, PhaseOutcome::kFailed, "")).error,
            "enumerate failed");
}

TEST(JobLifecycleTest, AtLeastOneAttempt) {
  JobLifecycle job(0);
  job.Start();
  job.Next(Enumerate(Enumerated::kBatch));
  EXPECT_EQ(job.Next(Ended(PhaseKind::kBuild, PhaseOutcome::kFailed)).action,
            LifecycleStep::Action::kFail);
}

}  // namespace
}  // namespace iosfarm::scheduler::farm
