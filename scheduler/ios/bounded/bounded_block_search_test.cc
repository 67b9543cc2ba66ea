#include "scheduler/ios/bounded/bounded_block_search.h"

#include <atomic>
#include <set>

#include "absl/container/flat_hash_map.h"
#include "common/strings.h"
#include "gtest/gtest.h"
#include "scheduler/ios/analytic_oracle.h"
#include "scheduler/ios/blocks.h"
#include "scheduler/ios/op_dag.h"
#include "scheduler/ios/schedule.h"
#include "scheduler/ios/search_options.h"
#include "scheduler/ios/testing/block_solution_checks.h"
#include "scheduler/ios/testing/testing_util.h"

namespace iosfarm::scheduler::ios {
namespace {

using testing::FnSource;

using testing::ToSchedule;

// The cost-to-go DP's cost to go for every block of these tests (they are small).
constexpr int64_t kBoundDp = 1'000'000;

StatusOr<BlockSolution> SolveBounded(const BlockGraph& block, const DpOptions& dp,
                                     LatencySource& source, DpStats* stats = nullptr, int cores = 0,
                                     int64_t cost_to_go_dp_max_states = 0,
                                     const DeviceFloor& device_floor = {}) {
  BoundedSearchOptions options;
  options.dp = dp;
  options.cores = cores;
  options.cost_to_go_dp_max_states = cost_to_go_dp_max_states;
  options.device_floor = device_floor;
  ASSIGN_OR_RETURN(std::unique_ptr<BoundedBlockSearch> search,
                   BoundedBlockSearch::Create(block, options));
  RETURN_IF_ERROR(search->Advance(source));
  if (!search->solved()) return absl::InternalError("an inline source never waits");
  if (stats != nullptr) *stats = search->stats();
  return search->solution();
}

// The brute-force optimum of a sweep case's graph under its bounds.
StatusOr<double> BruteForce(const testing::RandomBlockCase& c, const StageLatencyFn& oracle) {
  return testing::ExhaustiveOptimum(*c.graph, c.options.bounds.max_group_ops,
                                    c.options.bounds.max_groups, c.options.enable_merge, oracle);
}

// Knows only what it was given; records what was asked for.
class PendingSource : public LatencySource {
 public:
  std::optional<double> Lookup(Signature signature, absl::FunctionRef<Stage()> stage) override {
    auto it = known.find(signature);
    if (it != known.end()) return it->second;
    if (stages.emplace(signature, stage()).second) requested.push_back(signature);
    return std::nullopt;
  }
  Status status() const override { return absl::OkStatus(); }
  absl::flat_hash_map<Signature, double> known;
  absl::flat_hash_map<Signature, Stage> stages;
  std::vector<Signature> requested;  // each once, in order
};

// On random graphs whose latencies keep the assumption, the bounded search
// finds the exhaustive DP's latency, which is the brute-force optimum, and
// never measures more stages than the DP looks up; with the cost-to-go DP as its
// cost to go the same, from fewer measurements in all.
TEST(BoundedBlockSearchTest, EqualsExhaustiveAndBruteForceWhereTheAssumptionHolds) {
  int compared = 0;
  int64_t bounded_measured = 0, bound_dp_measured = 0, exhaustive_measured = 0;
  testing::ForEachRandomBlockCase([&](const testing::RandomBlockCase& c) {
    SCOPED_TRACE(c.Describe());
    const StageLatencyFn oracle = testing::GroupMonotoneOracle(*c.graph, c.seed);
    FnSource exhaustive_source(oracle), bounded_source(oracle), bound_dp_source(oracle);
    auto exhaustive = SolveBlock(*c.block, c.options, exhaustive_source);
    ASSERT_TRUE(exhaustive.ok()) << exhaustive.status();
    DpStats stats, bound_dp_stats;
    auto bounded = SolveBounded(*c.block, c.options, bounded_source, &stats);
    ASSERT_TRUE(bounded.ok()) << bounded.status();
    auto bound_dp =
        SolveBounded(*c.block, c.options, bound_dp_source, &bound_dp_stats, 0, kBoundDp);
    ASSERT_TRUE(bound_dp.ok()) << bound_dp.status();
    auto brute = BruteForce(c, oracle);
    ASSERT_TRUE(brute.ok()) << brute.status();
    EXPECT_NEAR(bounded->latency_ms, exhaustive->latency_ms, 1e-9);
    EXPECT_NEAR(bounded->latency_ms, *brute, 1e-9);
    EXPECT_NEAR(bound_dp->latency_ms, *brute, 1e-9);
    EXPECT_EQ(stats.lower_bound_misses, 0);
    EXPECT_EQ(bound_dp_stats.lower_bound_misses, 0);
    EXPECT_LE(bounded_source.measured(), exhaustive_source.measured());
    EXPECT_LE(bound_dp_source.measured(), exhaustive_source.measured());
    bounded_measured += bounded_source.measured();
    bound_dp_measured += bound_dp_source.measured();
    exhaustive_measured += exhaustive_source.measured();
    testing::ExpectWellFormed(*c.graph, *bounded, c.options, oracle);
    testing::ExpectWellFormed(*c.graph, *bound_dp, c.options, oracle);
    ++compared;
  });
  EXPECT_GT(compared, 1000);
  // Small graphs have few stages to skip, but some; the tighter cost to go
  // skips more.
  EXPECT_LT(bounded_measured, exhaustive_measured);
  EXPECT_LT(bound_dp_measured, bounded_measured);
}

// Stages measured over the random block cases, with a floor and without.
struct FloorTotals {
  int64_t with_floor = 0, without = 0;
};

// Every random block case under the analytic oracle, searched with `floor`
// (with and without the cost-to-go DP) and without one: the exhaustive DP and
// both floored searches at the brute force's latency, no miss, and (with
// `each_no_more`) no case measuring more with the floor than without.
FloorTotals ExpectExactWithFloor(const DeviceFloor& floor, bool each_no_more) {
  int compared = 0;
  FloorTotals totals;
  testing::ForEachRandomBlockCase([&](const testing::RandomBlockCase& c) {
    SCOPED_TRACE(c.Describe());
    const StageLatencyFn oracle = testing::AnalyticMergeKeepingOracle(*c.graph);
    FnSource exhaustive_source(oracle), plain_source(oracle), floor_source(oracle),
        floor_dp_source(oracle);
    auto exhaustive = SolveBlock(*c.block, c.options, exhaustive_source);
    ASSERT_TRUE(exhaustive.ok()) << exhaustive.status();
    DpStats stats, dp_stats;
    auto plain = SolveBounded(*c.block, c.options, plain_source);
    ASSERT_TRUE(plain.ok()) << plain.status();
    auto floored = SolveBounded(*c.block, c.options, floor_source, &stats, 0, 0, floor);
    ASSERT_TRUE(floored.ok()) << floored.status();
    auto floored_dp =
        SolveBounded(*c.block, c.options, floor_dp_source, &dp_stats, 0, kBoundDp, floor);
    ASSERT_TRUE(floored_dp.ok()) << floored_dp.status();
    auto brute = BruteForce(c, oracle);
    ASSERT_TRUE(brute.ok()) << brute.status();
    EXPECT_NEAR(exhaustive->latency_ms, *brute, 1e-9);
    EXPECT_NEAR(floored->latency_ms, *brute, 1e-9);
    EXPECT_NEAR(floored_dp->latency_ms, *brute, 1e-9);
    EXPECT_EQ(stats.lower_bound_misses, 0);
    EXPECT_EQ(dp_stats.lower_bound_misses, 0);
    if (each_no_more) EXPECT_LE(floor_source.measured(), plain_source.measured());
    totals.with_floor += floor_source.measured();
    totals.without += plain_source.measured();
    testing::ExpectWellFormed(*c.graph, *floored, c.options, oracle);
    testing::ExpectWellFormed(*c.graph, *floored_dp, c.options, oracle);
    ++compared;
  });
  EXPECT_GT(compared, 1000);
  return totals;
}

// The device floor where the latencies come from the model that declares
// it (the analytic oracle and its AnalyticDeviceFloor): exact, never a
// stage below its bound, with the critical path and with the cost-to-go DP as
// cost to go, and fewer stages measured than without it.
TEST(BoundedBlockSearchTest, DeviceFloorEqualsExhaustiveAndBruteForceAndMeasuresLess) {
  const FloorTotals totals = ExpectExactWithFloor(AnalyticDeviceFloor(), /*each_no_more=*/true);
  EXPECT_LT(totals.with_floor, totals.without);
}

// A floor timed back to back (DeviceFloor::back_to_back: no last kernel, no
// launch before the work) bounds the analytic model too, which adds its
// issue to its work: exact, with and without the cost-to-go DP, and never a
// miss.
TEST(BoundedBlockSearchTest, BackToBackFloorEqualsExhaustiveAndBruteForce) {
  DeviceFloor floor = AnalyticDeviceFloor();
  floor.issue_overlaps_work = true;
  floor.back_to_back = true;
  ASSERT_TRUE(ValidateDeviceFloor(floor).ok());
  const FloorTotals totals = ExpectExactWithFloor(floor, /*each_no_more=*/false);
  EXPECT_LE(totals.with_floor, totals.without);
}

// The same on a device of cores (the core bound: every group also measured
// on one core, stages bounded by their work over the cores): exact where
// the latencies keep its assumption, and it measures fewer stages than the
// slowest-group bound alone where stages are work-bound.
TEST(BoundedBlockSearchTest, CoreBoundEqualsExhaustiveAndBruteForceAndMeasuresLess) {
  for (int cores : {2, 4}) {
    SCOPED_TRACE(StrCat("cores ", cores));
    int compared = 0;
    int64_t with_cores = 0, without = 0, single_core_groups = 0;
    testing::ForEachRandomBlockCase([&](const testing::RandomBlockCase& c) {
      if (c.n < 5) return;
      SCOPED_TRACE(c.Describe());
      const StageLatencyFn oracle = testing::CoresOracle(*c.graph, c.seed, cores);
      FnSource exhaustive_source(oracle), cores_source(oracle), plain_source(oracle);
      auto exhaustive = SolveBlock(*c.block, c.options, exhaustive_source);
      ASSERT_TRUE(exhaustive.ok()) << exhaustive.status();
      DpStats stats, plain_stats;
      auto bounded = SolveBounded(*c.block, c.options, cores_source, &stats, cores);
      ASSERT_TRUE(bounded.ok()) << bounded.status();
      FnSource bound_dp_source(oracle);
      auto bound_dp = SolveBounded(*c.block, c.options, bound_dp_source, nullptr, cores, kBoundDp);
      ASSERT_TRUE(bound_dp.ok()) << bound_dp.status();
      EXPECT_NEAR(bound_dp->latency_ms, exhaustive->latency_ms, 1e-9);
      auto plain = SolveBounded(*c.block, c.options, plain_source, &plain_stats);
      ASSERT_TRUE(plain.ok()) << plain.status();
      auto brute = BruteForce(c, oracle);
      ASSERT_TRUE(brute.ok()) << brute.status();
      EXPECT_NEAR(bounded->latency_ms, exhaustive->latency_ms, 1e-9);
      EXPECT_NEAR(bounded->latency_ms, *brute, 1e-9);
      EXPECT_NEAR(plain->latency_ms, *brute, 1e-9);
      EXPECT_EQ(stats.lower_bound_misses, 0);
      // Every group twice (alone, and on one core), all counted.
      EXPECT_EQ(stats.bound_groups, 2 * plain_stats.bound_groups);
      EXPECT_LE(cores_source.measured(), stats.distinct_stages);
      with_cores += cores_source.measured();
      without += plain_source.measured();
      single_core_groups += stats.bound_groups / 2;
      testing::ExpectWellFormed(*c.graph, *bounded, c.options, oracle);
      ++compared;
    });
    EXPECT_GT(compared, 500);
    // Beyond the extra one-core group measurements, it measures fewer.
    EXPECT_LT(with_cores - single_core_groups, without);
  }
}

// Latencies that break the assumption (independent random values per
// signature) still give a valid schedule, never cheaper than the optimum,
// and the stats say that the bounds were broken (bench/ios_search_bench
// reports how far from the exhaustive search real latencies take it).
TEST(BoundedBlockSearchTest, BrokenAssumptionStillGivesAValidScheduleAndSaysSo) {
  int64_t misses = 0;
  int worse = 0;
  for (uint64_t seed = 1; seed <= 120; ++seed) {
    const int n = 4 + static_cast<int>(seed % 9);
    const graph::Graph graph = testing::RandomDag(seed * 104729, n);
    const OpDag dag = *BuildOpDag(graph);
    const BlockGraph block = *BlockGraph::Build(graph, dag.order);
    const StageLatencyFn oracle = testing::RandomOracle(graph, seed);
    DpOptions options;
    options.bounds = {3, 8};
    FnSource exhaustive_source(oracle), bounded_source(oracle), bound_dp_source(oracle);
    auto exhaustive = SolveBlock(block, options, exhaustive_source);
    DpStats stats;
    auto bounded = SolveBounded(block, options, bounded_source, &stats);
    ASSERT_TRUE(exhaustive.ok() && bounded.ok());
    auto bound_dp = SolveBounded(block, options, bound_dp_source, nullptr, 0, kBoundDp);
    ASSERT_TRUE(bound_dp.ok()) << bound_dp.status();
    EXPECT_GE(bound_dp->latency_ms, exhaustive->latency_ms - 1e-9);
    EXPECT_TRUE(ValidateSchedule(graph, ToSchedule(*bound_dp)).ok());
    EXPECT_GE(bounded->latency_ms, exhaustive->latency_ms - 1e-9);
    worse += bounded->latency_ms > exhaustive->latency_ms + 1e-9;
    EXPECT_TRUE(ValidateSchedule(graph, ToSchedule(*bounded)).ok());
    // Only the stages it measures can show a broken bound: one that a
    // broken bound kept off the path is never measured, so a search with no
    // miss counted may still be worse.
    misses += stats.lower_bound_misses;
  }
  EXPECT_GT(misses, 0);
  EXPECT_GT(worse, 0);  // the test can tell a broken assumption apart
}

// A search that waits for latencies (as in a farm) and gets them later takes
// the same path as one that measures on the spot: the same schedule; with no
// lookahead it asks for exactly the stages the inline search measures, with
// a lookahead for more, each once.
TEST(BoundedBlockSearchTest, WaitingForLatenciesChangesNothing) {
  for (uint64_t seed = 1; seed <= 40; ++seed) {
    const graph::Graph graph = testing::RandomDag(seed * 31, 12);
    const OpDag dag = *BuildOpDag(graph);
    const BlockGraph block = *BlockGraph::Build(graph, dag.order);
    const StageLatencyFn oracle = testing::GroupMonotoneOracle(graph, seed);
    DpOptions dp;
    dp.bounds = {3, 8};
    for (int64_t bound_dp : {int64_t{0}, kBoundDp}) {
      FnSource inline_source(oracle);
      auto direct = SolveBounded(block, dp, inline_source, nullptr, 0, bound_dp);
      ASSERT_TRUE(direct.ok());
      for (int lookahead : {0, 8}) {
        SCOPED_TRACE(::testing::Message()
                     << "seed " << seed << " lookahead " << lookahead << " cost-to-go DP " << bound_dp);
        BoundedSearchOptions options;
        options.dp = dp;
        options.lookahead = lookahead;
        options.cost_to_go_dp_max_states = bound_dp;
        auto search = *BoundedBlockSearch::Create(block, options);
        PendingSource source;
        size_t answered = 0;
        int rounds = 0;
        while (true) {
          ASSERT_TRUE(search->Advance(source).ok());
          if (search->solved()) break;
          ASSERT_FALSE(search->waiting_for().empty());
          for (Signature signature : search->waiting_for()) {
            EXPECT_TRUE(source.stages.contains(signature));
          }
          ASSERT_LT(answered, source.requested.size()) << "waits for nothing new";
          for (; answered < source.requested.size(); ++answered) {
            const Signature signature = source.requested[answered];
            source.known[signature] = *oracle(source.stages.at(signature));
          }
          ++rounds;
        }
        EXPECT_GT(rounds, 0);
        ASSERT_EQ(search->solution().stages.size(), direct->stages.size());
        for (size_t i = 0; i < direct->stages.size(); ++i) {
          EXPECT_EQ(search->solution().stages[i].signature, direct->stages[i].signature);
          EXPECT_EQ(search->solution().stages[i].stage.groups, direct->stages[i].stage.groups);
        }
        EXPECT_DOUBLE_EQ(search->solution().latency_ms, direct->latency_ms);
        if (lookahead == 0) {
          EXPECT_EQ(static_cast<int64_t>(source.requested.size()), inline_source.measured());
        } else {
          EXPECT_GE(static_cast<int64_t>(source.requested.size()), inline_source.measured());
        }
      }
    }
  }
}

// A block of more states than cost_to_go_dp_max_states keeps the critical-path
// cost to go: the search it makes is the one without the cost-to-go DP.
TEST(BoundedBlockSearchTest, ABlockOverTheBoundDpStatesKeepsTheCriticalPath) {
  int differs = 0;
  for (uint64_t seed = 1; seed <= 20; ++seed) {
    const graph::Graph graph = testing::RandomDag(seed * 7919, 10);
    const OpDag dag = *BuildOpDag(graph);
    const BlockGraph block = *BlockGraph::Build(graph, dag.order);
    const int64_t states = CountStates(block, 1'000'000);
    const StageLatencyFn oracle = testing::GroupMonotoneOracle(graph, seed);
    DpOptions dp;
    dp.bounds = {3, 8};
    FnSource plain(oracle), over(oracle), within(oracle);
    DpStats plain_stats, over_stats, within_stats;
    ASSERT_TRUE(SolveBounded(block, dp, plain, &plain_stats).ok());
    ASSERT_TRUE(SolveBounded(block, dp, over, &over_stats, 0, states - 1).ok());
    ASSERT_TRUE(SolveBounded(block, dp, within, &within_stats, 0, states).ok());
    EXPECT_EQ(over.measured(), plain.measured());
    EXPECT_EQ(over_stats.transitions, plain_stats.transitions);
    // The cost-to-go DP enumerates every state's endings once more.
    EXPECT_GT(within_stats.transitions, plain_stats.transitions);
    differs += within.measured() != plain.measured();
  }
  EXPECT_GT(differs, 0);
}

// Blocks of one shape (cells of RepeatedCells at several sizes) whose bound
// DPs are walked together give what each block's search gives alone: the
// same schedule, latency, measurements and transitions.
TEST(BoundedBlockSearchTest, ASharedBoundDpWalkGivesWhatEachWalkGivesAlone) {
  int shared = 0;
  const DeviceFloor floor = AnalyticDeviceFloor();
  for (uint64_t seed = 1; seed <= 12; ++seed) {
    SCOPED_TRACE(StrCat("seed ", seed));
    const graph::Graph graph = testing::RepeatedCells(seed, 6, 9);
    const BlockPartition partition = *PartitionIntoBlocks(graph, {12});
    std::vector<BlockGraph> blocks;
    for (const Block& block : partition.blocks) {
      blocks.push_back(*BlockGraph::Build(graph, block.ops));
    }
    const StageLatencyFn oracle = testing::AnalyticMergeKeepingOracle(graph);
    BoundedSearchOptions options;
    options.dp.bounds = {3, 4};
    options.cost_to_go_dp_max_states = kBoundDp;
    options.device_floor = seed % 2 == 0 ? floor : DeviceFloor{};
    for (size_t first = 0; first < blocks.size(); ++first) {
      std::vector<size_t> shape;
      for (size_t b = first; b < blocks.size(); ++b) {
        if (SameShape(blocks[first], blocks[b])) shape.push_back(b);
      }
      if (shape.size() < 2 || shape[0] != first || blocks[first].size() < 3) continue;
      options.pause_before_cost_to_go_dp = true;
      std::vector<std::unique_ptr<BoundedBlockSearch>> together;
      std::vector<BoundedBlockSearch*> paused;
      FnSource together_source(oracle);
      for (size_t b : shape) {
        together.push_back(*BoundedBlockSearch::Create(blocks[b], options));
        ASSERT_TRUE(together.back()->Advance(together_source).ok());
        ASSERT_TRUE(together.back()->paused_before_cost_to_go_dp());
        EXPECT_FALSE(together.back()->solved());
        paused.push_back(together.back().get());
      }
      ASSERT_TRUE(BoundedBlockSearch::WalkCostToGoDps(paused).ok());
      options.pause_before_cost_to_go_dp = false;
      for (size_t k = 0; k < shape.size(); ++k) {
        ASSERT_TRUE(together[k]->Advance(together_source).ok());
        ASSERT_TRUE(together[k]->solved());
        FnSource alone_source(oracle);
        DpStats alone_stats;
        auto alone = SolveBounded(blocks[shape[k]], options.dp, alone_source, &alone_stats, 0,
                                  kBoundDp, options.device_floor);
        ASSERT_TRUE(alone.ok()) << alone.status();
        const BlockSolution& walked = together[k]->solution();
        EXPECT_DOUBLE_EQ(walked.latency_ms, alone->latency_ms);
        ASSERT_EQ(walked.stages.size(), alone->stages.size());
        for (size_t i = 0; i < walked.stages.size(); ++i) {
          EXPECT_EQ(walked.stages[i].signature, alone->stages[i].signature);
        }
        EXPECT_EQ(walked.stats.transitions, alone_stats.transitions);
        EXPECT_EQ(walked.stats.distinct_stages, alone_stats.distinct_stages);
        EXPECT_EQ(walked.stats.states, alone_stats.states);
        ++shared;
      }
    }
  }
  EXPECT_GT(shared, 20);
}

TEST(BoundedBlockSearchTest, ASharedBoundDpWalkTakesPausedSearchesOfOneShape) {
  const graph::Graph narrow = testing::WideGraph(2, 3);
  const graph::Graph wide = testing::WideGraph(3, 2);
  const BlockGraph a = *BlockGraph::Build(narrow, BuildOpDag(narrow)->order);
  const BlockGraph b = *BlockGraph::Build(wide, BuildOpDag(wide)->order);
  ASSERT_FALSE(SameShape(a, b));
  BoundedSearchOptions options;
  options.cost_to_go_dp_max_states = kBoundDp;
  FnSource source_a(testing::GroupMonotoneOracle(narrow, 3));
  FnSource source_b(testing::GroupMonotoneOracle(wide, 3));
  auto running = *BoundedBlockSearch::Create(a, options);  // not paused: not yet advanced
  EXPECT_EQ(BoundedBlockSearch::WalkCostToGoDps({running.get()}).code(),
            absl::StatusCode::kInvalidArgument);
  options.pause_before_cost_to_go_dp = true;
  auto paused_a = *BoundedBlockSearch::Create(a, options);
  auto paused_b = *BoundedBlockSearch::Create(b, options);
  ASSERT_TRUE(paused_a->Advance(source_a).ok());
  ASSERT_TRUE(paused_b->Advance(source_b).ok());
  ASSERT_TRUE(paused_a->paused_before_cost_to_go_dp() && paused_b->paused_before_cost_to_go_dp());
  const Status mixed = BoundedBlockSearch::WalkCostToGoDps({paused_a.get(), paused_b.get()});
  EXPECT_EQ(mixed.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(mixed.message().find("shape"), std::string::npos) << mixed;
  EXPECT_TRUE(BoundedBlockSearch::WalkCostToGoDps({}).ok());
  // Refused, each walks its own at its next Advance.
  ASSERT_TRUE(paused_a->Advance(source_a).ok());
  EXPECT_TRUE(paused_a->solved());
  EXPECT_FALSE(paused_a->paused_before_cost_to_go_dp());

  // A walk the stop flag ends: each search reports it at its next Advance.
  const graph::Graph large = testing::WideGraph(10, 2);
  const BlockGraph c = *BlockGraph::Build(large, BuildOpDag(large)->order);
  std::atomic<bool> stop{false};
  options.dp.stop = &stop;
  FnSource source_c(testing::GroupMonotoneOracle(large, 3));
  auto first = *BoundedBlockSearch::Create(c, options);
  auto second = *BoundedBlockSearch::Create(c, options);
  ASSERT_TRUE(first->Advance(source_c).ok());
  ASSERT_TRUE(second->Advance(source_c).ok());
  stop = true;
  EXPECT_TRUE(BoundedBlockSearch::WalkCostToGoDps({first.get(), second.get()}).ok());
  EXPECT_EQ(first->Advance(source_c).code(), absl::StatusCode::kCancelled);
  EXPECT_EQ(second->Advance(source_c).code(), absl::StatusCode::kCancelled);
}

// The cost-to-go DP's walk counts its own tables (its states' costs, best
// endings and index) against the byte budget while it runs: a walk whose
// tables are over it stops before it is done, and the search says so.
TEST(BoundedBlockSearchTest, AWalkOverTheByteBudgetStops) {
  const graph::Graph graph = testing::WideGraph(10, 2);  // 59,049 states
  const BlockGraph block = *BlockGraph::Build(graph, BuildOpDag(graph)->order);
  FnSource source(testing::GroupMonotoneOracle(graph, 1));
  BoundedSearchOptions options;
  options.dp.bounds = {3, 8};
  options.dp.max_bytes = int64_t{2} << 20;  // the walk's tables: about 3 MiB
  options.cost_to_go_dp_max_states = kBoundDp;
  options.pause_before_cost_to_go_dp = true;
  auto search = *BoundedBlockSearch::Create(block, options);
  ASSERT_TRUE(search->Advance(source).ok());
  ASSERT_TRUE(search->paused_before_cost_to_go_dp());
  ASSERT_TRUE(BoundedBlockSearch::WalkCostToGoDps({search.get()}).ok());
  EXPECT_EQ(search->stats().transitions, 0);  // stopped: no table, nothing counted
  const Status over = search->Advance(source);
  EXPECT_TRUE(IsSearchBudgetError(over)) << over;
  EXPECT_NE(over.message().find("MiB"), std::string::npos) << over;
}

TEST(BoundedBlockSearchTest, BudgetAndStopFlag) {
  const graph::Graph graph = testing::WideGraph(10, 2);
  const OpDag dag = *BuildOpDag(graph);
  const BlockGraph block = *BlockGraph::Build(graph, dag.order);
  const StageLatencyFn oracle = testing::GroupMonotoneOracle(graph, 1);
  DpOptions dp;
  dp.bounds = {3, 8};
  dp.max_states = 3;
  FnSource source(oracle);
  auto over = SolveBounded(block, dp, source);
  ASSERT_FALSE(over.ok());
  EXPECT_TRUE(IsSearchBudgetError(over.status())) << over.status();
  EXPECT_NE(over.status().message().find("more than 3 expanded states"), std::string::npos)
      << over.status();
  dp.max_states = 0;
  std::atomic<bool> stop{true};
  dp.stop = &stop;
  auto stopped = SolveBounded(block, dp, source);
  EXPECT_EQ(stopped.status().code(), absl::StatusCode::kCancelled) << stopped.status();
  BoundedSearchOptions bad;
  bad.lookahead = -1;
  EXPECT_EQ(BoundedBlockSearch::Create(block, bad).status().code(),
            absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace iosfarm::scheduler::ios
