#include "client/search_summary.h"

#include <cstdio>

#include "common/strings.h"

namespace iosfarm::client {
namespace {

namespace ios = scheduler::ios;

std::string Ms(double ms) {
  char buffer[32];
  std::snprintf(buffer, sizeof(buffer), "%.4f", ms);
  return buffer;
}

std::string Ratio(double a, double b) {
  char buffer[32];
  std::snprintf(buffer, sizeof(buffer), "%.3f", b > 0 ? a / b : 0.0);
  return buffer;
}

}  // namespace

std::string SearchSummaryText(const graph::Graph& graph, const ios::SearchReport& report,
                              bool list_stages) {
  const ios::Schedule& schedule = report.ios.schedule;
  const ios::SearchStats& s = report.ios.stats;
  int merges = 0;
  for (const ios::ScheduledStage& stage : schedule.stages) {
    merges += stage.stage.strategy == ios::Strategy::kMerge ? 1 : 0;
  }
  std::string out = StrCat("model: ", graph.name(), "\n");
  out += "predicted latencies: each schedule's stage latencies summed, every stage measured "
         "alone (`iosfarm run --schedule FILE` measures a schedule end to end)\n";
  out += StrCat("sequential: ", Ms(report.sequential.latency_ms), " ms predicted (",
                report.sequential.stages.size(), " stages)\n");
  out += StrCat("greedy:     ", Ms(report.greedy.latency_ms), " ms predicted (",
                report.greedy.stages.size(), " stages)\n");
  out += StrCat("ios:        ", Ms(schedule.latency_ms), " ms predicted (",
                schedule.stages.size(), " stages, ", merges, " merged)\n");
  out += StrCat("predicted speedup: ", Ratio(report.sequential.latency_ms, schedule.latency_ms),
                "x vs sequential, ", Ratio(report.greedy.latency_ms, schedule.latency_ms),
                "x vs greedy\n");
  out += StrCat("search: ", s.blocks, " blocks (", s.reused_blocks, " reused), ", s.dp_states,
                " DP states, ", s.transitions, " transitions, ", s.candidate_stages,
                " candidate stages -> ", s.unique_signatures, " unique signatures, ", s.windows,
                " boundary windows (", s.improved_windows, " improved), ",
                Ms(report.search_seconds * 1e3), " ms\n");
  if (list_stages) {
    for (size_t i = 0; i < schedule.stages.size(); ++i) {
      const ios::ScheduledStage& stage = schedule.stages[i];
      out += StrCat("  stage ", i, " (block ", stage.block, ", ", Ms(stage.latency_ms),
                    " ms): ", ios::StageToString(graph, stage.stage), "\n");
    }
  }
  return out;
}

nlohmann::json SearchSummaryJson(const graph::Graph& graph, const ios::SearchReport& report,
                                 const ios::ScheduleMetadata& metadata) {
  nlohmann::json j = ios::SearchReportJson(graph, report, metadata);
  j["format_version"] = kSearchFormatVersion;
  j["latency_kind"] = "predicted";
  return j;
}

}  // namespace iosfarm::client
