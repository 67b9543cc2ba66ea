// `iosfarm search` with progress: the IOS search and its baselines (as
// scheduler::ios::SearchWithBaselines), showing on a ProgressLines line how
// many blocks are solved and how many stages were measured, so a search of
// several minutes is not silent.
//
// Once every block is solved the search re-solves the boundary windows
// between them; the line then counts those too. Off a terminal a line is
// printed each time a block is solved, and once at the end (not per
// window); on a terminal the line is redrawn (at most every 100 ms between
// blocks and windows). Thread-compatible.
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

// "search: 3/12 blocks solved, 140 stages measured, 12.3s"; with windows
// (windows_total > 0) "search: 12/12 blocks solved, 2/5 boundary windows,
// 150 stages measured, 14.1s". `solved` counts blocks, then windows
// (SearchSession::solved_blocks()).
std::string SearchProgressText(int solved, int blocks_total, int windows_total,
                               int64_t stages_measured, double elapsed_s);

// Errors: those of SearchWithBaselines. `progress` may be null (no display);
// it is Finish()ed before returning.
StatusOr<scheduler::ios::SearchReport> SearchWithProgress(
    const graph::Graph& graph, const scheduler::ios::SearchOptions& options,
    const scheduler::ios::SignedLatencyFn& oracle, ProgressLines* progress);

}  // namespace iosfarm::client

#endif  // IOSFARM_CLIENT_SEARCH_PROGRESS_H_
