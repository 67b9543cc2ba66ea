// The search keeps to its budget (search_options.h): over-budget blocks are
// split, over-budget windows skipped, the total and the stop flag end it.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <set>
#include <thread>

#include "common/strings.h"
#include "gtest/gtest.h"
#include "scheduler/ios/inline_search.h"
#include "scheduler/ios/search_session.h"
#include "scheduler/ios/testing/testing_util.h"

namespace iosfarm::scheduler::ios {
namespace {

// Every op of `graph` in exactly one stage of the schedule.
void ExpectCoversGraph(const graph::Graph& graph, const Schedule& schedule) {
  std::multiset<graph::NodeId> seen;
  for (const ScheduledStage& stage : schedule.stages) {
    for (const auto& group : stage.stage.groups) seen.insert(group.begin(), group.end());
  }
  int ops = 0;
  for (graph::NodeId id = 0; id < static_cast<graph::NodeId>(graph.nodes().size()); ++id) {
    if (graph.node(id).type == graph::OpType::kConstant) continue;
    ++ops;
    EXPECT_EQ(seen.count(id), 1u) << graph.node(id).name;
  }
  EXPECT_EQ(static_cast<int>(seen.size()), ops);
}

TEST(SearchBudgetTest, WideBlockIsSplitUntilItFits) {
  // 40 independent Relus in one block: 2^40 DP states without a budget.
  const graph::Graph graph = testing::WideGraph(40, 1);
  SearchOptions options;
  options.exhaustive = true;  // the exhaustive DP's budget
  options.max_block_ops = 64;
  options.budget.max_states_per_pass = 20'000;
  options.budget.max_steps_per_pass = 20'000'000;
  options.budget.max_bytes_per_pass = 64 << 20;
  auto result = RunSearch(graph, options, testing::RandomOracle(graph, 3));
  ASSERT_TRUE(result.ok()) << result.status();
  ExpectCoversGraph(graph, result->schedule);
  EXPECT_GT(result->stats.split_blocks, 0);
  EXPECT_GT(result->stats.smallest_split, 0);
  EXPECT_LT(result->stats.smallest_split, 41);
  // Every pass that completed stayed within the state budget.
  for (const BlockReport& block : result->blocks) EXPECT_LE(block.dp.states, 20'000);
  EXPECT_GT(static_cast<int>(result->blocks.size()), 1);
}

TEST(SearchBudgetTest, SplitBlocksGiveTheSameScheduleBatchedAsInline) {
  const graph::Graph graph = testing::WideGraph(24, 2);
  SearchOptions options;
  options.exhaustive = true;  // the exhaustive DP's budget
  options.max_block_ops = 64;
  options.budget.max_transitions_per_pass = 200'000;
  const StageLatencyFn oracle = testing::RandomOracle(graph, 5);
  auto direct = RunSearch(graph, options, oracle);
  ASSERT_TRUE(direct.ok()) << direct.status();
  EXPECT_GT(direct->stats.split_blocks, 0);
  std::vector<Signature> requested;
  auto batched = testing::RunBatched(graph, options, oracle, 16, &requested);
  ASSERT_TRUE(batched.ok()) << batched.status();  // done, nothing outstanding
  EXPECT_EQ(std::set<Signature>(requested.begin(), requested.end()).size(), requested.size())
      << "requested twice";
  ExpectCoversGraph(graph, batched->schedule);
  EXPECT_DOUBLE_EQ(batched->schedule.latency_ms, direct->schedule.latency_ms);
  EXPECT_EQ(batched->stats.split_blocks, direct->stats.split_blocks);
}

TEST(SearchBudgetTest, WindowsOverTheBudgetAreSkippedNotFailed) {
  // Small blocks fit; the boundary windows (up to 24 ops across a cut of
  // independent Relus) do not.
  // Every stage costs the same, so each block of 6 Relus is one stage of 6
  // groups and a window takes 6 + 6 independent ops: 4096 states.
  const graph::Graph graph = testing::WideGraph(48, 1);
  SearchOptions options;
  options.exhaustive = true;  // the exhaustive DP's budget
  options.max_block_ops = 6;
  options.boundary_window_ops = 24;
  options.budget.max_states_per_pass = 100;
  auto result =
      RunSearch(graph, options, [](const Stage&) -> StatusOr<double> { return 1.0; });
  ASSERT_TRUE(result.ok()) << result.status();
  ExpectCoversGraph(graph, result->schedule);
  EXPECT_EQ(result->stats.split_blocks, 0);
  EXPECT_GT(result->stats.skipped_windows, 0);
}

TEST(SearchBudgetTest, TotalBudgetFailsTheSearchNamingIt) {
  const graph::Graph graph = testing::WideGraph(16, 2);
  SearchOptions options;
  options.exhaustive = true;  // the exhaustive DP's budget
  options.budget.max_transitions_total = 1'000;
  auto result = RunSearch(graph, options, testing::RandomOracle(graph, 1));
  ASSERT_FALSE(result.ok());
  EXPECT_TRUE(IsSearchBudgetError(result.status())) << result.status();
  EXPECT_NE(result.status().message().find("1000 DP transitions in all"), std::string::npos)
      << result.status();
}

// A bounded search over its pass's transitions (its cost-to-go DP's walk and
// its A*) once it resumed with its groups measured, with a total budget far
// from binding: the block goes to the exhaustive DP, as on its first pass;
// it is not reported as over the total (a farm job's budget: NASNet's
// cells failed their jobs so). The schedule has the exhaustive search's
// latency.
TEST(SearchBudgetTest, AResumedSearchOverItsPassIsHandedToTheDpNotOverTheTotal) {
  int handed_over = 0;
  for (uint64_t seed = 1; seed <= 4; ++seed) {
    SCOPED_TRACE(StrCat("seed ", seed));
    const graph::Graph graph = testing::RepeatedCells(seed, 3, 10);
    const StageLatencyFn oracle = testing::GroupMonotoneOracle(graph, seed);
    SearchOptions options;
    options.exhaustive = true;
    auto exhaustive = RunSearch(graph, options, oracle);
    ASSERT_TRUE(exhaustive.ok()) << exhaustive.status();
    int64_t most = 0;  // the DP's transitions of the largest block: it fits
    for (const BlockReport& block : exhaustive->blocks) most = std::max(most, block.dp.transitions);
    options.exhaustive = false;
    options.boundary_window_ops = 0;
    options.budget.max_transitions_per_pass = most;
    options.budget.max_transitions_total = int64_t{1} << 40;
    std::vector<Signature> requested;
    auto result = testing::RunBatched(graph, options, oracle, 64, &requested);
    ASSERT_TRUE(result.ok()) << result.status();
    handed_over += result->stats.exhaustive_blocks;
    EXPECT_NEAR(result->schedule.latency_ms, exhaustive->schedule.latency_ms, 1e-9);
  }
  EXPECT_GT(handed_over, 0);
}

TEST(SearchBudgetTest, SignatureBudgetBoundsWhatTheSearchKeeps) {
  const graph::Graph graph = testing::WideGraph(8, 2);
  SearchOptions options;
  options.exhaustive = true;  // the exhaustive DP's budget
  auto unbounded = RunSearch(graph, options, testing::RandomOracle(graph, 1));
  ASSERT_TRUE(unbounded.ok()) << unbounded.status();
  const int64_t needed = unbounded->stats.unique_signatures;
  ASSERT_GT(needed, 10);
  options.budget.max_signatures_total = needed;  // exactly enough
  EXPECT_TRUE(RunSearch(graph, options, testing::RandomOracle(graph, 1)).ok());
  options.budget.max_signatures_total = needed / 2;
  auto result = RunSearch(graph, options, testing::RandomOracle(graph, 1));
  ASSERT_FALSE(result.ok());
  EXPECT_TRUE(IsSearchBudgetError(result.status())) << result.status();
  EXPECT_NE(result.status().message().find(
                StrCat("more than ", needed / 2, " distinct stage signatures")),
            std::string::npos)
      << result.status();
}

TEST(SearchBudgetTest, SmallestBlockStillOverBudgetFails) {
  const graph::Graph graph = testing::WideGraph(12, 1);
  SearchOptions options;
  options.exhaustive = true;  // the exhaustive DP's budget
  options.budget.max_states_per_pass = 2;
  options.budget.min_block_ops = 6;
  options.boundary_window_ops = 0;
  auto result = RunSearch(graph, options, testing::RandomOracle(graph, 1));
  ASSERT_FALSE(result.ok());
  EXPECT_TRUE(IsSearchBudgetError(result.status())) << result.status();
  EXPECT_NE(result.status().message().find("more than 2 DP states"), std::string::npos);
  EXPECT_NE(result.status().message().find("blocks of 6 ops"), std::string::npos);
}

TEST(SearchBudgetTest, OtherErrorsAreNotBudgetErrors) {
  EXPECT_FALSE(IsSearchBudgetError(absl::ResourceExhaustedError("quota")));
  EXPECT_FALSE(IsSearchBudgetError(absl::OkStatus()));
  EXPECT_TRUE(IsSearchBudgetError(SearchBudgetError("x")));
  SearchOptions options;
  options.exhaustive = true;  // the exhaustive DP's budget
  options.budget.max_bytes_per_pass = -1;
  EXPECT_EQ(ValidateSearchOptions(options).code(), absl::StatusCode::kInvalidArgument);
  options = SearchOptions();
  options.budget.min_block_ops = 0;
  EXPECT_EQ(ValidateSearchOptions(options).code(), absl::StatusCode::kInvalidArgument);
}

TEST(SearchBudgetTest, StopFlagEndsALongPassQuickly) {
  // Without budgets this block would run for hours.
  const graph::Graph graph = testing::WideGraph(60, 1);
  SearchOptions options;
  options.exhaustive = true;  // the exhaustive DP's budget
  options.max_block_ops = 64;
  options.budget = SearchBudget{0, 0, 0, 0, 0, 4};
  auto session = SearchSession::Create(graph, options).value();
  std::atomic<bool> stop{false};
  session->SetStopFlag(&stop);
  std::thread stopper([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    stop = true;
  });
  const auto start = std::chrono::steady_clock::now();
  auto batch = session->NextUnknown(64);
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  stopper.join();
  ASSERT_FALSE(batch.ok());
  EXPECT_EQ(batch.status().code(), absl::StatusCode::kCancelled) << batch.status();
  EXPECT_LT(seconds, 5.0);  // the check runs every few thousand states or endings
}

}  // namespace
}  // namespace iosfarm::scheduler::ios
