#include "server/job_store.h"

#include <algorithm>
#include <tuple>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "common/strings.h"

namespace iosfarm::server {
namespace {

constexpr const char kJobColumns[] =
    "id, model_digest, model_name, device_key, owner, retune_batch, batch, opt_r, opt_s, "
    "opt_block_size, opt_batch_size_limit, priority, state, error, submitted_unix_ms, "
    "started_unix_ms, finished_unix_ms, blocks_total, blocks_done, stages_profiled, cache_hits, "
    "candidates, unique_signatures, stages_measured, phase, resumes, opt_max_parallel_batches, "
    "estimated_stages";

JobOptions OptionsFromRow(const Statement& row, int first_column) {
  JobOptions options;
  options.r = static_cast<int>(row.ColumnInt64(first_column));
  options.s = static_cast<int>(row.ColumnInt64(first_column + 1));
  options.block_size = static_cast<int>(row.ColumnInt64(first_column + 2));
  options.batch_size_limit = static_cast<int>(row.ColumnInt64(first_column + 3));
  options.priority = static_cast<int>(row.ColumnInt64(first_column + 4));
  options.max_parallel_batches = static_cast<int>(row.ColumnInt64(first_column + 5));
  return options;
}

StatusOr<JobRow> JobFromRow(const CachedStatement& row) {
  JobRow j;
  JobOptions& o = j.options;
  std::string state;
  row.Read(j.id, j.model_digest, j.model_name, j.device_key, j.owner, j.retune_batch, j.batch, o.r,
           o.s, o.block_size, o.batch_size_limit, o.priority, state, j.error, j.submitted_unix_ms,
           j.started_unix_ms, j.finished_unix_ms, j.blocks_total, j.blocks_done, j.stages_profiled,
           j.cache_hits, j.candidates, j.unique_signatures, j.stages_measured, j.phase, j.resumes,
           o.max_parallel_batches, j.estimated_stages);
  ASSIGN_OR_RETURN(j.state, JobStateFromName(state));
  return j;
}

// Runs a statement that writes one job's row; NotFound when it changed none.
Status StepOnJob(StoreConnection::Session& session, CachedStatement& stmt, int64_t id) {
  RETURN_IF_ERROR(stmt->Step().status());
  if (session.db().Changes() == 0) return absl::NotFoundError(StrCat("job ", id, " not found"));
  return absl::OkStatus();
}

}  // namespace

// ---------------------------------------------------------------- models

Status JobStore::PutModel(const ModelRow& model) {
  if (model.digest.empty()) return absl::InvalidArgumentError("PutModel: digest is empty");
  if (model.name.empty()) {
    return absl::InvalidArgumentError(StrCat("PutModel: model ", model.digest, " has no name"));
  }
  if (model.source != "zoo" && model.source != "onnx") {
    return absl::InvalidArgumentError(StrCat("PutModel: model '", model.name, "' has source '",
                                             model.source, "' (expected zoo or onnx)"));
  }
  Session session(*connection_);
  ASSIGN_OR_RETURN(CachedStatement stmt,
                   session.Prepare("INSERT INTO models (digest, name, source, batch, bytes, ops, "
                                   "created_unix_ms) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7) "
                                   "ON CONFLICT (digest) DO NOTHING"));
  RETURN_IF_ERROR(stmt.Bind(model.digest, model.name, model.source, model.batch));
  RETURN_IF_ERROR(stmt->BindBlob(5, model.bytes));
  RETURN_IF_ERROR(stmt->BindInt64(6, model.ops));
  RETURN_IF_ERROR(stmt->BindInt64(7, model.created_unix_ms));
  return stmt->Step().status();
}

StatusOr<std::optional<ModelRow>> JobStore::GetModel(const std::string& digest) {
  Session session(*connection_);
  ASSIGN_OR_RETURN(CachedStatement stmt,
                   session.Prepare("SELECT digest, name, source, batch, ops, created_unix_ms, "
                                   "bytes FROM models WHERE digest = ?1"));
  RETURN_IF_ERROR(stmt.Bind(digest));
  ModelRow m;
  ASSIGN_OR_RETURN(bool row,
                   stmt.StepAndRead(m.digest, m.name, m.source, m.batch, m.ops, m.created_unix_ms));
  if (!row) return std::optional<ModelRow>();
  m.bytes = stmt->ColumnBlob(6);
  return std::optional<ModelRow>(std::move(m));
}

StatusOr<std::vector<ModelRow>> JobStore::ListModels() {
  Session session(*connection_);
  ASSIGN_OR_RETURN(CachedStatement stmt,
                   session.Prepare("SELECT digest, name, source, batch, ops, created_unix_ms "
                                   "FROM models ORDER BY name, digest"));
  std::vector<ModelRow> models;
  for (ModelRow m;;) {
    ASSIGN_OR_RETURN(bool row, stmt.StepAndRead(m.digest, m.name, m.source, m.batch, m.ops,
                                                m.created_unix_ms));
    if (!row) break;
    models.push_back(std::move(m));
  }
  return models;
}

// ---------------------------------------------------------------- jobs

StatusOr<int64_t> JobStore::CreateJob(const JobRow& job) {
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
  Session session(*connection_);
  ASSIGN_OR_RETURN(Transaction tx, Transaction::Begin(session.db()));
  std::string model_name = job.model_name;
  {
    ASSIGN_OR_RETURN(CachedStatement stmt,
                     session.Prepare("SELECT name FROM models WHERE digest = ?1"));
    RETURN_IF_ERROR(stmt.Bind(job.model_digest));
    ASSIGN_OR_RETURN(bool row, stmt->Step());
    if (!row) {
      return absl::NotFoundError(
          StrCat("CreateJob: model digest '", job.model_digest, "' is not stored"));
    }
    if (model_name.empty()) model_name = stmt->ColumnText(0);
  }
  {
    ASSIGN_OR_RETURN(
        CachedStatement stmt,
        session.Prepare("INSERT INTO jobs (model_digest, model_name, device_key, owner, "
                        "retune_batch, batch, opt_r, opt_s, opt_block_size, "
                        "opt_batch_size_limit, priority, state, error, submitted_unix_ms, "
                        "opt_max_parallel_batches, estimated_stages) "
                        "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, 'queued', ?12, "
                        "?13, ?14, ?15)"));
    const JobOptions& o = job.options;
    RETURN_IF_ERROR(stmt.Bind(job.model_digest, model_name, job.device_key, job.owner,
                              job.retune_batch, job.batch, o.r, o.s, o.block_size,
                              o.batch_size_limit, o.priority, job.error, job.submitted_unix_ms,
                              o.max_parallel_batches, std::max<int64_t>(-1, job.estimated_stages)));
    RETURN_IF_ERROR(stmt->Step().status());
  }
  const int64_t id = session.db().LastInsertRowId();
  RETURN_IF_ERROR(tx.Commit());
  return id;
}

StatusOr<JobRow> JobStore::ReadJob(Session& session, int64_t id) {
  ASSIGN_OR_RETURN(CachedStatement stmt,
                   session.Prepare(StrCat("SELECT ", kJobColumns, " FROM jobs WHERE id = ?1")));
  RETURN_IF_ERROR(stmt.Bind(id));
  ASSIGN_OR_RETURN(bool row, stmt->Step());
  if (!row) return absl::NotFoundError(StrCat("job ", id, " not found"));
  return JobFromRow(stmt);
}

StatusOr<bool> JobStore::JobExists(Session& session, int64_t id) {
  ASSIGN_OR_RETURN(CachedStatement stmt, session.Prepare("SELECT 1 FROM jobs WHERE id = ?1"));
  RETURN_IF_ERROR(stmt.Bind(id));
  return stmt->Step();
}

StatusOr<std::optional<JobRow>> JobStore::GetJob(int64_t id) {
  Session session(*connection_);
  StatusOr<JobRow> job = ReadJob(session, id);
  if (absl::IsNotFound(job.status())) return std::optional<JobRow>();
  if (!job.ok()) return job.status();
  return std::optional<JobRow>(*std::move(job));
}

StatusOr<std::vector<JobRow>> JobStore::ListJobs(const JobFilter& filter) {
  // The statement text depends only on which filters are set, so there are
  // at most 16 cached variants.
  std::string sql = StrCat("SELECT ", kJobColumns, " FROM jobs WHERE 1");
  if (filter.state.has_value()) sql += " AND state = ?1";
  if (!filter.device_key.empty()) sql += " AND device_key = ?2";
  if (!filter.retune_batch.empty()) sql += " AND retune_batch = ?3";
  if (filter.unfinished_only) sql += " AND state IN ('queued', 'running')";
  sql += filter.newest_first ? " ORDER BY id DESC LIMIT ?4" : " ORDER BY id LIMIT ?4";

  Session session(*connection_);
  ASSIGN_OR_RETURN(CachedStatement stmt, session.Prepare(sql));
  if (filter.state.has_value()) RETURN_IF_ERROR(stmt->BindText(1, JobStateName(*filter.state)));
  if (!filter.device_key.empty()) RETURN_IF_ERROR(stmt->BindText(2, filter.device_key));
  if (!filter.retune_batch.empty()) RETURN_IF_ERROR(stmt->BindText(3, filter.retune_batch));
  RETURN_IF_ERROR(stmt->BindInt64(4, filter.limit > 0 ? filter.limit : -1));
  std::vector<JobRow> jobs;
  while (true) {
    ASSIGN_OR_RETURN(bool row, stmt->Step());
    if (!row) break;
    ASSIGN_OR_RETURN(JobRow job, JobFromRow(stmt));
    jobs.push_back(std::move(job));
  }
  return jobs;
}

Status JobStore::UpdateJobState(int64_t id, JobState state, const std::string& error,
                                int64_t now_unix_ms) {
  Session session(*connection_);
  ASSIGN_OR_RETURN(Transaction tx, Transaction::Begin(session.db()));
  ASSIGN_OR_RETURN(JobRow job, ReadJob(session, id));
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
    ASSIGN_OR_RETURN(CachedStatement stmt,
                     session.Prepare("UPDATE jobs SET state = ?2, error = ?3, "
                                     "started_unix_ms = ?4, finished_unix_ms = ?5 WHERE id = ?1"));
    RETURN_IF_ERROR(stmt.Bind(id, JobStateName(state), error, started, finished));
    RETURN_IF_ERROR(stmt->Step().status());
  }
  return tx.Commit();
}

Status JobStore::UpdateJobProgress(const JobRow& progress) {
  Session session(*connection_);
  ASSIGN_OR_RETURN(CachedStatement stmt,
                   session.Prepare("UPDATE jobs SET blocks_total = ?2, blocks_done = ?3, "
                                   "stages_profiled = ?4, cache_hits = ?5, candidates = ?6, "
                                   "unique_signatures = ?7, phase = ?8, stages_measured = ?9 "
                                   "WHERE id = ?1"));
  RETURN_IF_ERROR(stmt.Bind(progress.id, progress.blocks_total, progress.blocks_done,
                            progress.stages_profiled, progress.cache_hits, progress.candidates,
                            progress.unique_signatures, progress.phase,
                            progress.stages_measured));
  return StepOnJob(session, stmt, progress.id);
}

StatusOr<int64_t> JobStore::AddResumes(int64_t id, int64_t delta) {
  Session session(*connection_);
  ASSIGN_OR_RETURN(CachedStatement stmt,
                   session.Prepare("UPDATE jobs SET resumes = MAX(0, resumes + ?2) "
                                   "WHERE id = ?1 RETURNING resumes"));
  RETURN_IF_ERROR(stmt.Bind(id, delta));
  ASSIGN_OR_RETURN(bool row, stmt->Step());
  if (!row) return absl::NotFoundError(StrCat("job ", id, " not found"));
  const int64_t resumes = stmt->ColumnInt64(0);
  RETURN_IF_ERROR(stmt->Step().status());  // finish the statement
  return resumes;
}

Status JobStore::ClearResumes(int64_t id) {
  Session session(*connection_);
  ASSIGN_OR_RETURN(CachedStatement stmt,
                   session.Prepare("UPDATE jobs SET resumes = 0 WHERE id = ?1"));
  RETURN_IF_ERROR(stmt.Bind(id));
  return StepOnJob(session, stmt, id);
}

// ---------------------------------------------------------------- phase log

StatusOr<int64_t> JobStore::AppendPhase(const PhaseLogRow& row) {
  if (!IsPhaseName(row.phase)) {
    return absl::InvalidArgumentError(
        StrCat("AppendPhase: unknown phase '", row.phase, "' for job ", row.job_id,
               " (expected enumerate, build, profile, update or measure)"));
  }
  Session session(*connection_);
  ASSIGN_OR_RETURN(Transaction tx, Transaction::Begin(session.db()));
  ASSIGN_OR_RETURN(bool exists, JobExists(session, row.job_id));
  if (!exists) return absl::NotFoundError(StrCat("AppendPhase: job ", row.job_id, " not found"));
  {
    ASSIGN_OR_RETURN(CachedStatement stmt,
                     session.Prepare("INSERT INTO phase_log (job_id, phase, resource, worker, "
                                     "outcome, queued_s, start_s, end_s, stages, detail, batch) "
                                     "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11)"));
    RETURN_IF_ERROR(stmt.Bind(row.job_id, row.phase, row.resource, row.worker, row.outcome,
                              row.queued_s, row.start_s, row.end_s, row.stages, row.detail,
                              row.batch));
    RETURN_IF_ERROR(stmt->Step().status());
  }
  const int64_t id = session.db().LastInsertRowId();
  RETURN_IF_ERROR(tx.Commit());
  return id;
}

StatusOr<std::vector<PhaseLogRow>> JobStore::ListPhases(std::optional<int64_t> job_id) {
  constexpr const char kColumns[] =
      "SELECT id, job_id, phase, resource, worker, outcome, queued_s, start_s, end_s, stages, "
      "detail, batch FROM phase_log";
  Session session(*connection_);
  ASSIGN_OR_RETURN(CachedStatement stmt,
                   session.Prepare(job_id.has_value()
                                       ? StrCat(kColumns, " WHERE job_id = ?1 ORDER BY id")
                                       : StrCat(kColumns, " ORDER BY id")));
  if (job_id.has_value()) RETURN_IF_ERROR(stmt.Bind(*job_id));
  std::vector<PhaseLogRow> phases;
  for (PhaseLogRow p;;) {
    ASSIGN_OR_RETURN(bool row,
                     stmt.StepAndRead(p.id, p.job_id, p.phase, p.resource, p.worker, p.outcome,
                                      p.queued_s, p.start_s, p.end_s, p.stages, p.detail, p.batch));
    if (!row) break;
    phases.push_back(std::move(p));
  }
  return phases;
}

// ---------------------------------------------------------------- re-tuning

StatusOr<SearchHistory> JobStore::SearchHistoryOf(const JobRow& job) {
  SearchHistory history;
  Session session(*connection_);
  {
    ASSIGN_OR_RETURN(
        CachedStatement stmt,
        session.Prepare("SELECT device_key = ?6, stages_measured FROM jobs "
                        "WHERE model_digest = ?1 AND batch = ?2 AND opt_r = ?3 AND opt_s = ?4 "
                        "AND opt_block_size = ?5 AND state = 'succeeded' "
                        "ORDER BY device_key = ?6 DESC, finished_unix_ms DESC, id DESC LIMIT 1"));
    RETURN_IF_ERROR(stmt.Bind(job.model_digest, job.batch, job.options.r, job.options.s,
                              job.options.block_size, job.device_key));
    ASSIGN_OR_RETURN(bool row, stmt->Step());
    if (row && stmt->ColumnInt64(0) != 0) {
      history.done_on_this_key = true;
    } else if (row) {
      history.stages_elsewhere = stmt->ColumnInt64(1);
    }
  }
  ASSIGN_OR_RETURN(CachedStatement stmt,
                   session.Prepare("SELECT COALESCE(SUM(j.stages_measured), 0), "
                                   "COALESCE(SUM(m.ops), 0) FROM jobs j "
                                   "JOIN models m ON m.digest = j.model_digest "
                                   "WHERE j.state = 'succeeded' AND j.stages_measured > 0"));
  ASSIGN_OR_RETURN(bool row, stmt->Step());
  if (row) {
    history.searched_stages = stmt->ColumnInt64(0);
    history.searched_ops = stmt->ColumnInt64(1);
  }
  return history;
}

StatusOr<std::vector<RetuneTarget>> JobStore::RetuneTargets(const RetuneFilter& filter) {
  const absl::flat_hash_set<std::string> names(filter.model_names.begin(),
                                               filter.model_names.end());
  struct Candidate {
    RetuneTarget target;
    bool succeeded = false;
  };
  // Keyed by (digest, batch); jobs arrive by id, so later rows are later jobs.
  absl::flat_hash_map<std::pair<std::string, int64_t>, Candidate> chosen;
  {
    Session session(*connection_);
    ASSIGN_OR_RETURN(
        CachedStatement stmt,
        session.Prepare("SELECT j.model_digest, m.name, j.batch, j.state, j.opt_r, j.opt_s, "
                        "j.opt_block_size, j.opt_batch_size_limit, j.priority, "
                        "j.opt_max_parallel_batches "
                        "FROM jobs j JOIN models m ON m.digest = j.model_digest "
                        "WHERE (?1 = '' OR j.device_key = ?1) AND (?2 = 0 OR j.batch = ?3) "
                        "ORDER BY j.id"));
    RETURN_IF_ERROR(stmt.Bind(filter.from_device_key, filter.batch.has_value() ? 1 : 0,
                              filter.batch.value_or(0)));
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
