#include "server/job_rows.h"

#include <cmath>

#include "absl/container/flat_hash_set.h"
#include "common/strings.h"

namespace iosfarm::server {
namespace {

constexpr JobState kAllStates[] = {JobState::kQueued, JobState::kRunning, JobState::kSucceeded,
                                   JobState::kFailed, JobState::kCancelled};

}  // namespace

std::string_view JobStateName(JobState state) {
  switch (state) {
    case JobState::kQueued:
      return "queued";
    case JobState::kRunning:
      return "running";
    case JobState::kSucceeded:
      return "succeeded";
    case JobState::kFailed:
      return "failed";
    case JobState::kCancelled:
      return "cancelled";
  }
  return "unknown";
}

StatusOr<JobState> JobStateFromName(std::string_view name) {
  for (JobState state : kAllStates) {
    if (JobStateName(state) == name) return state;
  }
  return absl::InvalidArgumentError(
      StrCat("unknown job state '", name,
             "' (expected queued, running, succeeded, failed or cancelled)"));
}

bool IsFinal(JobState state) {
  return state == JobState::kSucceeded || state == JobState::kFailed ||
         state == JobState::kCancelled;
}

bool MoveAllowed(JobState from, JobState to) {
  if (IsFinal(from)) return false;
  if (from == to) return true;
  switch (from) {
    case JobState::kQueued:
      return to == JobState::kRunning || to == JobState::kFailed || to == JobState::kCancelled;
    case JobState::kRunning:
      return true;  // re-queued, or any final state
    default:
      return false;
  }
}

bool IsPhaseName(std::string_view phase) {
  return phase == "enumerate" || phase == "build" || phase == "profile" || phase == "update" ||
         phase == "measure";
}

Status CheckResult(const ResultRow& result) {
  const auto finite = [&](std::string_view field, double value) -> Status {
    if (std::isfinite(value)) return absl::OkStatus();
    return absl::InvalidArgumentError(StrCat("the result of job ", result.job_id, " has ", field,
                                             " = ", value, " (figures must be finite)"));
  };
  RETURN_IF_ERROR(finite("predicted_ms", result.predicted_ms));
  RETURN_IF_ERROR(finite("search_s", result.search_s));
  RETURN_IF_ERROR(finite("largest_bound_miss_ms", result.largest_bound_miss_ms));
  absl::flat_hash_set<std::string> names;
  for (const MeasuredSchedule& m : result.measured) {
    if (m.name.empty() || !names.insert(m.name).second) {
      return absl::InvalidArgumentError(StrCat("the result of job ", result.job_id,
                                               " measures a schedule named '", m.name,
                                               "' (names must be non-empty and distinct)"));
    }
    const std::string prefix = StrCat("measured ", m.name, " ");
    RETURN_IF_ERROR(finite(prefix + "median_ms", m.median_ms));
    RETURN_IF_ERROR(finite(prefix + "p10_ms", m.p10_ms));
    RETURN_IF_ERROR(finite(prefix + "p90_ms", m.p90_ms));
    RETURN_IF_ERROR(finite(prefix + "cv", m.cv));
  }
  return absl::OkStatus();
}

}  // namespace iosfarm::server
