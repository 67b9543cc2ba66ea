// The rows of the job store (job_store.h): models, jobs, results, phase log,
// re-tuning targets, and the rules on them that need no database (job state
// names and moves, which results can be stored). Tables: docs/database.md.
#ifndef IOSFARM_SERVER_JOB_ROWS_H_
#define IOSFARM_SERVER_JOB_ROWS_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"

namespace iosfarm::server {

struct ModelRow {
  std::string digest, name, source /* "zoo" | "onnx" */;
  int64_t batch = 0;
  std::string bytes /* ONNX bytes, empty for zoo */;
  int64_t ops = 0;
  int64_t created_unix_ms = 0;
};

// Job states: queued -> running | failed | cancelled;
// running -> queued | succeeded | failed | cancelled (the coordinator keeps a
// job running while it re-queues one of its phases). Succeeded, failed and
// cancelled are final.
enum class JobState { kQueued, kRunning, kSucceeded, kFailed, kCancelled };
// "queued", "running", "succeeded", "failed", "cancelled".
std::string_view JobStateName(JobState state);
// Inverse of JobStateName; InvalidArgument naming `name` otherwise.
StatusOr<JobState> JobStateFromName(std::string_view name);
// Succeeded, failed and cancelled.
bool IsFinal(JobState state);
// Whether a job may move from `from` to `to` (the rules above; a move to the
// current non-final state is allowed).
bool MoveAllowed(JobState from, JobState to);

struct JobOptions {
  int r = 3, s = 8, block_size = 50, batch_size_limit = 64 /* stages per profile batch */;
  int priority = 0;
  // Batches of the job on workers at once (JobLifecycle's parallel batches);
  // 0: as many as its device key has idle GPUs when its search starts (>= 1).
  int max_parallel_batches = 0;
};

struct JobRow {
  int64_t id = 0;
  std::string model_digest, model_name, device_key, owner,
      retune_batch /* empty unless part of a retune batch */;
  int64_t batch = 1;
  JobOptions options;
  JobState state = JobState::kQueued;
  std::string error;
  int64_t submitted_unix_ms = 0, started_unix_ms = 0, finished_unix_ms = 0;
  // progress
  int blocks_total = 0, blocks_done = 0;
  int64_t stages_profiled = 0, cache_hits = 0, candidates = 0, unique_signatures = 0;
  // Stage latencies the search asked for (database hits or profiled;
  // ios::SearchStats::stages_measured).
  int64_t stages_measured = 0;
  // The stages its search was expected to measure when it was submitted
  // (search_estimate.h); -1: not estimated.
  int64_t estimated_stages = -1;
  std::string phase /* current phase name */;
  // Server restarts that found the job unfinished since it last stored a
  // measurement (the crash-loop guard; AddResumes).
  int64_t resumes = 0;
};

// One schedule of a job measured end to end by the measure phase.
struct MeasuredSchedule {
  std::string name;  // "ios", "sequential" or "greedy"
  double median_ms = 0, p10_ms = 0, p90_ms = 0, cv = 0;
  int64_t repeats = 0;
};

// A finished job's result: the chosen schedule (a JSON document,
// docs/schedule-format.md) and the figures of the search and measurement.
struct ResultRow {
  int64_t job_id = 0;
  std::string schedule_json;
  // In measure order (ios, sequential, greedy); names are distinct.
  std::vector<MeasuredSchedule> measured;
  std::string chosen = "ios";  // the measured schedule the result returns
  double predicted_ms = 0;     // the chosen schedule's sum of stage latencies
  double search_s = 0;         // from submission to the end of the search
  int64_t stages_profiled = 0, cache_hits = 0, candidates = 0, unique_signatures = 0;
  int64_t stages_measured = 0;  // stage latencies the search asked for (JobRow)
  // Measured stages that came in under the bounded search's lower bound (its
  // exactness assumption broken; SearchStats), the largest shortfall, and
  // the cores its core bound used (0: none).
  int64_t lower_bound_misses = 0;
  double largest_bound_miss_ms = 0;
  int64_t search_cores = 0;
  int64_t stages = 0;  // of the chosen schedule
  std::string worker, backend, device_key;  // where it was measured
};

// InvalidArgument naming the job and the field unless every figure of
// `result` is finite (SQLite cannot store NaN) and the measured names are
// non-empty and distinct.
Status CheckResult(const ResultRow& result);

struct PhaseLogRow {
  int64_t id = 0;
  int64_t job_id = 0;
  std::string phase /* enumerate|build|profile|update|measure */, resource, worker, outcome;
  double queued_s = 0, start_s = 0, end_s = 0; /* seconds since the unix epoch */
  int64_t stages = 0;
  std::string detail;
  int64_t batch = 0;  // the job's batch (build, profile, update); 0: none
};
// enumerate, build, profile, update or measure.
bool IsPhaseName(std::string_view phase);

struct JobFilter {
  std::optional<JobState> state;
  std::string device_key;    // empty = any
  std::string retune_batch;  // empty = any
  bool unfinished_only = false;  // queued or running
  bool newest_first = false;     // by id descending (the limit keeps the newest)
  int limit = 1000;              // <= 0: no limit
};

struct RetuneFilter {
  std::vector<std::string> model_names; /* empty = all */
  std::string from_device_key;          /* empty = any */
  std::optional<int64_t> batch;
};

struct RetuneTarget {
  std::string model_digest, model_name;
  int64_t batch = 0;
  JobOptions options;
};

// What the store knows of searches like a job's (JobStore::SearchHistoryOf).
struct SearchHistory {
  // A job of the same model digest, batch and search options (r, s, block
  // size) succeeded on the job's device key: every stage its search asks
  // for is in the latency database.
  bool done_on_this_key = false;
  // The stages the latest such search on another key asked for; -1: none.
  int64_t stages_elsewhere = -1;
  // Over the store's succeeded jobs: the stages their searches asked for and
  // their models' operators, summed (0 and 0 without any).
  int64_t searched_stages = 0, searched_ops = 0;
};

}  // namespace iosfarm::server

#endif  // IOSFARM_SERVER_JOB_ROWS_H_
