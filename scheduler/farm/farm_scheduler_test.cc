#include "scheduler/farm/farm_scheduler.h"

#include <cmath>
#include <map>
#include <random>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "common/strings.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "scheduler/farm/timeline_check.h"

namespace iosfarm::scheduler::farm {
namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;
using ::testing::SizeIs;

PhaseRequest Req(PhaseKind kind, std::string pinned = "", int64_t batch = 0) {
  return {kind, std::move(pinned), batch};
}

// "job:kind@resource" for compact assertions.
std::vector<std::string> Show(const std::vector<Assignment>& as) {
  std::vector<std::string> out;
  for (const Assignment& a : as) {
    out.push_back(StrCat(a.job, ":", PhaseKindName(a.kind), "@", a.resource));
  }
  return out;
}

TEST(FarmSchedulerTest, AJobMayHaveUpToItsMaxPhasesQueuedOrInFlight) {
  FarmScheduler s(Policy::kInterleaved, 1);
  for (const char* w : {"w1", "w2"}) ASSERT_TRUE(s.WorkerJoined(w, "k").ok());
  ASSERT_TRUE(s.AddJob(1, "k", 3).ok());
  for (int64_t batch : {1, 2, 3}) {
    ASSERT_TRUE(s.Enqueue(1, Req(PhaseKind::kBuild, "", batch), 0).ok());
  }
  const Status over = s.Enqueue(1, Req(PhaseKind::kEnumerate), 0);
  EXPECT_EQ(over.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(std::string(ToStd(over.message())),
              ::testing::HasSubstr("job 1 already has 3 phases queued or in flight"));
  const std::vector<Assignment> started = s.Dispatch(0);
  EXPECT_THAT(Show(started), ElementsAre("1:build@w1/cpu", "1:build@w2/cpu"));
  EXPECT_EQ(started[0].batch, 1);
  EXPECT_EQ(started[1].batch, 2);
  auto view = s.GetJob(1);
  ASSERT_TRUE(view.ok());
  EXPECT_THAT(view->phases, SizeIs(3));
  EXPECT_EQ(view->running, 2);
  ASSERT_TRUE(s.Finished(started[0].phase, PhaseOutcome::kOk, 1).ok());
  EXPECT_EQ(s.TakeRecords().at(0).batch, 1);
  // The synchronous policy's rounds take one phase per job.
  FarmScheduler sync(Policy::kSynchronous, 1);
  EXPECT_EQ(sync.AddJob(1, "k", 2).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(s.AddJob(2, "k", 0).code(), absl::StatusCode::kInvalidArgument);
}

// Least attained server time: a job whose server phases have run for
// seconds queues its next slice behind a new job's short enumerate, even one
// that became ready later; between two jobs of one level, the older ready
// phase goes first.
TEST(FarmSchedulerTest, AServerSlotServesTheJobWithTheLeastServerTimeSoFar) {
  EXPECT_EQ(FarmScheduler::ServerLevel(0), 0);
  EXPECT_EQ(FarmScheduler::ServerLevel(0.099), 0);
  EXPECT_EQ(FarmScheduler::ServerLevel(0.1), 1);
  EXPECT_EQ(FarmScheduler::ServerLevel(0.25), 2);
  EXPECT_EQ(FarmScheduler::ServerLevel(1e30), 31);
  for (Policy policy : {Policy::kInterleaved, Policy::kCriticalPath}) {
    FarmScheduler s(policy, 1);
    ASSERT_TRUE(s.AddJob(1, "k").ok());
    ASSERT_TRUE(s.Enqueue(1, Req(PhaseKind::kEnumerate), 0).ok());
    std::vector<Assignment> slice = s.Dispatch(0);
    ASSERT_THAT(Show(slice), ElementsAre("1:enumerate@server-cpu/0"));
    ASSERT_TRUE(s.AddJob(2, "k").ok());
    ASSERT_TRUE(s.AddJob(3, "k").ok());
    ASSERT_TRUE(s.Enqueue(2, Req(PhaseKind::kEnumerate), 1).ok());
    ASSERT_TRUE(s.Finished(slice[0].phase, PhaseOutcome::kOk, 2).ok());  // job 1: 2 s
    ASSERT_TRUE(s.Enqueue(1, Req(PhaseKind::kEnumerate), 2).ok());
    ASSERT_TRUE(s.Enqueue(3, Req(PhaseKind::kEnumerate), 3).ok());
    std::vector<std::string> order;
    for (double t = 4; order.size() < 3; t += 1) {
      std::vector<Assignment> next = s.Dispatch(t);
      ASSERT_THAT(next, SizeIs(1));
      order.push_back(Show(next)[0]);
      ASSERT_TRUE(s.Finished(next[0].phase, PhaseOutcome::kOk, t + 0.01).ok());
    }
    EXPECT_THAT(order, ElementsAre("2:enumerate@server-cpu/0", "3:enumerate@server-cpu/0",
                                   "1:enumerate@server-cpu/0"))
        << PolicyName(policy);
  }
  // Synchronous rounds keep the order of jobs.
  FarmScheduler sync(Policy::kSynchronous, 2);
  ASSERT_TRUE(sync.AddJob(1, "k").ok());
  ASSERT_TRUE(sync.AddJob(2, "k").ok());
  ASSERT_TRUE(sync.Enqueue(1, Req(PhaseKind::kEnumerate), 0).ok());
  ASSERT_TRUE(sync.Enqueue(2, Req(PhaseKind::kEnumerate), 0).ok());
  std::vector<Assignment> round = sync.Dispatch(0);
  ASSERT_THAT(Show(round), ElementsAre("1:enumerate@server-cpu/0", "2:enumerate@server-cpu/1"));
  ASSERT_TRUE(sync.Finished(round[1].phase, PhaseOutcome::kOk, 0.01).ok());
  ASSERT_TRUE(sync.Finished(round[0].phase, PhaseOutcome::kOk, 5).ok());  // job 1: 5 s
  ASSERT_TRUE(sync.Enqueue(1, Req(PhaseKind::kUpdate), 5).ok());
  ASSERT_TRUE(sync.Enqueue(2, Req(PhaseKind::kUpdate), 5).ok());
  EXPECT_THAT(Show(sync.Dispatch(5)),
              ElementsAre("1:update@server-cpu/0", "2:update@server-cpu/1"));
}

// Fair share: a free worker serves the job with the fewest phases of that
// class running, whatever the order they became ready in.
TEST(FarmSchedulerTest, AFreeWorkerServesTheJobWithTheFewestRunning) {
  for (Policy policy : {Policy::kInterleaved, Policy::kCriticalPath}) {
    FarmScheduler s(policy, 1);
    for (const char* w : {"w1", "w2"}) ASSERT_TRUE(s.WorkerJoined(w, "k").ok());
    ASSERT_TRUE(s.AddJob(1, "k", 20).ok());
    ASSERT_TRUE(s.AddJob(2, "k").ok());
    for (int64_t batch = 1; batch <= 20; ++batch) {
      ASSERT_TRUE(s.Enqueue(1, Req(PhaseKind::kBuild, "", batch), 0).ok());
    }
    std::vector<Assignment> first = s.Dispatch(0);
    ASSERT_THAT(Show(first), ElementsAre("1:build@w1/cpu", "1:build@w2/cpu"));
    ASSERT_TRUE(s.Enqueue(2, Req(PhaseKind::kBuild), 1).ok());  // ready after 18 of job 1
    ASSERT_TRUE(s.Finished(first[0].phase, PhaseOutcome::kOk, 2).ok());
    EXPECT_THAT(Show(s.Dispatch(2)), ElementsAre("2:build@w1/cpu")) << PolicyName(policy);
    // Job 2 has one running now, job 1 one: the older ready phase goes next.
    ASSERT_TRUE(s.Finished(first[1].phase, PhaseOutcome::kOk, 3).ok());
    EXPECT_THAT(Show(s.Dispatch(3)), ElementsAre("1:build@w2/cpu"));
  }
}

TEST(FarmSchedulerTest, RejectsBadIds) {
  FarmScheduler s(Policy::kInterleaved, 1);
  ASSERT_TRUE(s.AddJob(1, "k").ok());
  EXPECT_EQ(s.AddJob(1, "k").code(), absl::StatusCode::kAlreadyExists);
  EXPECT_EQ(s.AddJob(2, "").code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(s.Enqueue(9, Req(PhaseKind::kEnumerate), 0).code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(s.RemoveJob(9, 0).code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(s.Finished(42, PhaseOutcome::kOk, 0).code(), absl::StatusCode::kNotFound);
  EXPECT_TRUE(s.GetJob(9).status().code() == absl::StatusCode::kNotFound);
  ASSERT_TRUE(s.WorkerJoined("w1", "k").ok());
  EXPECT_EQ(s.WorkerJoined("w1", "k").code(), absl::StatusCode::kAlreadyExists);
  EXPECT_EQ(s.WorkerJoined("", "k").code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(s.WorkerJoined("w2", "").code(), absl::StatusCode::kInvalidArgument);
  ASSERT_TRUE(s.WorkerJoined("other", "k2").ok());
  EXPECT_THAT(s.WorkerLost("nobody", 0), IsEmpty());

  // Pinning errors.
  Status st = s.Enqueue(1, Req(PhaseKind::kEnumerate, "w1"), 0);
  EXPECT_EQ(st.code(), absl::StatusCode::kInvalidArgument) << st;
  st = s.Enqueue(1, Req(PhaseKind::kBuild, "ghost"), 0);
  EXPECT_EQ(st.code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(std::string(st.message()), ::testing::HasSubstr("ghost"));
  st = s.Enqueue(1, Req(PhaseKind::kProfile, "other"), 0);
  EXPECT_EQ(st.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(s.Dispatch(0), IsEmpty());  // the rejected requests changed nothing

  ASSERT_TRUE(s.Enqueue(1, Req(PhaseKind::kEnumerate), 0).ok());
  EXPECT_EQ(s.Enqueue(1, Req(PhaseKind::kBuild), 0).code(),
            absl::StatusCode::kFailedPrecondition);  // queued
  auto started = s.Dispatch(0);
  ASSERT_THAT(started, SizeIs(1));
  EXPECT_EQ(s.Enqueue(1, Req(PhaseKind::kBuild), 0).code(),
            absl::StatusCode::kFailedPrecondition);  // in flight
  ASSERT_TRUE(s.Finished(started[0].phase, PhaseOutcome::kOk, 1).ok());
  EXPECT_EQ(s.Finished(started[0].phase, PhaseOutcome::kOk, 1).code(),
            absl::StatusCode::kNotFound);
  auto records = s.TakeRecords();
  ASSERT_THAT(records, SizeIs(1));
  EXPECT_EQ(records[0].resource, "server-cpu/0");
  EXPECT_EQ(records[0].end_s, 1);
  EXPECT_THAT(s.TakeRecords(), IsEmpty());
}

TEST(FarmSchedulerTest, InterleavedRoundRobinAndFreeResourceTakesNextAtOnce) {
  FarmScheduler s(Policy::kInterleaved, 1);
  ASSERT_TRUE(s.WorkerJoined("w", "k").ok());
  ASSERT_TRUE(s.AddJob(1, "k").ok());
  ASSERT_TRUE(s.AddJob(2, "k").ok());
  // Job 2 enqueues first but at the same instant: arrival order decides.
  ASSERT_TRUE(s.Enqueue(2, Req(PhaseKind::kEnumerate), 0).ok());
  ASSERT_TRUE(s.Enqueue(1, Req(PhaseKind::kEnumerate), 0).ok());
  auto a = s.Dispatch(0);
  EXPECT_THAT(Show(a), ElementsAre("1:enumerate@server-cpu/0"));
  EXPECT_EQ(s.queue_lengths().server_cpu, 1);
  ASSERT_TRUE(s.Finished(a[0].phase, PhaseOutcome::kOk, 1).ok());
  ASSERT_TRUE(s.Enqueue(1, Req(PhaseKind::kBuild), 1).ok());
  a = s.Dispatch(1);
  EXPECT_THAT(Show(a), ElementsAre("2:enumerate@server-cpu/0", "1:build@w/cpu"));
  EXPECT_TRUE(s.HasWork());
}

TEST(FarmSchedulerTest, GpuRunsOneProfileAtATime) {
  FarmScheduler s(Policy::kInterleaved, 2);
  ASSERT_TRUE(s.WorkerJoined("w", "k").ok());
  for (JobId j : {1, 2}) {
    ASSERT_TRUE(s.AddJob(j, "k").ok());
    ASSERT_TRUE(s.Enqueue(j, Req(PhaseKind::kProfile, "w"), 0).ok());
  }
  auto a = s.Dispatch(0);
  EXPECT_THAT(Show(a), ElementsAre("1:profile@w/gpu"));
  EXPECT_EQ(s.queue_lengths().gpu_by_worker.at("w"), 1);
  EXPECT_THAT(s.Dispatch(1), IsEmpty());
  ASSERT_TRUE(s.Finished(a[0].phase, PhaseOutcome::kFailed, 5).ok());
  EXPECT_THAT(Show(s.Dispatch(5)), ElementsAre("2:profile@w/gpu"));
  auto records = s.TakeRecords();
  ASSERT_THAT(records, SizeIs(1));
  EXPECT_EQ(records[0].outcome, PhaseOutcome::kFailed);
}

TEST(FarmSchedulerTest, ACpuWorkerMeasuresOnItsDeviceNotOnAGpu) {
  FarmScheduler s(Policy::kInterleaved, 1);
  ASSERT_TRUE(s.WorkerJoined("c", "cpu:x86", 0, MeasuringDevice::kCpu).ok());
  ASSERT_TRUE(s.AddJob(1, "cpu:x86").ok());
  ASSERT_TRUE(s.Enqueue(1, Req(PhaseKind::kBuild), 0).ok());
  auto a = s.Dispatch(0);
  EXPECT_THAT(Show(a), ElementsAre("1:build@c/cpu"));
  ASSERT_TRUE(s.Finished(a[0].phase, PhaseOutcome::kOk, 1).ok());
  ASSERT_TRUE(s.Enqueue(1, Req(PhaseKind::kProfile, "c"), 1).ok());
  a = s.Dispatch(1);
  EXPECT_THAT(Show(a), ElementsAre("1:profile@c/device"));
  ASSERT_TRUE(s.Finished(a[0].phase, PhaseOutcome::kOk, 2).ok());
  EXPECT_TRUE(CheckTimeline(s.TakeRecords()).ok());
}

TEST(FarmSchedulerTest, PhasesWaitUntilAWorkerOfTheKeyJoins) {
  FarmScheduler s(Policy::kInterleaved, 1);
  ASSERT_TRUE(s.WorkerJoined("a100-0", "a100").ok());
  ASSERT_TRUE(s.AddJob(1, "h100").ok());
  ASSERT_TRUE(s.Enqueue(1, Req(PhaseKind::kBuild), 0).ok());
  EXPECT_THAT(s.Dispatch(0), IsEmpty());
  EXPECT_EQ(s.queue_lengths().build_by_key.at("h100"), 1);
  EXPECT_EQ(s.num_workers("h100"), 0);
  ASSERT_TRUE(s.WorkerJoined("h100-0", "h100").ok());
  EXPECT_THAT(Show(s.Dispatch(3)), ElementsAre("1:build@h100-0/cpu"));
  auto view = s.GetJob(1);
  ASSERT_TRUE(view.ok());
  EXPECT_TRUE(view->in_flight);
  EXPECT_EQ(view->worker, "h100-0");
  EXPECT_EQ(view->kind, PhaseKind::kBuild);
}

TEST(FarmSchedulerTest, PinnedPhasesRunOnlyOnTheirWorker) {
  FarmScheduler s(Policy::kInterleaved, 1);
  ASSERT_TRUE(s.WorkerJoined("w1", "k").ok());
  ASSERT_TRUE(s.WorkerJoined("w2", "k").ok());
  for (JobId j : {1, 2, 3}) ASSERT_TRUE(s.AddJob(j, "k").ok());
  ASSERT_TRUE(s.Enqueue(1, Req(PhaseKind::kBuild, "w2"), 0).ok());
  EXPECT_THAT(Show(s.Dispatch(0)), ElementsAre("1:build@w2/cpu"));
  // GPU of w2 busy with job 1's profile; job 2's profile pinned to w2 waits
  // although w1's GPU is free; job 3's unpinned profile takes w1.
  ASSERT_TRUE(s.RemoveJob(1, 1).ok());
  ASSERT_TRUE(s.AddJob(4, "k").ok());
  ASSERT_TRUE(s.Enqueue(4, Req(PhaseKind::kProfile, "w2"), 1).ok());
  EXPECT_THAT(Show(s.Dispatch(1)), ElementsAre("4:profile@w2/gpu"));
  ASSERT_TRUE(s.Enqueue(2, Req(PhaseKind::kProfile, "w2"), 2).ok());
  EXPECT_THAT(s.Dispatch(2), IsEmpty());
  ASSERT_TRUE(s.Enqueue(3, Req(PhaseKind::kMeasure), 3).ok());
  EXPECT_THAT(Show(s.Dispatch(3)), ElementsAre("3:measure@w1/gpu"));
  auto q = s.queue_lengths();
  EXPECT_EQ(q.gpu_by_worker.at("w2"), 1);
  EXPECT_EQ(q.gpu_by_key.at("k"), 0);
  EXPECT_EQ(q.in_flight, 2);
}

TEST(FarmSchedulerTest, UnpinnedPhasePrefersAFreeWorkerWithoutPinnedWork) {
  FarmScheduler s(Policy::kInterleaved, 1);
  ASSERT_TRUE(s.WorkerJoined("w1", "k").ok());
  ASSERT_TRUE(s.WorkerJoined("w2", "k").ok());
  for (JobId j : {1, 2}) ASSERT_TRUE(s.AddJob(j, "k").ok());
  ASSERT_TRUE(s.Enqueue(1, Req(PhaseKind::kProfile), 0).ok());       // older, any worker
  ASSERT_TRUE(s.Enqueue(2, Req(PhaseKind::kProfile, "w1"), 1).ok());  // newer, pinned to w1
  EXPECT_THAT(Show(s.Dispatch(1)), ElementsAre("1:profile@w2/gpu", "2:profile@w1/gpu"));
}

TEST(FarmSchedulerTest, WorkerLostEndsAndDropsItsPhases) {
  FarmScheduler s(Policy::kInterleaved, 1);
  ASSERT_TRUE(s.WorkerJoined("w1", "k").ok());
  ASSERT_TRUE(s.WorkerJoined("w2", "k").ok());
  for (JobId j : {1, 2, 3, 4}) ASSERT_TRUE(s.AddJob(j, "k").ok());
  ASSERT_TRUE(s.Enqueue(1, Req(PhaseKind::kBuild, "w1"), 0).ok());
  ASSERT_TRUE(s.Enqueue(2, Req(PhaseKind::kProfile, "w1"), 0).ok());
  ASSERT_TRUE(s.Enqueue(3, Req(PhaseKind::kProfile, "w1"), 0).ok());
  ASSERT_TRUE(s.Enqueue(4, Req(PhaseKind::kProfile, "w2"), 0).ok());
  auto started = s.Dispatch(0);
  EXPECT_THAT(Show(started), ElementsAre("1:build@w1/cpu", "2:profile@w1/gpu", "4:profile@w2/gpu"));
  const std::vector<LostPhase> lost = s.WorkerLost("w1", 4);
  std::vector<std::string> shown;
  for (const LostPhase& l : lost) {
    shown.push_back(StrCat(l.job, ":", PhaseKindName(l.kind), l.running ? " running" : " queued"));
  }
  EXPECT_THAT(shown, ElementsAre("1:build running", "2:profile running", "3:profile queued"));
  EXPECT_FALSE(s.HasWorker("w1"));
  auto records = s.TakeRecords();
  ASSERT_THAT(records, SizeIs(2));
  for (const PhaseRecord& r : records) {
    EXPECT_EQ(r.outcome, PhaseOutcome::kWorkerLost);
    EXPECT_EQ(r.end_s, 4);
    EXPECT_EQ(r.worker, "w1");
  }
  for (JobId j : {1, 2, 3}) {
    auto view = s.GetJob(j);
    ASSERT_TRUE(view.ok());
    EXPECT_FALSE(view->phase.has_value()) << j;
  }
  EXPECT_EQ(s.Finished(started[0].phase, PhaseOutcome::kOk, 5).code(),
            absl::StatusCode::kNotFound);
  // Re-queue elsewhere: build on another worker, pinned to the lost one fails.
  EXPECT_EQ(s.Enqueue(1, Req(PhaseKind::kBuild, "w1"), 5).code(), absl::StatusCode::kNotFound);
  ASSERT_TRUE(s.Enqueue(1, Req(PhaseKind::kBuild), 5).ok());
  ASSERT_TRUE(s.Enqueue(2, Req(PhaseKind::kProfile), 5).ok());
  EXPECT_THAT(Show(s.Dispatch(5)), ElementsAre("1:build@w2/cpu"));  // w2's GPU is busy
  // The name may come back as a new worker.
  ASSERT_TRUE(s.WorkerJoined("w1", "k").ok());
  EXPECT_THAT(Show(s.Dispatch(6)), ElementsAre("2:profile@w1/gpu"));
}

TEST(FarmSchedulerTest, RemoveJobCancelsInFlightAndDropsQueued) {
  FarmScheduler s(Policy::kInterleaved, 1);
  ASSERT_TRUE(s.WorkerJoined("w", "k").ok());
  for (JobId j : {1, 2, 3}) {
    ASSERT_TRUE(s.AddJob(j, "k").ok());
    ASSERT_TRUE(s.Enqueue(j, Req(PhaseKind::kProfile), 0).ok());
  }
  EXPECT_THAT(Show(s.Dispatch(0)), ElementsAre("1:profile@w/gpu"));
  ASSERT_TRUE(s.RemoveJob(2, 1).ok());  // queued: dropped, no record
  EXPECT_TRUE(s.TakeRecords().empty());
  ASSERT_TRUE(s.RemoveJob(1, 2).ok());  // in flight: cancelled, GPU freed
  auto records = s.TakeRecords();
  ASSERT_THAT(records, SizeIs(1));
  EXPECT_EQ(records[0].outcome, PhaseOutcome::kCancelled);
  EXPECT_EQ(records[0].end_s, 2);
  EXPECT_THAT(Show(s.Dispatch(2)), ElementsAre("3:profile@w/gpu"));
  EXPECT_EQ(s.num_jobs(), 1);
  ASSERT_TRUE(s.RemoveJob(3, 3).ok());
  EXPECT_TRUE(s.Idle());
}

TEST(FarmSchedulerTest, SequentialRunsOnlyTheOldestJob) {
  FarmScheduler s(Policy::kSequential, 2);
  ASSERT_TRUE(s.WorkerJoined("w", "k").ok());
  for (JobId j : {1, 2}) {
    ASSERT_TRUE(s.AddJob(j, "k").ok());
    ASSERT_TRUE(s.Enqueue(j, Req(PhaseKind::kEnumerate), 0).ok());
  }
  auto a = s.Dispatch(0);
  EXPECT_THAT(Show(a), ElementsAre("1:enumerate@server-cpu/0"));  // a slot stays free
  EXPECT_EQ(s.queue_lengths().held, 1);
  ASSERT_TRUE(s.Finished(a[0].phase, PhaseOutcome::kOk, 1).ok());
  EXPECT_THAT(s.Dispatch(1), IsEmpty());  // job 1 has no next phase yet: others still wait
  ASSERT_TRUE(s.Enqueue(1, Req(PhaseKind::kMeasure), 1).ok());
  a = s.Dispatch(1);
  EXPECT_THAT(Show(a), ElementsAre("1:measure@w/gpu"));
  ASSERT_TRUE(s.Finished(a[0].phase, PhaseOutcome::kOk, 2).ok());
  ASSERT_TRUE(s.RemoveJob(1, 2).ok());
  a = s.Dispatch(2);
  EXPECT_THAT(Show(a), ElementsAre("2:enumerate@server-cpu/0"));
  ASSERT_TRUE(s.Finished(a[0].phase, PhaseOutcome::kOk, 3).ok());
  const PhaseRecord last = s.TakeRecords().back();
  EXPECT_EQ(last.queued_s, 0);  // queued at 0, held until job 1 left at 2
  EXPECT_EQ(last.start_s, 2);
}

TEST(FarmSchedulerTest, SynchronousAdvancesInLockStepRounds) {
  FarmScheduler s(Policy::kSynchronous, 2);
  ASSERT_TRUE(s.WorkerJoined("w", "k").ok());
  ASSERT_TRUE(s.AddJob(1, "k").ok());
  ASSERT_TRUE(s.AddJob(2, "k").ok());
  ASSERT_TRUE(s.Enqueue(1, Req(PhaseKind::kEnumerate), 0).ok());
  EXPECT_THAT(s.Dispatch(0), IsEmpty());  // job 2 has not enqueued yet
  ASSERT_TRUE(s.Enqueue(2, Req(PhaseKind::kEnumerate), 0).ok());
  auto a = s.Dispatch(0);
  EXPECT_THAT(Show(a), ElementsAre("1:enumerate@server-cpu/0", "2:enumerate@server-cpu/1"));
  ASSERT_TRUE(s.Finished(a[0].phase, PhaseOutcome::kOk, 1).ok());
  ASSERT_TRUE(s.Enqueue(1, Req(PhaseKind::kProfile), 1).ok());
  ASSERT_TRUE(s.AddJob(3, "k").ok());  // mid-round: joins the next round
  ASSERT_TRUE(s.Enqueue(3, Req(PhaseKind::kEnumerate), 1).ok());
  EXPECT_THAT(s.Dispatch(1), IsEmpty());  // job 2's phase of this round is in flight
  ASSERT_TRUE(s.Finished(a[1].phase, PhaseOutcome::kOk, 2).ok());
  ASSERT_TRUE(s.Enqueue(2, Req(PhaseKind::kProfile), 2).ok());
  a = s.Dispatch(2);
  // Both profiles are released; the GPU stays exclusive, so job 2's queues.
  EXPECT_THAT(Show(a), ElementsAre("3:enumerate@server-cpu/0", "1:profile@w/gpu"));
  ASSERT_TRUE(s.Finished(a[0].phase, PhaseOutcome::kOk, 3).ok());
  ASSERT_TRUE(s.Finished(a[1].phase, PhaseOutcome::kOk, 4).ok());
  a = s.Dispatch(4);
  EXPECT_THAT(Show(a), ElementsAre("2:profile@w/gpu"));
  // Job 1 leaves: the round no longer waits for it.
  ASSERT_TRUE(s.RemoveJob(1, 4).ok());
  ASSERT_TRUE(s.Enqueue(3, Req(PhaseKind::kUpdate), 4).ok());
  EXPECT_THAT(s.Dispatch(4), IsEmpty());
  ASSERT_TRUE(s.Finished(a[0].phase, PhaseOutcome::kOk, 6).ok());
  ASSERT_TRUE(s.Enqueue(2, Req(PhaseKind::kUpdate), 6).ok());
  EXPECT_THAT(Show(s.Dispatch(6)),
              ElementsAre("2:update@server-cpu/0", "3:update@server-cpu/1"));
}

// The GPU of worker "w" is busy with job 1's profile until t=10 while the
// profiles of `jobs` (with their urgencies) become ready at their times;
// returns the jobs in the order the GPU then serves them.
std::vector<JobId> GpuOrder(Policy policy,
                            const std::vector<std::tuple<JobId, double, double>>& jobs) {
  FarmScheduler s(policy, 1);
  EXPECT_TRUE(s.WorkerJoined("w", "k").ok());
  EXPECT_TRUE(s.AddJob(1, "k").ok());
  EXPECT_TRUE(s.Enqueue(1, Req(PhaseKind::kProfile, "w"), 0).ok());
  std::vector<Assignment> running = s.Dispatch(0);
  EXPECT_THAT(running, SizeIs(1));
  for (const auto& [job, ready_s, urgency_s] : jobs) {
    EXPECT_TRUE(s.AddJob(job, "k").ok());
    EXPECT_TRUE(s.SetJobUrgency(job, urgency_s).ok());
    EXPECT_TRUE(s.Enqueue(job, Req(PhaseKind::kProfile, "w"), ready_s).ok());
    EXPECT_THAT(s.Dispatch(ready_s), IsEmpty());  // the GPU is busy
  }
  std::vector<JobId> order;
  double now = 10;
  while (!running.empty()) {
    EXPECT_TRUE(s.Finished(running[0].phase, PhaseOutcome::kOk, now).ok());
    running = s.Dispatch(now);
    if (!running.empty()) order.push_back(running[0].job);
    now += 10;
  }
  return order;
}

TEST(FarmSchedulerCriticalPathTest, TheJobWithLeastSlackGoesFirst) {
  // Job 2 (ready first, urgency 0), job 3 (ready at 2 s, 100 s of chain left),
  // job 4 (ready at 3 s, 50 s left): least slack (ready - urgency) first.
  const std::vector<std::tuple<JobId, double, double>> jobs = {{2, 1, 0}, {3, 2, 100}, {4, 3, 50}};
  EXPECT_THAT(GpuOrder(Policy::kCriticalPath, jobs), ElementsAre(3, 4, 2));
  // The thesis's policy ignores urgency: first ready, first served.
  EXPECT_THAT(GpuOrder(Policy::kInterleaved, jobs), ElementsAre(2, 3, 4));
}

TEST(FarmSchedulerCriticalPathTest, NoPhaseWaitsLongerThanTheUrgencyBound) {
  // A phase of urgency 0 ready at t=1 is overtaken only by phases ready
  // before t + their urgency: with urgency 5 and jobs arriving every second,
  // those ready before t=6 go first, then it does, however many follow.
  std::vector<std::tuple<JobId, double, double>> jobs = {{2, 1, 0}};
  for (JobId j = 3; j < 13; ++j) jobs.push_back({j, static_cast<double>(j - 1), 5});
  const std::vector<JobId> order = GpuOrder(Policy::kCriticalPath, jobs);
  ASSERT_THAT(order, SizeIs(11));
  // Jobs 3..6 are ready at 2..5 s (slack -3..0 < 1); job 7 (ready at 6, slack 1)
  // ties on slack and loses on arrival order.
  EXPECT_THAT(std::vector<JobId>(order.begin(), order.begin() + 5), ElementsAre(3, 4, 5, 6, 2));

  // Urgency is clamped to a day: nothing can stay ahead for longer.
  FarmScheduler s(Policy::kCriticalPath, 1);
  ASSERT_TRUE(s.AddJob(1, "k").ok());
  EXPECT_TRUE(s.SetJobUrgency(1, 1e12).ok());
  EXPECT_EQ(s.SetJobUrgency(1, std::nan("")).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(s.SetJobUrgency(7, 1).code(), absl::StatusCode::kNotFound);
  EXPECT_GT(FarmScheduler::kMaxUrgencySeconds, 0);
}

TEST(FarmSchedulerTest, TimeNeverGoesBackwards) {
  FarmScheduler s(Policy::kInterleaved, 1);
  ASSERT_TRUE(s.AddJob(1, "k").ok());
  ASSERT_TRUE(s.Enqueue(1, Req(PhaseKind::kEnumerate), 10).ok());
  auto a = s.Dispatch(5);
  ASSERT_THAT(a, SizeIs(1));
  EXPECT_EQ(a[0].start_s, 10);
  ASSERT_TRUE(s.Finished(a[0].phase, PhaseOutcome::kOk, 7).ok());
  auto records = s.TakeRecords();
  EXPECT_EQ(records[0].end_s, 10);
  EXPECT_TRUE(CheckTimeline(records).ok());
}

// Random events against the scheduler, checked step by step and at the end
// with CheckTimeline. Returns the records for the determinism test.
std::vector<PhaseRecord> RandomRun(Policy policy, uint32_t seed, int steps) {
  std::mt19937 rng(seed);
  auto pick = [&](int n) { return static_cast<int>(rng() % static_cast<uint32_t>(n)); };
  const std::vector<std::string> keys = {"a", "b", "c"};
  FarmScheduler s(policy, 1 + pick(3));
  std::vector<Assignment> started;
  std::vector<PhaseRecord> records;
  std::map<PhaseId, Assignment> running;
  std::set<std::string> busy;
  std::map<std::string, std::string> workers;  // name -> key
  std::vector<JobId> jobs;
  JobId next_job = 1;
  int next_worker = 0;
  double now = 0;
  auto take = [&] {
    for (PhaseRecord& r : s.TakeRecords()) {
      busy.erase(r.resource);
      running.erase(r.phase);
      records.push_back(std::move(r));
    }
  };
  for (int step = 0; step < steps; ++step) {
    take();
    if (pick(3) == 0) now += pick(4) * 0.5;
    switch (pick(9)) {
      case 0:
        if (jobs.size() < 12) {
          EXPECT_TRUE(s.AddJob(next_job, keys[pick(3)]).ok());
          jobs.push_back(next_job++);
        }
        break;
      case 1:
      case 2: {
        if (jobs.empty()) break;
        const JobId job = jobs[pick(static_cast<int>(jobs.size()))];
        auto view = s.GetJob(job);
        EXPECT_TRUE(view.ok());
        const PhaseKind kind = static_cast<PhaseKind>(pick(5));
        std::string pinned;
        if (ResourceClassOf(kind) != ResourceClass::kServerCpu && pick(2) == 0) {
          for (const auto& [name, key] : workers) {
            if (key == view->device_key && pick(2) == 0) pinned = name;
          }
        }
        if (pick(2) == 0) {
          EXPECT_TRUE(s.SetJobUrgency(job, pick(400) * 1.0).ok());
        }
        Status st = s.Enqueue(job, {kind, pinned}, now);
        EXPECT_EQ(st.ok(), !view->phase.has_value()) << st;
        break;
      }
      case 3:
      case 4:
        if (!running.empty()) {
          auto it = running.begin();
          std::advance(it, pick(static_cast<int>(running.size())));
          EXPECT_TRUE(s.Finished(it->first, pick(5) ? PhaseOutcome::kOk : PhaseOutcome::kFailed,
                                 now).ok());
        }
        break;
      case 5:
        if (!jobs.empty() && pick(3) == 0) {
          const int i = pick(static_cast<int>(jobs.size()));
          EXPECT_TRUE(s.RemoveJob(jobs[i], now).ok());
          jobs.erase(jobs.begin() + i);
        }
        break;
      case 6:
        if (workers.size() < 6 || pick(4) == 0) {
          const std::string name = "w" + std::to_string(next_worker++ % 8);
          const std::string key = keys[pick(3)];
          Status st = s.WorkerJoined(name, key);
          EXPECT_EQ(st.ok(), workers.count(name) == 0);
          if (st.ok()) workers[name] = key;
        } else {
          auto it = workers.begin();
          std::advance(it, pick(static_cast<int>(workers.size())));
          for (const LostPhase& lost : s.WorkerLost(it->first, now)) {
            auto view = s.GetJob(lost.job);
            EXPECT_TRUE(view.ok() && !view->phase.has_value());
          }
          workers.erase(it);
        }
        break;
      default: {
        take();
        for (Assignment& a : s.Dispatch(now)) {
          EXPECT_TRUE(busy.insert(a.resource).second) << "resource " << a.resource << " busy";
          for (const auto& [id, other] : running) EXPECT_NE(other.job, a.job);
          running[a.phase] = a;
          started.push_back(std::move(a));
        }
        if (policy == Policy::kInterleaved || policy == Policy::kCriticalPath) {
          // Work-conserving: queued server phases only while every slot is busy.
          const QueueLengths q = s.queue_lengths();
          int server_busy = 0;
          for (const auto& [id, a] : running) server_busy += a.worker.empty() ? 1 : 0;
          if (q.server_cpu > 0) {
            EXPECT_EQ(server_busy, s.server_slots());
          }
          for (const auto& [key, n] : q.gpu_by_key) {
            if (n == 0) continue;
            for (const auto& [name, wkey] : workers) {
              if (wkey == key) {
                EXPECT_TRUE(busy.count(name + "/gpu")) << name;
              }
            }
          }
        }
        break;
      }
    }
    // Unknown ids are rejected without effect.
    if (step % 97 == 0) {
      EXPECT_EQ(s.Finished(1'000'000, PhaseOutcome::kOk, now).code(), absl::StatusCode::kNotFound);
      EXPECT_EQ(s.Enqueue(-1, {PhaseKind::kBuild, ""}, now).code(), absl::StatusCode::kNotFound);
    }
  }
  for (JobId job : jobs) EXPECT_TRUE(s.RemoveJob(job, now + 1).ok());
  take();
  EXPECT_TRUE(s.Idle());
  EXPECT_TRUE(running.empty());
  Status st = CheckTimeline(records, started);
  EXPECT_TRUE(st.ok()) << st;
  return records;
}

TEST(FarmSchedulerTest, RandomStressKeepsInvariants) {
  for (Policy policy :
       {Policy::kInterleaved, Policy::kSequential, Policy::kSynchronous, Policy::kCriticalPath}) {
    for (uint32_t seed = 1; seed <= 20; ++seed) {
      SCOPED_TRACE(StrCat(PolicyName(policy), " seed ", seed));
      std::vector<PhaseRecord> records = RandomRun(policy, seed, 3000);
      const bool interleaving = policy == Policy::kInterleaved || policy == Policy::kCriticalPath;
      EXPECT_GT(records.size(), interleaving ? 150u : 20u);
      if (::testing::Test::HasFailure()) return;
    }
  }
}

TEST(FarmSchedulerTest, Deterministic) {
  auto key = [](const std::vector<PhaseRecord>& rs) {
    std::vector<std::string> out;
    for (const PhaseRecord& r : rs) {
      out.push_back(StrCat(r.phase, r.job, r.resource, r.start_s, r.end_s,
                                  PhaseOutcomeName(r.outcome)));
    }
    return out;
  };
  for (Policy policy : {Policy::kInterleaved, Policy::kSynchronous}) {
    EXPECT_EQ(key(RandomRun(policy, 7, 2000)), key(RandomRun(policy, 7, 2000)));
  }
}

}  // namespace
}  // namespace iosfarm::scheduler::farm

namespace iosfarm::scheduler::farm {
namespace {

// Issue 13: 20 jobs on one worker that keeps 8 built batches; the server
// pinned more profiles to it than it held, and profiles found their batch
// evicted. Builds now wait while the worker holds its limit.
TEST(FarmSchedulerBatchLimitTest, NeverMoreBatchesOnAWorkerThanItKeeps) {
  constexpr int kLimit = 3;
  FarmScheduler s(Policy::kInterleaved, 2);
  ASSERT_TRUE(s.WorkerJoined("w", "k", kLimit).ok());
  std::map<PhaseId, Assignment> running;
  double now = 0;
  auto dispatch = [&] {
    for (const Assignment& a : s.Dispatch(now)) running[a.phase] = a;
    EXPECT_LE(s.held_batches("w"), kLimit);
  };
  for (JobId job = 1; job <= 12; ++job) {
    ASSERT_TRUE(s.AddJob(job, "k").ok());
    ASSERT_TRUE(s.Enqueue(job, Req(PhaseKind::kBuild), now).ok());
  }
  int max_held = 0, profiles = 0;
  dispatch();
  // Finish builds at once (fast CPU), profiles one at a time (slow GPU): the
  // pressure that overflowed the worker.
  while (!running.empty()) {
    now += 1;
    // Prefer finishing a build: the GPU falls behind.
    auto it = std::find_if(running.begin(), running.end(),
                           [](const auto& r) { return r.second.kind == PhaseKind::kBuild; });
    if (it == running.end()) it = running.begin();
    const Assignment a = it->second;
    running.erase(it);
    ASSERT_TRUE(s.Finished(a.phase, PhaseOutcome::kOk, now).ok());
    if (a.kind == PhaseKind::kBuild) {
      ASSERT_TRUE(s.Enqueue(a.job, Req(PhaseKind::kProfile, "w"), now).ok());
    } else {
      ++profiles;
    }
    max_held = std::max(max_held, s.held_batches("w"));
    dispatch();
  }
  EXPECT_EQ(profiles, 12);            // every job got through
  EXPECT_EQ(max_held, kLimit);        // the limit was reached, never passed
  EXPECT_EQ(s.held_batches("w"), 0);  // and everything released
}

TEST(FarmSchedulerBatchLimitTest, DroppedAndLostPhasesReleaseTheirBatches) {
  FarmScheduler s(Policy::kInterleaved, 1);
  ASSERT_TRUE(s.WorkerJoined("w", "k", 1).ok());
  ASSERT_TRUE(s.WorkerJoined("v", "k", 1).ok());
  for (JobId job = 1; job <= 3; ++job) {
    ASSERT_TRUE(s.AddJob(job, "k").ok());
    ASSERT_TRUE(s.Enqueue(job, Req(PhaseKind::kBuild), 0).ok());
  }
  auto started = s.Dispatch(0);
  ASSERT_THAT(started, SizeIs(2));  // one build per worker, job 3 waits
  EXPECT_EQ(s.held_batches("w") + s.held_batches("v"), 2);
  // Job 1's build finishes; its pinned profile keeps the batch; removing the
  // job drops the profile and frees the room for job 3.
  const Assignment first = started[0];
  ASSERT_TRUE(s.Finished(first.phase, PhaseOutcome::kOk, 1).ok());
  ASSERT_TRUE(s.Enqueue(first.job, Req(PhaseKind::kProfile, first.worker), 1).ok());
  auto next = s.Dispatch(1);
  ASSERT_THAT(next, SizeIs(1));
  EXPECT_EQ(next[0].kind, PhaseKind::kProfile);
  ASSERT_TRUE(s.RemoveJob(first.job, 2).ok());
  EXPECT_EQ(s.held_batches(first.worker), 0);
  next = s.Dispatch(2);
  ASSERT_THAT(next, SizeIs(1));
  EXPECT_EQ(next[0].job, 3);
  EXPECT_EQ(next[0].kind, PhaseKind::kBuild);
  // A lost worker takes its batches with it.
  (void)s.WorkerLost(next[0].worker, 3);
  EXPECT_EQ(s.held_batches(next[0].worker), 0);
}

}  // namespace
}  // namespace iosfarm::scheduler::farm
