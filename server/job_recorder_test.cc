// JobRecorder over a real SQLite file: writes wait until Flush, keep their
// order across threads, and one failed write does not stop the others.
#include "server/job_recorder.h"

#include <atomic>
#include <thread>
#include <vector>

#include "gtest/gtest.h"
#include "server/farm_database_test_util.h"

namespace iosfarm::server {
namespace {

namespace farm = scheduler::farm;

class JobRecorderTest : public FarmDatabaseTest {
 protected:
  void SetUp() override {
    FarmDatabaseTest::SetUp();
    if (HasFatalFailure()) return;
    store_ = database_.jobs.get();
    ModelRow model;
    model.digest = "d1";
    model.name = "squeezenet";
    model.source = "zoo";
    model.batch = 1;
    ASSERT_TRUE(store_->PutModel(model).ok());
  }

  int64_t NewJob() {
    JobRow job;
    job.model_digest = "d1";
    job.device_key = "k";
    auto id = store_->CreateJob(job);
    EXPECT_TRUE(id.ok()) << id.status();
    return id.value_or(0);
  }

  JobRow Stored(int64_t id) {
    auto row = store_->GetJob(id);
    EXPECT_TRUE(row.ok() && row->has_value());
    return row.ok() && row->has_value() ? **row : JobRow{};
  }

  JobStore* store_ = nullptr;
};

TEST_F(JobRecorderTest, WritesWaitForFlushAndKeepTheirOrder) {
  const int64_t id = NewJob();
  JobRecorder recorder(store_);
  JobRow progress;
  progress.id = id;
  progress.phase = "enumerate";
  progress.blocks_total = 4;
  recorder.QueueProgress(progress);
  recorder.QueueState(id, JobState::kRunning, "", 1000);
  progress.phase = "build";
  progress.blocks_done = 1;
  recorder.QueueProgress(progress);
  recorder.QueueResumes(id, 2);
  EXPECT_EQ(recorder.pending(), 4u);
  EXPECT_EQ(Stored(id).state, JobState::kQueued);  // nothing written before Flush

  recorder.Flush();
  EXPECT_EQ(recorder.pending(), 0u);
  const JobRow row = Stored(id);
  EXPECT_EQ(row.state, JobState::kRunning);
  EXPECT_EQ(row.started_unix_ms, 1000);
  EXPECT_EQ(row.phase, "build");  // the later progress write won
  EXPECT_EQ(row.blocks_done, 1);
  EXPECT_EQ(row.resumes, 2);

  recorder.QueueResumes(id, 0);  // 0 clears
  recorder.QueueState(id, JobState::kSucceeded, "", 2000);
  recorder.Flush();
  EXPECT_EQ(Stored(id).resumes, 0);
  EXPECT_EQ(Stored(id).state, JobState::kSucceeded);
  EXPECT_EQ(Stored(id).finished_unix_ms, 2000);
}

TEST_F(JobRecorderTest, AFailedWriteIsLoggedAndTheRestAreStillWritten) {
  const int64_t id = NewJob();
  JobRecorder recorder(store_);
  recorder.QueueState(id, JobState::kSucceeded, "", 10);  // queued -> succeeded is refused
  recorder.QueueState(987654, JobState::kRunning, "", 10);  // unknown job
  recorder.QueueState(id, JobState::kCancelled, "cancelled by the client", 20);
  recorder.Flush();
  const JobRow row = Stored(id);
  EXPECT_EQ(row.state, JobState::kCancelled);
  EXPECT_EQ(row.error, "cancelled by the client");
}

TEST_F(JobRecorderTest, PhaseRecordsBecomeLogRowsWithTheirStages) {
  const int64_t id = NewJob();
  JobRecorder recorder(store_);
  farm::PhaseRecord record;
  record.job = id;
  record.kind = farm::PhaseKind::kProfile;
  record.resource = "w1/gpu";
  record.worker = "w1";
  record.outcome = farm::PhaseOutcome::kWorkerLost;
  record.queued_s = 1;
  record.start_s = 2;
  record.end_s = 3;
  recorder.QueuePhase(record, 64);
  recorder.Flush();
  auto phases = store_->ListPhases(id);
  ASSERT_TRUE(phases.ok()) << phases.status();
  ASSERT_EQ(phases->size(), 1u);
  EXPECT_EQ((*phases)[0].phase, "profile");
  EXPECT_EQ((*phases)[0].outcome, "worker_lost");
  EXPECT_EQ((*phases)[0].resource, "w1/gpu");
  EXPECT_EQ((*phases)[0].stages, 64);
  EXPECT_DOUBLE_EQ((*phases)[0].end_s, 3);
}

TEST_F(JobRecorderTest, ConcurrentFlushersWriteEachQueuedWriteOnceInOrder) {
  const int64_t id = NewJob();
  JobRecorder recorder(store_);
  // Writes are queued in one order (as under the coordinator's lock) while
  // several threads flush; the last queued progress must be the stored one
  // and every phase row must be there once.
  constexpr int kWrites = 200;
  std::vector<std::thread> flushers;
  std::atomic<bool> done{false};
  for (int t = 0; t < 3; ++t) {
    flushers.emplace_back([&] {
      while (!done) recorder.Flush();
    });
  }
  for (int i = 1; i <= kWrites; ++i) {
    JobRow progress;
    progress.id = id;
    progress.phase = "enumerate";
    progress.candidates = i;
    recorder.QueueProgress(progress);
    farm::PhaseRecord record;
    record.job = id;
    record.kind = farm::PhaseKind::kEnumerate;
    record.resource = "server-cpu/0";
    record.start_s = i;
    recorder.QueuePhase(record, i);
  }
  done = true;
  for (auto& t : flushers) t.join();
  recorder.Flush();
  EXPECT_EQ(Stored(id).candidates, kWrites);
  auto phases = store_->ListPhases(id);
  ASSERT_TRUE(phases.ok());
  ASSERT_EQ(phases->size(), static_cast<size_t>(kWrites));
  for (int i = 0; i < kWrites; ++i) EXPECT_EQ((*phases)[i].stages, i + 1);  // in queue order
}

}  // namespace
}  // namespace iosfarm::server
