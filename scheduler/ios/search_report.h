// One call for front ends (`iosfarm search`): the IOS search plus the
// sequential and greedy baselines costed with the same oracle, and their
// text and JSON renderings.
#ifndef IOSFARM_SCHEDULER_IOS_SEARCH_REPORT_H_
#define IOSFARM_SCHEDULER_IOS_SEARCH_REPORT_H_

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "common/status.h"
#include "graph/graph.h"
#include "scheduler/ios/bounded/device_floor.h"
#include "scheduler/ios/latency_oracle.h"
#include "scheduler/ios/schedule.h"
#include "scheduler/ios/schedule_json.h"
#include "scheduler/ios/search_options.h"
#include "scheduler/ios/search_session.h"

namespace iosfarm::scheduler::ios {

struct SearchReport {
  SearchResult ios;
  Schedule sequential;  // costed with the same oracle
  Schedule greedy;      // at most options.max_groups groups per stage
  double search_seconds = 0;  // wall time of the IOS search (oracle included)
  int search_threads = 1;     // SearchOptions::threads it ran with
  DeviceFloor device_floor;   // SearchOptions::device_floor it ran with
};

// Runs RunSearch(graph, options, oracle) and costs both baselines with
// `oracle`. Errors: those of RunSearch and CostSchedule.
StatusOr<SearchReport> SearchWithBaselines(const graph::Graph& graph,
                                           const SearchOptions& options,
                                           const StageLatencyFn& oracle);
StatusOr<SearchReport> SearchWithBaselines(const graph::Graph& graph, const SearchOptions& options,
                                           const SignedLatencyFn& oracle);

// Text summary: latencies of the three schedules and speedups, search
// statistics (blocks, DP states, candidate stages, unique signatures, search
// time), then one line per IOS stage when `list_stages`. A non-empty
// `latency_kind` (e.g. "predicted": sums of stage latencies measured alone)
// labels every latency and speedup, so none reads as measured end to end.
std::string SearchReportText(const graph::Graph& graph, const SearchReport& report,
                             bool list_stages, std::string_view latency_kind = "");

// {"model", "batch", "device_key", "latency_ms": {"sequential", "greedy",
// "ios"}, "speedup": {"vs_sequential", "vs_greedy"}, "stats": {...},
// "blocks": [one per block: {"ops", "solver" (BlockSolverName), "twin",
// "prefix" (block indices or null), "states", "transitions",
// "candidate_stages", "merge_stages", "bound_groups", "prefix_bound_states",
// "lower_bound_misses" (its DpStats; a twin's are its twin's), "stages",
// "latency_ms" (its own schedule, before boundary windows)}],
// "search_seconds", "schedule": ScheduleToJson(...)}.
nlohmann::json SearchReportJson(const graph::Graph& graph, const SearchReport& report,
                                const ScheduleMetadata& metadata);

}  // namespace iosfarm::scheduler::ios

#endif  // IOSFARM_SCHEDULER_IOS_SEARCH_REPORT_H_
