// FarmStore: the server's persistent state in one SQLite file — the latency
// database (measured stage latencies per device key) and the job store
// (models, jobs, results, phase log). Schema and migrations: store_schema.h;
// tables and operations: docs/database.md.
//
// Contract highlights:
//  - Every write is one transaction: a crash (even SIGKILL) leaves each call
//    either fully applied or not at all, and committed data survives a
//    process crash (WAL, synchronous=NORMAL; after an OS crash or power loss
//    the file is consistent but the last commits may be missing).
//  - Bad input returns InvalidArgument naming the field and writes nothing.
//  - Latencies: the first measurement of (device key, signature) wins.
//  - Job states: queued -> running | failed | cancelled;
//    running -> queued | succeeded | failed | cancelled (the coordinator
//    keeps a job running while it re-queues one of its phases).
//    Succeeded, failed and cancelled are final.
//
// Thread safety: all methods may be called from any thread; one internal
// mutex serialises use of the connection (and its cached statements).
// Several processes may open the same file (SQLite locking; a busy database
// waits up to 5 s, then returns an error).
#ifndef IOSFARM_SERVER_FARM_STORE_H_
#define IOSFARM_SERVER_FARM_STORE_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/synchronization/mutex.h"
#include "common/status.h"
#include "server/sqlite_db.h"
#include "server/store_schema.h"

namespace iosfarm::server {

struct StoredLatency {
  double median_ms = 0, p10_ms = 0, p90_ms = 0, cv = 0;
  int repeats = 0;
  std::string worker, backend;
  int64_t measured_unix_ms = 0;
};

struct DeviceRow {
  std::string key, description, backend;
  int64_t first_seen_unix_ms = 0, last_seen_unix_ms = 0;
  int64_t latencies = 0;  // stored latencies for this key
  // Measurements of an already-stored signature that PutLatencies ignored.
  int64_t ignored_measurements = 0;
};

struct ModelRow {
  std::string digest, name, source /* "zoo" | "onnx" */;
  int64_t batch = 0;
  std::string bytes /* ONNX bytes, empty for zoo */;
  int64_t ops = 0;
  int64_t created_unix_ms = 0;
};

enum class JobState { kQueued, kRunning, kSucceeded, kFailed, kCancelled };
// "queued", "running", "succeeded", "failed", "cancelled".
std::string_view JobStateName(JobState state);
// Inverse of JobStateName; InvalidArgument naming `name` otherwise.
StatusOr<JobState> JobStateFromName(std::string_view name);
// Succeeded, failed and cancelled.
bool IsFinal(JobState state);

struct JobOptions {
  int r = 3, s = 8, block_size = 50, batch_size_limit = 64 /* stages per profile batch */;
  int priority = 0;
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
  std::string phase /* current phase name */;
  // Server restarts that found the job unfinished since it last stored a
  // measurement (the crash-loop guard; AddResumes).
  int64_t resumes = 0;
};

struct ResultRow {
  int64_t job_id = 0;
  std::string schedule_json;
  std::string result_json /* figures: measured latency, baselines, search time... */;
};

struct PhaseLogRow {
  int64_t id = 0;
  int64_t job_id = 0;
  std::string phase /* enumerate|build|profile|update|measure */, resource, worker, outcome;
  double queued_s = 0, start_s = 0, end_s = 0; /* seconds since the unix epoch */
  int64_t stages = 0;
  std::string detail;
};

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

class FarmStore {
 public:
  static constexpr int64_t kSchemaVersion = ::iosfarm::server::kSchemaVersion;

  // Opens or creates the file; creates the schema or migrates an older one
  // step by step inside transactions. FailedPrecondition for a file whose
  // schema is newer than this binary knows; InvalidArgument (naming the file)
  // for a file that is not an iosfarm database (both leave the file
  // unchanged); Unavailable when the file cannot be opened.
  static StatusOr<std::unique_ptr<FarmStore>> Open(const std::string& path);
  // As Open, with an explicit migration list (tests of future migrations).
  static StatusOr<std::unique_ptr<FarmStore>> OpenWithMigrations(
      const std::string& path, std::span<const Migration> migrations);

  FarmStore(const FarmStore&) = delete;
  FarmStore& operator=(const FarmStore&) = delete;
  ~FarmStore();

  // A server checks this at start rather than failing at its first write:
  // the file passes SQLite's quick_check (DataLoss naming the file and the
  // first problem otherwise) and takes a write (FailedPrecondition for a
  // read-only file or directory). Changes nothing.
  Status CheckUsable();

  // --- devices
  // Inserts or updates (description, backend, last seen) the device key;
  // first_seen is kept from the first call. InvalidArgument for an empty key.
  Status UpsertDevice(const std::string& key, const std::string& description,
                      const std::string& backend, int64_t now_unix_ms);
  StatusOr<std::vector<DeviceRow>> ListDevices();  // by key
  StatusOr<bool> HasDevice(const std::string& key);

  // --- latencies (signature = uint64 stage signature, stored bit-cast to int64)
  // Latencies stored for `device_key` among `signatures` (missing ones are
  // absent from the map). One read snapshot; any number of signatures.
  StatusOr<absl::flat_hash_map<uint64_t, StoredLatency>> LookupLatencies(
      const std::string& device_key, const std::vector<uint64_t>& signatures);
  // One transaction. The first measurement of (key, signature) wins (later
  // ones, also within `rows`, are ignored and counted in
  // DeviceRow::ignored_measurements); returns how many rows were new.
  // InvalidArgument (nothing written) for an empty key, a non-finite or
  // negative median, or non-finite p10/p90/cv. An unknown device key is
  // registered on the fly (empty description, backend of the first row).
  StatusOr<int64_t> PutLatencies(const std::string& device_key,
                                 const std::vector<std::pair<uint64_t, StoredLatency>>& rows);
  StatusOr<int64_t> CountLatencies(const std::string& device_key);
  // Forgets measurements (an operator's remedy for a bad worker): deletes the
  // latencies of `device_key`, all of them or only those `worker` measured
  // when it is not empty, in one transaction, and returns how many went (the
  // device's latency count follows). Later jobs measure those stages again;
  // stored jobs and results are kept. NotFound for an unknown device key.
  StatusOr<int64_t> DeleteLatencies(const std::string& device_key, const std::string& worker);

  // --- models (by digest; PutModel of an existing digest is a no-op)
  // InvalidArgument for an empty digest or name, or a source other than
  // "zoo"/"onnx".
  Status PutModel(const ModelRow& model);
  StatusOr<std::optional<ModelRow>> GetModel(const std::string& digest);
  StatusOr<std::vector<ModelRow>> ListModels();  // by name then digest, without bytes

  // --- jobs
  // Stores a new job (state must be queued; id, progress and start/finish
  // times of `job` are ignored) and returns its id (autoincrement, never
  // reused). An empty model_name is filled from the stored model. NotFound
  // when model_digest is not stored; InvalidArgument for
  // an empty device key, batch < 1 or a non-queued state.
  StatusOr<int64_t> CreateJob(const JobRow& job);
  StatusOr<std::optional<JobRow>> GetJob(int64_t id);
  // By id ascending, or descending with filter.newest_first.
  StatusOr<std::vector<JobRow>> ListJobs(const JobFilter& filter);
  // Moves the job to `state` and stores `error` (cleared when empty). Sets
  // started_unix_ms on the first move to running, finished_unix_ms on a move
  // to a final state. A move to the current non-final state is allowed (only
  // the error changes). NotFound unknown id; FailedPrecondition when the job
  // is in a final state or the move is not allowed (e.g. queued -> succeeded).
  Status UpdateJobState(int64_t id, JobState state, const std::string& error,
                        int64_t now_unix_ms);
  // Writes only the progress fields (blocks_total .. phase) of row
  // `progress.id`. NotFound unknown id.
  Status UpdateJobProgress(const JobRow& progress);
  // Adds `delta` to the job's resume count (not below 0) and returns the new
  // count; ClearResumes sets it to 0. NotFound unknown id.
  StatusOr<int64_t> AddResumes(int64_t id, int64_t delta);
  Status ClearResumes(int64_t id);

  // --- results
  Status PutResult(const ResultRow& result);  // replaces; NotFound unknown job
  StatusOr<std::optional<ResultRow>> GetResult(int64_t job_id);

  // --- phase log
  // Returns the row id. NotFound unknown job; InvalidArgument unknown phase.
  StatusOr<int64_t> AppendPhase(const PhaseLogRow& row);
  StatusOr<std::vector<PhaseLogRow>> ListPhases(std::optional<int64_t> job_id);  // by id

  // --- batch re-tuning
  // One target per distinct (model digest, batch) among the stored jobs that
  // match the filter (names match ModelRow.name; from_device_key matches job
  // device keys), with the options of the latest succeeded such job, or of
  // the latest such job in any state when none succeeded. Ordered by model
  // name, batch, digest.
  StatusOr<std::vector<RetuneTarget>> RetuneTargets(const RetuneFilter& filter);

  const std::string& path() const { return path_; }

 private:
  FarmStore(std::unique_ptr<SqliteDb> db, std::string path);

  // The cached prepared statement for `sql` (prepared on first use). The
  // caller resets it after use (ScopedStatement does).
  StatusOr<Statement*> Cached(std::string_view sql) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  StatusOr<JobRow> ReadJobLocked(int64_t id) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  StatusOr<bool> JobExistsLocked(int64_t id) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const std::string path_;
  absl::Mutex mu_;
  std::unique_ptr<SqliteDb> db_ ABSL_GUARDED_BY(mu_);
  // Declared after db_ so statements are finalised before the connection closes.
  std::unordered_map<std::string, std::unique_ptr<Statement>> statements_ ABSL_GUARDED_BY(mu_);
};

}  // namespace iosfarm::server

#endif  // IOSFARM_SERVER_FARM_STORE_H_
