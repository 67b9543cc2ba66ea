#include "scheduler/ios/search_session.h"

#include <chrono>
#include <cmath>
#include <set>

#include "common/strings.h"
#include "gtest/gtest.h"
#include "scheduler/ios/analytic_oracle.h"
#include "scheduler/ios/inline_search.h"
#include "scheduler/ios/testing/testing_util.h"

namespace iosfarm::scheduler::ios {
namespace {

// Blocks of at most 4 ops with 6-op boundary windows: many blocks and
// passes on a 14-op random DAG.
SearchOptions SmallBlocks() {
  SearchOptions options;
  options.max_block_ops = 4;
  options.boundary_window_ops = 6;
  return options;
}

std::string Describe(const graph::Graph& graph, const Schedule& schedule) {
  std::string out;
  for (const ScheduledStage& stage : schedule.stages) {
    out += StageToString(graph, stage.stage) + ";";
  }
  return out;
}

using testing::RunBatched;

// Both searches, batched as a farm does, give the direct search's schedule.
// The exhaustive DP requests exactly the signatures the direct search looks
// up; the bounded one too with no lookahead (the same path, whatever order
// its latencies arrive in), and more with one.
struct Mode {
  bool exhaustive;
  int lookahead;
};
constexpr Mode kModes[] = {{true, 0}, {false, 0}, {false, 16}};

SearchOptions ForMode(SearchOptions options, const Mode& mode) {
  options.exhaustive = mode.exhaustive;
  options.bounded.lookahead = mode.lookahead;
  return options;
}

std::string ModeName(const Mode& mode) {
  return mode.exhaustive ? "exhaustive" : StrCat("bounded, lookahead ", mode.lookahead);
}

void ExpectRequested(const Mode& mode, int64_t requested, const SearchResult& direct) {
  if (mode.exhaustive || mode.lookahead == 0) {
    EXPECT_EQ(requested, direct.stats.stages_measured);
  } else {
    EXPECT_GE(requested, direct.stats.stages_measured);
  }
}

TEST(SearchSessionTest, BatchedSearchEqualsDirectSearch) {
  for (const Mode& mode : kModes) {
    for (uint64_t seed = 1; seed <= 25; ++seed) {
      SCOPED_TRACE(StrCat(ModeName(mode), ", seed ", seed));
      const graph::Graph graph = testing::RandomDag(seed, 12);
      const StageLatencyFn oracle = testing::RandomOracle(graph, seed);
      SearchOptions options;
      options.max_block_ops = 5;  // several blocks, size cuts and windows
      options.boundary_window_ops = 6;
      options = ForMode(options, mode);
      auto direct = RunSearch(graph, options, oracle);
      ASSERT_TRUE(direct.ok()) << direct.status();
      if (mode.exhaustive) {
        EXPECT_EQ(direct->stats.stages_measured, direct->stats.unique_signatures);
      }
      for (int batch : {1, 7, 1000}) {
        std::vector<Signature> requested;
        auto batched = RunBatched(graph, options, oracle, batch, &requested);
        ASSERT_TRUE(batched.ok()) << batched.status();
        EXPECT_EQ(Describe(graph, batched->schedule), Describe(graph, direct->schedule));
        EXPECT_DOUBLE_EQ(batched->schedule.latency_ms, direct->schedule.latency_ms);
        // Every signature requested once.
        EXPECT_EQ(std::set<Signature>(requested.begin(), requested.end()).size(),
                  requested.size());
        ExpectRequested(mode, static_cast<int64_t>(requested.size()), *direct);
        EXPECT_EQ(batched->stats.stages_measured, static_cast<int64_t>(requested.size()));
        EXPECT_TRUE(ValidateSchedule(graph, batched->schedule).ok())
            << ValidateSchedule(graph, batched->schedule);
      }
    }
  }
}

// Cells of one shape at several sizes: the bounded searches of their blocks
// pause after their groups and walk their cost-to-go DPs together, on one
// thread (RunInline) and batched as a farm does (NextUnknown, whatever the
// batch width: a shape walks once every block of it is measured, or once
// nothing else is left). Either way the schedule is the direct search's on
// two threads and the exhaustive search's latency (the oracle keeps the
// assumption), from exactly the direct search's requests, each once.
// With a tail (the last block is the last cell and one op, on that cell's
// table where it has one): the block waits for a cell that the shared walk
// solves, and then goes on in the same call.
TEST(SearchSessionTest, CellsOfOneShapeWalkTheirBoundDpsTogetherOnOneThreadAndBatched) {
  int shared_inline = 0, shared_batched = 0;
  int64_t walk_states = 0;
  for (uint64_t seed = 1; seed <= 12; ++seed) {
    SCOPED_TRACE(StrCat("seed ", seed));
    const bool tail = seed > 6;
    const graph::Graph graph =
        tail ? testing::RepeatedCellsWithTail(seed, 4, 12) : testing::RepeatedCells(seed, 7, 7);
    const StageLatencyFn oracle = testing::GroupMonotoneOracle(graph, seed);
    SearchOptions options;
    options.max_block_ops = tail ? 50 : 12;
    options.bounded.lookahead = 0;  // batched: exactly the direct search's requests
    options.exhaustive = true;
    auto exhaustive = RunSearch(graph, options, oracle);
    ASSERT_TRUE(exhaustive.ok()) << exhaustive.status();
    options.exhaustive = false;
    options.threads = 2;
    auto two = RunSearch(graph, options, oracle);
    ASSERT_TRUE(two.ok()) << two.status();
    options.threads = 1;
    auto one = RunSearch(graph, options, oracle);
    ASSERT_TRUE(one.ok()) << one.status();
    EXPECT_EQ(Describe(graph, one->schedule), Describe(graph, two->schedule));
    EXPECT_EQ(one->stats.stages_measured, two->stats.stages_measured);
    EXPECT_EQ(one->stats.dp_passes, two->stats.dp_passes);
    EXPECT_NEAR(one->schedule.latency_ms, exhaustive->schedule.latency_ms, 1e-9);
    shared_inline += one->stats.shared_bound_walk_blocks;
    for (int batch : {1, 5, 1000}) {
      SCOPED_TRACE(StrCat("batch ", batch));
      std::vector<Signature> requested;
      auto batched = RunBatched(graph, options, oracle, batch, &requested);
      ASSERT_TRUE(batched.ok()) << batched.status();
      EXPECT_EQ(Describe(graph, batched->schedule), Describe(graph, one->schedule));
      EXPECT_EQ(std::set<Signature>(requested.begin(), requested.end()).size(), requested.size());
      EXPECT_EQ(static_cast<int64_t>(requested.size()), one->stats.stages_measured);
      shared_batched += batched->stats.shared_bound_walk_blocks;
    }
    // Resumed with every latency known (a farm job after a restart, from
    // its database): one call solves it all and asks for nothing.
    std::vector<Signature> stored;
    std::vector<double> stored_ms;
    ASSERT_TRUE(RunBatched(graph, options, oracle, 1000, &stored, &stored_ms).ok());
    auto session = SearchSession::Create(graph, options);
    ASSERT_TRUE(session.ok()) << session.status();
    for (size_t i = 0; i < stored.size(); ++i) {
      ASSERT_TRUE((*session)->Provide(stored[i], stored_ms[i]).ok());
    }
    auto again = (*session)->NextUnknown(1000);
    ASSERT_TRUE(again.ok()) << again.status();
    EXPECT_TRUE(again->empty());
    ASSERT_TRUE((*session)->Done());
    auto replayed = (*session)->Result();
    ASSERT_TRUE(replayed.ok()) << replayed.status();
    EXPECT_EQ(Describe(graph, replayed->schedule), Describe(graph, one->schedule));
    // Its walks counted every state they walked (the progress line's count).
    const WalkProgress& walks = (*session)->walk_progress();
    EXPECT_EQ(walks.states_walked.load(), walks.states_total.load());
    walk_states += walks.states_total.load();
  }
  // RepeatedCells(seed, 7, 7) in blocks of 12 ops: several blocks per shape.
  EXPECT_GT(shared_inline, 12);
  EXPECT_GT(shared_batched, 3 * 12);
  EXPECT_GT(walk_states, 12);
}

// A deadline always in the past stops the cost-to-go DP walks, shared and
// alone, between two states (a farm's enumerate slice gives the server's CPU
// back inside a walk): the session says it is walking, goes on at the next
// call, and ends with the untimed search's schedule from the same requests,
// each once, having walked every state once.
TEST(SearchSessionTest, ADeadlineStopsWalksBetweenStatesAndTheSearchStaysTheSame) {
  int walking_calls = 0;
  for (uint64_t seed = 1; seed <= 8; ++seed) {
    SCOPED_TRACE(StrCat("seed ", seed));
    const bool tail = seed > 4;  // the tail's block walks alone
    const graph::Graph graph =
        tail ? testing::RepeatedCellsWithTail(seed, 4, 12) : testing::RepeatedCells(seed, 7, 7);
    const StageLatencyFn oracle = testing::GroupMonotoneOracle(graph, seed);
    SearchOptions options;
    options.max_block_ops = tail ? 50 : 12;
    options.bounded.lookahead = 0;
    std::vector<Signature> untimed_requests;
    auto untimed = RunBatched(graph, options, oracle, 1000, &untimed_requests);
    ASSERT_TRUE(untimed.ok()) << untimed.status();
    auto session = SearchSession::Create(graph, options);
    ASSERT_TRUE(session.ok()) << session.status();
    (*session)->SetDeadline(std::chrono::steady_clock::now() - std::chrono::seconds(1));
    std::set<Signature> requested;
    int calls = 0;
    for (; calls < 100000; ++calls) {
      auto requests = (*session)->NextUnknown(1000);
      ASSERT_TRUE(requests.ok()) << requests.status();
      if ((*session)->walking()) {
        ++walking_calls;
        EXPECT_TRUE((*session)->paused());
      }
      if (requests->empty() && !(*session)->paused()) break;
      for (const StageRequest& request : *requests) {
        EXPECT_TRUE(requested.insert(request.signature).second);
        ASSERT_TRUE((*session)->Provide(request.signature, *oracle(request.stage)).ok());
      }
    }
    ASSERT_TRUE((*session)->Done()) << calls << " calls";
    EXPECT_FALSE((*session)->walking());
    auto sliced = (*session)->Result();
    ASSERT_TRUE(sliced.ok()) << sliced.status();
    EXPECT_EQ(Describe(graph, sliced->schedule), Describe(graph, untimed->schedule));
    EXPECT_DOUBLE_EQ(sliced->schedule.latency_ms, untimed->schedule.latency_ms);
    EXPECT_EQ(requested,
              std::set<Signature>(untimed_requests.begin(), untimed_requests.end()));
    EXPECT_EQ(sliced->stats.shared_bound_walk_blocks, untimed->stats.shared_bound_walk_blocks);
    const WalkProgress& walks = (*session)->walk_progress();
    EXPECT_EQ(walks.states_walked.load(), walks.states_total.load());
  }
  EXPECT_GT(walking_calls, 8);
}

// A farm job whose turn is over goes on with the walk it is in and stops
// once no walk is under way (SetStopBetweenWalks): no call ends inside a
// walk, some end early, and the search is the same.
TEST(SearchSessionTest, StoppingBetweenWalksEndsCallsOutsideWalksAndKeepsTheSearch) {
  int stops = 0;
  for (uint64_t seed = 1; seed <= 4; ++seed) {
    SCOPED_TRACE(StrCat("seed ", seed));
    const graph::Graph graph = testing::RepeatedCells(seed, 7, 7);
    const StageLatencyFn oracle = testing::GroupMonotoneOracle(graph, seed);
    SearchOptions options;
    options.max_block_ops = 12;
    options.bounded.lookahead = 0;
    std::vector<Signature> untimed_requests;
    auto untimed = RunBatched(graph, options, oracle, 1000, &untimed_requests);
    ASSERT_TRUE(untimed.ok()) << untimed.status();
    auto session = SearchSession::Create(graph, options);
    ASSERT_TRUE(session.ok()) << session.status();
    (*session)->SetStopBetweenWalks(true);
    for (int calls = 0; calls < 100000; ++calls) {
      auto requests = (*session)->NextUnknown(1000);
      ASSERT_TRUE(requests.ok()) << requests.status();
      EXPECT_FALSE((*session)->walking());
      stops += (*session)->paused();
      if (requests->empty() && !(*session)->paused()) break;
      for (const StageRequest& request : *requests) {
        ASSERT_TRUE((*session)->Provide(request.signature, *oracle(request.stage)).ok());
      }
    }
    ASSERT_TRUE((*session)->Done());
    auto stopped = (*session)->Result();
    ASSERT_TRUE(stopped.ok()) << stopped.status();
    EXPECT_EQ(Describe(graph, stopped->schedule), Describe(graph, untimed->schedule));
  }
  EXPECT_GT(stops, 4);
}

// NASNet-A's size cut leaves a block of a cell and the next cell's first
// op. Where the bounded search solved the cell, that block's cost-to-go DP takes
// the cell's states from the cell's bound table and walks only its own:
// the exhaustive latency still, the same schedule on one thread, two and
// batched, and far fewer transitions than its own walk of every state.
TEST(SearchSessionTest, ABlockExtendingABoundedOneTakesItsBoundTable) {
  int on_table = 0;
  for (uint64_t seed = 1; seed <= 8; ++seed) {
    SCOPED_TRACE(StrCat("seed ", seed));
    const graph::Graph graph = testing::RepeatedCellsWithTail(seed, 4, 12);
    const StageLatencyFn oracle = testing::GroupMonotoneOracle(graph, seed);
    SearchOptions options;
    options.bounded.lookahead = 0;  // batched: exactly the direct search's requests
    options.exhaustive = true;
    auto exhaustive = RunSearch(graph, options, oracle);
    ASSERT_TRUE(exhaustive.ok()) << exhaustive.status();
    options.exhaustive = false;
    auto direct = RunSearch(graph, options, oracle);
    ASSERT_TRUE(direct.ok()) << direct.status();
    SearchOptions apart = options;
    apart.reuse_identical_blocks = false;
    auto alone = RunSearch(graph, apart, oracle);
    ASSERT_TRUE(alone.ok()) << alone.status();
    EXPECT_EQ(alone->stats.prefix_bound_blocks, 0);
    EXPECT_NEAR(direct->schedule.latency_ms, exhaustive->schedule.latency_ms, 1e-9);
    EXPECT_NEAR(alone->schedule.latency_ms, exhaustive->schedule.latency_ms, 1e-9);
    ASSERT_LE(direct->stats.prefix_bound_blocks, 1);
    if (direct->stats.prefix_bound_blocks == 1) {
      ++on_table;
      const DpStats& tail = direct->blocks.back().dp;
      const DpStats& walked = alone->blocks.back().dp;
      EXPECT_GT(tail.prefix_bound_states, 0);
      EXPECT_EQ(walked.prefix_bound_states, 0);
      EXPECT_LT(tail.transitions, walked.transitions);
    }
    options.threads = 2;
    auto two = RunSearch(graph, options, oracle);
    ASSERT_TRUE(two.ok()) << two.status();
    EXPECT_EQ(Describe(graph, two->schedule), Describe(graph, direct->schedule));
    EXPECT_EQ(two->stats.prefix_bound_blocks, direct->stats.prefix_bound_blocks);
    options.threads = 1;
    for (int batch : {1, 64}) {
      SCOPED_TRACE(StrCat("batch ", batch));
      std::vector<Signature> requested;
      auto batched = RunBatched(graph, options, oracle, batch, &requested);
      ASSERT_TRUE(batched.ok()) << batched.status();
      EXPECT_EQ(Describe(graph, batched->schedule), Describe(graph, direct->schedule));
      EXPECT_EQ(batched->stats.prefix_bound_blocks, direct->stats.prefix_bound_blocks);
      EXPECT_EQ(std::set<Signature>(requested.begin(), requested.end()).size(), requested.size());
      EXPECT_EQ(static_cast<int64_t>(requested.size()), direct->stats.stages_measured);
    }
  }
  EXPECT_GE(on_table, 6);
}

// With the core bound (a cpu device), batched as a farm does: the direct
// search's schedule, the exhaustive search's latency where the latencies
// keep the assumption, and the one-core group measurements among the
// requests (as single-core stages whose signatures the receiver can check).
// Without boundary windows: a window re-solved over blocks whose optima tie
// may differ between any two searches (it does here for seed 2 between the
// exhaustive and the plain bounded search alike).
TEST(SearchSessionTest, CoreBoundSearchBatchesAndEqualsExhaustive) {
  for (uint64_t seed = 1; seed <= 15; ++seed) {
    SCOPED_TRACE(StrCat("seed ", seed));
    const graph::Graph graph = testing::RandomDag(seed, 12);
    const StageLatencyFn oracle = testing::CoresOracle(graph, seed, 2);
    SearchOptions options;
    options.max_block_ops = 5;
    options.boundary_window_ops = 0;
    options.exhaustive = true;
    auto exhaustive = RunSearch(graph, options, oracle);
    ASSERT_TRUE(exhaustive.ok()) << exhaustive.status();
    options.exhaustive = false;
    options.bounded.cores = 2;
    auto direct = RunSearch(graph, options, oracle);
    ASSERT_TRUE(direct.ok()) << direct.status();
    EXPECT_NEAR(direct->schedule.latency_ms, exhaustive->schedule.latency_ms, 1e-9);
    EXPECT_EQ(direct->stats.lower_bound_misses, 0);
    std::vector<Signature> requested;
    int single_core = 0;
    StageLatencyFn counting = [&](const Stage& stage) {
      single_core += stage.single_core;
      return oracle(stage);
    };
    auto batched = RunBatched(graph, options, counting, 7, &requested);
    ASSERT_TRUE(batched.ok()) << batched.status();
    EXPECT_EQ(Describe(graph, batched->schedule), Describe(graph, direct->schedule));
    EXPECT_GT(single_core, 0);
    EXPECT_EQ(batched->stats.stages_measured, static_cast<int64_t>(requested.size()));
  }
}

// A block of more DP states than max_block_states goes to the exhaustive
// DP without a bounded attempt: the schedule is the exhaustive search's,
// stage for stage; without the limit the bounded search solves these small
// blocks itself. A negative limit is refused.
TEST(SearchSessionTest, ABlockOverTheStateLimitGoesStraightToTheDp) {
  for (uint64_t seed = 1; seed <= 6; ++seed) {
    SCOPED_TRACE(StrCat("seed ", seed));
    const graph::Graph graph = testing::RepeatedCells(seed, 3, 10);
    const StageLatencyFn oracle = testing::GroupMonotoneOracle(graph, seed);
    SearchOptions exhaustive;
    exhaustive.exhaustive = true;
    auto reference = RunSearch(graph, exhaustive, oracle);
    ASSERT_TRUE(reference.ok()) << reference.status();
    SearchOptions limited;
    limited.bounded.max_block_states = 1;
    auto straight = RunSearch(graph, limited, oracle);
    ASSERT_TRUE(straight.ok()) << straight.status();
    EXPECT_GT(straight->stats.exhaustive_blocks, 0);
    EXPECT_EQ(Describe(graph, straight->schedule), Describe(graph, reference->schedule));
    EXPECT_EQ(straight->schedule.latency_ms, reference->schedule.latency_ms);
    EXPECT_EQ(straight->stats.unique_signatures, reference->stats.unique_signatures);
    SearchOptions unlimited;
    unlimited.bounded.max_block_states = 0;
    auto bounded = RunSearch(graph, unlimited, oracle);
    ASSERT_TRUE(bounded.ok()) << bounded.status();
    EXPECT_EQ(bounded->stats.exhaustive_blocks, 0);
    EXPECT_LT(bounded->stats.stages_measured, straight->stats.stages_measured);
    // (A* adds the same stages in another order.)
    EXPECT_NEAR(bounded->schedule.latency_ms, reference->schedule.latency_ms, 1e-9);
  }
  SearchOptions bad;
  bad.bounded.max_block_states = -1;
  const graph::Graph graph = testing::RandomDag(1, 6);
  auto refused = RunSearch(graph, bad, testing::GroupMonotoneOracle(graph, 1));
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.status().message().find("max_block_states"), std::string::npos)
      << refused.status();
}

// A block that is an earlier block and one op more (the last cell and a
// tail op) takes that block's DP table and walks only its own states:
// the schedule is the one a search that solves every block on its own
// finds (the bounded search's blocks all go to the DP here), direct and
// batched as a farm does, where the block waits for its prefix block's
// latencies.
TEST(SearchSessionTest, ABlockExtendingAnEarlierOneWalksOnlyItsOwnStates) {
  int prefix_blocks = 0;
  for (const Mode& mode : kModes) {
    for (uint64_t seed = 1; seed <= 8; ++seed) {
      SCOPED_TRACE(StrCat(ModeName(mode), ", seed ", seed));
      const graph::Graph graph = testing::RepeatedCellsWithTail(seed, 4, 12);
      const StageLatencyFn oracle = mode.exhaustive ? testing::RandomOracle(graph, seed)
                                                    : testing::GroupMonotoneOracle(graph, seed);
      SearchOptions options = ForMode(SearchOptions{}, mode);
      options.bounded.max_open_steps = 1;  // every block to the DP
      // (the cost-to-go DP's cost to go would solve these small blocks within
      // the steps between two budget checks)
      options.bounded.cost_to_go_dp_max_states = 0;
      auto direct = RunSearch(graph, options, oracle);
      ASSERT_TRUE(direct.ok()) << direct.status();
      ASSERT_EQ(direct->stats.prefix_blocks, 1);
      ++prefix_blocks;
      const BlockReport& last = direct->blocks.back();
      ASSERT_GE(last.prefix, 0);
      EXPECT_EQ(last.solver, BlockSolver::kExhaustive);  // the DP, on its prefix's table
      const BlockReport& provider = direct->blocks[last.prefix];
      EXPECT_EQ(last.num_ops, provider.num_ops + 1);
      EXPECT_LT(last.dp.states, provider.dp.states);  // the tail's states only

      SearchOptions apart = options;
      apart.reuse_identical_blocks = false;
      auto alone = RunSearch(graph, apart, oracle);
      ASSERT_TRUE(alone.ok()) << alone.status();
      EXPECT_EQ(alone->stats.prefix_blocks, 0);
      EXPECT_EQ(alone->blocks.back().dp.states, provider.dp.states + last.dp.states);
      EXPECT_EQ(Describe(graph, direct->schedule), Describe(graph, alone->schedule));
      EXPECT_EQ(direct->schedule.latency_ms, alone->schedule.latency_ms);
      if (mode.exhaustive) {
        EXPECT_EQ(direct->stats.unique_signatures, alone->stats.unique_signatures);
        EXPECT_EQ(direct->stats.candidate_stages, alone->stats.candidate_stages);
      }

      for (int batch : {1, 64}) {
        std::vector<Signature> requested;
        auto batched = RunBatched(graph, options, oracle, batch, &requested);
        ASSERT_TRUE(batched.ok()) << batched.status();
        EXPECT_EQ(Describe(graph, batched->schedule), Describe(graph, direct->schedule));
        EXPECT_EQ(batched->stats.prefix_blocks, 1);
        EXPECT_EQ(std::set<Signature>(requested.begin(), requested.end()).size(), requested.size());
        ExpectRequested(mode, static_cast<int64_t>(requested.size()), *direct);
      }
    }
  }
  EXPECT_EQ(prefix_blocks, 24);
}

// Runs `check(mode, seed, graph, oracle, options, direct)` for every mode and
// seeds 1..`seeds` on RandomDag(seed, 14) in small blocks; `direct` is
// RunSearch's result, the reference a session must give again.
template <typename Check>
void ForEachSmallBlockSearch(uint64_t seeds, const Check& check) {
  for (const Mode& mode : kModes) {
    for (uint64_t seed = 1; seed <= seeds; ++seed) {
      SCOPED_TRACE(StrCat(ModeName(mode), ", seed ", seed));
      const graph::Graph graph = testing::RandomDag(seed, 14);
      const StageLatencyFn oracle = testing::RandomOracle(graph, seed);
      const SearchOptions options = ForMode(SmallBlocks(), mode);
      auto direct = RunSearch(graph, options, oracle);
      ASSERT_TRUE(direct.ok()) << direct.status();
      check(mode, seed, graph, oracle, options, *direct);
    }
  }
}

TEST(SearchSessionTest, ADeadlinePausesBetweenPassesAndTheSearchStaysTheSame) {
  ForEachSmallBlockSearch(10, [](const Mode& mode, uint64_t seed, const graph::Graph& graph,
                                 const StageLatencyFn& oracle, const SearchOptions& options,
                                 const SearchResult& direct) {
    auto session = SearchSession::Create(graph, options);
    ASSERT_TRUE(session.ok()) << session.status();
    // A deadline always in the past: one DP pass per call at most.
    (*session)->SetDeadline(std::chrono::steady_clock::now() - std::chrono::seconds(1));
    int pauses = 0, calls = 0;
    std::set<Signature> requested;
    while (calls < 10000) {
      ++calls;
      const int64_t passes = (*session)->stats().dp_passes;
      auto requests = (*session)->NextUnknown(1000);
      ASSERT_TRUE(requests.ok()) << requests.status();
      EXPECT_LE((*session)->stats().dp_passes - passes, 1);
      if (requests->empty() && !(*session)->paused()) break;
      pauses += (*session)->paused();
      for (const StageRequest& request : *requests) {
        EXPECT_TRUE(requested.insert(request.signature).second);
        ASSERT_TRUE((*session)->Provide(request.signature, *oracle(request.stage)).ok());
      }
    }
    ASSERT_TRUE((*session)->Done());
    EXPECT_GT(pauses, 0) << "seed " << seed;
    auto sliced = (*session)->Result();
    ASSERT_TRUE(sliced.ok()) << sliced.status();
    EXPECT_EQ(Describe(graph, sliced->schedule), Describe(graph, direct.schedule));
    EXPECT_DOUBLE_EQ(sliced->schedule.latency_ms, direct.schedule.latency_ms);
    ExpectRequested(mode, static_cast<int64_t>(requested.size()), direct);
  });
}

TEST(SearchSessionTest, ForgettingSolvedLatenciesKeepsTheSearchTheSame) {
  // A cache limit of one byte: after every pass the session forgets every
  // known latency that no waiting block needs; the caller answers a request
  // for a forgotten one again (as a farm job does from its database).
  int64_t forgotten = 0;
  int held_less = 0;
  ForEachSmallBlockSearch(
      15, [&](const Mode& mode, uint64_t seed, const graph::Graph& graph,
              const StageLatencyFn& oracle, SearchOptions options, const SearchResult& direct) {
        options.budget.latency_cache_bytes = 1;
        for (int batch : {1, 7, 1000}) {
          auto session = SearchSession::Create(graph, options);
          ASSERT_TRUE(session.ok()) << session.status();
          int64_t most_held = 0;
          std::set<Signature> distinct;
          for (int calls = 0; calls < 100000; ++calls) {
            auto requests = (*session)->NextUnknown(batch);
            ASSERT_TRUE(requests.ok()) << requests.status();
            most_held = std::max(most_held, (*session)->held_latencies());
            if (requests->empty()) break;
            for (const StageRequest& request : *requests) {
              distinct.insert(request.signature);
              ASSERT_TRUE((*session)->Provide(request.signature, *oracle(request.stage)).ok());
            }
          }
          ASSERT_TRUE((*session)->Done()) << "seed " << seed << " batch " << batch;
          auto result = (*session)->Result();
          ASSERT_TRUE(result.ok()) << result.status();
          EXPECT_EQ(Describe(graph, result->schedule), Describe(graph, direct.schedule))
              << "seed " << seed << " batch " << batch;
          EXPECT_DOUBLE_EQ(result->schedule.latency_ms, direct.schedule.latency_ms);
          ExpectRequested(mode, static_cast<int64_t>(distinct.size()), direct);
          EXPECT_LE(most_held, static_cast<int64_t>(distinct.size()));
          forgotten += result->stats.forgotten_latencies;
          held_less += most_held < static_cast<int64_t>(distinct.size());
        }
      });
  EXPECT_GT(forgotten, 0);
  EXPECT_GT(held_less, 0);  // some searches never held all their latencies at once
}

TEST(SearchSessionTest, WithoutACacheLimitNothingIsForgotten) {
  const graph::Graph graph = testing::RandomDag(3, 14);
  SearchOptions options;
  options.max_block_ops = 4;
  auto result = RunSearch(graph, options, testing::RandomOracle(graph, 3));
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_EQ(result->stats.forgotten_latencies, 0);
}

TEST(SearchSessionTest, ProvideBeforeRequestSkipsTheRequest) {
  const graph::Graph graph = testing::RandomDag(12, 10);
  const StageLatencyFn oracle = testing::RandomOracle(graph, 3);
  SearchOptions options;
  // First pass: learn every stage.
  std::vector<StageRequest> all;
  {
    auto session = *SearchSession::Create(graph, options);
    while (true) {
      auto batch = *session->NextUnknown(1000);
      if (batch.empty()) break;
      for (StageRequest& request : batch) {
        ASSERT_TRUE(session->Provide(request.signature, *oracle(request.stage)).ok());
        all.push_back(std::move(request));
      }
    }
  }
  auto session = *SearchSession::Create(graph, options);
  for (const StageRequest& request : all) {
    ASSERT_TRUE(session->Provide(request.signature, *oracle(request.stage)).ok());
  }
  auto batch = session->NextUnknown(1000);
  ASSERT_TRUE(batch.ok());
  EXPECT_TRUE(batch->empty());
  EXPECT_TRUE(session->Done());
  auto direct = RunSearch(graph, options, oracle);
  ASSERT_TRUE(direct.ok());
  EXPECT_EQ(Describe(graph, session->Result()->schedule), Describe(graph, direct->schedule));
}

TEST(SearchSessionTest, ResultWaitsForOutstandingLatencies) {
  const graph::Graph graph = testing::RandomDag(13, 8);
  auto session = *SearchSession::Create(graph, SearchOptions{});
  auto batch = session->NextUnknown(2);
  ASSERT_TRUE(batch.ok());
  ASSERT_EQ(batch->size(), 2u);
  EXPECT_FALSE(session->Done());
  EXPECT_EQ(session->Result().status().code(), absl::StatusCode::kFailedPrecondition);
  // Nothing provided yet: the next call hands out other signatures only.
  auto more = session->NextUnknown(1000);
  ASSERT_TRUE(more.ok());
  for (const StageRequest& r : *more) {
    EXPECT_NE(r.signature, (*batch)[0].signature);
    EXPECT_NE(r.signature, (*batch)[1].signature);
  }
  EXPECT_GT(session->outstanding(), 0);
  // Finishing inline completes the search.
  ASSERT_TRUE(session->RunInline(IgnoringSignature(MakeAnalyticOracle(graph))).ok());
  EXPECT_TRUE(session->Done());
  EXPECT_TRUE(session->Result().ok());
}

TEST(SearchSessionTest, RejectsBadInput) {
  const graph::Graph graph = testing::RandomDag(14, 6);
  SearchOptions bad;
  bad.max_group_ops = 0;
  EXPECT_EQ(SearchSession::Create(graph, bad).status().code(),
            absl::StatusCode::kInvalidArgument);
  bad = SearchOptions{};
  bad.max_block_ops = 2000;
  EXPECT_FALSE(SearchSession::Create(graph, bad).ok());
  bad = SearchOptions{};
  bad.bounded.cores = -1;
  EXPECT_EQ(SearchSession::Create(graph, bad).status().code(), absl::StatusCode::kInvalidArgument);
  auto session = *SearchSession::Create(graph, SearchOptions{});
  EXPECT_FALSE(session->NextUnknown(0).ok());
  EXPECT_FALSE(session->Provide(1, -1.0).ok());
  EXPECT_FALSE(session->Provide(1, std::nan("")).ok());
  EXPECT_FALSE(session->Provide(1, INFINITY).ok());
}

TEST(SearchSessionTest, InlineSearchCountsMeasurementsAndPropagatesErrors) {
  const graph::Graph graph = testing::RandomDag(15, 10);
  InlineSearch direct(MakeAnalyticOracle(graph));
  auto result = direct.Search(graph, SearchOptions{});
  ASSERT_TRUE(result.ok());
  EXPECT_EQ(direct.measurements(), result->stats.unique_signatures);
  InlineSearch failing([](const Stage&) -> StatusOr<double> {
    return absl::DeadlineExceededError("timeout");
  });
  EXPECT_EQ(failing.Search(graph, SearchOptions{}).status().code(),
            absl::StatusCode::kDeadlineExceeded);
  InlineSearch negative([](const Stage&) -> StatusOr<double> { return -2.0; });
  EXPECT_EQ(negative.Search(graph, SearchOptions{}).status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(SearchSessionTest, EmptyGraph) {
  graph::Graph graph("empty");
  auto result = RunSearch(graph, SearchOptions{}, [](const Stage&) { return 1.0; });
  ASSERT_TRUE(result.ok());
  EXPECT_TRUE(result->schedule.stages.empty());
  EXPECT_EQ(result->schedule.latency_ms, 0);
}

}  // namespace
}  // namespace iosfarm::scheduler::ios
