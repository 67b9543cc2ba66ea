// `iosfarm search` with progress: the IOS search and its baselines (as
// scheduler::ios::SearchWithBaselines), showing on a ProgressLines line how
// many blocks are solved and how many stages were measured, so a search of
// several minutes is not silent.
//
// Off a terminal a line is printed each time a block is solved; on a
// terminal the line is redrawn (at most every 100 ms between blocks).
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

// "search: 3/12 blocks solved, 140 stages measured, 12.3s".
std::string SearchProgressText(int blocks_solved, int blocks_total, int64_t stages_measured,
                               double elapsed_s);

// Errors: those of SearchWithBaselines. `progress` may be null (no display);
// it is Finish()ed before returning.
StatusOr<scheduler::ios::SearchReport> SearchWithProgress(
    const graph::Graph& graph, const scheduler::ios::SearchOptions& options,
    const scheduler::ios::SignedLatencyFn& oracle, ProgressLines* progress);

}  // namespace iosfarm::client

#endif  // IOSFARM_CLIENT_SEARCH_PROGRESS_H_
