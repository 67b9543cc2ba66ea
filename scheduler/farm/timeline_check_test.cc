#include "scheduler/farm/timeline_check.h"

#include <map>
#include <string>
#include <vector>

#include "common/strings.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace iosfarm::scheduler::farm {
namespace {

using ::testing::HasSubstr;

PhaseRecord Rec(PhaseId phase, JobId job, PhaseKind kind, std::string worker, double queued,
                double start, double end, PhaseOutcome outcome = PhaseOutcome::kOk) {
  PhaseRecord r;
  r.phase = phase;
  r.job = job;
  r.kind = kind;
  switch (ResourceClassOf(kind)) {
    case ResourceClass::kServerCpu:
      r.resource = worker;  // "server-cpu/<i>" passed in
      break;
    case ResourceClass::kWorkerCpu:
      r.worker = worker;
      r.resource = WorkerCpuResource(worker);
      break;
    case ResourceClass::kWorkerGpu:
      r.worker = worker;
      r.resource = WorkerGpuResource(worker);
      break;
  }
  r.queued_s = queued;
  r.start_s = start;
  r.end_s = end;
  r.outcome = outcome;
  return r;
}

std::vector<PhaseRecord> GoodLog() {
  return {
      Rec(1, 1, PhaseKind::kEnumerate, "server-cpu/0", 0, 0, 1),
      Rec(2, 2, PhaseKind::kEnumerate, "server-cpu/0", 0, 1, 2),
      Rec(3, 1, PhaseKind::kBuild, "w", 1, 1, 3),
      Rec(4, 2, PhaseKind::kBuild, "w", 2, 3, 5),
      Rec(5, 1, PhaseKind::kProfile, "w", 3, 3, 7),
      Rec(6, 2, PhaseKind::kProfile, "w", 5, 7, 11, PhaseOutcome::kWorkerLost),
      Rec(7, 1, PhaseKind::kMeasure, "w", 7, 11, 11),  // zero length, touching
  };
}

std::string Message(const Status& s) { return std::string(ToStd(s.message())); }

TEST(TimelineCheckTest, AcceptsAValidLogInAnyOrder) {
  std::vector<PhaseRecord> log = GoodLog();
  EXPECT_TRUE(CheckTimeline(log).ok()) << CheckTimeline(log);
  std::reverse(log.begin(), log.end());
  EXPECT_TRUE(CheckTimeline(log).ok());
  EXPECT_TRUE(CheckTimeline({}).ok());
  EXPECT_TRUE(HasInterleaving(log));
}

TEST(TimelineCheckTest, CatchesTwoProfilesOnOneGpu) {
  std::vector<PhaseRecord> log = GoodLog();
  log[5].start_s = 6;  // job 2's profile starts while job 1's runs on w/gpu
  log[5].queued_s = 5;
  Status s = CheckTimeline(log);
  EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(Message(s), HasSubstr("resource w/gpu"));
  EXPECT_THAT(Message(s), HasSubstr("phase 5 (job 1, profile"));
  EXPECT_THAT(Message(s), HasSubstr("phase 6 (job 2, profile"));
}

TEST(TimelineCheckTest, CatchesOverlapHiddenBehindALongPhase) {
  // A long phase, then a short one inside it, then one that still overlaps
  // the long one but not the short one.
  std::vector<PhaseRecord> log = {
      Rec(1, 1, PhaseKind::kProfile, "w", 0, 0, 10),
      Rec(2, 2, PhaseKind::kProfile, "w", 0, 10, 11),
      Rec(3, 3, PhaseKind::kProfile, "w", 0, 11, 12),
  };
  EXPECT_TRUE(CheckTimeline(log).ok());
  log[1].start_s = 1;
  log[1].end_s = 2;
  log[2].start_s = 5;
  EXPECT_THAT(Message(CheckTimeline(log)), HasSubstr("phase 1 (job 1"));
}

TEST(TimelineCheckTest, CatchesAJobRunningTwoPhasesAtOnce) {
  std::vector<PhaseRecord> log = {
      Rec(1, 1, PhaseKind::kEnumerate, "server-cpu/0", 0, 0, 4),
      Rec(2, 1, PhaseKind::kBuild, "w", 0, 2, 3),
  };
  Status s = CheckTimeline(log);
  EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(Message(s), HasSubstr("job 1 has two phases in flight"));
}

TEST(TimelineCheckTest, CatchesAPhaseQueuedBeforeThePreviousEnded) {
  std::vector<PhaseRecord> log = {
      Rec(1, 1, PhaseKind::kEnumerate, "server-cpu/0", 0, 0, 4),
      Rec(2, 1, PhaseKind::kBuild, "w", 3, 4, 5),
  };
  EXPECT_THAT(Message(CheckTimeline(log)), HasSubstr("was queued at 3 before its previous"));
}

TEST(TimelineCheckTest, CatchesMalformedRecords) {
  auto bad = [](PhaseRecord r) { return CheckTimeline({r}); };
  PhaseRecord r = Rec(9, 4, PhaseKind::kProfile, "w", 0, 1, 2);
  EXPECT_TRUE(bad(r).ok());
  PhaseRecord x = r;
  x.end_s = 0.5;
  EXPECT_THAT(Message(bad(x)), HasSubstr("ends before it starts"));
  x = r;
  x.start_s = -1;
  EXPECT_THAT(Message(bad(x)), HasSubstr("before it was queued"));
  x = r;
  x.end_s = std::numeric_limits<double>::quiet_NaN();
  EXPECT_THAT(Message(bad(x)), HasSubstr("not finite"));
  x = r;
  x.outcome = static_cast<PhaseOutcome>(17);
  EXPECT_THAT(Message(bad(x)), HasSubstr("no valid outcome"));
  x = r;
  x.resource = "w/cpu";  // a profile on a CPU
  EXPECT_THAT(Message(bad(x)), HasSubstr("must run on its worker's device"));
  x = r;
  x.resource = "w/device";  // a CPU worker's measuring device
  EXPECT_TRUE(bad(x).ok()) << bad(x);
  x.resource = "other/device";
  EXPECT_THAT(Message(bad(x)), HasSubstr("must run on its worker's device"));
  x = Rec(9, 4, PhaseKind::kBuild, "w", 0, 1, 2);
  x.resource = "w/device";
  EXPECT_THAT(Message(bad(x)), HasSubstr("build must run"));
  x = Rec(9, 4, PhaseKind::kBuild, "w", 0, 1, 2);
  x.resource = "w/gpu";
  EXPECT_THAT(Message(bad(x)), HasSubstr("build must run"));
  x = Rec(9, 4, PhaseKind::kUpdate, "w/gpu", 0, 1, 2);
  EXPECT_THAT(Message(bad(x)), HasSubstr("server-cpu"));
  EXPECT_THAT(Message(CheckTimeline({r, r})), HasSubstr("appears twice"));
}

TEST(TimelineCheckTest, EveryStartedPhaseNeedsAnOutcome) {
  std::vector<PhaseRecord> log = GoodLog();
  std::vector<Assignment> started;
  for (const PhaseRecord& r : log) {
    started.push_back({r.phase, r.job, r.kind, r.resource, r.worker, r.start_s});
  }
  EXPECT_TRUE(CheckTimeline(log, started).ok());
  Assignment extra{42, 3, PhaseKind::kProfile, "v/gpu", "v", 20};
  started.push_back(extra);
  EXPECT_THAT(Message(CheckTimeline(log, started)),
              HasSubstr("phase 42 (job 3, profile, v/gpu, started at 20) has no outcome"));
  started.pop_back();
  started[0].start_s = 0.5;
  EXPECT_THAT(Message(CheckTimeline(log, started)), HasSubstr("does not match its record"));
  started.erase(started.begin());
  EXPECT_THAT(Message(CheckTimeline(log, started)), HasSubstr("never started"));
}

TEST(TimelineCheckTest, HasInterleaving) {
  EXPECT_FALSE(HasInterleaving({}));
  // One job only: never interleaved.
  EXPECT_FALSE(HasInterleaving({Rec(1, 1, PhaseKind::kEnumerate, "server-cpu/0", 0, 0, 1),
                                Rec(2, 1, PhaseKind::kBuild, "w", 1, 1, 2)}));
  // Two jobs back to back: not interleaved.
  EXPECT_FALSE(HasInterleaving({Rec(1, 1, PhaseKind::kEnumerate, "server-cpu/0", 0, 0, 1),
                                Rec(2, 2, PhaseKind::kEnumerate, "server-cpu/0", 0, 1, 2)}));
  // Overlap on different resources.
  EXPECT_TRUE(HasInterleaving({Rec(1, 1, PhaseKind::kBuild, "w", 0, 0, 2),
                               Rec(2, 2, PhaseKind::kProfile, "w", 0, 1, 3)}));
  // Overlap with an earlier job hidden behind a later phase of the same job.
  EXPECT_TRUE(HasInterleaving({Rec(1, 1, PhaseKind::kBuild, "w", 0, 0, 10),
                               Rec(2, 2, PhaseKind::kEnumerate, "server-cpu/0", 0, 1, 2),
                               Rec(3, 2, PhaseKind::kProfile, "w", 2, 3, 11)}));
  EXPECT_TRUE(HasInterleaving({Rec(1, 1, PhaseKind::kBuild, "w", 0, 0, 10),
                               Rec(2, 2, PhaseKind::kEnumerate, "server-cpu/0", 0, 1, 12),
                               Rec(3, 2, PhaseKind::kProfile, "w", 12, 12, 13),
                               Rec(4, 1, PhaseKind::kProfile, "v", 10, 11, 13)}));
}

std::map<JobId, int> P(JobId job, int max_batches) { return {{job, max_batches}}; }

PhaseRecord InBatch(PhaseRecord r, int64_t batch) {
  r.batch = batch;
  return r;
}

// Job 1 with two batches out at once (P = 2).
std::vector<PhaseRecord> ParallelLog() {
  return {
      Rec(1, 1, PhaseKind::kEnumerate, "server-cpu/0", 0, 0, 1),
      InBatch(Rec(2, 1, PhaseKind::kBuild, "w1", 1, 1, 2), 1),
      Rec(3, 1, PhaseKind::kEnumerate, "server-cpu/0", 1, 1, 2),
      InBatch(Rec(4, 1, PhaseKind::kBuild, "w2", 2, 2, 3), 2),
      InBatch(Rec(5, 1, PhaseKind::kProfile, "w1", 2, 2, 5), 1),
      InBatch(Rec(6, 1, PhaseKind::kProfile, "w2", 3, 3, 6), 2),
      InBatch(Rec(7, 1, PhaseKind::kUpdate, "server-cpu/0", 5, 5, 6), 1),
      InBatch(Rec(8, 1, PhaseKind::kUpdate, "server-cpu/0", 6, 6, 7), 2),
      Rec(9, 1, PhaseKind::kMeasure, "w1", 7, 7, 8),
  };
}

TEST(TimelineCheckTest, ParallelBatchesFollowTheirOwnChains) {
  const std::vector<PhaseRecord> log = ParallelLog();
  EXPECT_TRUE(CheckTimeline(log, P(1, 2)).ok()) << CheckTimeline(log, P(1, 2));
  // Without its P the job must run one phase at a time.
  EXPECT_THAT(Message(CheckTimeline(log)), HasSubstr("job 1 has two phases in flight at once"));
  // More batches on workers at once than P.
  EXPECT_THAT(Message(CheckTimeline(log, P(1, 1))), HasSubstr("has two phases in flight"));
  std::vector<PhaseRecord> three = log;
  three.push_back(InBatch(Rec(10, 1, PhaseKind::kBuild, "w3", 2, 2, 4), 3));
  EXPECT_THAT(Message(CheckTimeline(three, P(1, 2))),
              HasSubstr("job 1 has 3 worker phases in flight at 2, more than its 2 batches"));
  // A batch's profile queued before its build ended.
  std::vector<PhaseRecord> early = log;
  early[4].queued_s = 1.5;
  EXPECT_THAT(Message(CheckTimeline(early, P(1, 2))), HasSubstr("job 1 batch 1: phase 5"));
  // Two server phases of the job at once.
  std::vector<PhaseRecord> servers = log;
  servers[7].resource = "server-cpu/1";
  servers[7].start_s = 5.5;
  servers[7].queued_s = 5.5;
  EXPECT_THAT(Message(CheckTimeline(servers, P(1, 2))),
              HasSubstr("job 1 (its server phases) has two phases in flight at once"));
  // The measure before the last batch ended.
  std::vector<PhaseRecord> measure = log;
  measure[8].queued_s = 6.5;
  EXPECT_THAT(Message(CheckTimeline(measure, P(1, 2))),
              HasSubstr("before its last batch ended at 7"));
}

}  // namespace
}  // namespace iosfarm::scheduler::farm
