// Two jobs that need the same stages over one database and one
// SignatureClaims, as a server's slots run them: every stage is measured
// once between them, also when one stores and releases a stage between the
// other's lookup and its claim.
#include "server/job_runner.h"

#include <atomic>
#include <functional>
#include <thread>
#include <utility>

#include "graph/models/zoo.h"
#include "gtest/gtest.h"
#include "server/farm_database_test_util.h"

namespace iosfarm::server {
namespace {

// A worker's answer for `build`: a latency that depends on the signature
// only.
PhaseReport Measured(const BuildRequest& build) {
  PhaseReport report;
  report.ok = true;
  for (const auto& request : build.stages) {
    StageLatencyReport latency;
    latency.signature = request.signature;
    const double ms = 0.01 + static_cast<double>(request.signature % 1000) / 1000;
    latency.figures = {ms, ms, ms, 0, 1};
    report.latencies.push_back(latency);
  }
  return report;
}

// Drives `runner` to the end of its search as the coordinator would, every
// batch measured at once; returns how many stages it measured.
StatusOr<int64_t> SearchToTheEnd(JobRunner& runner, LatencyDb& store, SignatureClaims& claims) {
  int64_t measured = 0;
  for (int64_t batch = 1;;) {
    ASSIGN_OR_RETURN(JobRunner::Next next, runner.Enumerate(store, claims));
    if (next == JobRunner::Next::kMeasure) return measured;
    if (next != JobRunner::Next::kBuild) {  // the other job is measuring what we need
      std::this_thread::yield();
      continue;
    }
    const int64_t id = batch++;
    ASSIGN_OR_RETURN(BuildRequest build, runner.TakeBatch(id));
    RETURN_IF_ERROR(runner.ApplyProfile(id, Measured(build), "w", "sim", store, claims, 1));
    measured += static_cast<int64_t>(build.stages.size());
  }
}

StatusOr<std::unique_ptr<JobRunner>> TwinRunner(int64_t id, const std::string& key) {
  ASSIGN_OR_RETURN(graph::Graph graph, graph::models::BuildZooModel("inception_v3", 1));
  JobRow job;
  job.id = id;
  job.device_key = key;
  job.options.batch_size_limit = 4;
  return JobRunner::Create(job, std::move(graph), FarmSearchBudget(), /*cores=*/0, {}, nullptr);
}

int64_t IgnoredMeasurements(LatencyDb& store, const std::string& key) {
  auto devices = store.ListDevices();
  EXPECT_TRUE(devices.ok()) << devices.status();
  for (const DeviceRow& device : *devices) {
    if (device.key == key) return device.ignored_measurements;
  }
  return 0;
}

// Runs `before_claim` once, just before job 2's next claim: what another
// job does between job 2's database lookup and its claim.
class InterleavingClaims : public SignatureClaims {
 public:
  std::function<void()> before_claim;

  std::vector<uint64_t> Claim(const std::string& device_key, int64_t job,
                              const std::vector<uint64_t>& signatures) override {
    if (job == 2 && before_claim) std::exchange(before_claim, nullptr)();
    return SignatureClaims::Claim(device_key, job, signatures);
  }
};

class JobRunnerClaimsTest : public FarmDatabaseTest {};

TEST_F(JobRunnerClaimsTest, AStageStoredBetweenALookupAndAClaimIsNotMeasuredAgain) {
  InterleavingClaims claims;
  auto first = TwinRunner(1, "k");
  auto second = TwinRunner(2, "k");
  ASSERT_TRUE(first.ok()) << first.status();
  ASSERT_TRUE(second.ok()) << second.status();
  auto next = (*first)->Enumerate(*database_.latencies, claims);
  ASSERT_TRUE(next.ok()) << next.status();
  ASSERT_EQ(*next, JobRunner::Next::kBuild);
  auto build = (*first)->TakeBatch(1);
  ASSERT_TRUE(build.ok()) << build.status();
  ASSERT_FALSE(build->stages.empty());
  // Job 2 looks its first stages (job 1's) up and finds them unknown; job 1
  // stores them and releases its claims before job 2 claims them.
  claims.before_claim = [&] {
    ASSERT_TRUE((*first)
                    ->ApplyProfile(1, Measured(*build), "w", "sim", *database_.latencies, claims, 1)
                    .ok());
  };
  next = (*second)->Enumerate(*database_.latencies, claims);
  ASSERT_TRUE(next.ok()) << next.status();
  EXPECT_FALSE(claims.before_claim) << "job 2 claimed nothing";
  if (*next == JobRunner::Next::kBuild) {
    auto theirs = (*second)->TakeBatch(1);
    ASSERT_TRUE(theirs.ok()) << theirs.status();
    for (const auto& mine : build->stages) {
      for (const auto& other : theirs->stages) {
        EXPECT_NE(mine.signature, other.signature) << "job 2 would measure it again";
      }
    }
    ASSERT_TRUE(
        (*second)
            ->ApplyProfile(1, Measured(*theirs), "w", "sim", *database_.latencies, claims, 1)
            .ok());
  }
  EXPECT_EQ(IgnoredMeasurements(*database_.latencies, "k"), 0);
}

TEST_F(JobRunnerClaimsTest, TwinJobsOnTwoThreadsMeasureEveryStageOnce) {
  for (int round = 0; round < 4; ++round) {
    const std::string key = "twins-" + std::to_string(round);
    SignatureClaims claims;
    auto first = TwinRunner(1, key);
    auto second = TwinRunner(2, key);
    ASSERT_TRUE(first.ok()) << first.status();
    ASSERT_TRUE(second.ok()) << second.status();
    JobRunner* runners[2] = {first->get(), second->get()};
    StatusOr<int64_t> measured[2] = {int64_t{0}, int64_t{0}};
    std::atomic<int> ready{0};
    std::vector<std::thread> threads;
    for (int i = 0; i < 2; ++i) {
      threads.emplace_back([&, i] {
        ready.fetch_add(1);
        while (ready.load() < 2) std::this_thread::yield();  // both start together
        measured[i] = SearchToTheEnd(*runners[i], *database_.latencies, claims);
      });
    }
    for (std::thread& thread : threads) thread.join();
    ASSERT_TRUE(measured[0].ok()) << measured[0].status();
    ASSERT_TRUE(measured[1].ok()) << measured[1].status();
    auto stored = database_.latencies->CountLatencies(key);
    ASSERT_TRUE(stored.ok()) << stored.status();
    EXPECT_GT(*stored, 0);
    EXPECT_EQ(*measured[0] + *measured[1], *stored) << "round " << round;
    EXPECT_EQ(IgnoredMeasurements(*database_.latencies, key), 0) << "round " << round;
  }
}

}  // namespace
}  // namespace iosfarm::server
