// The schedule file format: versioned JSON, documented in
// docs/schedule-format.md. Bump kScheduleFormatVersion on any incompatible
// change (and keep reading old versions where possible).
#ifndef IOSFARM_SCHEDULER_IOS_SCHEDULE_JSON_H_
#define IOSFARM_SCHEDULER_IOS_SCHEDULE_JSON_H_

#include <cstdint>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "common/status.h"
#include "graph/graph.h"
#include "scheduler/ios/schedule.h"
#include "scheduler/ios/search_options.h"

namespace iosfarm::scheduler::ios {

inline constexpr char kScheduleFormatName[] = "iosfarm.schedule";
inline constexpr int kScheduleFormatVersion = 1;

struct ScheduleMetadata {
  std::string model_name;
  std::string model_digest;  // ModelDigest(graph)
  int64_t batch = 0;
  std::string device_key;    // e.g. "h100-sxm", or "sim" for the analytic model
  std::string kind = "ios";  // "ios", "sequential" or "greedy"
  // Search bounds (0 for baselines).
  int max_group_ops = 0;
  int max_groups = 0;
  int max_block_ops = 0;
};

// "sha256:" + SHA-256 of SerializeGraph(graph): identifies the exact graph
// (structure, shapes, batch, weights) a schedule was made for.
std::string ModelDigest(const graph::Graph& graph);

// The batch size: dimension 0 of the first graph input (0 if there is none).
int64_t GraphBatch(const graph::Graph& graph);

// Metadata for a schedule of `graph`: name, digest and batch from the graph,
// the given device key and kind, and the bounds of `options` when not null.
ScheduleMetadata MakeScheduleMetadata(const graph::Graph& graph, std::string device_key,
                                      std::string kind, const SearchOptions* options);

// The schedule as JSON (stages grouped by block, ops by node name, merged
// convolutions described in full).
nlohmann::json ScheduleToJson(const graph::Graph& graph, const Schedule& schedule,
                              const ScheduleMetadata& metadata);

struct ParsedSchedule {
  Schedule schedule;
  ScheduleMetadata metadata;
};

// Reads a schedule for `graph` and checks it: format and version, the model
// digest (FailedPrecondition when the schedule was made for another graph),
// node names, each merge description against MergeConvs, each stage
// signature against CanonicalizeStage (FailedPrecondition when they differ:
// another signature version), the total latency against the stages', and
// ValidateSchedule (every op once, dependencies respected). InvalidArgument
// naming the field or node otherwise.
StatusOr<ParsedSchedule> ScheduleFromJson(const nlohmann::json& json, const graph::Graph& graph);

// Parses text, then ScheduleFromJson.
StatusOr<ParsedSchedule> ParseScheduleJson(std::string_view text, const graph::Graph& graph);

// Reads the file, then ParseScheduleJson; errors start with "schedule file
// '<path>': " (NotFound when it cannot be read).
StatusOr<ParsedSchedule> ReadScheduleFile(const std::string& path, const graph::Graph& graph);

// Writes ScheduleToJson(...) to `path` atomically (a temporary file renamed
// over it). Unavailable "cannot write schedule file '<path>'" on failure.
Status WriteScheduleFile(const std::string& path, const graph::Graph& graph,
                         const Schedule& schedule, const ScheduleMetadata& metadata);

}  // namespace iosfarm::scheduler::ios

#endif  // IOSFARM_SCHEDULER_IOS_SCHEDULE_JSON_H_
