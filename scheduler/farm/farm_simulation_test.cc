#include "scheduler/farm/farm_simulation.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "common/strings.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "scheduler/farm/timeline_check.h"

namespace iosfarm::scheduler::farm {
namespace {

using ::testing::ElementsAre;
using ::testing::SizeIs;

// Two identical jobs: enumerate 1, build 2, profile 4, update 3, measure 2;
// one worker "w" of key "k".
SimConfig TwoJobs(Policy policy, int slots) {
  SimConfig config;
  config.policy = policy;
  config.server_slots = slots;
  SimJob job;
  job.device_key = "k";
  job.iterations = {{1, 2, 4, 3}};
  job.measure_s = 2;
  config.jobs = {job, job};
  config.workers = {{"w", "k"}};
  return config;
}

// "job:kind@resource[start,end]" sorted by (start, job).
std::vector<std::string> Timeline(const SimResult& result) {
  std::vector<PhaseRecord> records = result.records;
  std::sort(records.begin(), records.end(), [](const PhaseRecord& a, const PhaseRecord& b) {
    return std::tie(a.start_s, a.job) < std::tie(b.start_s, b.job);
  });
  std::vector<std::string> out;
  for (const PhaseRecord& r : records) {
    out.push_back(StrCat(r.job, ":", PhaseKindName(r.kind), "@", r.resource, "[", r.start_s, ",",
                         r.end_s, "]"));
  }
  return out;
}

SimResult RunSim(const SimConfig& config) {
  StatusOr<SimResult> result = RunFarmSimulation(config);
  EXPECT_TRUE(result.ok()) << result.status();
  if (!result.ok()) return {};
  Status check = CheckTimeline(result->records, result->assignments, result->parallel_batches);
  EXPECT_TRUE(check.ok()) << check;
  return *std::move(result);
}

// One job of `batches` batches (enumerate 0.02 s, build 0.1 s, profile 1 s,
// update 0.02 s; measure 1 s) on `workers` workers of key "k".
SimConfig OneLongJob(int batches, int workers, int parallel) {
  SimConfig config;
  SimJob job;
  job.device_key = "k";
  job.iterations.assign(batches, SimIteration{0.02, 0.1, 1.0, 0.02});
  job.measure_s = 1;
  job.max_parallel_batches = parallel;
  config.jobs = {job};
  for (int w = 0; w < workers; ++w) config.workers.push_back({StrCat("w", w), "k"});
  return config;
}

// A job of one batch of OneLongJob's shape arriving at `arrival_s` (key "k").
SimJob OneBatchJob(double arrival_s) {
  SimJob job;
  job.device_key = "k";
  job.arrival_s = arrival_s;
  job.iterations = {SimIteration{0.02, 0.1, 1.0, 0.02}};
  job.measure_s = 1;
  return job;
}

// Issue 17's goal: one job of 32 batches is at least 6x faster on 8 workers
// than on one, with as many batches out as the key has idle GPUs (P = 0);
// with one batch out (P = 1) the 8 workers do not help at all.
TEST(FarmSimulationTest, ParallelBatchesSpreadOneJobOverTheWorkersOfItsKey) {
  const SimResult one = RunSim(OneLongJob(32, 1, 0));
  const SimResult eight = RunSim(OneLongJob(32, 8, 0));
  const SimResult serial = RunSim(OneLongJob(32, 8, 1));
  EXPECT_TRUE(one.parallel_batches.empty());  // one worker: P = 1
  EXPECT_EQ(eight.parallel_batches.at(0), 8);
  EXPECT_GE(one.makespan_s / eight.makespan_s, 6.0)
      << one.makespan_s << " s on one worker, " << eight.makespan_s << " s on eight";
  EXPECT_NEAR(serial.makespan_s, one.makespan_s, 1e-9);
  // The bound (4.25 s) ignores that the measure cannot start before the
  // last update (about 0.12 + 4 + 0.02 + 1 = 5.14 s at best); each round
  // of 8 profiles also waits for the job's serial enumerates (5.64 s).
  EXPECT_LE(eight.makespan_s, 1.35 * eight.lower_bound_s);
  // Every GPU profiled: 32 profiles over 8 GPUs, 4 each.
  std::map<std::string, int> profiles;
  for (const PhaseRecord& r : eight.records) {
    if (r.kind == PhaseKind::kProfile) ++profiles[r.worker];
  }
  EXPECT_THAT(profiles, SizeIs(8));
  for (const auto& [worker, count] : profiles) EXPECT_EQ(count, 4) << worker;
}

// Fair share: a job with one batch does not wait behind another job's
// twenty. Job 0 has 20 batches out at once on 4 workers; job 1 (one batch)
// arrives at 1.5 s and its profile starts as soon as a GPU frees up.
TEST(FarmSimulationTest, AJobWithOneBatchDoesNotWaitBehindAnothersTwenty) {
  for (Policy policy : {Policy::kInterleaved, Policy::kCriticalPath}) {
    SimConfig config = OneLongJob(40, 4, 20);
    config.policy = policy;
    config.jobs.push_back(OneBatchJob(1.5));
    const SimResult r = RunSim(config);
    double small_end = r.job_end_s[1];
    // Its chain is 2.14 s; each of its two GPU phases waits at most for one
    // profile of the big job (1 s) to end.
    EXPECT_LE(small_end - 1.5, 2.14 + 2.0 + 1e-9) << PolicyName(policy);
    EXPECT_GT(r.job_end_s[0], small_end);
  }
}

// Search places shared in time: with one place, a small job arriving behind
// a 40-batch search gets the place once that search's minimum turn is over
// and its batch out is stored; the large search yields once, resumes
// (paying resume_s on the server) and ends. Holding places until a search
// ends (a minimum turn longer than any search), the small job waits for
// the whole large search.
TEST(FarmSimulationTest, ASmallJobTakesALargeSearchsTurnAndTheLargeOneResumes) {
  auto config_with_turn = [](double min_turn_s) {
    SimConfig config = OneLongJob(40, 4, 1);
    config.jobs[0].resume_s = 0.5;
    config.jobs.push_back(OneBatchJob(1.5));
    AdmissionRules rules;
    rules.places = 1;
    rules.min_turn_s = min_turn_s;
    config.admission = rules;
    return config;
  };
  const SimResult shared = RunSim(config_with_turn(1.0));
  EXPECT_EQ(shared.yields, 1);
  // Its chain is 2.14 s, after the large search's batch out (at most 1.14 s).
  EXPECT_LE(shared.job_end_s[1] - 1.5, 2.14 + 1.14 + 1e-9);
  EXPECT_GT(shared.job_end_s[0], shared.job_end_s[1]);
  int resumed_enumerates = 0;
  for (const PhaseRecord& r : shared.records) {
    resumed_enumerates += r.job == 0 && r.kind == PhaseKind::kEnumerate &&
                          std::abs(r.end_s - r.start_s - 0.52) < 1e-9;
  }
  EXPECT_EQ(resumed_enumerates, 1);  // one enumerate paid the resume

  const SimResult held = RunSim(config_with_turn(1e9));
  EXPECT_EQ(held.yields, 0);
  EXPECT_GT(held.job_end_s[1], held.job_end_s[0]);  // waited for the whole search
  EXPECT_GE(held.job_end_s[1] - 1.5, 40.0);
}

// With a first-turn place beside the one place, the small job arriving
// behind the 40-batch search starts at once and ends within its chain; the
// large search never yields.
TEST(FarmSimulationTest, AFirstTurnPlaceLetsASmallJobPassWithoutAYield) {
  SimConfig config = OneLongJob(40, 4, 1);
  config.jobs[0].resume_s = 0.5;
  config.jobs.push_back(OneBatchJob(1.5));
  AdmissionRules rules;
  rules.places = 1;
  rules.first_turn_places = 1;
  rules.min_turn_s = 1.0;
  config.admission = rules;
  const SimResult r = RunSim(config);
  EXPECT_EQ(r.yields, 0);
  // Its chain is 2.14 s; each of its GPU phases may wait for one profile of
  // the large job (1 s), its server phases for one of the large job's.
  EXPECT_LE(r.job_end_s[1] - 1.5, 2.14 + 2.0 + 2 * 0.02 + 1e-9);
  EXPECT_GT(r.job_end_s[0], r.job_end_s[1]);
}

// Two owners, 20 identical jobs each, two search places: owner b submits
// after owner a's twenty are waiting, yet the places alternate between the
// owners (each holds one) instead of going to a's jobs first.
TEST(FarmSimulationTest, SearchPlacesAreSharedBetweenTwoOwners) {
  SimConfig config;
  for (int w = 0; w < 4; ++w) config.workers.push_back({StrCat("w", w), "k"});
  for (int i = 0; i < 40; ++i) {
    SimJob job;
    job.device_key = "k";
    job.owner = i < 20 ? "a" : "b";
    job.arrival_s = i < 20 ? 0.0 : 0.5;
    job.iterations.assign(3, SimIteration{0.02, 0.1, 1.0, 0.02});
    job.measure_s = 1;
    job.max_parallel_batches = 1;
    config.jobs.push_back(job);
  }
  AdmissionRules rules;
  rules.places = 2;
  config.admission = rules;
  const SimResult r = RunSim(config);
  std::vector<int> order(40);
  for (int i = 0; i < 40; ++i) order[i] = i;
  std::sort(order.begin(), order.end(),
            [&](int x, int y) { return r.job_end_s[x] < r.job_end_s[y]; });
  int b_first_half = 0;
  for (int i = 0; i < 20; ++i) b_first_half += order[i] >= 20;
  // a's first two start before b arrives; from then on each owner holds one.
  EXPECT_GE(b_first_half, 9);
  EXPECT_LE(b_first_half, 11);
  EXPECT_EQ(r.yields, 0);  // nobody needed to yield: places freed often enough
}

// A lost worker with parallel batches: only its batches are built again,
// elsewhere; every batch is updated once; the job ends.
TEST(FarmSimulationTest, ALostWorkerRebuildsOnlyTheBatchesItHeld) {
  SimConfig config = OneLongJob(16, 4, 4);
  config.worker_events = {{2.5, "w1", "", false}};
  const SimResult r = RunSim(config);
  EXPECT_GT(r.phases_lost, 0);
  int updates = 0, lost_builds_or_profiles = 0;
  std::set<int64_t> updated;
  for (const PhaseRecord& rec : r.records) {
    if (rec.kind == PhaseKind::kUpdate) {
      ++updates;
      updated.insert(rec.batch);
    }
    if (rec.outcome == PhaseOutcome::kWorkerLost) {
      ++lost_builds_or_profiles;
      EXPECT_EQ(rec.worker, "w1");
    }
  }
  EXPECT_EQ(updates, 16);
  EXPECT_THAT(updated, SizeIs(16));
  EXPECT_EQ(lost_builds_or_profiles, r.phases_lost);
  EXPECT_GT(r.job_end_s[0], 0);
}

TEST(FarmSimulationTest, InterleavedTwoJobsOneSlot) {
  SimResult r = RunSim(TwoJobs(Policy::kInterleaved, 1));
  EXPECT_THAT(Timeline(r),
              ElementsAre("0:enumerate@server-cpu/0[0,1]", "0:build@w/cpu[1,3]",
                          "1:enumerate@server-cpu/0[1,2]", "0:profile@w/gpu[3,7]",
                          "1:build@w/cpu[3,5]", "0:update@server-cpu/0[7,10]",
                          "1:profile@w/gpu[7,11]", "0:measure@w/gpu[11,13]",
                          "1:update@server-cpu/0[11,14]", "1:measure@w/gpu[14,16]"));
  EXPECT_EQ(r.makespan_s, 16);
  EXPECT_EQ(r.simple_lower_bound_s, 12);  // the chain
  EXPECT_EQ(r.lower_bound_s, 16);         // GPU entry: 1 + 2 + 4, then 4 + 3 + 2: optimal
  EXPECT_DOUBLE_EQ(r.gpu_idle_fraction, 0.25);
  EXPECT_THAT(r.job_end_s, ElementsAre(13, 16));
  EXPECT_TRUE(HasInterleaving(r.records));
}

TEST(FarmSimulationTest, InterleavedTwoJobsTwoSlots) {
  SimResult r = RunSim(TwoJobs(Policy::kInterleaved, 2));
  EXPECT_THAT(Timeline(r),
              ElementsAre("0:enumerate@server-cpu/0[0,1]", "1:enumerate@server-cpu/1[0,1]",
                          "0:build@w/cpu[1,3]", "0:profile@w/gpu[3,7]", "1:build@w/cpu[3,5]",
                          "0:update@server-cpu/0[7,10]", "1:profile@w/gpu[7,11]",
                          "0:measure@w/gpu[11,13]", "1:update@server-cpu/0[11,14]",
                          "1:measure@w/gpu[14,16]"));
  EXPECT_EQ(r.makespan_s, 16);
}

TEST(FarmSimulationTest, SequentialTwoJobs) {
  for (int slots : {1, 2}) {
    SimResult r = RunSim(TwoJobs(Policy::kSequential, slots));
    EXPECT_THAT(Timeline(r),
                ElementsAre("0:enumerate@server-cpu/0[0,1]", "0:build@w/cpu[1,3]",
                            "0:profile@w/gpu[3,7]", "0:update@server-cpu/0[7,10]",
                            "0:measure@w/gpu[10,12]", "1:enumerate@server-cpu/0[12,13]",
                            "1:build@w/cpu[13,15]", "1:profile@w/gpu[15,19]",
                            "1:update@server-cpu/0[19,22]", "1:measure@w/gpu[22,24]"));
    EXPECT_EQ(r.makespan_s, 24);
    EXPECT_FALSE(HasInterleaving(r.records));
  }
}

TEST(FarmSimulationTest, SynchronousTwoJobsTwoSlots) {
  SimResult r = RunSim(TwoJobs(Policy::kSynchronous, 2));
  EXPECT_THAT(Timeline(r),
              ElementsAre("0:enumerate@server-cpu/0[0,1]", "1:enumerate@server-cpu/1[0,1]",
                          "0:build@w/cpu[1,3]", "1:build@w/cpu[3,5]", "0:profile@w/gpu[5,9]",
                          "1:profile@w/gpu[9,13]", "0:update@server-cpu/0[13,16]",
                          "1:update@server-cpu/1[13,16]", "0:measure@w/gpu[16,18]",
                          "1:measure@w/gpu[18,20]"));
  EXPECT_EQ(r.makespan_s, 20);
}

TEST(FarmSimulationTest, SynchronousOneSlotMatchesSequentialHere) {
  SimResult r = RunSim(TwoJobs(Policy::kSynchronous, 1));
  EXPECT_EQ(r.makespan_s, 24);
  EXPECT_THAT(Timeline(r)[0], "0:enumerate@server-cpu/0[0,1]");
  EXPECT_THAT(Timeline(r)[1], "1:enumerate@server-cpu/0[1,2]");
  EXPECT_THAT(Timeline(r)[2], "0:build@w/cpu[2,4]");
}

TEST(FarmSimulationTest, WorkerLossRebuildsOnAnotherWorker) {
  SimConfig config = TwoJobs(Policy::kInterleaved, 1);
  config.jobs.resize(1);
  config.workers = {{"w1", "k"}, {"w2", "k"}};
  config.worker_events = {{5, "w1", "", false}};
  SimResult r = RunSim(config);
  EXPECT_THAT(Timeline(r),
              ElementsAre("0:enumerate@server-cpu/0[0,1]", "0:build@w1/cpu[1,3]",
                          "0:profile@w1/gpu[3,5]", "0:build@w2/cpu[5,7]",
                          "0:profile@w2/gpu[7,11]", "0:update@server-cpu/0[11,14]",
                          "0:measure@w2/gpu[14,16]"));
  EXPECT_EQ(r.phases_lost, 1);
  EXPECT_EQ(r.makespan_s, 16);
}

TEST(FarmSimulationTest, JobsWaitForAWorkerOfTheirKey) {
  SimConfig config = TwoJobs(Policy::kInterleaved, 1);
  config.jobs.resize(1);
  config.jobs[0].device_key = "h100";
  config.worker_events = {{10, "h0", "h100", true}};
  SimResult r = RunSim(config);
  EXPECT_THAT(Timeline(r)[1], "0:build@h0/cpu[10,12]");
  EXPECT_EQ(r.makespan_s, 21);

  config.worker_events.clear();
  StatusOr<SimResult> stuck = RunFarmSimulation(config);
  EXPECT_EQ(stuck.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(std::string(ToStd(stuck.status().message())), ::testing::HasSubstr("never finish"));
}

TEST(FarmSimulationTest, RejectsBadConfigs) {
  SimConfig config = TwoJobs(Policy::kInterleaved, 1);
  config.jobs[1].iterations[0].build_s = -1;
  EXPECT_EQ(RunFarmSimulation(config).status().code(), absl::StatusCode::kInvalidArgument);
  config = TwoJobs(Policy::kInterleaved, 1);
  config.workers.push_back({"w", "k"});
  EXPECT_EQ(RunFarmSimulation(config).status().code(), absl::StatusCode::kInvalidArgument);
  config = TwoJobs(Policy::kInterleaved, 1);
  config.jobs[0].device_key = "";
  EXPECT_EQ(RunFarmSimulation(config).status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(FarmSimulationTest, LowerBoundTakesTheBusiestResourceClass) {
  SimConfig config = TwoJobs(Policy::kInterleaved, 1);
  config.jobs = std::vector<SimJob>(6, config.jobs[0]);
  // GPU: 6 x 6 = 36 on one worker, not before 1 + 2; server: 6 x 4 = 24 then
  // a measure of 2; chain 12.
  EXPECT_EQ(SimpleLowerBound(config), 36);
  EXPECT_EQ(LowerBound(config), 39);
  config.workers.push_back({"w2", "k"});
  EXPECT_EQ(SimpleLowerBound(config), 24);  // now the server slot
  EXPECT_EQ(LowerBound(config), 26);
  config.server_slots = 4;
  EXPECT_EQ(SimpleLowerBound(config), 18);
  EXPECT_EQ(LowerBound(config), 21);
  config.jobs[0].arrival_s = 100;
  EXPECT_EQ(SimpleLowerBound(config), 112);
  EXPECT_EQ(LowerBound(config), 112);
}

TEST(FarmSimulationTest, InterleavedSpreadsBuildsOverGpus) {
  // Many jobs on 10 workers of one key: builds (short) must not pile up on
  // the first workers by name, or their GPUs' pinned queues grow while other
  // GPUs idle.
  SimConfig config;
  config.server_slots = 40;
  SimJob job;
  job.device_key = "k";
  job.iterations.assign(3, {1.0, 8.3, 39.5, 44.0});
  job.measure_s = 10;
  config.jobs.assign(200, job);
  for (int w = 0; w < 10; ++w) config.workers.push_back({StrCat("w", w), "k"});
  config.measure_latency = false;
  SimResult r = RunSim(config);
  EXPECT_LE(r.makespan_s, 1.05 * r.lower_bound_s) << r.makespan_s << " vs " << r.lower_bound_s;
  EXPECT_LT(r.gpu_idle_fraction, 0.05);
}

SimConfig RandomConfig(std::mt19937& rng, Policy policy, bool churn) {
  auto uniform = [&](double lo, double hi) {
    return std::uniform_real_distribution<double>(lo, hi)(rng);
  };
  const std::vector<std::string> keys = {"a", "b"};
  SimConfig config;
  config.policy = policy;
  config.server_slots = 1 + static_cast<int>(rng() % 3);
  for (int w = 0; w < 4; ++w) {
    config.workers.push_back({StrCat("w", w), keys[w % 2]});
  }
  const int jobs = 1 + static_cast<int>(rng() % 12);
  for (int j = 0; j < jobs; ++j) {
    SimJob job;
    job.device_key = keys[rng() % 2];
    job.arrival_s = (rng() % 3 == 0) ? 0 : uniform(0, 100);
    const int iterations = static_cast<int>(rng() % 4);
    for (int i = 0; i < iterations; ++i) {
      job.iterations.push_back(
          {uniform(0, 2), uniform(0, 10), uniform(0, 40), uniform(0, 45)});
    }
    job.measure_s = uniform(0, 10);
    config.jobs.push_back(job);
  }
  if (churn) {
    for (int e = 0; e < 6; ++e) {
      const std::string name = StrCat("w", rng() % 4);
      config.worker_events.push_back({uniform(0, 300), name, "", false});
      config.worker_events.push_back({uniform(300, 400), StrCat("j", e), keys[rng() % 2], true});
    }
    // Always keep one worker of each key at the end.
    config.worker_events.push_back({500, "late-a", "a", true});
    config.worker_events.push_back({500, "late-b", "b", true});
  }
  return config;
}

TEST(FarmSimulationTest, RandomStressHoldsInvariantsUnderEveryPolicy) {
  std::mt19937 rng(2026);
  for (int round = 0; round < 150; ++round) {
    for (Policy policy :
         {Policy::kInterleaved, Policy::kSequential, Policy::kSynchronous, Policy::kCriticalPath}) {
      const bool churn = round % 3 == 2;
      SimConfig config = RandomConfig(rng, policy, churn);
      config.measure_latency = false;
      if (round % 2 == 1) {  // parallel batches (the synchronous policy runs one)
        for (SimJob& job : config.jobs) {
          job.max_parallel_batches = std::vector<int>{0, 1, 2, 3, 5}[rng() % 5];
        }
      }
      StatusOr<SimResult> r = RunFarmSimulation(config);
      ASSERT_TRUE(r.ok()) << PolicyName(policy) << " round " << round << ": " << r.status();
      if (policy == Policy::kSynchronous) {
        EXPECT_TRUE(r->parallel_batches.empty());
      }
      Status check = CheckTimeline(r->records, r->assignments, r->parallel_batches);
      ASSERT_TRUE(check.ok()) << PolicyName(policy) << " round " << round << ": " << check;
      if (!churn) {
        EXPECT_GE(r->makespan_s, r->lower_bound_s - 1e-9);
        EXPECT_EQ(r->phases_lost, 0);
      }
      if (policy == Policy::kSequential) {
        EXPECT_FALSE(HasInterleaving(r->records));
      }
    }
  }
}

TEST(FarmSimulationTest, SynchronousOverlapsOnlyTheSamePhaseKind) {
  SimConfig config = TwoJobs(Policy::kSynchronous, 3);
  config.jobs = std::vector<SimJob>(5, config.jobs[0]);
  config.jobs[0].iterations.resize(3, config.jobs[0].iterations[0]);
  for (SimJob& job : config.jobs) job.iterations = config.jobs[0].iterations;
  config.workers = {{"w1", "k"}, {"w2", "k"}};
  SimResult r = RunSim(config);
  for (const PhaseRecord& a : r.records) {
    for (const PhaseRecord& b : r.records) {
      if (a.start_s < b.end_s && b.start_s < a.end_s) {
        EXPECT_EQ(a.kind, b.kind) << a.phase << " and " << b.phase;
      }
    }
  }
}

// bench/farm_policy_bench's mixed staggered set (the thesis's phase times,
// jobs of x0.5-1.5 size and 2-5 iterations arriving at 0, 0, 60 and 120 s,
// one GPU, two server slots): FIFO leaves the late long job on the critical
// path; least slack first finishes at the tight lower bound.
TEST(FarmSimulationTest, CriticalPathProtectsTheLateLongJob) {
  const auto job = [](double scale, int iterations, double arrival) {
    SimJob j;
    j.device_key = "v100";
    j.arrival_s = arrival;
    j.iterations.assign(iterations, {1.0 * scale, 8.3 * scale, 39.5 * scale, 44.0 * scale});
    j.measure_s = 10 * scale;
    return j;
  };
  SimConfig config;
  config.server_slots = 2;
  config.jobs = {job(1.0, 3, 0), job(0.5, 5, 0), job(1.5, 2, 60), job(1.0, 4, 120)};
  config.workers = {{"w0", "v100"}};
  config.policy = Policy::kInterleaved;
  const SimResult fifo = RunSim(config);
  config.policy = Policy::kCriticalPath;
  const SimResult critical = RunSim(config);
  EXPECT_GT(fifo.makespan_s, 1.2 * fifo.lower_bound_s);
  EXPECT_LE(critical.makespan_s, 1.01 * critical.lower_bound_s);
  EXPECT_LT(critical.makespan_s, fifo.makespan_s);
}

TEST(FarmSimulationTest, Deterministic) {
  for (Policy policy :
       {Policy::kInterleaved, Policy::kSequential, Policy::kSynchronous, Policy::kCriticalPath}) {
    std::mt19937 rng1(99), rng2(99);
    SimConfig c1 = RandomConfig(rng1, policy, true), c2 = RandomConfig(rng2, policy, true);
    SimResult r1 = RunSim(c1), r2 = RunSim(c2);
    EXPECT_EQ(Timeline(r1), Timeline(r2));
    ASSERT_EQ(r1.records.size(), r2.records.size());
    for (size_t i = 0; i < r1.records.size(); ++i) {
      EXPECT_EQ(r1.records[i].phase, r2.records[i].phase);
    }
  }
}

}  // namespace
}  // namespace iosfarm::scheduler::farm
