// How `iosfarm search` prints its report. The search never runs a whole
// schedule: every latency it shows is predicted (the sum of the schedule's
// stage latencies, each stage measured alone), and both renderings say so.
// `iosfarm run --schedule FILE` measures a schedule end to end.
// Pure functions; thread-safe.
#ifndef IOSFARM_CLIENT_SEARCH_SUMMARY_H_
#define IOSFARM_CLIENT_SEARCH_SUMMARY_H_

#include <string>

#include <nlohmann/json.hpp>

#include "graph/graph.h"
#include "scheduler/ios/schedule_json.h"
#include "scheduler/ios/search_report.h"

namespace iosfarm::client {

inline constexpr int kSearchFormatVersion = 1;

// Text: the predicted latencies of the three schedules and the predicted
// speedups, the search statistics, then one line per IOS stage when
// `list_stages`.
std::string SearchSummaryText(const graph::Graph& graph,
                              const scheduler::ios::SearchReport& report, bool list_stages);

// scheduler::ios::SearchReportJson plus "format_version" and
// "latency_kind": "predicted" (latency_ms and speedup are predicted).
nlohmann::json SearchSummaryJson(const graph::Graph& graph,
                                 const scheduler::ios::SearchReport& report,
                                 const scheduler::ios::ScheduleMetadata& metadata);

}  // namespace iosfarm::client

#endif  // IOSFARM_CLIENT_SEARCH_SUMMARY_H_
