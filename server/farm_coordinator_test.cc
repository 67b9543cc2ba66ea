// FarmCoordinator without gRPC: fake worker links answer with a real
// PhaseExecutor on the sim backend (or fail, or stay silent), the clock is a
// FakeClock, the store a real SQLite file.
#include "server/farm_coordinator.h"

#include <sqlite3.h>

#include <atomic>
#include <chrono>
#include <deque>
#include <memory>
#include <set>
#include <string>
#include <thread>

#include "absl/synchronization/mutex.h"
#include "graph/models/zoo.h"
#include "gtest/gtest.h"
#include "scheduler/ios/schedule_json.h"
#include "server/farm_database_test_util.h"
#include "server/proto_convert.h"
#include "worker/backends/sim/sim_backend.h"
#include "worker/phase_executor.h"
#include "worker/wire_testing.h"

namespace iosfarm::server {
namespace {

namespace farm = scheduler::farm;

// A worker's stream as the coordinator sees it. Messages wait in a queue
// until the test answers them (Answer), so no coordinator call re-enters it.
class FakeWorker final : public WorkerLink {
 public:
  enum class Mode { kExecute, kFailBuilds, kSilent };

  FakeWorker(std::string id, Mode mode) : id_(std::move(id)), mode_(mode) {
    auto backend = worker::sim::SimBackend::Create({});
    EXPECT_TRUE(backend.ok()) << backend.status();
    backend_ = std::move(*backend);
    executor_ = std::make_unique<worker::PhaseExecutor>(*backend_);
  }

  // The order goes through both edges as on a real stream: the server's
  // conversion to the wire, the worker's executor, the server's reading of
  // the answer.
  bool Send(const WorkerCommand& command) override {
    const v1::ServerMessage message = WorkerCommandToProto(command);
    absl::MutexLock lock(&mu_);
    if (closed_) return false;
    if (message.has_assign()) {
      inbox_.push_back(message.assign());
      ++assigned_;
    }
    return true;
  }
  void Close() override {
    absl::MutexLock lock(&mu_);
    closed_ = true;
  }

  WorkerRegistration Registration() const {
    WorkerRegistration registration;
    registration.worker_id = id_;
    registration.device_key = "sim-v100";
    registration.backend = "sim";
    registration.max_built_batches = worker::PhaseExecutor::kMaxBatches;
    return registration;
  }

  // Answers every assignment received so far; how many it answered.
  int Answer(FarmCoordinator& coordinator) {
    std::deque<v1::PhaseAssignment> inbox;
    {
      absl::MutexLock lock(&mu_);
      inbox.swap(inbox_);
    }
    if (mode_ == Mode::kSilent) return 0;
    for (const v1::PhaseAssignment& assignment : inbox) {
      v1::PhaseResult result;
      if (mode_ == Mode::kFailBuilds && assignment.has_build()) {
        result.set_phase_id(assignment.phase_id());
        result.set_ok(false);
        result.set_error("boom");
      } else {
        result = worker::testing::AnswerAssignment(*executor_, assignment);
        if (assignment.has_build() && result.ok()) {
          absl::MutexLock lock(&mu_);
          for (const v1::StageSpec& stage : assignment.build().stages()) {
            built_.push_back(stage.signature());
          }
        }
      }
      coordinator.PhaseResult(id_, PhaseReportFromProto(result));
    }
    return static_cast<int>(inbox.size());
  }

  int assigned() {
    absl::MutexLock lock(&mu_);
    return assigned_;
  }
  bool closed() {
    absl::MutexLock lock(&mu_);
    return closed_;
  }
  // The stage signatures of every build it ran, in order.
  std::vector<uint64_t> built() {
    absl::MutexLock lock(&mu_);
    return built_;
  }
  const std::string& id() const { return id_; }

 private:
  const std::string id_;
  const Mode mode_;
  std::unique_ptr<worker::Backend> backend_;
  std::unique_ptr<worker::PhaseExecutor> executor_;
  absl::Mutex mu_;
  std::deque<v1::PhaseAssignment> inbox_ ABSL_GUARDED_BY(mu_);
  int assigned_ ABSL_GUARDED_BY(mu_) = 0;
  bool closed_ ABSL_GUARDED_BY(mu_) = false;
  std::vector<uint64_t> built_ ABSL_GUARDED_BY(mu_);
};

class FarmCoordinatorTest : public FarmDatabaseTest {
 protected:
  std::unique_ptr<FarmCoordinator> MakeCoordinator(int max_attempts = 3,
                                                   farm::Policy policy = farm::Policy::kInterleaved,
                                                   int max_searches = 6,
                                                   double search_min_turn_s = 5,
                                                   double enumerate_slice_s = 2.0) {
    CoordinatorOptions options;
    options.enumerate_slice_s = enumerate_slice_s;
    options.policy = policy;
    options.max_searches = max_searches;
    options.search_min_turn_s = search_min_turn_s;
    options.clock = &clock_;
    options.max_attempts = max_attempts;
    // The monitor thread never fires in a test; CheckHeartbeats is called.
    options.heartbeat_interval_s = 3600;
    options.heartbeat_timeout_s = 5;
    return std::make_unique<FarmCoordinator>(options, database_.jobs.get(),
                                             database_.latencies.get());
  }

  // The coordinator shares the worker (it may close it while shutting down).
  static Status Join(FarmCoordinator& coordinator, const std::shared_ptr<FakeWorker>& worker) {
    return coordinator.WorkerJoined(worker->Registration(), worker);
  }

  StatusOr<JobRow> SubmitZoo(FarmCoordinator& coordinator, const std::string& name,
                             int64_t batch = 1, int64_t estimated_stages = -1) {
    ASSIGN_OR_RETURN(graph::Graph graph, graph::models::BuildZooModel(name, batch));
    ModelRow model;
    model.source = "zoo";
    model.name = name;
    model.digest = scheduler::ios::ModelDigest(graph);
    model.batch = batch;
    model.ops = static_cast<int64_t>(graph.nodes().size());
    JobRow job;
    job.model_digest = model.digest;
    job.model_name = name;
    job.device_key = "sim-v100";
    job.owner = "test";
    job.batch = batch;
    job.estimated_stages = estimated_stages;  // -1: the coordinator estimates
    return coordinator.Submit(job, model);
  }

  // Answers the workers' assignments until the job is final (or 60 s of
  // real time pass: the search runs on the coordinator's pool threads).
  JobSnapshot RunToEnd(FarmCoordinator& coordinator, int64_t job,
                       const std::vector<FakeWorker*>& workers) {
    JobSnapshot snapshot;
    for (int round = 0; round < 6000; ++round) {
      int answered = 0;
      for (FakeWorker* w : workers) answered += w->Answer(coordinator);
      auto got = coordinator.WaitForChange(job, snapshot.version, answered > 0 ? 0 : 0.01);
      EXPECT_TRUE(got.ok()) << got.status();
      if (!got.ok()) break;
      snapshot = *got;
      if (snapshot.final || IsFinal(snapshot.job.state)) return snapshot;
    }
    ADD_FAILURE() << "job " << job << " did not end: " << snapshot.message;
    return snapshot;
  }

  FakeClock clock_{1000.0};
};

TEST_F(FarmCoordinatorTest, AJobRunsToSuccessWithFakeWorkersAndTheInjectedClock) {
  auto coordinator = MakeCoordinator();
  auto worker = std::make_shared<FakeWorker>("w1", FakeWorker::Mode::kExecute);
  ASSERT_TRUE(Join(*coordinator, worker).ok());
  auto job = SubmitZoo(*coordinator, "squeezenet");
  ASSERT_TRUE(job.ok()) << job.status();

  const JobSnapshot end = RunToEnd(*coordinator, job->id, {worker.get()});
  EXPECT_EQ(end.job.state, JobState::kSucceeded) << end.job.error;
  auto result = database_.jobs->GetResult(job->id);
  ASSERT_TRUE(result.ok() && result->has_value());
  EXPECT_FALSE((*result)->schedule_json.empty());

  // Every phase of the chain ran, worker phases on w1, all at the fake time.
  auto phases = database_.jobs->ListPhases(job->id);
  ASSERT_TRUE(phases.ok());
  std::set<std::string> kinds;
  for (const PhaseLogRow& row : *phases) {
    kinds.insert(row.phase);
    EXPECT_EQ(row.outcome, "ok") << row.phase;
    EXPECT_EQ(row.start_s, 1000.0) << row.phase;
    EXPECT_EQ(row.end_s, 1000.0) << row.phase;
    if (row.phase != "enumerate" && row.phase != "update") {
      EXPECT_EQ(row.worker, "w1") << row.phase;
    }
  }
  EXPECT_EQ(kinds, (std::set<std::string>{"build", "enumerate", "measure", "profile", "update"}));
  EXPECT_EQ(end.job.submitted_unix_ms, 1'000'000);
  auto workers = coordinator->Workers();
  ASSERT_EQ(workers.size(), 1u);
  EXPECT_EQ(workers[0].state, "idle");
  EXPECT_EQ(workers[0].phases_done, worker->assigned());
}

TEST_F(FarmCoordinatorTest, ASilentWorkerIsLostOnTheClockAndItsBatchRunsOnAnother) {
  auto coordinator = MakeCoordinator();
  auto silent = std::make_shared<FakeWorker>("w1", FakeWorker::Mode::kSilent);
  ASSERT_TRUE(Join(*coordinator, silent).ok());
  auto job = SubmitZoo(*coordinator, "squeezenet");
  ASSERT_TRUE(job.ok()) << job.status();
  // The first batch reaches the only worker, which never answers.
  int64_t seen = 0;
  for (int i = 0; i < 6000 && silent->assigned() == 0; ++i) {
    auto snapshot = coordinator->WaitForChange(job->id, seen, 0.01);
    ASSERT_TRUE(snapshot.ok()) << snapshot.status();
    seen = snapshot->version;
  }
  ASSERT_EQ(silent->assigned(), 1);

  auto good = std::make_shared<FakeWorker>("w2", FakeWorker::Mode::kExecute);
  ASSERT_TRUE(Join(*coordinator, good).ok());
  // Within the timeout nothing happens; past it w1 is lost, w2 (which just
  // sent a heartbeat) is not.
  clock_.Advance(4.0);
  coordinator->CheckHeartbeats();
  EXPECT_FALSE(silent->closed());
  clock_.Advance(2.0);
  coordinator->WorkerHeartbeat("w2");
  coordinator->CheckHeartbeats();
  EXPECT_TRUE(silent->closed());
  ASSERT_EQ(coordinator->Workers().size(), 1u);
  EXPECT_EQ(coordinator->Workers()[0].id, "w2");

  const JobSnapshot end = RunToEnd(*coordinator, job->id, {good.get()});
  EXPECT_EQ(end.job.state, JobState::kSucceeded) << end.job.error;
  auto phases = database_.jobs->ListPhases(job->id);
  ASSERT_TRUE(phases.ok());
  int lost = 0;
  for (const PhaseLogRow& row : *phases) {
    if (row.outcome == "worker_lost") {
      ++lost;
      EXPECT_EQ(row.worker, "w1");
      EXPECT_EQ(row.phase, "build");
      EXPECT_EQ(row.end_s, 1006.0);
    }
  }
  EXPECT_EQ(lost, 1);
}

TEST_F(FarmCoordinatorTest, AWorkerThatKeepsFailingFailsTheJobAfterMaxAttempts) {
  auto coordinator = MakeCoordinator(/*max_attempts=*/2);
  auto worker = std::make_shared<FakeWorker>("w1", FakeWorker::Mode::kFailBuilds);
  ASSERT_TRUE(Join(*coordinator, worker).ok());
  auto job = SubmitZoo(*coordinator, "squeezenet");
  ASSERT_TRUE(job.ok()) << job.status();
  const JobSnapshot end = RunToEnd(*coordinator, job->id, {worker.get()});
  EXPECT_EQ(end.job.state, JobState::kFailed);
  EXPECT_EQ(end.job.error, "gave up after 2 failed worker phases; last: build on w1 failed: boom");
  EXPECT_EQ(worker->assigned(), 2);
}

// Synchronous rounds wait for every job the scheduler knows; a job waiting
// for a search place must not be one of them (it once stalled the farm).
TEST_F(FarmCoordinatorTest, JobsWaitingForASearchPlaceDoNotStallSynchronousRounds) {
  auto coordinator = MakeCoordinator(3, farm::Policy::kSynchronous, /*max_searches=*/1);
  auto worker = std::make_shared<FakeWorker>("w1", FakeWorker::Mode::kExecute);
  ASSERT_TRUE(Join(*coordinator, worker).ok());
  std::vector<int64_t> ids;
  for (int64_t batch : {1, 2, 3}) {
    auto job = SubmitZoo(*coordinator, "squeezenet", batch);
    ASSERT_TRUE(job.ok()) << job.status();
    ids.push_back(job->id);
  }
  for (int64_t id : ids) {
    const JobSnapshot end = RunToEnd(*coordinator, id, {worker.get()});
    EXPECT_EQ(end.job.state, JobState::kSucceeded) << "job " << id << ": " << end.job.error;
  }
}

// One search place: a long search holds it; a small job submitted behind
// it takes the place once the long search's minimum turn is over (at its
// next safe point), succeeds, and the long search resumes from the stored
// latencies: no stage is built twice. With enumerate slices of a
// microsecond its cost-to-go DP walks stop between states at every slice's
// end too (and it keeps its place until a walk ends): the same.
class SmallSearchPassesALongOne : public FarmCoordinatorTest,
                                  public ::testing::WithParamInterface<double> {};

TEST_P(SmallSearchPassesALongOne, AndTheLongOneResumesMeasuringNothingTwice) {
  auto coordinator = MakeCoordinator(3, farm::Policy::kInterleaved, /*max_searches=*/1,
                                     /*search_min_turn_s=*/5, /*enumerate_slice_s=*/GetParam());
  auto worker = std::make_shared<FakeWorker>("w1", FakeWorker::Mode::kExecute);
  ASSERT_TRUE(Join(*coordinator, worker).ok());
  auto large = SubmitZoo(*coordinator, "inception_v3", 1, /*estimated_stages=*/1'000'000);
  ASSERT_TRUE(large.ok()) << large.status();
  // Let the large search measure a few batches.
  JobSnapshot seen;
  for (int i = 0; i < 6000 && seen.job.stages_profiled < 100; ++i) {
    worker->Answer(*coordinator);
    auto got = coordinator->WaitForChange(large->id, seen.version, 0.01);
    ASSERT_TRUE(got.ok()) << got.status();
    seen = *got;
  }
  ASSERT_GE(seen.job.stages_profiled, 100);
  ASSERT_FALSE(seen.final);
  auto small = SubmitZoo(*coordinator, "squeezenet", 1, /*estimated_stages=*/50);
  ASSERT_TRUE(small.ok()) << small.status();
  auto waiting = coordinator->Snapshot(small->id);
  ASSERT_TRUE(waiting.ok());
  EXPECT_NE(waiting->message.find("waiting for a search place: 1 of 1 in line"), std::string::npos)
      << waiting->message;
  // Within the large search's minimum turn nothing changes hands.
  clock_.Advance(6.0);
  const JobSnapshot small_end = RunToEnd(*coordinator, small->id, {worker.get()});
  EXPECT_EQ(small_end.job.state, JobState::kSucceeded) << small_end.job.error;
  auto large_then = coordinator->Snapshot(large->id);
  ASSERT_TRUE(large_then.ok());
  EXPECT_FALSE(large_then->final) << "the large search ended before the small one";
  EXPECT_EQ(large_then->yields, 1);
  const JobSnapshot large_end = RunToEnd(*coordinator, large->id, {worker.get()});
  EXPECT_EQ(large_end.job.state, JobState::kSucceeded) << large_end.job.error;
  const std::vector<uint64_t> built = worker->built();
  const std::set<uint64_t> distinct(built.begin(), built.end());
  EXPECT_EQ(distinct.size(), built.size()) << "a stage was built twice";
  // Its resumed search found what it had measured in the database.
  EXPECT_GE(large_end.job.cache_hits, seen.job.stages_profiled);
}

INSTANTIATE_TEST_SUITE_P(EnumerateSlices, SmallSearchPassesALongOne,
                         ::testing::Values(2.0, 1e-6),
                         [](const ::testing::TestParamInfo<double>& info) {
                           return info.param >= 1 ? std::string("TwoSecondSlices")
                                                  : std::string("MicrosecondSlices");
                         });

TEST_F(FarmCoordinatorTest, ARegistrationOutsideTheBoundsIsRefusedNamingTheField) {
  auto coordinator = MakeCoordinator();
  auto worker = std::make_shared<FakeWorker>("w1", FakeWorker::Mode::kExecute);
  WorkerRegistration registration = worker->Registration();
  registration.device_key = std::string(WorkerRegistry::kMaxDeviceKeyBytes + 1, 'k');
  Status joined = coordinator->WorkerJoined(registration, worker);
  EXPECT_TRUE(absl::IsInvalidArgument(joined)) << joined;
  EXPECT_NE(std::string(joined.message()).find("register: device_key"), std::string::npos)
      << joined;
  EXPECT_TRUE(coordinator->Workers().empty());
}

TEST_F(FarmCoordinatorTest, ABusyDatabaseNeverHoldsTheCoordinatorsLock) {
  auto coordinator = MakeCoordinator();
  auto worker = std::make_shared<FakeWorker>("w1", FakeWorker::Mode::kExecute);
  ASSERT_TRUE(Join(*coordinator, worker).ok());

  // Another process holds the database's write lock: the submit's writes
  // wait in SQLite (up to its busy timeout). The coordinator's lock must stay
  // free meanwhile: workers, queues and other jobs are served at once.
  sqlite3* other = nullptr;
  ASSERT_EQ(sqlite3_open(PathOf("farm.db").c_str(), &other), SQLITE_OK);
  ASSERT_EQ(sqlite3_exec(other, "BEGIN EXCLUSIVE", nullptr, nullptr, nullptr), SQLITE_OK);
  std::atomic<bool> submit_returned{false};
  std::thread submitter([&] {
    (void)SubmitZoo(*coordinator, "squeezenet");  // may fail busy; nothing is stored then
    submit_returned = true;
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(300));  // the submit is in SQLite
  EXPECT_EQ(coordinator->Workers().size(), 1u);
  (void)coordinator->QueueLengths();
  EXPECT_FALSE(submit_returned) << "the coordinator's calls waited for the busy database";
  ASSERT_EQ(sqlite3_exec(other, "COMMIT", nullptr, nullptr, nullptr), SQLITE_OK);
  sqlite3_close(other);
  submitter.join();

  // With the database free again, jobs run as ever.
  auto job = SubmitZoo(*coordinator, "squeezenet", 2);
  ASSERT_TRUE(job.ok()) << job.status();
  EXPECT_EQ(RunToEnd(*coordinator, job->id, {worker.get()}).job.state, JobState::kSucceeded);
}

}  // namespace
}  // namespace iosfarm::server
