#include "server/farm_database.h"

#include <atomic>
#include <cstdint>
#include <thread>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "server/store_test_rows.h"
#include "server/store_test_util.h"

namespace iosfarm::server {
namespace {

using ::testing::HasSubstr;

class FarmDatabaseTest : public TempDirTest {
 protected:
  FarmDatabase Open(const std::string& name = "farm.db") {
    return OpenTestDatabase(PathOf(name));
  }
};

TEST_F(FarmDatabaseTest, ReopenKeepsEverything) {
  int64_t job_id = 0;
  {
    FarmDatabase store = Open("keep.db");
    ASSERT_NE(store.jobs, nullptr);
    ASSERT_TRUE(store.latencies->UpsertDevice("h100", "H100", "cuda", 1).ok());
    ASSERT_TRUE(
        store.latencies->PutLatencies("h100", {{11, Latency(0.7)}, {12, Latency(0.8)}}).ok());
    ASSERT_TRUE(store.jobs->PutModel(Model("d1", "m1")).ok());
    job_id = *store.jobs->CreateJob(Job("d1", "h100"));
    ASSERT_TRUE(store.jobs->UpdateJobState(job_id, JobState::kRunning, "", 3).ok());
    JobRow progress;
    progress.id = job_id;
    progress.blocks_done = 2;
    progress.phase = "update";
    ASSERT_TRUE(store.jobs->UpdateJobProgress(progress).ok());
    ASSERT_TRUE(store.jobs->PutResult(FullResult(job_id)).ok());
    PhaseLogRow phase;
    phase.job_id = job_id;
    phase.phase = "measure";
    ASSERT_TRUE(store.jobs->AppendPhase(phase).ok());
  }
  FarmDatabase store = Open("keep.db");
  ASSERT_NE(store.jobs, nullptr);
  EXPECT_TRUE(*store.latencies->HasDevice("h100"));
  EXPECT_EQ(*store.latencies->CountLatencies("h100"), 2);
  EXPECT_DOUBLE_EQ(store.latencies->LookupLatencies("h100", {12})->at(12).median_ms, 0.8);
  EXPECT_TRUE(store.jobs->GetModel("d1")->has_value());
  const JobRow job = **store.jobs->GetJob(job_id);
  EXPECT_EQ(job.state, JobState::kRunning);
  EXPECT_EQ(job.blocks_done, 2);
  EXPECT_EQ(job.phase, "update");
  EXPECT_EQ((*store.jobs->GetResult(job_id))->measured.size(), 3u);
  EXPECT_EQ(store.jobs->ListPhases(job_id)->size(), 1u);
  // Ids continue after the highest ever used.
  EXPECT_EQ(*store.jobs->CreateJob(Job("d1", "h100")), job_id + 1);
}

// Both stores use one connection: either may outlive the other, and the
// connection's checks answer for both.
TEST_F(FarmDatabaseTest, StoresShareOneConnectionThatOutlivesEither) {
  FarmDatabase store = Open();
  ASSERT_NE(store.jobs, nullptr);
  EXPECT_EQ(store.jobs->path(), PathOf("farm.db"));
  EXPECT_EQ(store.latencies->path(), PathOf("farm.db"));
  EXPECT_TRUE(store.connection->CheckUsable().ok());
  std::unique_ptr<LatencyDb> latencies = std::move(store.latencies);
  store.connection.reset();
  ASSERT_TRUE(latencies->PutLatencies("h100", {{1, Latency(1.0)}}).ok());
  ASSERT_TRUE(store.jobs->PutModel(Model("d1", "m1")).ok());
  store.jobs.reset();
  EXPECT_EQ(*latencies->CountLatencies("h100"), 1);
}

TEST_F(FarmDatabaseTest, AFileThatIsNotADatabaseOpensNeitherStore) {
  WriteFileBytes(PathOf("notes.txt"), "not a database\n");
  auto database = OpenFarmDatabase(PathOf("notes.txt"));
  ASSERT_FALSE(database.ok());
  EXPECT_TRUE(absl::IsInvalidArgument(database.status())) << database.status();
  EXPECT_THAT(std::string(database.status().message()), HasSubstr("not an iosfarm database"));
}

TEST_F(FarmDatabaseTest, ConcurrentUseFromSeveralThreads) {
  FarmDatabase store = Open();
  ASSERT_NE(store.jobs, nullptr);
  ASSERT_TRUE(store.jobs->PutModel(Model("d1", "m1")).ok());
  constexpr int kThreads = 8;
  constexpr int kRounds = 50;
  std::atomic<int> failures{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int round = 0; round < kRounds; ++round) {
        // Overlapping signatures across threads: first measurement wins.
        std::vector<std::pair<uint64_t, StoredLatency>> rows;
        for (int i = 0; i < 10; ++i) {
          rows.emplace_back(static_cast<uint64_t>(round * 10 + i), Latency(t + 1.0));
        }
        if (!store.latencies->PutLatencies("h100", rows).ok()) ++failures;
        auto id = store.jobs->CreateJob(Job("d1", "h100"));
        if (!id.ok()) {
          ++failures;
          continue;
        }
        JobRow progress;
        progress.id = *id;
        progress.blocks_done = round;
        if (!store.jobs->UpdateJobProgress(progress).ok()) ++failures;
        if (!store.jobs->UpdateJobState(*id, JobState::kRunning, "", round).ok()) ++failures;
        if (!store.latencies->LookupLatencies("h100", {0, 1, 2}).ok()) ++failures;
        if (!store.jobs->ListJobs({}).ok()) ++failures;
      }
    });
  }
  for (auto& thread : threads) thread.join();
  EXPECT_EQ(failures.load(), 0);
  EXPECT_EQ(*store.latencies->CountLatencies("h100"), kRounds * 10);
  JobFilter filter;
  filter.limit = 0;
  auto jobs = store.jobs->ListJobs(filter);
  ASSERT_TRUE(jobs.ok());
  ASSERT_EQ(jobs->size(), static_cast<size_t>(kThreads * kRounds));
  for (size_t i = 0; i < jobs->size(); ++i) {
    EXPECT_EQ((*jobs)[i].id, static_cast<int64_t>(i) + 1);
    EXPECT_EQ((*jobs)[i].state, JobState::kRunning);
  }
  auto devices = store.latencies->ListDevices();
  ASSERT_EQ(devices->size(), 1u);
  EXPECT_EQ((*devices)[0].latencies, kRounds * 10);
  EXPECT_EQ((*devices)[0].ignored_measurements, (kThreads - 1) * kRounds * 10);
}

}  // namespace
}  // namespace iosfarm::server
