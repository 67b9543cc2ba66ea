#include "client/search_summary.h"

namespace iosfarm::client {

std::string SearchSummaryText(const graph::Graph& graph,
                              const scheduler::ios::SearchReport& report, bool list_stages) {
  std::string text = scheduler::ios::SearchReportText(graph, report, list_stages, "predicted");
  // After the model line: what "predicted" means and how to measure instead.
  const size_t first_line = text.find('\n') + 1;
  text.insert(first_line,
              "predicted latencies: each schedule's stage latencies summed, every stage "
              "measured alone (`iosfarm run --schedule FILE` measures a schedule end to end)\n");
  return text;
}

nlohmann::json SearchSummaryJson(const graph::Graph& graph,
                                 const scheduler::ios::SearchReport& report,
                                 const scheduler::ios::ScheduleMetadata& metadata) {
  nlohmann::json j = scheduler::ios::SearchReportJson(graph, report, metadata);
  j["format_version"] = kSearchFormatVersion;
  j["latency_kind"] = "predicted";
  return j;
}

}  // namespace iosfarm::client
