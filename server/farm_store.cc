#include "server/farm_store.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <tuple>

#include "absl/container/flat_hash_set.h"
#include "common/clock.h"
#include "common/strings.h"

namespace iosfarm::server {
namespace {

// Resets a cached statement when the scope ends, so no statement keeps a read
// transaction open between calls.
class ScopedStatement {
 public:
  explicit ScopedStatement(Statement* stmt) : stmt_(stmt) {}
  ScopedStatement(const ScopedStatement&) = delete;
  ScopedStatement& operator=(const ScopedStatement&) = delete;
  ~ScopedStatement() { (void)stmt_->Reset(); }
  Statement* operator->() const { return stmt_; }
  Statement& operator*() const { return *stmt_; }

 private:
  Statement* stmt_;
};

int64_t ToStored(uint64_t signature) { return std::bit_cast<int64_t>(signature); }

constexpr JobState kAllStates[] = {JobState::kQueued, JobState::kRunning, JobState::kSucceeded,
                                   JobState::kFailed, JobState::kCancelled};

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

constexpr const char kJobColumns[] =
    "id, model_digest, model_name, device_key, owner, retune_batch, batch, opt_r, opt_s, "
    "opt_block_size, opt_batch_size_limit, priority, state, error, submitted_unix_ms, "
    "started_unix_ms, finished_unix_ms, blocks_total, blocks_done, stages_profiled, cache_hits, "
    "candidates, unique_signatures, phase, resumes";

StatusOr<JobRow> JobFromRow(const Statement& row) {
  JobRow job;
  job.id = row.ColumnInt64(0);
  job.model_digest = row.ColumnText(1);
  job.model_name = row.ColumnText(2);
  job.device_key = row.ColumnText(3);
  job.owner = row.ColumnText(4);
  job.retune_batch = row.ColumnText(5);
  job.batch = row.ColumnInt64(6);
  job.options.r = static_cast<int>(row.ColumnInt64(7));
  job.options.s = static_cast<int>(row.ColumnInt64(8));
  job.options.block_size = static_cast<int>(row.ColumnInt64(9));
  job.options.batch_size_limit = static_cast<int>(row.ColumnInt64(10));
  job.options.priority = static_cast<int>(row.ColumnInt64(11));
  ASSIGN_OR_RETURN(job.state, JobStateFromName(row.ColumnText(12)));
  job.error = row.ColumnText(13);
  job.submitted_unix_ms = row.ColumnInt64(14);
  job.started_unix_ms = row.ColumnInt64(15);
  job.finished_unix_ms = row.ColumnInt64(16);
  job.blocks_total = static_cast<int>(row.ColumnInt64(17));
  job.blocks_done = static_cast<int>(row.ColumnInt64(18));
  job.stages_profiled = row.ColumnInt64(19);
  job.cache_hits = row.ColumnInt64(20);
  job.candidates = row.ColumnInt64(21);
  job.unique_signatures = row.ColumnInt64(22);
  job.phase = row.ColumnText(23);
  job.resumes = row.ColumnInt64(24);
  return job;
}

JobOptions OptionsFromRow(const Statement& row, int first_column) {
  JobOptions options;
  options.r = static_cast<int>(row.ColumnInt64(first_column));
  options.s = static_cast<int>(row.ColumnInt64(first_column + 1));
  options.block_size = static_cast<int>(row.ColumnInt64(first_column + 2));
  options.batch_size_limit = static_cast<int>(row.ColumnInt64(first_column + 3));
  options.priority = static_cast<int>(row.ColumnInt64(first_column + 4));
  return options;
}

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

// ---------------------------------------------------------------- open

FarmStore::FarmStore(std::unique_ptr<SqliteDb> db, std::string path)
    : path_(std::move(path)), db_(std::move(db)) {}

FarmStore::~FarmStore() {
  absl::MutexLock lock(&mu_);
  statements_.clear();
  db_.reset();
}

StatusOr<std::unique_ptr<FarmStore>> FarmStore::Open(const std::string& path) {
  return OpenWithMigrations(path, Migrations());
}

StatusOr<std::unique_ptr<FarmStore>> FarmStore::OpenWithMigrations(
    const std::string& path, std::span<const Migration> migrations) {
  // Inspect first through a read-only connection: opening read-write switches
  // the journal mode to WAL, which would change a file we must refuse.
  RETURN_IF_ERROR(InspectDatabaseFile(path, migrations));
  ASSIGN_OR_RETURN(std::unique_ptr<SqliteDb> db, SqliteDb::Open(path));
  // In WAL mode, NORMAL keeps every commit across a process crash (SIGKILL
  // included) and the file consistent across power loss, where only the last
  // commits may be lost; FULL would fsync on every commit.
  RETURN_IF_ERROR(db->Exec("PRAGMA synchronous=NORMAL"));
  RETURN_IF_ERROR(MigrateSchema(*db, migrations, NowUnixMs()));
  return std::unique_ptr<FarmStore>(new FarmStore(std::move(db), path));
}

Status FarmStore::CheckUsable() {
  absl::MutexLock lock(&mu_);
  {
    ASSIGN_OR_RETURN(Statement check, db_->Prepare("PRAGMA quick_check(1)"));
    auto row = check.Step();
    if (!row.ok()) {
      return absl::DataLossError(StrCat("database '", path_, "' is damaged: ",
                                        ToStd(row.status().message())));
    }
    const std::string verdict = *row ? check.ColumnText(0) : std::string("no answer");
    if (verdict != "ok") {
      return absl::DataLossError(StrCat("database '", path_, "' is damaged: ", verdict,
                                        " (restore it from a backup, docs/operations.md)"));
    }
  }
  Status write = db_->Exec(
      "BEGIN IMMEDIATE; CREATE TABLE iosfarm_write_probe (x INTEGER); ROLLBACK;");
  if (!write.ok()) {
    (void)db_->Exec("ROLLBACK");
    return absl::FailedPreconditionError(StrCat("database '", path_,
                                                "' cannot be written (read-only file or "
                                                "directory?): ", ToStd(write.message())));
  }
  return absl::OkStatus();
}

StatusOr<Statement*> FarmStore::Cached(std::string_view sql) {
  auto it = statements_.find(std::string(sql));
  if (it != statements_.end()) return it->second.get();
  ASSIGN_OR_RETURN(Statement stmt, db_->Prepare(sql));
  auto inserted = statements_.emplace(std::string(sql),
                                      std::make_unique<Statement>(std::move(stmt)));
  return inserted.first->second.get();
}

// ---------------------------------------------------------------- devices

Status FarmStore::UpsertDevice(const std::string& key, const std::string& description,
                               const std::string& backend, int64_t now_unix_ms) {
  if (key.empty()) return absl::InvalidArgumentError("UpsertDevice: device key is empty");
  absl::MutexLock lock(&mu_);
  ASSIGN_OR_RETURN(Statement * raw,
                   Cached("INSERT INTO devices (key, description, backend, first_seen_unix_ms, "
                          "last_seen_unix_ms) VALUES (?1, ?2, ?3, ?4, ?4) "
                          "ON CONFLICT (key) DO UPDATE SET "
                          "description = CASE WHEN excluded.description <> '' "
                          "THEN excluded.description ELSE description END, "
                          "backend = CASE WHEN excluded.backend <> '' "
                          "THEN excluded.backend ELSE backend END, "
                          "last_seen_unix_ms = max(last_seen_unix_ms, excluded.last_seen_unix_ms)"));
  ScopedStatement stmt(raw);
  RETURN_IF_ERROR(stmt->BindText(1, key));
  RETURN_IF_ERROR(stmt->BindText(2, description));
  RETURN_IF_ERROR(stmt->BindText(3, backend));
  RETURN_IF_ERROR(stmt->BindInt64(4, now_unix_ms));
  return stmt->Step().status();
}

StatusOr<std::vector<DeviceRow>> FarmStore::ListDevices() {
  absl::MutexLock lock(&mu_);
  ASSIGN_OR_RETURN(Statement * raw,
                   Cached("SELECT key, description, backend, first_seen_unix_ms, "
                          "last_seen_unix_ms, latency_count, ignored_measurements "
                          "FROM devices ORDER BY key"));
  ScopedStatement stmt(raw);
  std::vector<DeviceRow> devices;
  while (true) {
    ASSIGN_OR_RETURN(bool row, stmt->Step());
    if (!row) break;
    DeviceRow& device = devices.emplace_back();
    device.key = stmt->ColumnText(0);
    device.description = stmt->ColumnText(1);
    device.backend = stmt->ColumnText(2);
    device.first_seen_unix_ms = stmt->ColumnInt64(3);
    device.last_seen_unix_ms = stmt->ColumnInt64(4);
    device.latencies = stmt->ColumnInt64(5);
    device.ignored_measurements = stmt->ColumnInt64(6);
  }
  return devices;
}

StatusOr<bool> FarmStore::HasDevice(const std::string& key) {
  absl::MutexLock lock(&mu_);
  ASSIGN_OR_RETURN(Statement * raw, Cached("SELECT 1 FROM devices WHERE key = ?1"));
  ScopedStatement stmt(raw);
  RETURN_IF_ERROR(stmt->BindText(1, key));
  return stmt->Step();
}

// ---------------------------------------------------------------- latencies

StatusOr<absl::flat_hash_map<uint64_t, StoredLatency>> FarmStore::LookupLatencies(
    const std::string& device_key, const std::vector<uint64_t>& signatures) {
  absl::flat_hash_map<uint64_t, StoredLatency> found;
  if (signatures.empty()) return found;
  absl::MutexLock lock(&mu_);
  ASSIGN_OR_RETURN(Transaction snapshot, Transaction::BeginRead(*db_));
  {
    ASSIGN_OR_RETURN(Statement * raw,
                     Cached("SELECT median_ms, p10_ms, p90_ms, cv, repeats, worker, backend, "
                            "measured_unix_ms FROM latencies "
                            "WHERE device_key = ?1 AND signature = ?2"));
    for (uint64_t signature : signatures) {
      ScopedStatement stmt(raw);
      RETURN_IF_ERROR(stmt->BindText(1, device_key));
      RETURN_IF_ERROR(stmt->BindInt64(2, ToStored(signature)));
      ASSIGN_OR_RETURN(bool row, stmt->Step());
      if (!row) continue;
      StoredLatency& latency = found[signature];
      latency.median_ms = stmt->ColumnDouble(0);
      latency.p10_ms = stmt->ColumnDouble(1);
      latency.p90_ms = stmt->ColumnDouble(2);
      latency.cv = stmt->ColumnDouble(3);
      latency.repeats = static_cast<int>(stmt->ColumnInt64(4));
      latency.worker = stmt->ColumnText(5);
      latency.backend = stmt->ColumnText(6);
      latency.measured_unix_ms = stmt->ColumnInt64(7);
    }
  }
  RETURN_IF_ERROR(snapshot.Commit());
  return found;
}

StatusOr<int64_t> FarmStore::PutLatencies(
    const std::string& device_key, const std::vector<std::pair<uint64_t, StoredLatency>>& rows) {
  if (device_key.empty()) return absl::InvalidArgumentError("PutLatencies: device key is empty");
  for (size_t i = 0; i < rows.size(); ++i) {
    const StoredLatency& latency = rows[i].second;
    const auto bad = [&](std::string_view field, double value) {
      return absl::InvalidArgumentError(
          StrCat("PutLatencies: row ", i, " (signature ", rows[i].first, ") of device '",
                 device_key, "' has ", field, " = ", value, "; nothing was written"));
    };
    if (!std::isfinite(latency.median_ms) || latency.median_ms < 0) {
      return bad("median_ms", latency.median_ms);
    }
    if (!std::isfinite(latency.p10_ms)) return bad("p10_ms", latency.p10_ms);
    if (!std::isfinite(latency.p90_ms)) return bad("p90_ms", latency.p90_ms);
    if (!std::isfinite(latency.cv)) return bad("cv", latency.cv);
  }
  if (rows.empty()) return 0;

  absl::MutexLock lock(&mu_);
  ASSIGN_OR_RETURN(Transaction tx, Transaction::Begin(*db_));
  {
    ASSIGN_OR_RETURN(Statement * raw,
                     Cached("INSERT INTO devices (key, backend, first_seen_unix_ms, "
                            "last_seen_unix_ms) VALUES (?1, ?2, ?3, ?3) "
                            "ON CONFLICT (key) DO NOTHING"));
    ScopedStatement stmt(raw);
    RETURN_IF_ERROR(stmt->BindText(1, device_key));
    RETURN_IF_ERROR(stmt->BindText(2, rows.front().second.backend));
    RETURN_IF_ERROR(stmt->BindInt64(3, rows.front().second.measured_unix_ms));
    RETURN_IF_ERROR(stmt->Step().status());
  }
  int64_t added = 0;
  {
    ASSIGN_OR_RETURN(Statement * raw,
                     Cached("INSERT INTO latencies (device_key, signature, median_ms, p10_ms, "
                            "p90_ms, cv, repeats, worker, backend, measured_unix_ms) "
                            "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10) "
                            "ON CONFLICT (device_key, signature) DO NOTHING"));
    for (const auto& [signature, latency] : rows) {
      ScopedStatement stmt(raw);
      RETURN_IF_ERROR(stmt->BindText(1, device_key));
      RETURN_IF_ERROR(stmt->BindInt64(2, ToStored(signature)));
      RETURN_IF_ERROR(stmt->BindDouble(3, latency.median_ms));
      RETURN_IF_ERROR(stmt->BindDouble(4, latency.p10_ms));
      RETURN_IF_ERROR(stmt->BindDouble(5, latency.p90_ms));
      RETURN_IF_ERROR(stmt->BindDouble(6, latency.cv));
      RETURN_IF_ERROR(stmt->BindInt64(7, latency.repeats));
      RETURN_IF_ERROR(stmt->BindText(8, latency.worker));
      RETURN_IF_ERROR(stmt->BindText(9, latency.backend));
      RETURN_IF_ERROR(stmt->BindInt64(10, latency.measured_unix_ms));
      RETURN_IF_ERROR(stmt->Step().status());
      added += db_->Changes();
    }
  }
  {
    ASSIGN_OR_RETURN(Statement * raw,
                     Cached("UPDATE devices SET latency_count = latency_count + ?2, "
                            "ignored_measurements = ignored_measurements + ?3 WHERE key = ?1"));
    ScopedStatement stmt(raw);
    RETURN_IF_ERROR(stmt->BindText(1, device_key));
    RETURN_IF_ERROR(stmt->BindInt64(2, added));
    RETURN_IF_ERROR(stmt->BindInt64(3, static_cast<int64_t>(rows.size()) - added));
    RETURN_IF_ERROR(stmt->Step().status());
  }
  RETURN_IF_ERROR(tx.Commit());
  return added;
}

StatusOr<int64_t> FarmStore::DeleteLatencies(const std::string& device_key,
                                             const std::string& worker) {
  absl::MutexLock lock(&mu_);
  ASSIGN_OR_RETURN(Transaction tx, Transaction::Begin(*db_));
  {
    ASSIGN_OR_RETURN(Statement * raw, Cached("SELECT 1 FROM devices WHERE key = ?1"));
    ScopedStatement stmt(raw);
    RETURN_IF_ERROR(stmt->BindText(1, device_key));
    ASSIGN_OR_RETURN(bool known, stmt->Step());
    if (!known) {
      return absl::NotFoundError(StrCat("unknown device key '", device_key, "'"));
    }
  }
  int64_t deleted = 0;
  {
    ASSIGN_OR_RETURN(Statement * raw,
                     Cached(worker.empty()
                                ? "DELETE FROM latencies WHERE device_key = ?1"
                                : "DELETE FROM latencies WHERE device_key = ?1 AND worker = ?2"));
    ScopedStatement stmt(raw);
    RETURN_IF_ERROR(stmt->BindText(1, device_key));
    if (!worker.empty()) RETURN_IF_ERROR(stmt->BindText(2, worker));
    RETURN_IF_ERROR(stmt->Step().status());
    deleted = db_->Changes();
  }
  {
    ASSIGN_OR_RETURN(Statement * raw,
                     Cached("UPDATE devices SET latency_count = "
                            "(SELECT COUNT(*) FROM latencies WHERE device_key = ?1) "
                            "WHERE key = ?1"));
    ScopedStatement stmt(raw);
    RETURN_IF_ERROR(stmt->BindText(1, device_key));
    RETURN_IF_ERROR(stmt->Step().status());
  }
  RETURN_IF_ERROR(tx.Commit());
  return deleted;
}

StatusOr<int64_t> FarmStore::CountLatencies(const std::string& device_key) {
  absl::MutexLock lock(&mu_);
  ASSIGN_OR_RETURN(Statement * raw,
                   Cached("SELECT COUNT(*) FROM latencies WHERE device_key = ?1"));
  ScopedStatement stmt(raw);
  RETURN_IF_ERROR(stmt->BindText(1, device_key));
  RETURN_IF_ERROR(stmt->Step().status());
  return stmt->ColumnInt64(0);
}

// ---------------------------------------------------------------- models

Status FarmStore::PutModel(const ModelRow& model) {
  if (model.digest.empty()) return absl::InvalidArgumentError("PutModel: digest is empty");
  if (model.name.empty()) {
    return absl::InvalidArgumentError(StrCat("PutModel: model ", model.digest, " has no name"));
  }
  if (model.source != "zoo" && model.source != "onnx") {
    return absl::InvalidArgumentError(StrCat("PutModel: model '", model.name, "' has source '",
                                             model.source, "' (expected zoo or onnx)"));
  }
  absl::MutexLock lock(&mu_);
  ASSIGN_OR_RETURN(Statement * raw,
                   Cached("INSERT INTO models (digest, name, source, batch, bytes, ops, "
                          "created_unix_ms) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7) "
                          "ON CONFLICT (digest) DO NOTHING"));
  ScopedStatement stmt(raw);
  RETURN_IF_ERROR(stmt->BindText(1, model.digest));
  RETURN_IF_ERROR(stmt->BindText(2, model.name));
  RETURN_IF_ERROR(stmt->BindText(3, model.source));
  RETURN_IF_ERROR(stmt->BindInt64(4, model.batch));
  RETURN_IF_ERROR(stmt->BindBlob(5, model.bytes));
  RETURN_IF_ERROR(stmt->BindInt64(6, model.ops));
  RETURN_IF_ERROR(stmt->BindInt64(7, model.created_unix_ms));
  return stmt->Step().status();
}

StatusOr<std::optional<ModelRow>> FarmStore::GetModel(const std::string& digest) {
  absl::MutexLock lock(&mu_);
  ASSIGN_OR_RETURN(Statement * raw,
                   Cached("SELECT digest, name, source, batch, bytes, ops, created_unix_ms "
                          "FROM models WHERE digest = ?1"));
  ScopedStatement stmt(raw);
  RETURN_IF_ERROR(stmt->BindText(1, digest));
  ASSIGN_OR_RETURN(bool row, stmt->Step());
  if (!row) return std::optional<ModelRow>();
  ModelRow model;
  model.digest = stmt->ColumnText(0);
  model.name = stmt->ColumnText(1);
  model.source = stmt->ColumnText(2);
  model.batch = stmt->ColumnInt64(3);
  model.bytes = stmt->ColumnBlob(4);
  model.ops = stmt->ColumnInt64(5);
  model.created_unix_ms = stmt->ColumnInt64(6);
  return std::optional<ModelRow>(std::move(model));
}

StatusOr<std::vector<ModelRow>> FarmStore::ListModels() {
  absl::MutexLock lock(&mu_);
  ASSIGN_OR_RETURN(Statement * raw,
                   Cached("SELECT digest, name, source, batch, ops, created_unix_ms "
                          "FROM models ORDER BY name, digest"));
  ScopedStatement stmt(raw);
  std::vector<ModelRow> models;
  while (true) {
    ASSIGN_OR_RETURN(bool row, stmt->Step());
    if (!row) break;
    ModelRow& model = models.emplace_back();
    model.digest = stmt->ColumnText(0);
    model.name = stmt->ColumnText(1);
    model.source = stmt->ColumnText(2);
    model.batch = stmt->ColumnInt64(3);
    model.ops = stmt->ColumnInt64(4);
    model.created_unix_ms = stmt->ColumnInt64(5);
  }
  return models;
}

// ---------------------------------------------------------------- jobs

StatusOr<int64_t> FarmStore::CreateJob(const JobRow& job) {
  if (job.device_key.empty()) {
    return absl::InvalidArgumentError(
        StrCat("CreateJob: job for model '", job.model_name, "' has no device key"));
  }
  if (job.batch < 1) {
    return absl::InvalidArgumentError(
        StrCat("CreateJob: batch must be >= 1, got ", job.batch));
  }
  if (job.state != JobState::kQueued) {
    return absl::InvalidArgumentError(StrCat("CreateJob: a new job must be queued, not ",
                                             JobStateName(job.state)));
  }
  absl::MutexLock lock(&mu_);
  ASSIGN_OR_RETURN(Transaction tx, Transaction::Begin(*db_));
  std::string model_name = job.model_name;
  {
    ASSIGN_OR_RETURN(Statement * raw, Cached("SELECT name FROM models WHERE digest = ?1"));
    ScopedStatement stmt(raw);
    RETURN_IF_ERROR(stmt->BindText(1, job.model_digest));
    ASSIGN_OR_RETURN(bool row, stmt->Step());
    if (!row) {
      return absl::NotFoundError(
          StrCat("CreateJob: model digest '", job.model_digest, "' is not stored"));
    }
    if (model_name.empty()) model_name = stmt->ColumnText(0);
  }
  {
    ASSIGN_OR_RETURN(
        Statement * raw,
        Cached("INSERT INTO jobs (model_digest, model_name, device_key, owner, retune_batch, "
               "batch, opt_r, opt_s, opt_block_size, opt_batch_size_limit, priority, state, "
               "error, submitted_unix_ms) "
               "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, 'queued', ?12, ?13)"));
    ScopedStatement stmt(raw);
    RETURN_IF_ERROR(stmt->BindText(1, job.model_digest));
    RETURN_IF_ERROR(stmt->BindText(2, model_name));
    RETURN_IF_ERROR(stmt->BindText(3, job.device_key));
    RETURN_IF_ERROR(stmt->BindText(4, job.owner));
    RETURN_IF_ERROR(stmt->BindText(5, job.retune_batch));
    RETURN_IF_ERROR(stmt->BindInt64(6, job.batch));
    RETURN_IF_ERROR(stmt->BindInt64(7, job.options.r));
    RETURN_IF_ERROR(stmt->BindInt64(8, job.options.s));
    RETURN_IF_ERROR(stmt->BindInt64(9, job.options.block_size));
    RETURN_IF_ERROR(stmt->BindInt64(10, job.options.batch_size_limit));
    RETURN_IF_ERROR(stmt->BindInt64(11, job.options.priority));
    RETURN_IF_ERROR(stmt->BindText(12, job.error));
    RETURN_IF_ERROR(stmt->BindInt64(13, job.submitted_unix_ms));
    RETURN_IF_ERROR(stmt->Step().status());
  }
  const int64_t id = db_->LastInsertRowId();
  RETURN_IF_ERROR(tx.Commit());
  return id;
}

StatusOr<JobRow> FarmStore::ReadJobLocked(int64_t id) {
  ASSIGN_OR_RETURN(Statement * raw, Cached(StrCat("SELECT ", kJobColumns,
                                                  " FROM jobs WHERE id = ?1")));
  ScopedStatement stmt(raw);
  RETURN_IF_ERROR(stmt->BindInt64(1, id));
  ASSIGN_OR_RETURN(bool row, stmt->Step());
  if (!row) return absl::NotFoundError(StrCat("job ", id, " not found"));
  return JobFromRow(*stmt);
}

StatusOr<bool> FarmStore::JobExistsLocked(int64_t id) {
  ASSIGN_OR_RETURN(Statement * raw, Cached("SELECT 1 FROM jobs WHERE id = ?1"));
  ScopedStatement stmt(raw);
  RETURN_IF_ERROR(stmt->BindInt64(1, id));
  return stmt->Step();
}

StatusOr<std::optional<JobRow>> FarmStore::GetJob(int64_t id) {
  absl::MutexLock lock(&mu_);
  StatusOr<JobRow> job = ReadJobLocked(id);
  if (absl::IsNotFound(job.status())) return std::optional<JobRow>();
  if (!job.ok()) return job.status();
  return std::optional<JobRow>(*std::move(job));
}

StatusOr<std::vector<JobRow>> FarmStore::ListJobs(const JobFilter& filter) {
  // The statement text depends only on which filters are set, so there are
  // at most 16 cached variants.
  std::string sql = StrCat("SELECT ", kJobColumns, " FROM jobs WHERE 1");
  if (filter.state.has_value()) sql += " AND state = ?1";
  if (!filter.device_key.empty()) sql += " AND device_key = ?2";
  if (!filter.retune_batch.empty()) sql += " AND retune_batch = ?3";
  if (filter.unfinished_only) sql += " AND state IN ('queued', 'running')";
  sql += filter.newest_first ? " ORDER BY id DESC LIMIT ?4" : " ORDER BY id LIMIT ?4";

  absl::MutexLock lock(&mu_);
  ASSIGN_OR_RETURN(Statement * raw, Cached(sql));
  ScopedStatement stmt(raw);
  if (filter.state.has_value()) RETURN_IF_ERROR(stmt->BindText(1, JobStateName(*filter.state)));
  if (!filter.device_key.empty()) RETURN_IF_ERROR(stmt->BindText(2, filter.device_key));
  if (!filter.retune_batch.empty()) RETURN_IF_ERROR(stmt->BindText(3, filter.retune_batch));
  RETURN_IF_ERROR(stmt->BindInt64(4, filter.limit > 0 ? filter.limit : -1));
  std::vector<JobRow> jobs;
  while (true) {
    ASSIGN_OR_RETURN(bool row, stmt->Step());
    if (!row) break;
    ASSIGN_OR_RETURN(JobRow job, JobFromRow(*stmt));
    jobs.push_back(std::move(job));
  }
  return jobs;
}

Status FarmStore::UpdateJobState(int64_t id, JobState state, const std::string& error,
                                 int64_t now_unix_ms) {
  absl::MutexLock lock(&mu_);
  ASSIGN_OR_RETURN(Transaction tx, Transaction::Begin(*db_));
  ASSIGN_OR_RETURN(JobRow job, ReadJobLocked(id));
  if (IsFinal(job.state)) {
    return absl::FailedPreconditionError(StrCat("job ", id, " is already ",
                                                JobStateName(job.state), "; cannot move it to ",
                                                JobStateName(state)));
  }
  if (!MoveAllowed(job.state, state)) {
    return absl::FailedPreconditionError(StrCat("job ", id, " cannot move from ",
                                                JobStateName(job.state), " to ",
                                                JobStateName(state)));
  }
  int64_t started = job.started_unix_ms;
  if (state == JobState::kRunning && started == 0) started = now_unix_ms;
  const int64_t finished = IsFinal(state) ? now_unix_ms : job.finished_unix_ms;
  {
    ASSIGN_OR_RETURN(Statement * raw,
                     Cached("UPDATE jobs SET state = ?2, error = ?3, started_unix_ms = ?4, "
                            "finished_unix_ms = ?5 WHERE id = ?1"));
    ScopedStatement stmt(raw);
    RETURN_IF_ERROR(stmt->BindInt64(1, id));
    RETURN_IF_ERROR(stmt->BindText(2, JobStateName(state)));
    RETURN_IF_ERROR(stmt->BindText(3, error));
    RETURN_IF_ERROR(stmt->BindInt64(4, started));
    RETURN_IF_ERROR(stmt->BindInt64(5, finished));
    RETURN_IF_ERROR(stmt->Step().status());
  }
  return tx.Commit();
}

Status FarmStore::UpdateJobProgress(const JobRow& progress) {
  absl::MutexLock lock(&mu_);
  ASSIGN_OR_RETURN(Statement * raw,
                   Cached("UPDATE jobs SET blocks_total = ?2, blocks_done = ?3, "
                          "stages_profiled = ?4, cache_hits = ?5, candidates = ?6, "
                          "unique_signatures = ?7, phase = ?8 WHERE id = ?1"));
  ScopedStatement stmt(raw);
  RETURN_IF_ERROR(stmt->BindInt64(1, progress.id));
  RETURN_IF_ERROR(stmt->BindInt64(2, progress.blocks_total));
  RETURN_IF_ERROR(stmt->BindInt64(3, progress.blocks_done));
  RETURN_IF_ERROR(stmt->BindInt64(4, progress.stages_profiled));
  RETURN_IF_ERROR(stmt->BindInt64(5, progress.cache_hits));
  RETURN_IF_ERROR(stmt->BindInt64(6, progress.candidates));
  RETURN_IF_ERROR(stmt->BindInt64(7, progress.unique_signatures));
  RETURN_IF_ERROR(stmt->BindText(8, progress.phase));
  RETURN_IF_ERROR(stmt->Step().status());
  if (db_->Changes() == 0) return absl::NotFoundError(StrCat("job ", progress.id, " not found"));
  return absl::OkStatus();
}

StatusOr<int64_t> FarmStore::AddResumes(int64_t id, int64_t delta) {
  absl::MutexLock lock(&mu_);
  ASSIGN_OR_RETURN(Statement * raw,
                   Cached("UPDATE jobs SET resumes = MAX(0, resumes + ?2) WHERE id = ?1 "
                          "RETURNING resumes"));
  ScopedStatement stmt(raw);
  RETURN_IF_ERROR(stmt->BindInt64(1, id));
  RETURN_IF_ERROR(stmt->BindInt64(2, delta));
  ASSIGN_OR_RETURN(bool row, stmt->Step());
  if (!row) return absl::NotFoundError(StrCat("job ", id, " not found"));
  const int64_t resumes = stmt->ColumnInt64(0);
  RETURN_IF_ERROR(stmt->Step().status());  // finish the statement
  return resumes;
}

Status FarmStore::ClearResumes(int64_t id) {
  absl::MutexLock lock(&mu_);
  ASSIGN_OR_RETURN(Statement * raw, Cached("UPDATE jobs SET resumes = 0 WHERE id = ?1"));
  ScopedStatement stmt(raw);
  RETURN_IF_ERROR(stmt->BindInt64(1, id));
  RETURN_IF_ERROR(stmt->Step().status());
  if (db_->Changes() == 0) return absl::NotFoundError(StrCat("job ", id, " not found"));
  return absl::OkStatus();
}

// ---------------------------------------------------------------- results

Status FarmStore::PutResult(const ResultRow& result) {
  absl::MutexLock lock(&mu_);
  ASSIGN_OR_RETURN(Transaction tx, Transaction::Begin(*db_));
  ASSIGN_OR_RETURN(bool exists, JobExistsLocked(result.job_id));
  if (!exists) {
    return absl::NotFoundError(StrCat("PutResult: job ", result.job_id, " not found"));
  }
  {
    ASSIGN_OR_RETURN(Statement * raw,
                     Cached("INSERT INTO results (job_id, schedule_json, result_json) "
                            "VALUES (?1, ?2, ?3) ON CONFLICT (job_id) DO UPDATE SET "
                            "schedule_json = excluded.schedule_json, "
                            "result_json = excluded.result_json"));
    ScopedStatement stmt(raw);
    RETURN_IF_ERROR(stmt->BindInt64(1, result.job_id));
    RETURN_IF_ERROR(stmt->BindText(2, result.schedule_json));
    RETURN_IF_ERROR(stmt->BindText(3, result.result_json));
    RETURN_IF_ERROR(stmt->Step().status());
  }
  return tx.Commit();
}

StatusOr<std::optional<ResultRow>> FarmStore::GetResult(int64_t job_id) {
  absl::MutexLock lock(&mu_);
  ASSIGN_OR_RETURN(Statement * raw,
                   Cached("SELECT schedule_json, result_json FROM results WHERE job_id = ?1"));
  ScopedStatement stmt(raw);
  RETURN_IF_ERROR(stmt->BindInt64(1, job_id));
  ASSIGN_OR_RETURN(bool row, stmt->Step());
  if (!row) return std::optional<ResultRow>();
  ResultRow result;
  result.job_id = job_id;
  result.schedule_json = stmt->ColumnText(0);
  result.result_json = stmt->ColumnText(1);
  return std::optional<ResultRow>(std::move(result));
}

// ---------------------------------------------------------------- phase log

StatusOr<int64_t> FarmStore::AppendPhase(const PhaseLogRow& row) {
  if (!IsPhaseName(row.phase)) {
    return absl::InvalidArgumentError(
        StrCat("AppendPhase: unknown phase '", row.phase, "' for job ", row.job_id,
               " (expected enumerate, build, profile, update or measure)"));
  }
  absl::MutexLock lock(&mu_);
  ASSIGN_OR_RETURN(Transaction tx, Transaction::Begin(*db_));
  ASSIGN_OR_RETURN(bool exists, JobExistsLocked(row.job_id));
  if (!exists) return absl::NotFoundError(StrCat("AppendPhase: job ", row.job_id, " not found"));
  {
    ASSIGN_OR_RETURN(Statement * raw,
                     Cached("INSERT INTO phase_log (job_id, phase, resource, worker, outcome, "
                            "queued_s, start_s, end_s, stages, detail) "
                            "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)"));
    ScopedStatement stmt(raw);
    RETURN_IF_ERROR(stmt->BindInt64(1, row.job_id));
    RETURN_IF_ERROR(stmt->BindText(2, row.phase));
    RETURN_IF_ERROR(stmt->BindText(3, row.resource));
    RETURN_IF_ERROR(stmt->BindText(4, row.worker));
    RETURN_IF_ERROR(stmt->BindText(5, row.outcome));
    RETURN_IF_ERROR(stmt->BindDouble(6, row.queued_s));
    RETURN_IF_ERROR(stmt->BindDouble(7, row.start_s));
    RETURN_IF_ERROR(stmt->BindDouble(8, row.end_s));
    RETURN_IF_ERROR(stmt->BindInt64(9, row.stages));
    RETURN_IF_ERROR(stmt->BindText(10, row.detail));
    RETURN_IF_ERROR(stmt->Step().status());
  }
  const int64_t id = db_->LastInsertRowId();
  RETURN_IF_ERROR(tx.Commit());
  return id;
}

StatusOr<std::vector<PhaseLogRow>> FarmStore::ListPhases(std::optional<int64_t> job_id) {
  absl::MutexLock lock(&mu_);
  constexpr const char kColumns[] =
      "SELECT id, job_id, phase, resource, worker, outcome, queued_s, start_s, end_s, stages, "
      "detail FROM phase_log";
  ASSIGN_OR_RETURN(Statement * raw,
                   Cached(job_id.has_value() ? StrCat(kColumns, " WHERE job_id = ?1 ORDER BY id")
                                             : StrCat(kColumns, " ORDER BY id")));
  ScopedStatement stmt(raw);
  if (job_id.has_value()) RETURN_IF_ERROR(stmt->BindInt64(1, *job_id));
  std::vector<PhaseLogRow> phases;
  while (true) {
    ASSIGN_OR_RETURN(bool row, stmt->Step());
    if (!row) break;
    PhaseLogRow& phase = phases.emplace_back();
    phase.id = stmt->ColumnInt64(0);
    phase.job_id = stmt->ColumnInt64(1);
    phase.phase = stmt->ColumnText(2);
    phase.resource = stmt->ColumnText(3);
    phase.worker = stmt->ColumnText(4);
    phase.outcome = stmt->ColumnText(5);
    phase.queued_s = stmt->ColumnDouble(6);
    phase.start_s = stmt->ColumnDouble(7);
    phase.end_s = stmt->ColumnDouble(8);
    phase.stages = stmt->ColumnInt64(9);
    phase.detail = stmt->ColumnText(10);
  }
  return phases;
}

// ---------------------------------------------------------------- re-tuning

StatusOr<std::vector<RetuneTarget>> FarmStore::RetuneTargets(const RetuneFilter& filter) {
  const absl::flat_hash_set<std::string> names(filter.model_names.begin(),
                                               filter.model_names.end());
  struct Candidate {
    RetuneTarget target;
    bool succeeded = false;
  };
  // Keyed by (digest, batch); jobs arrive by id, so later rows are later jobs.
  absl::flat_hash_map<std::pair<std::string, int64_t>, Candidate> chosen;
  {
    absl::MutexLock lock(&mu_);
    ASSIGN_OR_RETURN(Statement * raw,
                     Cached("SELECT j.model_digest, m.name, j.batch, j.state, j.opt_r, j.opt_s, "
                            "j.opt_block_size, j.opt_batch_size_limit, j.priority "
                            "FROM jobs j JOIN models m ON m.digest = j.model_digest "
                            "WHERE (?1 = '' OR j.device_key = ?1) AND (?2 = 0 OR j.batch = ?3) "
                            "ORDER BY j.id"));
    ScopedStatement stmt(raw);
    RETURN_IF_ERROR(stmt->BindText(1, filter.from_device_key));
    RETURN_IF_ERROR(stmt->BindInt64(2, filter.batch.has_value() ? 1 : 0));
    RETURN_IF_ERROR(stmt->BindInt64(3, filter.batch.value_or(0)));
    while (true) {
      ASSIGN_OR_RETURN(bool row, stmt->Step());
      if (!row) break;
      std::string name = stmt->ColumnText(1);
      if (!names.empty() && !names.contains(name)) continue;
      const bool succeeded = stmt->ColumnText(3) == JobStateName(JobState::kSucceeded);
      Candidate& candidate = chosen[{stmt->ColumnText(0), stmt->ColumnInt64(2)}];
      if (candidate.succeeded && !succeeded) continue;  // keep the latest succeeded job
      candidate.succeeded = succeeded;
      candidate.target.model_digest = stmt->ColumnText(0);
      candidate.target.model_name = std::move(name);
      candidate.target.batch = stmt->ColumnInt64(2);
      candidate.target.options = OptionsFromRow(*stmt, 4);
    }
  }
  std::vector<RetuneTarget> targets;
  targets.reserve(chosen.size());
  for (auto& [key, candidate] : chosen) targets.push_back(std::move(candidate.target));
  std::sort(targets.begin(), targets.end(), [](const RetuneTarget& a, const RetuneTarget& b) {
    return std::tie(a.model_name, a.batch, a.model_digest) <
           std::tie(b.model_name, b.batch, b.model_digest);
  });
  return targets;
}

}  // namespace iosfarm::server
