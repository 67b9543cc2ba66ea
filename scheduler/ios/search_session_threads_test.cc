// RunInline on several threads (SearchOptions::threads) gives what one
// thread gives: the same schedule, the same statistics, each signature
// measured once (the latency function runs on several threads at once).
#include <atomic>
#include <chrono>
#include <mutex>
#include <set>
#include <thread>

#include "common/strings.h"
#include "gtest/gtest.h"
#include "scheduler/ios/inline_search.h"
#include "scheduler/ios/search_session.h"
#include "scheduler/ios/testing/testing_util.h"

namespace iosfarm::scheduler::ios {
namespace {

std::string Describe(const graph::Graph& graph, const Schedule& schedule) {
  std::string out;
  for (const ScheduledStage& stage : schedule.stages) {
    out += StrCat(StageToString(graph, stage.stage), "@", stage.block, ";");
  }
  return out;
}

void ExpectSameStats(const SearchStats& a, const SearchStats& b) {
  EXPECT_EQ(a.blocks, b.blocks);
  EXPECT_EQ(a.reused_blocks, b.reused_blocks);
  EXPECT_EQ(a.prefix_blocks, b.prefix_blocks);
  EXPECT_EQ(a.prefix_bound_blocks, b.prefix_bound_blocks);
  EXPECT_EQ(a.dp_states, b.dp_states);
  EXPECT_EQ(a.transitions, b.transitions);
  EXPECT_EQ(a.candidate_stages, b.candidate_stages);
  EXPECT_EQ(a.merge_stages, b.merge_stages);
  EXPECT_EQ(a.unique_signatures, b.unique_signatures);
  EXPECT_EQ(a.stages_measured, b.stages_measured);
  EXPECT_EQ(a.bound_groups, b.bound_groups);
  EXPECT_EQ(a.tightened_bounds, b.tightened_bounds);
  EXPECT_EQ(a.lower_bound_misses, b.lower_bound_misses);
  EXPECT_EQ(a.dp_passes, b.dp_passes);
  EXPECT_EQ(a.windows, b.windows);
  EXPECT_EQ(a.improved_windows, b.improved_windows);
  EXPECT_EQ(a.skipped_windows, b.skipped_windows);
  EXPECT_EQ(a.exhaustive_blocks, b.exhaustive_blocks);
  EXPECT_EQ(a.split_blocks, b.split_blocks);
  EXPECT_EQ(a.total_transitions, b.total_transitions);
}

// Wraps `oracle`: records each signature measured (failing the test on a
// second measurement of one), each calling thread and the most calls in
// flight at once. With `await_overlap`, a call made while no other is in
// flight and none has overlapped yet waits (up to 5 s) for a second one.
class Recorder {
 public:
  explicit Recorder(StageLatencyFn oracle, bool await_overlap = false)
      : oracle_(std::move(oracle)), await_overlap_(await_overlap) {}

  SignedLatencyFn fn() {
    return [this](Signature signature, const Stage& stage) -> StatusOr<double> {
      const int now = in_flight_.fetch_add(1) + 1;
      int seen = most_.load();
      while (now > seen && !most_.compare_exchange_weak(seen, now)) {
      }
      const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
      while (await_overlap_ && most_.load() < 2 && std::chrono::steady_clock::now() < deadline) {
        std::this_thread::sleep_for(std::chrono::microseconds(100));
      }
      {
        std::lock_guard<std::mutex> lock(mu_);
        EXPECT_TRUE(signatures_.insert(signature).second) << "measured twice";
        threads_.insert(std::this_thread::get_id());
      }
      StatusOr<double> latency = oracle_(stage);
      in_flight_.fetch_sub(1);
      return latency;
    };
  }
  size_t threads() const { return threads_.size(); }
  size_t measured() const { return signatures_.size(); }
  int most_at_once() const { return most_.load(); }

 private:
  StageLatencyFn oracle_;
  bool await_overlap_ = false;
  std::atomic<int> in_flight_{0};
  std::atomic<int> most_{0};
  std::mutex mu_;
  std::set<Signature> signatures_;
  std::set<std::thread::id> threads_;
};

void ExpectSameAsOneThread(const graph::Graph& graph, SearchOptions options,
                           const StageLatencyFn& oracle) {
  options.threads = 1;
  auto one = RunSearch(graph, options, oracle);
  ASSERT_TRUE(one.ok()) << one.status();
  for (int threads : {2, 3, 8}) {
    SCOPED_TRACE(StrCat(threads, " threads"));
    options.threads = threads;
    Recorder recorder(oracle);
    auto many = RunSearch(graph, options, recorder.fn());
    ASSERT_TRUE(many.ok()) << many.status();
    EXPECT_EQ(Describe(graph, many->schedule), Describe(graph, one->schedule));
    EXPECT_DOUBLE_EQ(many->schedule.latency_ms, one->schedule.latency_ms);
    ExpectSameStats(many->stats, one->stats);
    EXPECT_EQ(static_cast<int64_t>(recorder.measured()), one->stats.stages_measured);
    ASSERT_EQ(many->blocks.size(), one->blocks.size());
    for (size_t b = 0; b < one->blocks.size(); ++b) {
      EXPECT_EQ(many->blocks[b].num_stages, one->blocks[b].num_stages);
      EXPECT_EQ(many->blocks[b].dp.transitions, one->blocks[b].dp.transitions);
      EXPECT_DOUBLE_EQ(many->blocks[b].latency_ms, one->blocks[b].latency_ms);
    }
  }
}

// ExpectSameAsOneThread, then the statistics of the search on two threads.
SearchStats TwoThreadStats(const graph::Graph& graph, SearchOptions options,
                           const StageLatencyFn& oracle) {
  ExpectSameAsOneThread(graph, options, oracle);
  options.threads = 2;
  auto two = RunSearch(graph, options, oracle);
  EXPECT_TRUE(two.ok()) << two.status();
  return two.ok() ? two->stats : SearchStats{};
}

TEST(SearchSessionThreadsTest, RandomDagsGiveWhatOneThreadGives) {
  for (bool exhaustive : {true, false}) {
    for (uint64_t seed = 1; seed <= 30; ++seed) {
      SCOPED_TRACE(StrCat(exhaustive ? "exhaustive" : "bounded", ", seed ", seed));
      const graph::Graph graph = testing::RandomDag(seed, 16);
      SearchOptions options;
      options.exhaustive = exhaustive;
      options.max_block_ops = 5;  // several blocks, twins, size cuts and windows
      options.boundary_window_ops = 6;
      // The bounded search's assumption kept for half the seeds, broken
      // (any latency) for the other half.
      ExpectSameAsOneThread(graph, options,
                            seed % 2 == 0 ? testing::GroupMonotoneOracle(graph, seed)
                                          : testing::RandomOracle(graph, seed));
    }
  }
}

TEST(SearchSessionThreadsTest, HandOversToTheDpGiveWhatOneThreadGives) {
  // One open-list step per block: every block goes to the exhaustive DP,
  // on the thread that tried it.
  for (uint64_t seed = 1; seed <= 10; ++seed) {
    SCOPED_TRACE(StrCat("seed ", seed));
    const graph::Graph graph = testing::RandomDag(seed, 20);
    SearchOptions options;
    options.max_block_ops = 7;
    options.bounded.max_open_steps = 1;
    ExpectSameAsOneThread(graph, options, testing::GroupMonotoneOracle(graph, seed));
  }
}

TEST(SearchSessionThreadsTest, CellsOfOneShapeShareWalksAndGiveWhatOneThreadGives) {
  // Cells of one structure at several sizes: their blocks go to the DP
  // (exhaustive, or handed over after one open-list step) in shared walks.
  int shared = 0;
  for (uint64_t seed = 1; seed <= 8; ++seed) {
    for (bool exhaustive : {true, false}) {
      SCOPED_TRACE(StrCat("seed ", seed, exhaustive ? ", exhaustive" : ", handed over"));
      const graph::Graph graph = testing::RepeatedCells(seed, 7, 7);
      SearchOptions options;
      options.exhaustive = exhaustive;
      options.bounded.max_open_steps = 1;
      options.max_block_ops = 12;
      shared +=
          TwoThreadStats(graph, options, testing::RandomOracle(graph, seed)).shared_walk_blocks;
    }
  }
  EXPECT_GT(shared, 20);
}

TEST(SearchSessionThreadsTest, CellsOfOneShapeShareBoundDpWalksAndGiveWhatOneThreadGives) {
  // The bounded search solves the cells; those of one shape walk their
  // cost-to-go DPs together (WalkCostToGoDps), on one thread.
  int shared = 0;
  for (uint64_t seed = 1; seed <= 8; ++seed) {
    SCOPED_TRACE(StrCat("seed ", seed));
    const graph::Graph graph = testing::RepeatedCells(seed, 7, 7);
    SearchOptions options;
    options.max_block_ops = 12;
    const SearchStats stats =
        TwoThreadStats(graph, options, testing::GroupMonotoneOracle(graph, seed));
    EXPECT_EQ(stats.exhaustive_blocks, 0);
    shared += stats.shared_bound_walk_blocks;
  }
  EXPECT_GT(shared, 20);
}

TEST(SearchSessionThreadsTest, ABlockOnAnEarlierBlocksTableGivesWhatOneThreadGives) {
  // The last block is the cell before it and one op: it waits for that
  // cell's DP table, after the threads' blocks.
  int prefix_blocks = 0;
  for (uint64_t seed = 1; seed <= 6; ++seed) {
    for (bool exhaustive : {true, false}) {
      SCOPED_TRACE(StrCat("seed ", seed, exhaustive ? ", exhaustive" : ", handed over"));
      const graph::Graph graph = testing::RepeatedCellsWithTail(seed, 4, 12);
      SearchOptions options;
      options.exhaustive = exhaustive;
      options.bounded.max_open_steps = 1;
      options.bounded.cost_to_go_dp_max_states = 0;  // else it solves some before the hand-over
      const StageLatencyFn oracle = exhaustive ? testing::RandomOracle(graph, seed)
                                               : testing::GroupMonotoneOracle(graph, seed);
      prefix_blocks += TwoThreadStats(graph, options, oracle).prefix_blocks;
    }
  }
  EXPECT_EQ(prefix_blocks, 12);
}

TEST(SearchSessionThreadsTest, ASplitBlockGivesWhatOneThreadGives) {
  // 40 independent Relus: a 30-op block far over the state budget (split)
  // and an 11-op one that fits, solved side by side; the split renumbers the
  // blocks, so the second one's pass is solved again after the pieces.
  const graph::Graph graph = testing::WideGraph(40, 1);
  SearchOptions options;
  options.exhaustive = true;
  options.max_block_ops = 30;
  options.budget.max_states_per_pass = 20'000;
  options.budget.max_steps_per_pass = 20'000'000;
  options.threads = 1;
  auto one = RunSearch(graph, options, testing::RandomOracle(graph, 3));
  ASSERT_TRUE(one.ok()) << one.status();
  EXPECT_GT(one->stats.split_blocks, 0);
  ExpectSameAsOneThread(graph, options, testing::RandomOracle(graph, 3));
}

TEST(SearchSessionThreadsTest, TheThreadsShareTheWork) {
  // The first measurement waits for a second one in flight: the threads
  // measure side by side, not one after the other.
  const graph::Graph graph = testing::RandomDag(7, 24);
  SearchOptions options;
  options.max_block_ops = 4;
  options.threads = 4;
  Recorder recorder(testing::RandomOracle(graph, 7), /*await_overlap=*/true);
  auto result = RunSearch(graph, options, recorder.fn());
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_GE(result->stats.blocks, 4);
  EXPECT_GE(recorder.threads(), 2u);
  EXPECT_GE(recorder.most_at_once(), 2);
  EXPECT_EQ(static_cast<int64_t>(recorder.measured()), result->stats.stages_measured);
}

TEST(SearchSessionThreadsTest, AnErrorOfTheLatencyFunctionEndsTheSearch) {
  const graph::Graph graph = testing::RandomDag(9, 24);
  SearchOptions options;
  options.max_block_ops = 4;
  options.threads = 4;
  std::atomic<int> calls{0};
  auto result = RunSearch(graph, options, [&](const Stage&) -> StatusOr<double> {
    if (++calls > 5) return absl::UnavailableError("the device went away");
    return 1.0;
  });
  ASSERT_FALSE(result.ok());
  EXPECT_EQ(result.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_NE(std::string(result.status().message()).find("the device went away"), std::string::npos);
}

TEST(SearchSessionThreadsTest, ThreadsOutOfRangeAreRejected) {
  const graph::Graph graph = testing::RandomDag(1, 6);
  for (int threads : {0, -1, 257}) {
    SearchOptions options;
    options.threads = threads;
    auto result = RunSearch(graph, options, testing::RandomOracle(graph, 1));
    ASSERT_FALSE(result.ok());
    EXPECT_EQ(result.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_NE(std::string(result.status().message()).find("threads"), std::string::npos);
  }
}

}  // namespace
}  // namespace iosfarm::scheduler::ios
