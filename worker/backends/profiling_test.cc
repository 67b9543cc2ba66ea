#include "worker/backends/profiling.h"

#include <gtest/gtest.h>

namespace iosfarm::worker {
namespace {

TEST(ProfilingTest, SummarizesQuantilesAndCv) {
  auto stats = SummarizeSamples({5, 1, 4, 2, 3});
  ASSERT_TRUE(stats.ok());
  EXPECT_DOUBLE_EQ(stats->median_ms, 3);
  EXPECT_DOUBLE_EQ(stats->p10_ms, 1.4);
  EXPECT_DOUBLE_EQ(stats->p90_ms, 4.6);
  EXPECT_NEAR(stats->cv, std::sqrt(2.0) / 3, 1e-12);
  EXPECT_EQ(stats->repeats, 5);
  EXPECT_FALSE(SummarizeSamples({}).ok());
}

TEST(ProfilingTest, StopsWhenMedianIsStable) {
  int calls = 0;
  ProfileOptions options;
  options.warmup = 2;
  options.min_repeats = 5;
  auto stats = MeasureLatency([&]() -> StatusOr<double> { ++calls; return 1.0; }, options);
  ASSERT_TRUE(stats.ok());
  // 2 warm-up + 10 timed: the median is compared after 5 and 10 samples.
  EXPECT_EQ(calls, 12);
  EXPECT_EQ(stats->repeats, 10);
  EXPECT_DOUBLE_EQ(stats->median_ms, 1.0);
}

TEST(ProfilingTest, StopsAtMaxRepeatsWhenUnstableAndPropagatesErrors) {
  int calls = 0;
  ProfileOptions options;
  options.warmup = 0;
  options.min_repeats = 2;
  options.max_repeats = 7;
  auto stats = MeasureLatency(
      [&]() -> StatusOr<double> { return static_cast<double>(1 << (calls++ % 20)); }, options);
  ASSERT_TRUE(stats.ok());
  EXPECT_EQ(stats->repeats, 7);

  auto failing = MeasureLatency(
      []() -> StatusOr<double> { return absl::InternalError("device lost"); }, options);
  EXPECT_EQ(failing.status().message(), "device lost");
  options.max_repeats = 1;
  EXPECT_FALSE(MeasureLatency([]() -> StatusOr<double> { return 1.0; }, options).ok());
}

TEST(ProfilingTest, StopsAtTimeBudget) {
  ProfileOptions options;
  options.warmup = 0;
  options.max_seconds = 0.05;  // 50 ms of 20 ms samples: 3 runs
  options.max_repeats = 100;
  int calls = 0;
  auto stats = MeasureLatency(
      [&]() -> StatusOr<double> { return 20.0 + (calls++ % 2); }, options);
  ASSERT_TRUE(stats.ok());
  EXPECT_EQ(stats->repeats, 3);
}

}  // namespace
}  // namespace iosfarm::worker
