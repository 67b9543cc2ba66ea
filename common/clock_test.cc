#include "common/clock.h"

#include <chrono>

#include "gtest/gtest.h"

namespace iosfarm {
namespace {

TEST(ClockTest, SystemClockIsTheUnixEpochInSecondsAndMilliseconds) {
  const double system = std::chrono::duration<double>(
                            std::chrono::system_clock::now().time_since_epoch())
                            .count();
  EXPECT_NEAR(SystemClock().NowSeconds(), system, 5.0);
  EXPECT_NEAR(static_cast<double>(NowUnixMs()) / 1000.0, NowSeconds(), 5.0);
}

TEST(ClockTest, FakeClockMovesOnlyWhenAdvanced) {
  FakeClock clock(100.0);
  EXPECT_EQ(clock.NowSeconds(), 100.0);
  EXPECT_EQ(clock.NowSeconds(), 100.0);
  clock.Advance(2.5);
  EXPECT_EQ(clock.NowSeconds(), 102.5);
  EXPECT_EQ(clock.NowUnixMs(), 102500);
}

}  // namespace
}  // namespace iosfarm
