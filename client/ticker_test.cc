#include "client/ticker.h"

#include <atomic>
#include <chrono>
#include <thread>

#include <gtest/gtest.h>

namespace iosfarm::client {
namespace {

TEST(TickerTest, TicksUntilStoppedAndNotAfter) {
  std::atomic<int> ticks{0};
  Ticker ticker(/*on=*/true, absl::Milliseconds(5), [&] { ++ticks; });
  while (ticks.load() < 3) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  ticker.Stop();
  const int stopped_at = ticks.load();
  std::this_thread::sleep_for(std::chrono::milliseconds(30));
  EXPECT_EQ(ticks.load(), stopped_at);
  ticker.Stop();  // again: nothing to join
}

TEST(TickerTest, StopWakesALongIntervalAtOnce) {
  std::atomic<int> ticks{0};
  const auto start = std::chrono::steady_clock::now();
  {
    Ticker ticker(/*on=*/true, absl::Hours(1), [&] { ++ticks; });
  }  // destroyed: stops without waiting out the hour
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(30));
  EXPECT_EQ(ticks.load(), 0);
}

TEST(TickerTest, OffNeverTicks) {
  std::atomic<int> ticks{0};
  Ticker ticker(/*on=*/false, absl::Milliseconds(1), [&] { ++ticks; });
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  ticker.Stop();
  EXPECT_EQ(ticks.load(), 0);
}

}  // namespace
}  // namespace iosfarm::client
