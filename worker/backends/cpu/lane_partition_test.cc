#include "worker/backends/cpu/lane_partition.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace iosfarm::worker::cpu {
namespace {

using ::testing::ElementsAre;

TEST(LanePartitionTest, OneGroupOrOneCoreIsOneLaneWithEveryCore) {
  auto one_group = PartitionLanes({5.0}, 4);
  ASSERT_EQ(one_group.size(), 1u);
  EXPECT_THAT(one_group[0].groups, ElementsAre(0));
  EXPECT_EQ(one_group[0].threads, 4);
  auto one_core = PartitionLanes({1.0, 2.0, 3.0}, 1);
  ASSERT_EQ(one_core.size(), 1u);
  EXPECT_THAT(one_core[0].groups, ElementsAre(0, 1, 2));
  EXPECT_EQ(one_core[0].threads, 1);
}

TEST(LanePartitionTest, MoreGroupsThanCoresPacksByCost) {
  auto lanes = PartitionLanes({10.0, 1.0, 1.0}, 2);
  ASSERT_EQ(lanes.size(), 2u);
  EXPECT_THAT(lanes[0].groups, ElementsAre(0));
  EXPECT_THAT(lanes[1].groups, ElementsAre(1, 2));
  EXPECT_EQ(lanes[0].threads, 1);
  EXPECT_EQ(lanes[1].threads, 1);
  // Four equal groups on two cores: two each, stage order kept in a lane.
  auto even = PartitionLanes({1.0, 1.0, 1.0, 1.0}, 2);
  ASSERT_EQ(even.size(), 2u);
  EXPECT_EQ(even[0].groups.size(), 2u);
  EXPECT_EQ(even[1].groups.size(), 2u);
  EXPECT_EQ(even[0].groups[0], 0);
}

TEST(LanePartitionTest, SplitsCoresWithTheRemainderToHeavyLanes) {
  auto lanes = PartitionLanes({3.0, 1.0}, 4);
  ASSERT_EQ(lanes.size(), 2u);
  EXPECT_EQ(lanes[0].threads, 2);
  EXPECT_EQ(lanes[1].threads, 2);
  auto uneven = PartitionLanes({1.0, 3.0}, 5);
  ASSERT_EQ(uneven.size(), 2u);
  EXPECT_THAT(uneven[0].groups, ElementsAre(0));
  EXPECT_EQ(uneven[0].threads, 2);
  EXPECT_EQ(uneven[1].threads, 3);
  int total = 0;
  for (const auto& lane : PartitionLanes({1, 2, 3}, 16)) total += lane.threads;
  EXPECT_EQ(total, 16);
}

}  // namespace
}  // namespace iosfarm::worker::cpu
