// SearchSession::SolveInParallel: RunInline's blocks solved on several
// threads (SearchOptions::threads).
//
// Each thread takes the next block (or window) of the wave, runs the pass
// the sequential loop would run (the bounded search, and the exhaustive DP
// when the bounded search hands the block over; or the DP alone), with its
// own tables and the shared InlineSource, and touches nothing else of the
// session. The main thread, one of the workers, then applies the passes in
// block order through the sequential code (FinishBounded, SolveExhaustive),
// so the statistics, splits and errors come out as they would with one
// thread. The blocks of a search are independent given their latencies, and
// each signature is measured once whichever thread asks first, so a
// latency function that gives a signature the same latency each time gives
// the same schedule.
#include <algorithm>
#include <atomic>
#include <memory>
#include <optional>
#include <thread>
#include <vector>

#include "scheduler/ios/search_session.h"

namespace iosfarm::scheduler::ios {
namespace {

// One block's pass, run off the session.
struct ThreadPass {
  bool ran = false;
  bool bounded = false;  // the bounded search ran first
  std::unique_ptr<BoundedBlockSearch> search;
  Status advanced;                                // the bounded search's Advance
  std::optional<StatusOr<BlockSolution>> solved;  // the exhaustive DP's, when it ran
};

}  // namespace

bool SearchSession::ParallelInline() const {
  const SearchBudget& budget = options_.budget;
  return options_.threads > 1 && budget.max_transitions_total == 0 &&
         budget.latency_cache_bytes == 0;
}

Status SearchSession::SolveInParallel(LatencySource& source) {
  std::vector<int> wave;
  for (int b = 0; b < static_cast<int>(blocks_.size()); ++b) {
    if (blocks_[b].phase == BlockPhase::kNotStarted && blocks_[b].twin < 0) wave.push_back(b);
  }
  if (wave.size() < 2) return absl::OkStatus();  // the sequential loop does it
  bool total_binds = false;
  const DpOptions dp = PassOptions(&total_binds);  // the same for every pass of the wave
  const BoundedSearchOptions bounded = BoundedOptions(dp);

  std::vector<ThreadPass> passes(wave.size());
  std::atomic<size_t> next{0};
  std::atomic<bool> failed{false};
  auto work = [&]() {
    for (size_t i = next++; i < wave.size() && !failed.load(); i = next++) {
      const BlockState& state = blocks_[wave[i]];
      ThreadPass& pass = passes[i];
      pass.ran = true;
      pass.bounded = !options_.exhaustive && !state.exhaustive;
      bool dp_needed = !pass.bounded;
      if (pass.bounded) {
        StatusOr<std::unique_ptr<BoundedBlockSearch>> created =
            BoundedBlockSearch::Create(state.graph, bounded);
        if (created.ok()) {
          pass.search = *std::move(created);
          pass.advanced = pass.search->Advance(source);
          dp_needed = HandsOverToDp(pass.advanced, total_binds);
        } else {
          pass.advanced = created.status();
        }
      }
      if (dp_needed) pass.solved = SolveBlock(state.graph, dp, source);
      const Status& outcome = dp_needed ? pass.solved->status() : pass.advanced;
      if (outcome.ok()) {
        threads_solved_.fetch_add(1, std::memory_order_relaxed);
      } else if (!IsSearchBudgetError(outcome)) {
        failed = true;  // an error ends the search: start nothing more
      }
    }
  };
  const int helpers = std::min<int>(options_.threads, static_cast<int>(wave.size())) - 1;
  std::vector<std::thread> threads;
  threads.reserve(helpers);
  for (int t = 0; t < helpers; ++t) threads.emplace_back(work);
  work();
  for (std::thread& thread : threads) thread.join();
  threads_solved_ = 0;

  // Apply in block order, as the sequential loop would have run them.
  for (size_t i = 0; i < wave.size(); ++i) {
    ThreadPass& pass = passes[i];
    if (!pass.ran) break;  // an earlier error stopped the threads
    const int b = wave[i];
    BlockState& state = blocks_[b];
    ++pass_;
    state.first_pass = pass_;
    StatusOr<BlockSolution>* solved = pass.solved ? &*pass.solved : nullptr;
    if (pass.bounded) {
      if (pass.search == nullptr) return pass.advanced;  // Create failed
      state.bounded = std::move(pass.search);
      RETURN_IF_ERROR(FinishBounded(b, pass.advanced, 0, total_binds, source, solved));
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
