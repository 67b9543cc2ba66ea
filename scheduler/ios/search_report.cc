#include "scheduler/ios/search_report.h"

#include <chrono>
#include <cstdio>

#include "common/strings.h"
#include "scheduler/ios/baselines.h"
#include "scheduler/ios/inline_search.h"

namespace iosfarm::scheduler::ios {
namespace {

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

nlohmann::json StatsJson(const SearchStats& s) {
  return {{"blocks", s.blocks},
          {"reused_blocks", s.reused_blocks},
          {"prefix_blocks", s.prefix_blocks},
          {"prefix_bound_blocks", s.prefix_bound_blocks},
          {"dp_states", s.dp_states},
          {"transitions", s.transitions},
          {"candidate_stages", s.candidate_stages},
          {"merge_stages", s.merge_stages},
          {"unique_signatures", s.unique_signatures},
          {"stages_measured", s.stages_measured},
          {"bound_groups", s.bound_groups},
          {"tightened_bounds", s.tightened_bounds},
          {"exhaustive_blocks", s.exhaustive_blocks},
          {"shared_walk_blocks", s.shared_walk_blocks},
          {"shared_bound_walk_blocks", s.shared_bound_walk_blocks},
          {"lower_bound_misses", s.lower_bound_misses},
          {"largest_bound_miss_ms", s.largest_bound_miss_ms},
          {"windows", s.windows},
          {"improved_windows", s.improved_windows},
          {"window_gain_ms", s.window_gain_ms}};
}

}  // namespace

StatusOr<SearchReport> SearchWithBaselines(const graph::Graph& graph,
                                           const SearchOptions& options,
                                           const StageLatencyFn& oracle) {
  return SearchWithBaselines(graph, options, IgnoringSignature(oracle));
}

StatusOr<SearchReport> SearchWithBaselines(const graph::Graph& graph, const SearchOptions& options,
                                           const SignedLatencyFn& oracle) {
  SearchReport report;
  const auto start = std::chrono::steady_clock::now();
  ASSIGN_OR_RETURN(report.ios, RunSearch(graph, options, oracle));
  report.search_seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  report.search_threads = options.threads;
  report.device_floor = options.bounded.device_floor;
  ASSIGN_OR_RETURN(report.sequential, SequentialSchedule(graph));
  RETURN_IF_ERROR(CostSchedule(graph, report.sequential, oracle));
  ASSIGN_OR_RETURN(report.greedy, GreedySchedule(graph, options.max_groups));
  RETURN_IF_ERROR(CostSchedule(graph, report.greedy, oracle));
  return report;
}

std::string SearchReportText(const graph::Graph& graph, const SearchReport& report,
                             bool list_stages, std::string_view latency_kind) {
  const Schedule& ios = report.ios.schedule;
  const SearchStats& s = report.ios.stats;
  int merges = 0;
  for (const ScheduledStage& stage : ios.stages) {
    merges += stage.stage.strategy == Strategy::kMerge ? 1 : 0;
  }
  const std::string ms = latency_kind.empty() ? " ms (" : StrCat(" ms ", latency_kind, " (");
  std::string out = StrCat("model: ", graph.name(), "\n");
  out += StrCat("sequential: ", Ms(report.sequential.latency_ms), ms,
                report.sequential.stages.size(), " stages)\n");
  out += StrCat("greedy:     ", Ms(report.greedy.latency_ms), ms, report.greedy.stages.size(),
                " stages)\n");
  out += StrCat("ios:        ", Ms(ios.latency_ms), ms, ios.stages.size(), " stages, ", merges,
                " merged)\n");
  out += StrCat(latency_kind, latency_kind.empty() ? "speedup: " : " speedup: ",
                Ratio(report.sequential.latency_ms, ios.latency_ms), "x vs sequential, ",
                Ratio(report.greedy.latency_ms, ios.latency_ms), "x vs greedy\n");
  out += StrCat(
      "search: ", s.blocks, " blocks (", s.reused_blocks, " reused",
      s.prefix_blocks > 0 ? StrCat(", ", s.prefix_blocks, " on an earlier block's table")
                          : std::string(),
      s.prefix_bound_blocks > 0
          ? StrCat(", ", s.prefix_bound_blocks, " on an earlier block's bound table")
          : std::string(),
      "), ", s.dp_states, " DP states, ", s.transitions, " transitions, ", s.candidate_stages,
      " candidate stages -> ", s.unique_signatures, " unique signatures, ", s.stages_measured,
      " stages measured",
      s.exhaustive_blocks > 0 ? StrCat(" (", s.exhaustive_blocks, " blocks by the exhaustive DP)")
                              : std::string(),
      ", ", s.windows, " boundary windows (", s.improved_windows, " improved), ",
      Ms(report.search_seconds * 1e3), " ms",
      report.search_threads > 1 ? StrCat(" on ", report.search_threads, " threads") : std::string(),
      "\n");
  if (report.device_floor.bounds_anything()) {
    out += StrCat("device floor: ", DescribeDeviceFloor(report.device_floor), " (",
                  s.lower_bound_misses, " measured stages below their bound)\n");
  }
  if (list_stages) {
    for (size_t i = 0; i < ios.stages.size(); ++i) {
      const ScheduledStage& stage = ios.stages[i];
      out += StrCat("  stage ", i, " (block ", stage.block, ", ", Ms(stage.latency_ms),
                    " ms): ", StageToString(graph, stage.stage), "\n");
    }
  }
  return out;
}

namespace {

// One object per block, in block order (a twin repeats its twin's DP figures).
nlohmann::json BlockReportsJson(const std::vector<BlockReport>& blocks) {
  nlohmann::json out = nlohmann::json::array();
  auto index = [](int b) { return b >= 0 ? nlohmann::json(b) : nlohmann::json(nullptr); };
  for (const BlockReport& block : blocks) {
    const DpStats& dp = block.dp;
    out.push_back({{"ops", block.num_ops},
                   {"solver", std::string(BlockSolverName(block.solver))},
                   {"twin", index(block.twin)},
                   {"prefix", index(block.prefix)},
                   {"states", dp.states},
                   {"transitions", dp.transitions},
                   {"candidate_stages", dp.distinct_stages},
                   {"merge_stages", dp.merge_stages},
                   {"bound_groups", dp.bound_groups},
                   {"prefix_bound_states", dp.prefix_bound_states},
                   {"lower_bound_misses", dp.lower_bound_misses},
                   {"stages", block.num_stages},
                   {"latency_ms", block.latency_ms}});
  }
  return out;
}

}  // namespace

nlohmann::json SearchReportJson(const graph::Graph& graph, const SearchReport& report,
                                const ScheduleMetadata& metadata) {
  const double ios = report.ios.schedule.latency_ms;
  return {{"model", metadata.model_name},
          {"batch", metadata.batch},
          {"device_key", metadata.device_key},
          {"latency_ms",
           {{"sequential", report.sequential.latency_ms},
            {"greedy", report.greedy.latency_ms},
            {"ios", ios}}},
          {"speedup",
           {{"vs_sequential", ios > 0 ? report.sequential.latency_ms / ios : 0.0},
            {"vs_greedy", ios > 0 ? report.greedy.latency_ms / ios : 0.0}}},
          {"stats", StatsJson(report.ios.stats)},
          {"blocks", BlockReportsJson(report.ios.blocks)},
          {"search_seconds", report.search_seconds},
          {"search_threads", report.search_threads},
          {"device_floor",
           {{"stage_ms", report.device_floor.stage_ms},
            {"launch_ms", report.device_floor.launch_ms},
            {"peak_gflops", report.device_floor.peak_gflops},
            {"bandwidth_gbps", report.device_floor.bandwidth_gbps},
            {"issue_overlaps_work", report.device_floor.issue_overlaps_work},
            {"issue_order", std::string(IssueOrderName(report.device_floor.issue_order))},
            {"back_to_back", report.device_floor.back_to_back},
            {"contention", report.device_floor.contention},
            {"free_ops", report.device_floor.free_ops == DeviceFloor::FreeOps::kViews
                             ? "views"
                             : "views and fusable"}}},
          {"schedule", ScheduleToJson(graph, report.ios.schedule, metadata)}};
}

}  // namespace iosfarm::scheduler::ios
