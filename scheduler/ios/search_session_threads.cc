// SearchSession::SolveInParallel: RunInline's blocks solved on several
// threads (SearchOptions::threads).
//
// Two rounds over the wave of not-started blocks (or windows). First each
// thread takes the next block and runs the bounded search the sequential
// loop would run; blocks of one shape go to one thread together, to walk
// their cost-to-go DPs in one walk (WalkCostToGoDps: each gets the table its own
// walk gives), a shape in one piece unless splitting it shortens the
// longest thread by more than the CPU it adds (PlanSharedWalks), the
// costliest pieces first, and then
// each search goes on on any thread. Then the blocks that need the exhaustive DP (those the
// bounded search handed over, or all in exhaustive mode) are solved, blocks
// of one shape (SameShape: NASNet's cells repeat one structure at several
// sizes) together in pieces that share one walk of their state graph
// (SolveBlocks); the pieces go to the threads costliest first (the DP's
// states, counted, times a share per block), so that the last to finish
// is a short one. Each thread has its own tables and the shared InlineSource,
// and touches nothing else of the session. The main thread, one of the
// workers, then applies the passes in block order through the sequential
// code (FinishBounded, SolveExhaustive), so the statistics, splits and
// errors come out as they would with one thread: SolveBlocks gives each
// block what SolveBlock gives it alone, and a piece over a budget is solved
// again block by block, as the sequential loop would. The blocks of a search
// are independent given their latencies, and each signature is measured
// once whichever thread asks first, so a latency function that gives a
// signature the same latency each time gives the same schedule.
#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <functional>
#include <memory>
#include <optional>
#include <thread>
#include <vector>

#include "scheduler/ios/bounded/shared_walk_plan.h"
#include "scheduler/ios/search_session.h"

namespace iosfarm::scheduler::ios {
namespace {

// One block's pass, run off the session.
struct ThreadPass {
  bool ran = false;
  bool bounded = false;  // the bounded search ran first
  bool dp_needed = false;  // the exhaustive DP must solve the block
  std::unique_ptr<BoundedBlockSearch> search;
  Status advanced;                                // the bounded search's Advance
  std::optional<StatusOr<BlockSolution>> solved;  // the exhaustive DP's, when it ran
};

// The DP's states are counted up to this many to weigh a block's pass.
constexpr int64_t kStatesCountCap = 4'000'000;

}  // namespace

void SearchSession::RunOnThreads(size_t count, const std::atomic<bool>& failed,
                                 const std::function<void(size_t)>& task) const {
  std::atomic<size_t> next{0};
  auto work = [&]() {
    for (size_t i = next++; i < count && !failed.load(); i = next++) task(i);
  };
  const int helpers = std::min<int>(options_.threads, static_cast<int>(count)) - 1;
  std::vector<std::thread> threads;
  threads.reserve(std::max(helpers, 0));
  for (int t = 0; t < helpers; ++t) threads.emplace_back(work);
  work();
  for (std::thread& thread : threads) thread.join();
}

bool SearchSession::ParallelInline() const {
  const SearchBudget& budget = options_.budget;
  return options_.threads > 1 && budget.max_transitions_total == 0 &&
         budget.latency_cache_bytes == 0;
}

Status SearchSession::SolveInParallel(LatencySource& source) {
  std::vector<int> wave;
  for (int b = 0; b < static_cast<int>(blocks_.size()); ++b) {
    // Blocks with a prefix wait for its table (the sequential loop).
    if (blocks_[b].phase == BlockPhase::kNotStarted && blocks_[b].twin < 0 &&
        blocks_[b].prefix < 0) {
      wave.push_back(b);
    }
  }
  if (wave.size() < 2) return absl::OkStatus();  // the sequential loop does it
  bool total_binds = false;
  const DpOptions dp = PassOptions(&total_binds);  // the same for every pass of the wave
  std::vector<ThreadPass> passes(wave.size());
  std::atomic<bool> failed{false};
  auto failing = [&](const Status& status) {
    if (!status.ok() && !IsSearchBudgetError(status)) failed = true;  // start nothing more
  };

  // Round 1: the bounded searches, blocks of one shape in pieces that share
  // their cost-to-go DP's walk (WalkCostToGoDps); what the DP must solve, with its
  // states.
  for (int b : wave) SizeBlock(b);
  auto bounded = [&](size_t i) { return !options_.exhaustive && !blocks_[wave[i]].exhaustive; };
  std::vector<double> weight(wave.size(), 0.0);  // a cost-to-go DP walk's states
  // Indices into `wave`: the bounded blocks by shape, then each other block.
  std::vector<std::vector<size_t>> shapes = GroupByShape(
      wave.size(), [&](size_t i) { return bounded(i) ? &blocks_[wave[i]].graph : nullptr; });
  for (size_t i = 0; i < wave.size(); ++i) {
    if (bounded(i)) {
      weight[i] = static_cast<double>(blocks_[wave[i]].states);
    } else {
      shapes.push_back({i});
    }
  }
  std::vector<std::vector<size_t>> searches =
      PlanSharedWalks(std::move(shapes), weight, options_.threads);
  // Costliest pieces first: their walks are the longest.
  std::stable_sort(searches.begin(), searches.end(), [&](const auto& a, const auto& b) {
    return SharedWalkCost(a, weight) > SharedWalkCost(b, weight);
  });
  std::atomic<int> shared_bound{0};  // blocks whose cost-to-go DPs shared a walk
  RunOnThreads(searches.size(), failed, [&](size_t p) {
    std::vector<BoundedBlockSearch*> paused;
    for (size_t i : searches[p]) {
      const BlockState& state = blocks_[wave[i]];
      ThreadPass& pass = passes[i];
      pass.ran = true;
      pass.bounded = bounded(i);
      pass.dp_needed = !pass.bounded;
      if (!pass.bounded) continue;
      BoundedSearchOptions options = BoundedOptions(dp);
      options.pause_before_cost_to_go_dp = searches[p].size() > 1;
      StatusOr<std::unique_ptr<BoundedBlockSearch>> created =
          BoundedBlockSearch::Create(state.graph, options);
      if (created.ok()) {
        pass.search = *std::move(created);
        pass.advanced = pass.search->Advance(source);
        if (pass.advanced.ok() && pass.search->paused_before_cost_to_go_dp()) {
          paused.push_back(pass.search.get());
        }
      } else {
        pass.advanced = created.status();
      }
      failing(pass.advanced);
    }
    // Shapes are checked and the searches paused: it cannot fail.
    if (paused.size() > 1 && BoundedBlockSearch::WalkCostToGoDps(paused).ok()) {
      shared_bound += static_cast<int>(paused.size());
    }
  });
  // The searches go on block by block, on any thread.
  std::vector<int64_t> states(wave.size(), 0);
  RunOnThreads(wave.size(), failed, [&](size_t i) {
    ThreadPass& pass = passes[i];
    if (!pass.ran) return;
    if (pass.search != nullptr && pass.advanced.ok() && pass.search->paused_before_cost_to_go_dp()) {
      pass.advanced = pass.search->Advance(source);
    }
    if (pass.bounded) {
      pass.dp_needed = HandsOverToDp(pass.advanced, total_binds);
      failing(pass.advanced);
    }
    if (pass.dp_needed) {
      states[i] = CountStates(blocks_[wave[i]].graph, kStatesCountCap);
    } else if (pass.advanced.ok()) {
      threads_solved_.fetch_add(1, std::memory_order_relaxed);
    }
  });
  stats_.shared_bound_walk_blocks += shared_bound;

  // Round 2: the DP, blocks of one shape in shared pieces, costliest first.
  struct Piece {
    std::vector<size_t> passes;  // indices into `passes`, in block order
    double cost = 0;
  };
  std::vector<Piece> pieces;
  const std::vector<std::vector<size_t>> dp_shapes =
      failed ? std::vector<std::vector<size_t>>() : GroupByShape(wave.size(), [&](size_t i) {
        return passes[i].ran && passes[i].dp_needed ? &blocks_[wave[i]].graph : nullptr;
      });
  for (const std::vector<size_t>& shape : dp_shapes) {
    const size_t i = shape[0];
    size_t begin = 0;
    for (size_t end : SharedPieceEnds(shape.size())) {
      Piece piece;
      piece.passes.assign(shape.begin() + begin, shape.begin() + end);
      // A shared walk costs about 45 % of a block's DP per extra block (three
      // NASNet-A cells: 39 s in one walk, 62 s one by one).
      piece.cost = static_cast<double>(states[i]) * (1 + 0.45 * (piece.passes.size() - 1));
      pieces.push_back(std::move(piece));
      begin = end;
    }
  }
  std::atomic<int> shared{0};  // blocks solved in shared walks
  std::stable_sort(pieces.begin(), pieces.end(),
                   [](const Piece& a, const Piece& b) { return a.cost > b.cost; });
  RunOnThreads(pieces.size(), failed, [&](size_t p) {
    const Piece& piece = pieces[p];
    std::vector<const BlockGraph*> graphs;
    DpOptions piece_dp = dp;  // a later block's prefix keeps its table (SolveExhaustive)
    for (size_t i : piece.passes) {
      graphs.push_back(&blocks_[wave[i]].graph);
      piece_dp.keep_states = piece_dp.keep_states || blocks_[wave[i]].provides_prefix;
    }
    StatusOr<std::vector<BlockSolution>> solved = SolveBlocks(graphs, piece_dp, source);
    if (!solved.ok() && IsSearchBudgetError(solved.status()) && graphs.size() > 1) {
      // A shared walk stops where the first of its blocks' passes would
      // (block_dp.h): alone, each gets what the sequential loop gets (a
      // solution within its budget, or the budget error).
      for (size_t i : piece.passes) {
        passes[i].solved = SolveBlock(blocks_[wave[i]].graph, piece_dp, source);
      }
    } else {
      for (size_t k = 0; k < piece.passes.size(); ++k) {
        ThreadPass& pass = passes[piece.passes[k]];
        if (solved.ok()) {
          pass.solved = std::move((*solved)[k]);
        } else {
          pass.solved = solved.status();
        }
      }
    }
    for (size_t i : piece.passes) {
      const Status& outcome = passes[i].solved->status();
      if (outcome.ok()) threads_solved_.fetch_add(1, std::memory_order_relaxed);
      failing(outcome);
    }
    if (solved.ok() && graphs.size() > 1) shared += static_cast<int>(graphs.size());
  });
  stats_.shared_walk_blocks += shared;
  threads_solved_ = 0;

  // Apply in block order, as the sequential loop would have run them.
  for (size_t i = 0; i < wave.size(); ++i) {
    ThreadPass& pass = passes[i];
    // An error stopped the threads before this pass ran (whole or in part):
    // the sequential loop goes on from here.
    if (!pass.ran || (pass.dp_needed && !pass.solved) ||
        (pass.search != nullptr && pass.search->paused_before_cost_to_go_dp())) {
      break;
    }
    const int b = wave[i];
    BlockState& state = blocks_[b];
    ++pass_;
    state.first_pass = pass_;
    StatusOr<BlockSolution>* solved = pass.solved ? &*pass.solved : nullptr;
    if (pass.bounded) {
      if (pass.search == nullptr) return pass.advanced;  // Create failed
      state.bounded = std::move(pass.search);
      state.total_binds = total_binds;
      RETURN_IF_ERROR(FinishBounded(b, pass.advanced, total_binds, source, solved));
    } else {
      RETURN_IF_ERROR(SolveExhaustive(b, source, /*first_pass=*/true, solved));
    }
    // A split renumbers the blocks after b: the sequential loop goes on.
    if (blocks_[b].phase == BlockPhase::kNotStarted) break;
  }
  ResolveTwins();
  return absl::OkStatus();
}

}  // namespace iosfarm::scheduler::ios
