#include "worker/backends/sim/noise.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include <gtest/gtest.h>

namespace iosfarm::worker::sim {
namespace {

TEST(NoiseTest, UniformDrawIsReproducibleAndInRange) {
  EXPECT_EQ(UniformDraw(1, 2, 3), UniformDraw(1, 2, 3));
  EXPECT_NE(UniformDraw(1, 2, 3), UniformDraw(1, 2, 4));
  EXPECT_NE(UniformDraw(1, 2, 3), UniformDraw(1, 5, 3));
  EXPECT_NE(UniformDraw(1, 2, 3), UniformDraw(7, 2, 3));
  double sum = 0;
  for (uint64_t i = 0; i < 10000; ++i) {
    const double u = UniformDraw(9, 9, i);
    ASSERT_GT(u, 0.0);
    ASSERT_LE(u, 1.0);
    sum += u;
  }
  EXPECT_NEAR(sum / 10000, 0.5, 0.02);
}

TEST(NoiseTest, ZeroSigmaIsExact) {
  for (uint64_t r = 0; r < 100; ++r) EXPECT_EQ(LognormalNoise(1, 2, r, 0.0), 1.0);
}

TEST(NoiseTest, LognormalHasMedianOneAndTheGivenLogSpread) {
  const double sigma = 0.1;
  std::vector<double> logs;
  for (uint64_t r = 0; r < 20000; ++r) logs.push_back(std::log(LognormalNoise(3, 4, r, sigma)));
  double mean = 0;
  for (double x : logs) mean += x;
  mean /= static_cast<double>(logs.size());
  double variance = 0;
  for (double x : logs) variance += (x - mean) * (x - mean);
  variance /= static_cast<double>(logs.size());
  EXPECT_NEAR(mean, 0.0, 0.005);
  EXPECT_NEAR(std::sqrt(variance), sigma, 0.005);
  std::nth_element(logs.begin(), logs.begin() + logs.size() / 2, logs.end());
  EXPECT_NEAR(logs[logs.size() / 2], 0.0, 0.01);
  // Reproducible.
  EXPECT_EQ(LognormalNoise(3, 4, 17, sigma), LognormalNoise(3, 4, 17, sigma));
}

TEST(NoiseTest, FailureFractionFollowsTheProbability) {
  int failures = 0;
  for (uint64_t call = 1; call <= 10000; ++call) failures += InjectFailure(5, call, 0.25);
  EXPECT_NEAR(failures, 2500, 250);
  for (uint64_t call = 1; call <= 100; ++call) {
    EXPECT_FALSE(InjectFailure(5, call, 0.0));
    EXPECT_TRUE(InjectFailure(5, call, 1.0));
  }
}

}  // namespace
}  // namespace iosfarm::worker::sim
