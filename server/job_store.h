// JobStore: the farm's jobs and what they leave behind — models, jobs (state,
// progress, resume count), results, the phase log — and the re-tuning query
// over them. Rows: job_rows.h; tables: docs/database.md. Opened together with
// the LatencyDb by OpenFarmDatabase (farm_database.h), over one shared
// StoreConnection.
//
// Contract highlights:
//  - Every write is one transaction: a crash (even SIGKILL) leaves each call
//    either fully applied or not at all, and committed data survives a
//    process crash (WAL, synchronous=NORMAL).
//  - Bad input returns InvalidArgument naming the field and writes nothing.
//  - Job states move only as MoveAllowed (job_rows.h) says.
//
// Thread safety: all methods may be called from any thread; each call holds
// the shared connection (StoreConnection::Session). Several processes may
// open the same file (SQLite locking; a busy database waits up to 5 s, then
// returns an error).
#ifndef IOSFARM_SERVER_JOB_STORE_H_
#define IOSFARM_SERVER_JOB_STORE_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "common/status.h"
#include "server/job_rows.h"
#include "server/store_connection.h"

namespace iosfarm::server {

class JobStore {
 public:
  // `connection` is an open, migrated database (StoreConnection::Open).
  explicit JobStore(std::shared_ptr<StoreConnection> connection)
      : connection_(std::move(connection)) {}
  JobStore(const JobStore&) = delete;
  JobStore& operator=(const JobStore&) = delete;

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
  // Stores (replaces) the job's result in one transaction. NotFound unknown
  // job; InvalidArgument (CheckResult) for a non-finite figure or a bad
  // schedule name, nothing written.
  Status PutResult(const ResultRow& result);
  // The job's result, nullopt when it has none. DataLoss naming the job for
  // a result that an upgrade from schema version 2 could not read (its text
  // is kept in results_unreadable, docs/database.md).
  StatusOr<std::optional<ResultRow>> GetResult(int64_t job_id);
  // How many such unreadable version-2 results the file holds.
  StatusOr<int64_t> CountUnreadableResults();

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
  // What the store knows of searches like `job`'s (its model digest, batch,
  // options and device key; SearchHistory).
  StatusOr<SearchHistory> SearchHistoryOf(const JobRow& job);

  const std::string& path() const { return connection_->path(); }

 private:
  using Session = StoreConnection::Session;
  static StatusOr<JobRow> ReadJob(Session& session, int64_t id);
  static StatusOr<bool> JobExists(Session& session, int64_t id);
  static StatusOr<std::vector<MeasuredSchedule>> ReadMeasured(Session& session, int64_t job_id);

  const std::shared_ptr<StoreConnection> connection_;
};

}  // namespace iosfarm::server

#endif  // IOSFARM_SERVER_JOB_STORE_H_
