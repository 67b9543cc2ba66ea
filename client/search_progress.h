// `iosfarm search` with progress: the IOS search and its baselines (as
// scheduler::ios::SearchWithBaselines), showing on a ProgressLines line how
// many blocks are solved and how many stages were measured, so a search of
// several minutes is not silent.
//
// Once every block is solved the search re-solves the boundary windows
// between them; the line then counts those too. Off a terminal a line is
// printed each time a block is solved, and once at the end (not per window
// or walk); on a terminal the line is redrawn at most every 100 ms, and at
// least every second (the cost-to-go DP's walks measure nothing for seconds).
// Thread-compatible.
#ifndef IOSFARM_CLIENT_SEARCH_PROGRESS_H_
#define IOSFARM_CLIENT_SEARCH_PROGRESS_H_

#include <string>

#include "client/progress_line.h"
#include "common/status.h"
#include "graph/graph.h"
#include "scheduler/ios/latency_oracle.h"
#include "scheduler/ios/search_options.h"
#include "scheduler/ios/search_report.h"

namespace iosfarm::client {

// What the progress line shows.
struct SearchProgress {
  int solved = 0;  // blocks, then windows (SearchSession::solved_blocks())
  int blocks_total = 0;
  int windows_total = 0;  // 0 until every block is solved
  int64_t stages_measured = 0;
  // The cost-to-go DP walks begun so far (SearchSession::walk_progress()).
  int64_t walk_states_walked = 0;
  int64_t walk_states_total = 0;
  double elapsed_s = 0;
};

// "search: 3/12 blocks solved, 140 stages measured, 12.3s"; while a bound
// DP walk runs "search: 3/12 blocks solved, cost-to-go DP states 412k/1.10M, 140
// stages measured, 12.3s" (the states walked of the walks begun); with
// windows "search: 12/12 blocks solved, 2/5 boundary windows, 150 stages
// measured, 14.1s".
std::string SearchProgressText(const SearchProgress& progress);

// Errors: those of SearchWithBaselines. `progress` may be null (no display);
// it is Finish()ed before returning.
StatusOr<scheduler::ios::SearchReport> SearchWithProgress(
    const graph::Graph& graph, const scheduler::ios::SearchOptions& options,
    const scheduler::ios::SignedLatencyFn& oracle, ProgressLines* progress);

}  // namespace iosfarm::client

#endif  // IOSFARM_CLIENT_SEARCH_PROGRESS_H_
