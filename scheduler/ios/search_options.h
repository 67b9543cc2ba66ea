// Options of an IOS search: IOS's own parameters (r, s, the block size,
// merge), the boundary windows, whether to search exhaustively, threads and
// budget; the bounded search's knobs live with it (SearchOptions::bounded,
// bounded/bounded_search_knobs.h).
#ifndef IOSFARM_SCHEDULER_IOS_SEARCH_OPTIONS_H_
#define IOSFARM_SCHEDULER_IOS_SEARCH_OPTIONS_H_

#include <cstdint>
#include <string>

#include "common/status.h"
#include "scheduler/ios/bounded/bounded_search_knobs.h"

namespace iosfarm::scheduler::ios {

// How much work and memory a search may spend, checked as it goes (every DP
// state, and every 64 Ki endings or enumeration steps inside one state). A pass is one run of the
// block DP over one block or boundary window. 0 disables a limit.
//
// Past a per-pass limit the block is not given up: it is split into blocks of
// at most 70 % of its size (the size cut of blocks.h) and those are solved
// instead, down to `min_block_ops`; a boundary window over the budget is
// skipped (its stages stay as the blocks had them). Past the total limit, or
// when a block of min_block_ops is still over a per-pass limit, the search
// fails with ResourceExhausted naming the budget (IsSearchBudgetError).
struct SearchBudget {
  int64_t max_states_per_pass = 4'000'000;
  // (state, ending) pairs evaluated in one pass (IOS's transitions).
  int64_t max_transitions_per_pass = 1'000'000'000;
  // Steps of the ending enumeration in one pass (it can search long for few
  // endings among many independent ops). A few ns each.
  int64_t max_steps_per_pass = 20'000'000'000;
  // The pass's tables (states, endings, groups) plus what its latency source
  // holds for it (queued stage requests).
  int64_t max_bytes_per_pass = int64_t{1} << 30;
  // Transitions of every pass of the search together.
  int64_t max_transitions_total = 0;
  // Stage signatures whose latency the session holds at once (known, or
  // waiting to be measured; about 25 bytes each). Without a latency cache
  // limit that is every signature of the search. 0: no limit.
  int64_t max_signatures_total = 0;
  // For callers that can hand a latency back again (a farm job looks it up
  // in its database): when the session's latency table grows past this many
  // bytes, it forgets the known latencies that no block still waiting needs
  // (a later block that looks one up again gets a request for it, answered
  // from the database). The table then counts against max_bytes_per_pass, so
  // that limit bounds everything the search holds. 0: keep every latency
  // (a search that measures on the spot must not forget: it would measure
  // again).
  int64_t latency_cache_bytes = 0;
  int min_block_ops = 4;
};

// A ResourceExhausted error that says a search budget ran out (the message
// names which), and the test for it.
Status SearchBudgetError(const std::string& message);
bool IsSearchBudgetError(const Status& status);

struct SearchOptions {
  int max_group_ops = 3;   // r: ops per group (IOS default 3), 1..64
  int max_groups = 8;      // s: groups per stage (IOS default 8), 1..64
  int max_block_ops = 50;  // block size limit (IOPS default 50), 1..1024
  bool enable_merge = true;
  // Solve each distinct block structure once and map the schedule onto
  // identical blocks (e.g. repeated NASNet cells). Changes nothing in the
  // result, only the work.
  bool reuse_identical_blocks = true;
  // Boundary windows (IOPS's local search around split points): after the
  // blocks are solved, the last stages of a block and the first stages of the
  // next one across every size cut, up to this many ops in all, are solved
  // again as one small block and replaced when that is cheaper. It recovers
  // parallelism that a size cut separated. 0 disables.
  int boundary_window_ops = 24;
  // The exhaustive DP (block_dp.h) looks up every candidate stage of every
  // block: the reference, and what IOS does. The default bounded search
  // (bounded_block_search.h) measures only the stages that can still change
  // the optimum and finds the same latency wherever no stage is faster than
  // its slowest group alone (the assumption stated there).
  bool exhaustive = false;
  // Threads that solve blocks side by side when the search measures on the
  // spot (SearchSession::RunInline, RunSearch), 1..256. Each solves whole
  // blocks (and boundary windows; blocks of one shape together, SolveBlocks)
  // with its own tables, so each may hold up to budget.max_bytes_per_pass
  // (up to 3.5 times that in a walk of six blocks of one shape, block_dp.h;
  // NASNet-A's six normal cells: 1.8 GiB);
  // the latency function is then called from several of them at once (never
  // twice for one signature) and must be thread-safe (a backend profiles one
  // stage at a time itself, backend.h). The schedule and every statistic but
  // the shared walks' counts are the same as with one thread, which walks
  // the cost-to-go DPs of a shape's blocks together too (search_session.h; the
  // latency function must give a signature the same latency whenever asked,
  // as the simulated and analytic ones do). Searches driven by NextUnknown
  // (a farm job), and searches with a total transitions budget or a latency
  // cache limit, use one thread.
  int threads = 1;
  // Work and memory bounds (the largest zoo block at r=3, s=8 needs 0.15 M
  // states per pass, well inside the defaults).
  SearchBudget budget;
  // The bounded search's knobs and the device facts it bounds with
  // (unused with `exhaustive`).
  BoundedSearchKnobs bounded;
};

// InvalidArgument naming the field when an option is out of range.
Status ValidateSearchOptions(const SearchOptions& options);

}  // namespace iosfarm::scheduler::ios

#endif  // IOSFARM_SCHEDULER_IOS_SEARCH_OPTIONS_H_
