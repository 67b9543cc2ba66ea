// The coordinator's threads: the server phase pool, the heartbeat monitor
// and the benchmark-only phase padding.
#include <atomic>
#include <chrono>
#include <thread>

#include "absl/synchronization/notification.h"
#include "gtest/gtest.h"
#include "server/heartbeat_monitor.h"
#include "server/padded_farm.h"
#include "server/phase_padding.h"
#include "server/server_phase_pool.h"

namespace iosfarm::server {
namespace {

namespace farm = scheduler::farm;

TEST(ServerPhasePoolTest, RunsAsManyTasksAtOnceAsItHasThreads) {
  ServerPhasePool pool(2);
  std::atomic<int> running{0}, most{0}, done{0};
  absl::Notification release;
  for (int i = 0; i < 2; ++i) {
    pool.Post([&] {
      const int now = ++running;
      int seen = most.load();
      while (now > seen && !most.compare_exchange_weak(seen, now)) {
      }
      release.WaitForNotificationWithTimeout(absl::Seconds(30));
      --running;
      ++done;
    });
  }
  for (int i = 0; i < 3000 && most.load() < 2; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  EXPECT_EQ(most.load(), 2);  // both ran at once on the two threads
  release.Notify();
  pool.Stop();
  EXPECT_EQ(done.load(), 2);
  pool.Post([&] { ++done; });  // after Stop: dropped
  EXPECT_EQ(done.load(), 2);
}

TEST(HeartbeatMonitorTest, ChecksEveryIntervalAndStopsAtOnce) {
  std::atomic<int> checks{0};
  HeartbeatMonitor monitor(0.01, [&] { ++checks; });
  for (int i = 0; i < 3000 && checks.load() < 3; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  EXPECT_GE(checks.load(), 3);
  HeartbeatMonitor slow(3600, [&] { ++checks; });
  const auto begin = std::chrono::steady_clock::now();
  slow.Stop();  // wakes the hour-long wait
  EXPECT_LT(std::chrono::steady_clock::now() - begin, std::chrono::seconds(10));
}

TEST(PhasePaddingTest, ParsesKindsAndRejectsBadEntriesNamingThem) {
  auto parsed = ParseSyntheticPhaseSeconds("build=8.3,profile=39.5");
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  EXPECT_EQ(parsed->size(), 2u);
  EXPECT_EQ(parsed->at(farm::PhaseKind::kProfile), 39.5);
  EXPECT_TRUE(ParseSyntheticPhaseSeconds("")->empty());
  for (const char* bad : {"build", "bild=1", "build=-1", "build=1x", "build=nan"}) {
    auto status = ParseSyntheticPhaseSeconds(bad).status();
    EXPECT_TRUE(absl::IsInvalidArgument(status)) << bad;
    EXPECT_NE(std::string(status.message()).find(bad), std::string::npos) << status;
  }
}

TEST(PhasePaddingTest, LeftCountsFromDispatchOnTheClockAndHeldResultsRunWhenDue) {
  FakeClock clock(100.0);
  PhasePadding padding({{farm::PhaseKind::kBuild, 5.0}}, clock);
  EXPECT_EQ(padding.Left(farm::PhaseKind::kBuild, 98.0), 3.0);
  EXPECT_EQ(padding.Left(farm::PhaseKind::kBuild, 90.0), 0.0);
  EXPECT_EQ(padding.Left(farm::PhaseKind::kProfile, 100.0), 0.0);  // not padded

  absl::Notification ran;
  padding.RunAt(100.05, [&] { ran.Notify(); });
  EXPECT_FALSE(ran.WaitForNotificationWithTimeout(absl::Milliseconds(200)));  // clock stands
  clock.Advance(1.0);
  padding.RunAt(99.0, [] {});  // wakes the thread, which finds both due
  EXPECT_TRUE(ran.WaitForNotificationWithTimeout(absl::Seconds(30)));
  padding.Stop();
}

// The coordinator's side of the worker streams, as PaddedWorkerEvents
// forwards it.
class RecordingEvents final : public WorkerEvents {
 public:
  Status WorkerJoined(const WorkerRegistration&, std::shared_ptr<WorkerLink> link) override {
    link_ = std::move(link);
    return absl::OkStatus();
  }
  void WorkerHeartbeat(const std::string&) override {}
  void WorkerLost(const std::string& worker, const std::string&) override { lost_ = worker; }
  void PhaseResult(const std::string&, const PhaseReport& report) override {
    results_.push_back(report.phase_id);
    if (results_.size() == 2) both_.Notify();
  }

  std::shared_ptr<WorkerLink> link_;
  std::string lost_;
  std::vector<int64_t> results_;
  absl::Notification both_;
};

class NullLink final : public WorkerLink {
 public:
  bool Send(const WorkerCommand&) override { return true; }
  void Close() override {}
};

TEST(PaddedWorkerEventsTest, HoldsAResultUntilItsPhaseLastedItsMinimumSinceItWasSent) {
  FakeClock clock(100.0);
  PhasePadding padding({{farm::PhaseKind::kBuild, 5.0}}, clock);
  RecordingEvents coordinator;
  PaddedWorkerEvents padded(&coordinator, &padding, &clock);
  WorkerRegistration registration;
  registration.worker_id = "w1";
  ASSERT_TRUE(padded.WorkerJoined(registration, std::make_shared<NullLink>()).ok());
  ASSERT_NE(coordinator.link_, nullptr);  // the coordinator got the recording link

  PhaseOrder build, profile;
  build.phase_id = 1;
  build.kind = farm::PhaseKind::kBuild;
  profile.phase_id = 2;
  profile.kind = farm::PhaseKind::kProfile;  // not padded
  ASSERT_TRUE(coordinator.link_->Send(WorkerCommand::Assign(build)));
  ASSERT_TRUE(coordinator.link_->Send(WorkerCommand::Assign(profile)));
  EXPECT_EQ(padded.outstanding(), 2u);

  PhaseReport built, profiled;
  built.phase_id = 1;
  profiled.phase_id = 2;
  clock.Advance(2.0);
  padded.PhaseResult("w1", built);     // 3 s early: held
  padded.PhaseResult("w1", profiled);  // passes at once
  EXPECT_EQ(coordinator.results_, std::vector<int64_t>{2});
  EXPECT_EQ(padded.outstanding(), 0u);
  clock.Advance(3.0);
  padding.RunAt(0, [] {});  // wakes the padding thread on the advanced clock
  ASSERT_TRUE(coordinator.both_.WaitForNotificationWithTimeout(absl::Seconds(30)));
  EXPECT_EQ(coordinator.results_, (std::vector<int64_t>{2, 1}));

  // A lost worker's unanswered orders are forgotten.
  ASSERT_TRUE(coordinator.link_->Send(WorkerCommand::Assign(build)));
  padded.WorkerLost("w1", "gone");
  EXPECT_EQ(coordinator.lost_, "w1");
  EXPECT_EQ(padded.outstanding(), 0u);
  padding.Stop();
}

TEST(PaddedServerPhaseWorkTest, AServerPhaseLastsItsMinimum) {
  PhasePadding padding({{farm::PhaseKind::kUpdate, 0.3}}, SystemClock());
  ServerPhaseWork work = PaddedServerPhaseWork(&padding, &SystemClock());
  JobContext job;  // no runner: the update fails at once, then sleeps out its minimum
  const auto start = std::chrono::steady_clock::now();
  ServerPhaseTask update;
  update.kind = farm::PhaseKind::kUpdate;
  ServerPhaseOutcome outcome = work(update, job, ServerPhaseEnv{});
  const double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_TRUE(absl::IsInternal(outcome.status)) << outcome.status;
  EXPECT_GE(took, 0.25);
}

}  // namespace
}  // namespace iosfarm::server
