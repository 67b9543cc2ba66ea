#include "scheduler/farm/job_lifecycle.h"

#include <string>
#include <vector>

#include "common/strings.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace iosfarm::scheduler::farm {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::SizeIs;

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

TEST(JobLifecycleTest, AYieldLetsTheBatchesOutFinishThenYieldsAndStartBeginsANewTurn) {
  JobLifecycle job(3, /*max_batches=*/2);
  auto of_batch = [](PhaseEnd end, int64_t batch) {
    end.batch = batch;
    return end;
  };
  job.Start();
  EXPECT_EQ(DescribeStep(job.Next(Enumerate(Enumerated::kBatch))), "enqueue build + enumerate");
  // Asked to yield with an enumerate in flight and a batch out: wait.
  EXPECT_EQ(DescribeStep(job.Yield()), "wait");
  EXPECT_TRUE(job.yielding());
  // The enumerate's batch still goes out, but nothing more is enumerated.
  EXPECT_EQ(DescribeStep(job.Next(Enumerate(Enumerated::kBatch))), "enqueue build");
  EXPECT_EQ(DescribeStep(job.Next(of_batch(Ok(PhaseKind::kBuild, "w1"), 1))), "enqueue profile@w1");
  EXPECT_EQ(DescribeStep(job.Next(of_batch(Ok(PhaseKind::kBuild, "w2"), 2))), "enqueue profile@w2");
  EXPECT_EQ(DescribeStep(job.Next(of_batch(Ok(PhaseKind::kProfile, "w1"), 1))), "enqueue update");
  EXPECT_EQ(DescribeStep(job.Next(of_batch(Ok(PhaseKind::kProfile, "w2"), 2))), "wait");
  EXPECT_EQ(DescribeStep(job.Next(of_batch(Ok(PhaseKind::kUpdate), 1))), "enqueue update");
  EXPECT_EQ(job.batches_out(), 1);
  EXPECT_EQ(DescribeStep(job.Next(of_batch(Ok(PhaseKind::kUpdate), 2))), "yield");
  EXPECT_EQ(job.batches_out(), 0);
  // A new turn enumerates again; the attempts carry over to a new lifecycle.
  EXPECT_EQ(DescribeStep(job.Start()), "enqueue enumerate");
  EXPECT_FALSE(job.yielding());
  EXPECT_EQ(JobLifecycle(3, 1, /*attempts=*/2).attempts(), 2);
}

TEST(JobLifecycleTest, AParkedOrIdleJobYieldsAtOnceAndAMeasuringOneDoesNot) {
  JobLifecycle parked(3);
  parked.Start();
  EXPECT_EQ(DescribeStep(parked.Next(Enumerate(Enumerated::kWait))), "park");
  EXPECT_EQ(DescribeStep(parked.Yield()), "yield");
  EXPECT_EQ(DescribeStep(parked.Woken()), "yield");  // woken while yielding: still yields

  JobLifecycle sliced(3);
  sliced.Start();
  sliced.Yield();
  EXPECT_EQ(DescribeStep(sliced.Next(Enumerate(Enumerated::kSliceOver))), "yield");

  JobLifecycle measuring(3);
  measuring.Start();
  measuring.Next(Enumerate(Enumerated::kSearchDone));
  EXPECT_EQ(DescribeStep(measuring.Yield()), "wait");
  EXPECT_FALSE(measuring.yielding());
  EXPECT_EQ(DescribeStep(measuring.Next(Ok(PhaseKind::kMeasure, "w1"))), "done");
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

PhaseEnd OfBatch(PhaseKind kind, int64_t batch, std::string worker = "") {
  PhaseEnd end = Ok(kind, std::move(worker));
  end.batch = batch;
  return end;
}

// "build#2", "profile#1@w1", "enumerate": the requests of a step.
std::vector<std::string> Requests(const LifecycleStep& step) {
  std::vector<std::string> out;
  for (const PhaseRequest& r : step.enqueue) {
    out.push_back(StrCat(PhaseKindName(r.kind), r.batch ? StrCat("#", r.batch) : "",
                         r.pinned_worker.empty() ? "" : "@", r.pinned_worker));
  }
  return out;
}

TEST(JobLifecycleTest, ParallelBatchesFillThePipelineWithOneServerPhaseAtATime) {
  JobLifecycle job(3, /*max_batches=*/3);
  const auto kWait = LifecycleStep::Action::kWait;
  EXPECT_THAT(Requests(job.Start()), ElementsAre("enumerate"));
  // Each batch handed out is built while the next enumerate runs.
  EXPECT_THAT(Requests(job.Next(Enumerate(Enumerated::kBatch))),
              ElementsAre("build#1", "enumerate"));
  EXPECT_THAT(Requests(job.Next(Enumerate(Enumerated::kBatch))),
              ElementsAre("build#2", "enumerate"));
  EXPECT_THAT(Requests(job.Next(OfBatch(PhaseKind::kBuild, 1, "w1"))), ElementsAre("profile#1@w1"));
  // A profile that ends while the enumerate runs waits for the server.
  EXPECT_EQ(job.Next(OfBatch(PhaseKind::kProfile, 1, "w1")).action, kWait);
  // Fewer than 3 on workers: handing out comes before the due update...
  EXPECT_THAT(Requests(job.Next(Enumerate(Enumerated::kBatch))),
              ElementsAre("build#3", "enumerate"));
  // ...until 3 are on workers.
  EXPECT_THAT(Requests(job.Next(Enumerate(Enumerated::kBatch))),
              ElementsAre("build#4", "update#1"));
  EXPECT_EQ(job.batches_out(), 4);
  EXPECT_EQ(job.batches_on_workers(), 3);
  EXPECT_EQ(job.Next(OfBatch(PhaseKind::kUpdate, 1)).action, kWait);
  EXPECT_THAT(Requests(job.Next(OfBatch(PhaseKind::kBuild, 2, "w2"))), ElementsAre("profile#2@w2"));
  EXPECT_THAT(Requests(job.Next(OfBatch(PhaseKind::kProfile, 2, "w2"))), ElementsAre("enumerate"));
  // Everything handed out: the due update, then wait for the batches out
  // (not park).
  EXPECT_THAT(Requests(job.Next(Enumerate(Enumerated::kWait))), ElementsAre("update#2"));
  EXPECT_THAT(Requests(job.Next(OfBatch(PhaseKind::kUpdate, 2))), ElementsAre("enumerate"));
  EXPECT_EQ(job.Next(Enumerate(Enumerated::kWait)).action, kWait);
  EXPECT_THAT(Requests(job.Next(OfBatch(PhaseKind::kBuild, 3, "w3"))), ElementsAre("profile#3@w3"));
  EXPECT_THAT(Requests(job.Next(OfBatch(PhaseKind::kBuild, 4, "w1"))), ElementsAre("profile#4@w1"));
  EXPECT_THAT(Requests(job.Next(OfBatch(PhaseKind::kProfile, 3, "w3"))), ElementsAre("update#3"));
  EXPECT_EQ(job.Next(OfBatch(PhaseKind::kProfile, 4, "w1")).action, kWait);
  EXPECT_THAT(Requests(job.Next(OfBatch(PhaseKind::kUpdate, 3))), ElementsAre("enumerate"));
  EXPECT_THAT(Requests(job.Next(Enumerate(Enumerated::kWait))), ElementsAre("update#4"));
  EXPECT_THAT(Requests(job.Next(OfBatch(PhaseKind::kUpdate, 4))), ElementsAre("enumerate"));
  EXPECT_EQ(job.batches_out(), 0);
  EXPECT_THAT(Requests(job.Next(Enumerate(Enumerated::kSearchDone))), ElementsAre("measure"));
  EXPECT_EQ(job.Next(Ok(PhaseKind::kMeasure, "w1")).action, LifecycleStep::Action::kDone);
}

TEST(JobLifecycleTest, ALostOrFailedBatchIsRebuiltAloneAndWaitParksOnlyWithNothingOut) {
  JobLifecycle job(2, /*max_batches=*/2);
  job.Start();
  job.Next(Enumerate(Enumerated::kBatch));  // build#1 + enumerate
  job.Next(Enumerate(Enumerated::kBatch));  // build#2 (two out)
  job.Next(OfBatch(PhaseKind::kBuild, 1, "w1"));
  PhaseEnd lost = OfBatch(PhaseKind::kProfile, 1, "w1");
  lost.outcome = PhaseOutcome::kWorkerLost;
  EXPECT_THAT(Requests(job.Next(lost)), ElementsAre("build#1"));
  PhaseEnd failed = OfBatch(PhaseKind::kBuild, 2, "w2");
  failed.outcome = PhaseOutcome::kFailed;
  failed.error = "oom";
  const LifecycleStep retry = job.Next(failed);
  EXPECT_THAT(Requests(retry), ElementsAre("build#2"));
  EXPECT_TRUE(retry.retry);
  EXPECT_EQ(job.attempts(), 1);
  // A batch that is not out is a caller bug, named.
  EXPECT_THAT(job.Next(OfBatch(PhaseKind::kProfile, 7, "w1")).error,
              HasSubstr("profile of batch 7, which is not out (2 batches are)"));

  JobLifecycle other(1, 2);
  other.Start();
  EXPECT_EQ(other.Next(Enumerate(Enumerated::kWait)).action, LifecycleStep::Action::kPark);
  EXPECT_THAT(Requests(other.Woken()), ElementsAre("enumerate"));
}

TEST(JobLifecycleTest, WithOneBatchEveryStepQueuesOnePhase) {
  // P = 1 is the thesis's chain: never two phases of the job at once.
  JobLifecycle job(3, 1);
  std::vector<LifecycleStep> steps = {
      job.Start(), job.Next(Enumerate(Enumerated::kBatch)), job.Next(Ok(PhaseKind::kBuild, "w1")),
      job.Next(Ok(PhaseKind::kProfile, "w1")), job.Next(Ok(PhaseKind::kUpdate))};
  for (const LifecycleStep& step : steps) EXPECT_THAT(step.enqueue, SizeIs(1));
}

}  // namespace
}  // namespace iosfarm::scheduler::farm
