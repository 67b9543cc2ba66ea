#include "worker/backends/sim/sim_stage.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "worker/backends/sim/sim_test_graphs.h"

namespace iosfarm::worker::sim {
namespace {

using testing::ConcurrentStage;
using testing::MakeTwoConvs;
using testing::MergeStage;

TEST(SimStageTest, ConcurrentStageHasOneKernelListPerGroup) {
  const testing::TwoConvs g = MakeTwoConvs(32, 8, 3);
  const SimDeviceModel m;
  StatusOr<SimStage> stage = BuildSimStage(g.graph, ConcurrentStage({{g.a}, {g.b}}), m);
  ASSERT_TRUE(stage.ok()) << stage.status();
  ASSERT_EQ(stage->groups.size(), 2u);
  EXPECT_EQ(stage->groups[0].size(), 1u);
  EXPECT_DOUBLE_EQ(stage->time_us, SimulateStageUs(stage->groups, m));
}

TEST(SimStageTest, MergeStageIsOneConvolution) {
  const testing::TwoConvs g = MakeTwoConvs(32, 8, 3);
  const SimDeviceModel m;
  StatusOr<SimStage> stage = BuildSimStage(g.graph, MergeStage(g.graph, {g.a, g.b}), m);
  ASSERT_TRUE(stage.ok()) << stage.status();
  ASSERT_EQ(stage->groups.size(), 1u);
  ASSERT_EQ(stage->groups[0].size(), 1u);
  EXPECT_DOUBLE_EQ(stage->time_us,
                   m.kernel_launch_us + stage->groups[0][0].AloneUs(m) + m.stage_sync_us);
}

TEST(SimStageTest, WithoutKeyTheSameTime) {
  const testing::TwoConvs g = MakeTwoConvs(32, 8, 3);
  const SimDeviceModel m;
  const auto keyed = BuildSimStage(g.graph, ConcurrentStage({{g.a}, {g.b}}), m);
  const auto unkeyed =
      BuildSimStage(g.graph, ConcurrentStage({{g.a}, {g.b}}), m, SimStageKey::kNone);
  ASSERT_TRUE(keyed.ok() && unkeyed.ok());
  EXPECT_NE(keyed->key, 0u);
  EXPECT_EQ(unkeyed->key, 0u);
  EXPECT_DOUBLE_EQ(unkeyed->time_us, keyed->time_us);
}

TEST(SimStageTest, KeyDependsOnContentNotNames) {
  const testing::TwoConvs g = MakeTwoConvs(32, 8, 3);
  const SimDeviceModel m;
  // a and b have the same content: stages {a} and {b} share a key.
  const uint64_t key_a = BuildSimStage(g.graph, ConcurrentStage({{g.a}}), m)->key;
  EXPECT_EQ(key_a, BuildSimStage(g.graph, ConcurrentStage({{g.b}}), m)->key);
  const uint64_t two_groups = BuildSimStage(g.graph, ConcurrentStage({{g.a}, {g.b}}), m)->key;
  const uint64_t one_group = BuildSimStage(g.graph, ConcurrentStage({{g.a, g.b}}), m)->key;
  const uint64_t merged = BuildSimStage(g.graph, MergeStage(g.graph, {g.a, g.b}), m)->key;
  EXPECT_NE(key_a, two_groups);
  EXPECT_NE(two_groups, one_group);
  EXPECT_NE(two_groups, merged);
  // Another shape, another key.
  const testing::TwoConvs other = MakeTwoConvs(32, 16, 3);
  EXPECT_NE(key_a, BuildSimStage(other.graph, ConcurrentStage({{other.a}}), m)->key);
}

TEST(SimStageTest, InvalidStageIsRejected) {
  const testing::TwoConvs g = MakeTwoConvs(32, 8, 3);
  StatusOr<SimStage> stage = BuildSimStage(g.graph, ConcurrentStage({{g.a}, {g.a}}), {});
  EXPECT_EQ(stage.status().code(), absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace iosfarm::worker::sim
