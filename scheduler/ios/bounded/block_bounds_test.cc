#include "scheduler/ios/bounded/block_bounds.h"

#include <algorithm>
#include <bit>
#include <cstdint>
#include <functional>
#include <set>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "scheduler/ios/analytic_oracle.h"
#include "scheduler/ios/testing/testing_util.h"

namespace iosfarm::scheduler::ios {
namespace {

// The block's groups by brute force (blocks of at most 64 ops, as bit
// masks): every set of at most r ops that is connected through the block's
// edges inside it and convex (no op outside it lies on a path between two
// of its ops).
std::set<uint64_t> BruteForceGroups(const BlockGraph& block, int r) {
  const int n = block.size();
  // reach[u]: the ops a path from u reaches (u not included).
  std::vector<uint64_t> reach(n, 0);
  for (int u = n - 1; u >= 0; --u) {
    for (int s : block.succs(u)) reach[u] |= (uint64_t{1} << s) | reach[s];
  }
  std::set<uint64_t> groups;
  for (uint64_t set = 1; set < (uint64_t{1} << n); ++set) {
    if (std::popcount(set) > r) continue;
    // Connected: grow from its lowest op along edges inside the set.
    uint64_t seen = set & -set, frontier = seen;
    while (frontier != 0) {
      const int v = std::countr_zero(frontier);
      frontier &= frontier - 1;
      uint64_t next = 0;
      for (int s : block.succs(v)) next |= uint64_t{1} << s;
      for (int p : block.preds(v)) next |= uint64_t{1} << p;
      next &= set & ~seen;
      seen |= next;
      frontier |= next;
    }
    if (seen != set) continue;
    bool convex = true;
    for (int v = 0; v < n && convex; ++v) {
      if ((set >> v) & 1) continue;
      bool from_set = false;
      for (int u = 0; u < n; ++u)
        from_set = from_set || (((set >> u) & 1) && ((reach[u] >> v) & 1));
      convex = !(from_set && (reach[v] & set) != 0);
    }
    if (convex) groups.insert(set);
  }
  return groups;
}

BoundedSearchOptions OptionsOf(const testing::RandomBlockCase& c) {
  BoundedSearchOptions options;
  options.dp = c.options;
  return options;
}

// The groups are exactly the connected, convex sets of at most r ops, each
// once; past max_groups, EnumerateGroups says so.
TEST(BlockBoundsTest, GroupsAreExactlyTheConnectedConvexSetsOfAtMostROps) {
  int compared = 0, over = 0;
  testing::ForEachRandomBlockCase([&](const testing::RandomBlockCase& c) {
    SCOPED_TRACE(c.Describe());
    ASSERT_EQ(c.block->words(), 1);
    BoundedSearchOptions options = OptionsOf(c);
    BlockBounds<1> bounds(*c.block, options);
    ASSERT_TRUE(bounds.EnumerateGroups());
    std::set<uint64_t> found;
    for (const OpBits<1>& group : bounds.groups()) found.insert(group.words[0]);
    EXPECT_EQ(found.size(), bounds.groups().size()) << "a group enumerated twice";
    EXPECT_EQ(found, BruteForceGroups(*c.block, c.options.bounds.max_group_ops));
    ++compared;
    if (found.size() < 2) return;
    options.max_groups = static_cast<int64_t>(found.size()) - 1;
    BlockBounds<1> capped(*c.block, options);
    EXPECT_FALSE(capped.EnumerateGroups());
    ++over;
  });
  EXPECT_GT(compared, 1000);
  EXPECT_GT(over, 1000);
}

// One setting of the bounds: an oracle that keeps the search's assumption
// under them, and the options that take its terms.
struct BoundsSetting {
  std::string name;
  std::function<StageLatencyFn(const testing::RandomBlockCase&)> oracle;
  DeviceFloor device_floor;
  int cores = 0;
};

std::vector<BoundsSetting> Settings() {
  auto analytic = [](const testing::RandomBlockCase& c) {
    return testing::AnalyticMergeKeepingOracle(*c.graph);
  };
  // A device whose host issue rules small stages (20 us a kernel): the
  // floor is the bound of most wide endings.
  AnalyticDeviceModel issue_bound;
  issue_bound.issue_us = 20.0;
  auto issue_bound_oracle = [issue_bound](const testing::RandomBlockCase& c) {
    return testing::AnalyticMergeKeepingOracle(*c.graph, issue_bound);
  };
  // Timed back to back (no last kernel, no launch before the work), which
  // bounds the model too: it adds its issue to its work.
  DeviceFloor back_to_back = AnalyticDeviceFloor(issue_bound);
  back_to_back.issue_overlaps_work = true;
  back_to_back.back_to_back = true;
  return {
      {"group monotone",
       [](const testing::RandomBlockCase& c) {
         return testing::GroupMonotoneOracle(*c.graph, c.seed);
       },
       {},
       0},
      {"analytic, its device floor", analytic, AnalyticDeviceFloor(), 0},
      {"issue-bound analytic, back-to-back floor", issue_bound_oracle, back_to_back, 0},
      {"issue-bound analytic, its device floor", issue_bound_oracle,
       AnalyticDeviceFloor(issue_bound), 0},
      {"2 cores",
       [](const testing::RandomBlockCase& c) { return testing::CoresOracle(*c.graph, c.seed, 2); },
       {},
       2},
  };
}

// Where the latencies keep the assumption: no ending of any state costs
// less than its bound (the cheaper of its strategies), every group is
// found, and the cost to go is consistent over every ending's bound
// (h(S) <= bound(E) + h(S - E)), so A* may close a state the first time it
// takes it off the open list. Checked on every state and every ending, not
// only those a search evaluates (1.4 M endings in all). The floors and the
// core bound must raise some bounds above the slowest group, or the check
// would be the group bound's alone: under the default analytic model about
// 900 endings, on the issue-bound device and with cores most of them.
TEST(BlockBoundsTest, NoEndingBeatsItsBoundAndTheCostToGoIsConsistent) {
  for (const BoundsSetting& setting : Settings()) {
    SCOPED_TRACE(setting.name);
    BoundedSearchOptions options;
    options.device_floor = setting.device_floor;
    options.cores = setting.cores;
    StatusOr<BoundAudit> check = testing::CheckSweepEndingsBound(options, setting.oracle);
    ASSERT_TRUE(check.ok()) << check.status();
    EXPECT_EQ(check->below, 0) << check->first_failure;
    EXPECT_EQ(check->merge_below, 0);
    EXPECT_EQ(check->sub_below, 0) << check->first_failure;
    EXPECT_EQ(check->inconsistent, 0) << check->first_failure;
    EXPECT_GT(check->endings, 1'000'000);
    if (setting.device_floor.bounds_anything() || setting.cores >= 2) {
      EXPECT_GT(check->raised, 100);
    }
  }
}

// An oracle that keeps the group bound but not the sub-stage one: a
// concurrent stage of three or more groups costs its slowest group alone,
// while one of two costs that plus the groups' extras (GroupMonotoneOracle).
// The audit must count those stages below their sub-stages, and only them.
TEST(BlockBoundsTest, TheAuditCountsStagesFasterThanSomeOfTheirGroups) {
  StatusOr<BoundAudit> check = testing::CheckSweepEndingsBound(
      BoundedSearchOptions{}, [](const testing::RandomBlockCase& c) -> StageLatencyFn {
        StageLatencyFn base = testing::GroupMonotoneOracle(*c.graph, c.seed);
        return [base](const Stage& stage) -> StatusOr<double> {
          if (stage.strategy != Strategy::kConcurrent || stage.groups.size() < 3) {
            return base(stage);
          }
          double slowest = 0;
          for (const auto& group : stage.groups) {
            ASSIGN_OR_RETURN(double alone, base(testing::ConcurrentStage({group})));
            slowest = std::max(slowest, alone);
          }
          return slowest;
        };
      });
  ASSERT_TRUE(check.ok()) << check.status();
  EXPECT_EQ(check->below, 0) << check->first_failure;
  EXPECT_EQ(check->merge_below, 0);
  EXPECT_GT(check->sub_below, 1000);
  EXPECT_GT(check->largest_sub_shortfall_ms, 0.1);
  EXPECT_LE(check->largest_sub_shortfall_share, 1.0);
  EXPECT_NE(check->first_failure.find("all but one group"), std::string::npos)
      << check->first_failure;
}

}  // namespace
}  // namespace iosfarm::scheduler::ios
