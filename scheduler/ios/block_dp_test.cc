#include "scheduler/ios/block_dp.h"

#include <cmath>
#include <functional>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "common/strings.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "scheduler/ios/op_dag.h"
#include "scheduler/ios/schedule.h"
#include "scheduler/ios/search_options.h"
#include "scheduler/ios/stages/stable_hash.h"
#include "scheduler/ios/testing/block_solution_checks.h"
#include "scheduler/ios/testing/testing_util.h"

namespace iosfarm::scheduler::ios {
namespace {

using testing::FnSource;

// Never knows anything.
class UnknownSource : public LatencySource {
 public:
  std::optional<double> Lookup(Signature signature, absl::FunctionRef<Stage()>) override {
    seen.push_back(signature);
    return std::nullopt;
  }
  Status status() const override { return absl::OkStatus(); }
  std::vector<Signature> seen;
};

using testing::ToSchedule;

// The DP over a whole random graph (one block) equals the exhaustive
// optimum, for several r/s bounds and with the bounds lifted (r = s = n:
// then every schedule is allowed and the exhaustive search is the true
// optimum). The schedule read back is valid, within the bounds, and sums to
// the cost.
TEST(BlockDpTest, EqualsExhaustiveSearchOnRandomGraphs) {
  int compared = 0;
  int merge_stages_chosen = 0;
  testing::ForEachRandomBlockCase([&](const testing::RandomBlockCase& c) {
    SCOPED_TRACE(c.Describe());
    const StageLatencyFn oracle = testing::RandomOracle(*c.graph, c.seed);
    FnSource source(oracle);
    auto solution = SolveBlock(*c.block, c.options, source);
    ASSERT_TRUE(solution.ok()) << solution.status();
    ASSERT_TRUE(solution->complete);
    auto exhaustive =
        testing::ExhaustiveOptimum(*c.graph, c.options.bounds.max_group_ops,
                                   c.options.bounds.max_groups, c.options.enable_merge, oracle);
    ASSERT_TRUE(exhaustive.ok()) << exhaustive.status();
    EXPECT_NEAR(solution->latency_ms, *exhaustive, 1e-9);
    merge_stages_chosen += testing::ExpectWellFormed(*c.graph, *solution, c.options, oracle);
    ++compared;
  });
  EXPECT_GT(compared, 1000);
  EXPECT_GT(merge_stages_chosen, 20);  // merges are exercised, not just legal
}

TEST(BlockDpTest, DeterministicAcrossRuns) {
  const graph::Graph graph = testing::RandomDag(99, 12);
  const OpDag dag = *BuildOpDag(graph);
  const BlockGraph block = *BlockGraph::Build(graph, dag.order);
  DpOptions options;
  std::vector<std::string> runs;
  for (int run = 0; run < 3; ++run) {
    FnSource source(testing::RandomOracle(graph, 5));
    auto solution = SolveBlock(block, options, source);
    ASSERT_TRUE(solution.ok());
    std::string text;
    for (const PlannedStage& planned : solution->stages) {
      text += StageToString(graph, planned.stage) + ";";
    }
    runs.push_back(text);
  }
  EXPECT_EQ(runs[0], runs[1]);
  EXPECT_EQ(runs[1], runs[2]);
}

TEST(BlockDpTest, UnknownLatenciesStillVisitEveryStateOnce) {
  const graph::Graph graph = testing::RandomDag(3, 10);
  const OpDag dag = *BuildOpDag(graph);
  const BlockGraph block = *BlockGraph::Build(graph, dag.order);
  DpOptions options;
  UnknownSource unknown;
  auto pass1 = SolveBlock(block, options, unknown);
  ASSERT_TRUE(pass1.ok());
  EXPECT_FALSE(pass1->complete);
  EXPECT_TRUE(pass1->stages.empty());
  FnSource known(testing::RandomOracle(graph, 1));
  auto pass2 = SolveBlock(block, options, known);
  ASSERT_TRUE(pass2.ok());
  EXPECT_TRUE(pass2->complete);
  // Same state space and candidates either way; one lookup per distinct stage.
  EXPECT_EQ(pass1->stats.states, pass2->stats.states);
  EXPECT_EQ(pass1->stats.transitions, pass2->stats.transitions);
  EXPECT_EQ(static_cast<int64_t>(unknown.seen.size()), pass1->stats.distinct_stages);
}

// `solve` (the status code of a DP under the given options) refuses a state
// cap of 2 as over the budget and r = 0 as invalid.
void ExpectStateCapAndBadBounds(const std::function<absl::StatusCode(const DpOptions&)>& solve) {
  DpOptions options;
  options.max_states = 2;
  EXPECT_EQ(solve(options), absl::StatusCode::kResourceExhausted);
  options.max_states = 0;
  options.bounds = {0, 8};
  EXPECT_EQ(solve(options), absl::StatusCode::kInvalidArgument);
}

TEST(BlockDpTest, StateCapAndBadBounds) {
  const graph::Graph graph = testing::RandomDag(4, 12);
  const OpDag dag = *BuildOpDag(graph);
  const BlockGraph block = *BlockGraph::Build(graph, dag.order);
  FnSource source(testing::RandomOracle(graph, 1));
  ExpectStateCapAndBadBounds([&](const DpOptions& options) {
    return SolveBlock(block, options, source).status().code();
  });
}

TEST(BlockDpTest, OracleErrorsPropagate) {
  const graph::Graph graph = testing::RandomDag(5, 6);
  const OpDag dag = *BuildOpDag(graph);
  const BlockGraph block = *BlockGraph::Build(graph, dag.order);
  FnSource source([](const Stage&) -> StatusOr<double> {
    return absl::UnavailableError("device lost");
  });
  EXPECT_EQ(SolveBlock(block, DpOptions{}, source).status().code(),
            absl::StatusCode::kUnavailable);
}

// Latencies as a function of the signature only (pseudo-random in [0.1,
// 10.1) ms), so that blocks of different graphs can share one source; with
// `known` set, only those signatures are known.
class SignatureSource : public LatencySource {
 public:
  std::optional<double> Lookup(Signature signature, absl::FunctionRef<Stage()>) override {
    seen.insert(signature);
    if (known != nullptr && !known->contains(signature)) return std::nullopt;
    return 0.1 + static_cast<double>(Mix64(signature) % 10000) / 1000.0;
  }
  Status status() const override { return absl::OkStatus(); }
  absl::flat_hash_set<Signature> seen;
  const absl::flat_hash_set<Signature>* known = nullptr;
};

void ExpectSameSolution(const BlockSolution& shared, const BlockSolution& alone) {
  EXPECT_EQ(shared.complete, alone.complete);
  EXPECT_EQ(shared.latency_ms, alone.latency_ms);  // the same sums in the same order
  EXPECT_EQ(shared.stats.states, alone.stats.states);
  EXPECT_EQ(shared.stats.transitions, alone.stats.transitions);
  EXPECT_EQ(shared.stats.distinct_stages, alone.stats.distinct_stages);
  EXPECT_EQ(shared.stats.merge_stages, alone.stats.merge_stages);
  ASSERT_EQ(shared.stages.size(), alone.stages.size());
  for (size_t i = 0; i < shared.stages.size(); ++i) {
    EXPECT_EQ(shared.stages[i].signature, alone.stages[i].signature) << "stage " << i;
    EXPECT_EQ(shared.stages[i].latency_ms, alone.stages[i].latency_ms) << "stage " << i;
    EXPECT_EQ(shared.stages[i].stage.strategy, alone.stages[i].stage.strategy) << "stage " << i;
    EXPECT_EQ(shared.stages[i].stage.groups, alone.stages[i].stage.groups) << "stage " << i;
  }
}

// Blocks of one shape and different contents (one random DAG over inputs of
// several sizes; the same block twice among them) solved together give, for
// each block, exactly what SolveBlock gives for it alone, for every bound,
// with and without merges, in one piece and in several.
TEST(BlockDpTest, SolveBlocksEqualsSolveBlockPerBlock) {
  int compared = 0, merges = 0, differing_schedules = 0;
  for (uint64_t seed = 1; seed <= 150; ++seed) {
    const int n = 2 + static_cast<int>(seed % 11);
    std::vector<graph::Graph> graphs;
    for (int spatial : {8, 6, 10, 8, 5, 7, 9, 4})
      graphs.push_back(testing::RandomDag(seed * 31, n, spatial));
    std::vector<BlockGraph> blocks;
    for (const graph::Graph& g : graphs)
      blocks.push_back(*BlockGraph::Build(g, BuildOpDag(g)->order));
    // 2..8 blocks: several pieces past kMaxSharedBlocks (6).
    const int count = 2 + static_cast<int>(seed % 7);
    std::vector<const BlockGraph*> pointers;
    for (int k = 0; k < count; ++k) {
      ASSERT_TRUE(SameShape(blocks[0], blocks[k]));
      pointers.push_back(&blocks[k]);
    }
    for (auto [r, s] : std::vector<std::pair<int, int>>{{1, 3}, {2, 2}, {3, 8}, {n, n}}) {
      for (bool merge : {true, false}) {
        SCOPED_TRACE(StrCat("seed ", seed, " n ", n, " blocks ", count, " r ", r, " s ", s,
                            " merge ", merge));
        DpOptions options;
        options.bounds = {r, s};
        options.enable_merge = merge;
        SignatureSource source;
        auto shared = SolveBlocks(pointers, options, source);
        ASSERT_TRUE(shared.ok()) << shared.status();
        ASSERT_EQ(shared->size(), pointers.size());
        for (int k = 0; k < count; ++k) {
          SignatureSource alone_source;
          auto alone = SolveBlock(blocks[k], options, alone_source);
          ASSERT_TRUE(alone.ok()) << alone.status();
          SCOPED_TRACE(StrCat("block ", k));
          ExpectSameSolution((*shared)[k], *alone);
          merges += static_cast<int>(alone->stats.merge_stages > 0);
          differing_schedules +=
              static_cast<int>(alone->stages.size() != (*shared)[0].stages.size() ||
                               std::abs(alone->latency_ms - (*shared)[0].latency_ms) > 1e-9);
          ++compared;
        }
      }
    }
  }
  EXPECT_GT(compared, 3000);
  EXPECT_GT(merges, 100);               // blocks with mergeable stages
  EXPECT_GT(differing_schedules, 500);  // the blocks' optima really differ
}

// One block's unknown latencies leave that block's solution incomplete and
// the others' complete and equal to their own.
TEST(BlockDpTest, SolveBlocksKeepsCompletenessPerBlock) {
  const graph::Graph a = testing::RandomDag(77, 10, 8), b = testing::RandomDag(77, 10, 6);
  const BlockGraph block_a = *BlockGraph::Build(a, BuildOpDag(a)->order);
  const BlockGraph block_b = *BlockGraph::Build(b, BuildOpDag(b)->order);
  SignatureSource first;
  auto alone = SolveBlock(block_a, DpOptions{}, first);
  ASSERT_TRUE(alone.ok()) << alone.status();
  SignatureSource partial;
  partial.known = &first.seen;  // block_a's signatures only
  const BlockGraph* const both[] = {&block_a, &block_b};
  auto shared = SolveBlocks(both, DpOptions{}, partial);
  ASSERT_TRUE(shared.ok()) << shared.status();
  ExpectSameSolution((*shared)[0], *alone);
  EXPECT_FALSE((*shared)[1].complete);
  EXPECT_GT(partial.seen.size(), first.seen.size());  // block_b's were asked for
}

// A shared walk meets max_bytes where the first of its blocks' own passes
// does.
TEST(BlockDpTest, SolveBlocksStopsAtTheBytesOneBlockWouldHold) {
  int passed = 0, stopped = 0;
  for (uint64_t seed = 1; seed <= 6; ++seed) {
    const graph::Graph a = testing::RandomDag(seed, 13, 8), b = testing::RandomDag(seed, 13, 6);
    const BlockGraph block_a = *BlockGraph::Build(a, BuildOpDag(a)->order);
    const BlockGraph block_b = *BlockGraph::Build(b, BuildOpDag(b)->order);
    const BlockGraph* const both[] = {&block_a, &block_b, &block_a};
    for (int64_t bytes = 40'000; bytes < 4'000'000; bytes = bytes * 3 / 2) {
      SCOPED_TRACE(StrCat("seed ", seed, ", max_bytes ", bytes));
      DpOptions options;
      options.max_bytes = bytes;
      SignatureSource source_a, source_b, shared_source;
      const bool alone = SolveBlock(block_a, options, source_a).ok() &&
                         SolveBlock(block_b, options, source_b).ok();
      StatusOr<std::vector<BlockSolution>> shared = SolveBlocks(both, options, shared_source);
      EXPECT_EQ(shared.ok(), alone);
      if (!shared.ok()) {
        EXPECT_TRUE(IsSearchBudgetError(shared.status())) << shared.status();
      }
      (alone ? passed : stopped) += 1;
    }
  }
  EXPECT_GT(passed, 5);
  EXPECT_GT(stopped, 5);
}

// Blocks of two shapes interleaved, one left out: two groups in item
// order, ordered by their first items.
TEST(BlockDpTest, GroupByShapeGroupsInOrderAndLeavesOut) {
  const graph::Graph a = testing::RandomDag(5, 9), b = testing::RandomDag(6, 9);
  const graph::Graph a_wide = testing::RandomDag(5, 9, 10);  // a's shape, other sizes
  const BlockGraph block_a = *BlockGraph::Build(a, BuildOpDag(a)->order);
  const BlockGraph block_b = *BlockGraph::Build(b, BuildOpDag(b)->order);
  const BlockGraph block_a_wide = *BlockGraph::Build(a_wide, BuildOpDag(a_wide)->order);
  ASSERT_FALSE(SameShape(block_a, block_b));
  ASSERT_TRUE(SameShape(block_a, block_a_wide));
  const BlockGraph* const items[] = {&block_b, &block_a, nullptr, &block_b, &block_a_wide};
  const std::vector<std::vector<size_t>> groups =
      GroupByShape(std::size(items), [&](size_t i) { return items[i]; });
  EXPECT_EQ(groups, (std::vector<std::vector<size_t>>{{0, 3}, {1, 4}}));
  EXPECT_TRUE(GroupByShape(0, [&](size_t i) { return items[i]; }).empty());
}

TEST(BlockDpTest, SolveBlocksRejectsOtherShapesAndKeepsBudgets) {
  const graph::Graph a = testing::RandomDag(5, 9), b = testing::RandomDag(6, 9);
  const BlockGraph block_a = *BlockGraph::Build(a, BuildOpDag(a)->order);
  const BlockGraph block_b = *BlockGraph::Build(b, BuildOpDag(b)->order);
  ASSERT_FALSE(SameShape(block_a, block_b));
  SignatureSource source;
  const BlockGraph* const mixed[] = {&block_a, &block_b};
  StatusOr<std::vector<BlockSolution>> solved = SolveBlocks(mixed, DpOptions{}, source);
  EXPECT_EQ(solved.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(solved.status().message()), ::testing::HasSubstr("shape"));
  const BlockGraph* const twice[] = {&block_a, &block_a};
  ExpectStateCapAndBadBounds([&](const DpOptions& options) {
    return SolveBlocks(twice, options, source).status().code();
  });
}

// The first m ops of `block` (a down-set: its order is topological) as a
// block of their own.
BlockGraph FirstOps(const graph::Graph& graph, const BlockGraph& block, int m) {
  const std::vector<graph::NodeId> first(block.nodes().begin(), block.nodes().begin() + m);
  return *BlockGraph::Build(graph, first);
}

// A block solved on the kept table of its first ops (and on a table that
// itself took a prefix's) gives exactly what it gives alone: the same
// schedule, stage by stage, and the same latency, walking only the states
// that hold a later op. Every random case, prefixes of 1..3 ops fewer and
// of half the block.
TEST(BlockDpTest, APrefixTableGivesTheSolutionOfTheWholeWalk) {
  int compared = 0, chained = 0;
  int64_t walked = 0, walked_alone = 0;
  testing::ForEachRandomBlockCase([&](const testing::RandomBlockCase& c) {
    const int n = c.block->size();
    DpOptions keep = c.options;
    keep.keep_states = true;
    for (int m : {n - 1, n - 2, n - 3, n / 2}) {
      if (m < 1) continue;
      SCOPED_TRACE(StrCat(c.Describe(), " prefix ", m));
      SignatureSource alone_source;
      auto alone = SolveBlock(*c.block, c.options, alone_source);
      ASSERT_TRUE(alone.ok()) << alone.status();
      const BlockGraph first = FirstOps(*c.graph, *c.block, m);
      SignatureSource source;
      auto prefix = SolveBlock(first, keep, source);
      ASSERT_TRUE(prefix.ok()) << prefix.status();
      ASSERT_NE(prefix->states, nullptr);
      EXPECT_EQ(prefix->states->states(), prefix->stats.states);
      auto reused = SolveBlock(*c.block, c.options, source, prefix->states.get());
      ASSERT_TRUE(reused.ok()) << reused.status();
      EXPECT_TRUE(reused->complete);
      EXPECT_EQ(reused->latency_ms, alone->latency_ms);
      ASSERT_EQ(reused->stages.size(), alone->stages.size());
      for (size_t i = 0; i < alone->stages.size(); ++i) {
        EXPECT_EQ(reused->stages[i].signature, alone->stages[i].signature) << "stage " << i;
        EXPECT_EQ(reused->stages[i].latency_ms, alone->stages[i].latency_ms) << "stage " << i;
        EXPECT_EQ(reused->stages[i].stage.strategy, alone->stages[i].stage.strategy);
        EXPECT_EQ(reused->stages[i].stage.groups, alone->stages[i].stage.groups);
      }
      // The states made of the first m ops are the prefix's, not walked again.
      EXPECT_EQ(reused->stats.states + prefix->stats.states, alone->stats.states);
      walked += reused->stats.transitions;
      walked_alone += alone->stats.transitions;
      ++compared;
      // A table kept on a prefix holds the prefix's states too.
      if (m >= 2 && m < n - 1) {
        const BlockGraph middle = FirstOps(*c.graph, *c.block, m + 1);
        auto mid = SolveBlock(middle, keep, source, prefix->states.get());
        ASSERT_TRUE(mid.ok()) << mid.status();
        auto chain = SolveBlock(*c.block, c.options, source, mid->states.get());
        ASSERT_TRUE(chain.ok()) << chain.status();
        EXPECT_EQ(chain->latency_ms, alone->latency_ms);
        EXPECT_EQ(chain->stages.size(), alone->stages.size());
        ++chained;
      }
    }
  });
  EXPECT_GT(compared, 3000);
  EXPECT_GT(chained, 1000);
  EXPECT_LT(walked, walked_alone);  // (random DAGs: most states hold a late op)
}

// A prefix table is refused where it cannot be this block's: as large as
// the block, or of another width; an incomplete pass keeps no table.
TEST(BlockDpTest, APrefixTableMustBeSmallerAndOfTheBlocksWidth) {
  const graph::Graph graph = testing::RandomDag(8, 10);
  const BlockGraph block = *BlockGraph::Build(graph, BuildOpDag(graph)->order);
  DpOptions keep;
  keep.keep_states = true;
  SignatureSource source;
  auto whole = SolveBlock(block, keep, source);
  ASSERT_TRUE(whole.ok()) << whole.status();
  ASSERT_NE(whole->states, nullptr);
  auto same_size = SolveBlock(block, DpOptions{}, source, whole->states.get());
  EXPECT_EQ(same_size.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(same_size.status().message()), ::testing::HasSubstr("prefix of 10 ops"));
  const graph::Graph wide = testing::RandomDag(8, 70);
  const BlockGraph wide_block = *BlockGraph::Build(wide, BuildOpDag(wide)->order);
  ASSERT_EQ(wide_block.words(), 2);
  auto other_width = SolveBlock(wide_block, DpOptions{}, source, whole->states.get());
  EXPECT_EQ(other_width.status().code(), absl::StatusCode::kInvalidArgument);
  UnknownSource unknown;
  auto incomplete = SolveBlock(block, keep, unknown);
  ASSERT_TRUE(incomplete.ok()) << incomplete.status();
  EXPECT_FALSE(incomplete->complete);
  EXPECT_EQ(incomplete->states, nullptr);
  auto not_kept = SolveBlock(block, DpOptions{}, source);
  ASSERT_TRUE(not_kept.ok());
  EXPECT_EQ(not_kept->states, nullptr);
  // The table of a chain's first six ops for a block whose first six are
  // independent: it lacks their states.
  const graph::Graph chain = testing::WideGraph(1, 8), fan = testing::WideGraph(8, 1);
  const BlockGraph chain_block = *BlockGraph::Build(chain, BuildOpDag(chain)->order);
  const BlockGraph fan_block = *BlockGraph::Build(fan, BuildOpDag(fan)->order);
  auto chain_table = SolveBlock(FirstOps(chain, chain_block, 6), keep, source);
  ASSERT_TRUE(chain_table.ok()) << chain_table.status();
  auto foreign = SolveBlock(fan_block, DpOptions{}, source, chain_table->states.get());
  EXPECT_EQ(foreign.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(foreign.status().message()), ::testing::HasSubstr("lacks a state"));
}

}  // namespace
}  // namespace iosfarm::scheduler::ios
