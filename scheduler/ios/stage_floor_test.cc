#include "scheduler/ios/stage_floor.h"

#include <random>

#include "gtest/gtest.h"

namespace iosfarm::scheduler::ios {
namespace {

using Features = StageFloor::Features;

Features RandomFeatures(std::mt19937_64& rng) {
  std::uniform_real_distribution<double> unit(0.0, 1.0);
  OpFeatures sum;
  sum.kernels = 1 + static_cast<int>(unit(rng) * 20);
  sum.gflops = unit(rng) * 2;
  sum.mbytes = unit(rng) * 50;
  sum.roofline_ms = unit(rng) * 0.1;
  return StageFloor::StageFeatures(sum, 2 + static_cast<int>(unit(rng) * 6));
}

double Linear(const Features& x) {
  // 2.5 us a stage, 3 us a kernel, contention on the roofline time.
  return 0.0025 + 0.003 * x[2] + 0.8 * x[5] + 0.05 * x[6];
}

TEST(StageFloorTest, FitsALinearLatencyExactly) {
  std::mt19937_64 rng(7);
  std::vector<Features> x;
  std::vector<double> y;
  for (int i = 0; i < 64; ++i) {
    x.push_back(RandomFeatures(rng));
    y.push_back(Linear(x.back()));
  }
  StageFloor floor;
  floor.Fit(x, y);
  ASSERT_TRUE(floor.fitted());
  for (int i = 0; i < 200; ++i) {  // stages it never saw
    const Features other = RandomFeatures(rng);
    EXPECT_NEAR(floor(other), Linear(other), 1e-6);
  }
}

TEST(StageFloorTest, LiesBelowEverySampleWithNonNegativeSlopes) {
  std::mt19937_64 rng(11);
  std::exponential_distribution<double> noise(200.0);  // mean 5 us above the line
  std::vector<Features> x;
  std::vector<double> y;
  for (int i = 0; i < 128; ++i) {
    x.push_back(RandomFeatures(rng));
    // Some stages are ruled by a slow group: far above the line.
    const double slow_group = i % 5 == 0 ? 0.3 : 0.0;
    y.push_back(std::max(slow_group, Linear(x.back()) + noise(rng)));
  }
  StageFloor floor;
  floor.Fit(x, y);
  ASSERT_TRUE(floor.fitted());
  for (size_t i = 0; i < x.size(); ++i) EXPECT_LE(floor(x[i]), y[i] + 1e-12) << i;
  for (int f = 1; f < StageFloor::kFeatures; ++f) EXPECT_GE(floor.coefficients()[f], 0.0) << f;
  // Near the line, not dragged down by the slow-group stages: within the
  // noise of the truth on average.
  double gap = 0;
  for (int i = 0; i < 200; ++i) {
    const Features other = RandomFeatures(rng);
    gap += Linear(other) - floor(other);
  }
  EXPECT_LT(gap / 200, 0.01);
}

TEST(StageFloorTest, AFeatureThatMakesStagesFasterGetsNoWeight) {
  std::mt19937_64 rng(3);
  std::vector<Features> x;
  std::vector<double> y;
  for (int i = 0; i < 64; ++i) {
    x.push_back(RandomFeatures(rng));
    y.push_back(Linear(x.back()) + 0.01 - 0.0001 * x.back()[4]);  // faster with more bytes
  }
  StageFloor floor;
  floor.Fit(x, y);
  ASSERT_TRUE(floor.fitted());
  EXPECT_EQ(floor.coefficients()[4], 0.0);
  for (size_t i = 0; i < x.size(); ++i) EXPECT_LE(floor(x[i]), y[i] + 1e-12) << i;
}

TEST(StageFloorTest, TooFewSamplesLeaveItUnfitted) {
  std::mt19937_64 rng(5);
  std::vector<Features> x;
  std::vector<double> y;
  for (int i = 0; i < StageFloor::kFeatures + 1; ++i) {
    x.push_back(RandomFeatures(rng));
    y.push_back(Linear(x.back()));
  }
  StageFloor floor;
  floor.Fit(x, y);
  EXPECT_FALSE(floor.fitted());
  EXPECT_EQ(floor(x[0]), 0.0);
  floor.Fit(x, {1.0});  // sizes differ
  EXPECT_FALSE(floor.fitted());
}

TEST(StageFloorTest, ViewOpsLaunchNothing) {
  graph::Graph g("g");
  const graph::ValueId in = g.AddInput("x", graph::Shape{1, 4, 8, 8});
  graph::Node reshape;
  reshape.name = "flat";
  reshape.type = graph::OpType::kFlatten;
  reshape.inputs = {in};
  const OpFeatures features = ComputeOpFeatures(g, reshape);
  EXPECT_EQ(features.kernels, 0.0);
  EXPECT_EQ(features.roofline_ms, 0.0);
}

}  // namespace
}  // namespace iosfarm::scheduler::ios
