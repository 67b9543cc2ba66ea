// IssuedChainsFloor (issued_chains_floor.h) against IssuedChainsFloorMs, bit for bit.
#include "scheduler/ios/bounded/issued_chains_floor.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>
#include <random>
#include <span>
#include <vector>

namespace iosfarm::scheduler::ios {
namespace {

using Order = DeviceFloor::IssueOrder;

DeviceFloor Floor(Order order, double launch_ms) {
  DeviceFloor floor;
  floor.stage_ms = 0.0025;
  floor.launch_ms = launch_ms;
  floor.issue_order = order;
  return floor;
}

// The reference: the stage's chains sorted by rank, through
// IssuedChainsFloorMs.
double Reference(const DeviceFloor& floor, const std::vector<int32_t>& ranks,
                 const std::vector<std::vector<double>>& runs, std::vector<int32_t> ids) {
  std::sort(ids.begin(), ids.end(), [&](int32_t a, int32_t b) { return ranks[a] < ranks[b]; });
  std::vector<std::span<const double>> chains;
  for (int32_t id : ids) chains.emplace_back(runs[id]);
  return IssuedChainsFloorMs(floor, chains);
}

// The hand-worked stage of DeviceFloorTest.ChainsFollowTheIssueOrder, its
// groups given out of their issue order: A runs 5 then 1, B runs 4;
// round-robin ends at 10, group by group at 13.
TEST(IssueChainsTest, HandWorkedStageInBothOrders) {
  for (const auto& [order, end] :
       {std::pair{Order::kRoundRobin, 10.0}, std::pair{Order::kGroupByGroup, 13.0}}) {
    DeviceFloor floor = Floor(order, 3);
    floor.stage_ms = 2.5;
    IssuedChainsFloor chains(floor);
    const std::vector<double> a = {5, 1}, b = {4};
    chains.AddGroup(/*rank=*/7, b);
    chains.AddGroup(/*rank=*/2, a);
    const int32_t ids[] = {0, 1};
    EXPECT_DOUBLE_EQ(chains.FloorMs(ids, 2), 2.5 + end) << IssueOrderName(order);
  }
  IssuedChainsFloor unknown(Floor(Order::kUnknown, 3));
  unknown.AddGroup(0, std::vector<double>{5});
  const int32_t one[] = {0};
  EXPECT_EQ(unknown.FloorMs(one, 1), 0);
}

// Random stages, including groups without kernels, groups longer than the
// fast path takes and stages of more groups than it takes: the same double
// as the reference, in both orders and with launches that do not add up
// exactly in binary.
TEST(IssueChainsTest, EqualsIssuedChainsFloorMsBitForBit) {
  std::mt19937_64 rng(20261129);
  std::uniform_real_distribution<double> run(0.0, 0.02);
  for (const Order order : {Order::kRoundRobin, Order::kGroupByGroup}) {
    for (const double launch_ms : {0.0011, 0.003, 0.0}) {
      const DeviceFloor floor = Floor(order, launch_ms);
      const int groups = 60;
      std::vector<int32_t> ranks(groups);
      std::iota(ranks.begin(), ranks.end(), 0);
      std::shuffle(ranks.begin(), ranks.end(), rng);
      std::vector<std::vector<double>> runs(groups);
      IssuedChainsFloor chains(floor);
      for (int g = 0; g < groups; ++g) {
        // Mostly 0-3 kernels (the fast path), some 4-5.
        const int kernels = static_cast<int>(rng() % 10 < 8 ? rng() % 4 : 4 + rng() % 2);
        for (int k = 0; k < kernels; ++k) runs[g].push_back(run(rng));
        chains.AddGroup(ranks[g], runs[g]);
      }
      ASSERT_EQ(chains.size(), groups);
      for (int trial = 0; trial < 3000; ++trial) {
        std::vector<int32_t> ids(groups);
        std::iota(ids.begin(), ids.end(), 0);
        std::shuffle(ids.begin(), ids.end(), rng);
        // 1-8 groups mostly; up to 24 (past kFastGroups) now and then.
        const int count = static_cast<int>(trial % 10 == 0 ? 1 + rng() % 24 : 1 + rng() % 8);
        ids.resize(count);
        const double expected = Reference(floor, ranks, runs, ids);
        const double got = chains.FloorMs(ids.data(), count);
        ASSERT_EQ(got, expected) << IssueOrderName(order) << " launch " << launch_ms << " trial "
                                 << trial << " groups " << count;
      }
    }
  }
}

}  // namespace
}  // namespace iosfarm::scheduler::ios
