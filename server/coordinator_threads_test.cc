// The coordinator's threads: the server phase pool, the heartbeat monitor
// and the benchmark-only phase padding.
#include <atomic>
#include <chrono>
#include <thread>

#include "absl/synchronization/notification.h"
#include "gtest/gtest.h"
#include "server/heartbeat_monitor.h"
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

}  // namespace
}  // namespace iosfarm::server
