// JobStore's results (job_store.h): a job's typed result in the results and
// result_latencies tables, and the version-2 results an upgrade could not read
// (results_unreadable; store_schema.cc, version 3).
#include "server/job_store.h"

#include "common/strings.h"

namespace iosfarm::server {

Status JobStore::PutResult(const ResultRow& result) {
  RETURN_IF_ERROR(CheckResult(result));
  Session session(*connection_);
  ASSIGN_OR_RETURN(Transaction tx, Transaction::Begin(session.db()));
  ASSIGN_OR_RETURN(bool exists, JobExists(session, result.job_id));
  if (!exists) {
    return absl::NotFoundError(StrCat("PutResult: job ", result.job_id, " not found"));
  }
  // The new result replaces the old one, figures and measurements alike
  // (and an unreadable version-2 result of the job).
  for (const char* sql : {"DELETE FROM result_latencies WHERE job_id = ?1",
                          "DELETE FROM results WHERE job_id = ?1",
                          "DELETE FROM results_unreadable WHERE job_id = ?1"}) {
    ASSIGN_OR_RETURN(CachedStatement stmt, session.Prepare(sql));
    RETURN_IF_ERROR(stmt.Bind(result.job_id));
    RETURN_IF_ERROR(stmt->Step().status());
  }
  {
    ASSIGN_OR_RETURN(
        CachedStatement stmt,
        session.Prepare("INSERT INTO results (job_id, schedule_json, chosen, "
                        "predicted_ms, search_s, stages_profiled, cache_hits, candidates, "
                        "unique_signatures, stages_measured, stages, worker, backend, device_key, "
                        "lower_bound_misses, largest_bound_miss_ms, search_cores) "
                        "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, "
                        "?15, ?16, ?17)"));
    const ResultRow& r = result;
    RETURN_IF_ERROR(stmt.Bind(r.job_id, r.schedule_json, r.chosen, r.predicted_ms, r.search_s,
                              r.stages_profiled, r.cache_hits, r.candidates, r.unique_signatures,
                              r.stages_measured, r.stages, r.worker, r.backend, r.device_key,
                              r.lower_bound_misses, r.largest_bound_miss_ms, r.search_cores));
    RETURN_IF_ERROR(stmt->Step().status());
  }
  for (size_t i = 0; i < result.measured.size(); ++i) {
    const MeasuredSchedule& m = result.measured[i];
    ASSIGN_OR_RETURN(CachedStatement stmt,
                     session.Prepare("INSERT INTO result_latencies (job_id, name, position, "
                                     "median_ms, p10_ms, p90_ms, cv, repeats) "
                                     "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)"));
    RETURN_IF_ERROR(stmt.Bind(result.job_id, m.name, static_cast<int64_t>(i), m.median_ms,
                              m.p10_ms, m.p90_ms, m.cv, m.repeats));
    RETURN_IF_ERROR(stmt->Step().status());
  }
  return tx.Commit();
}

StatusOr<std::vector<MeasuredSchedule>> JobStore::ReadMeasured(Session& session,
                                                               int64_t job_id) {
  ASSIGN_OR_RETURN(CachedStatement stmt,
                   session.Prepare("SELECT name, median_ms, p10_ms, p90_ms, cv, repeats "
                                   "FROM result_latencies WHERE job_id = ?1 ORDER BY position"));
  RETURN_IF_ERROR(stmt.Bind(job_id));
  std::vector<MeasuredSchedule> measured;
  for (MeasuredSchedule m;;) {
    ASSIGN_OR_RETURN(bool row,
                     stmt.StepAndRead(m.name, m.median_ms, m.p10_ms, m.p90_ms, m.cv, m.repeats));
    if (!row) break;
    measured.push_back(std::move(m));
  }
  return measured;
}

StatusOr<std::optional<ResultRow>> JobStore::GetResult(int64_t job_id) {
  Session session(*connection_);
  ASSIGN_OR_RETURN(Transaction snapshot, Transaction::BeginRead(session.db()));
  ResultRow result;
  {
    ASSIGN_OR_RETURN(CachedStatement stmt,
                     session.Prepare("SELECT schedule_json, chosen, predicted_ms, search_s, "
                                     "stages_profiled, cache_hits, candidates, "
                                     "unique_signatures, stages_measured, stages, worker, "
                                     "backend, device_key, lower_bound_misses, "
                                     "largest_bound_miss_ms, search_cores "
                                     "FROM results WHERE job_id = ?1"));
    RETURN_IF_ERROR(stmt.Bind(job_id));
    ResultRow& r = result;
    ASSIGN_OR_RETURN(
        bool row,
        stmt.StepAndRead(r.schedule_json, r.chosen, r.predicted_ms, r.search_s, r.stages_profiled,
                         r.cache_hits, r.candidates, r.unique_signatures, r.stages_measured,
                         r.stages, r.worker, r.backend, r.device_key, r.lower_bound_misses,
                         r.largest_bound_miss_ms, r.search_cores));
    if (!row) {
      ASSIGN_OR_RETURN(CachedStatement unreadable,
                       session.Prepare("SELECT reason FROM results_unreadable "
                                       "WHERE job_id = ?1"));
      RETURN_IF_ERROR(unreadable.Bind(job_id));
      ASSIGN_OR_RETURN(bool kept, unreadable->Step());
      if (!kept) return std::optional<ResultRow>();
      return absl::DataLossError(StrCat("the stored result of job ", job_id, " is corrupt (",
                                        unreadable->ColumnText(0),
                                        "; its text is kept in table results_unreadable)"));
    }
    result.job_id = job_id;
  }
  ASSIGN_OR_RETURN(result.measured, ReadMeasured(session, job_id));
  RETURN_IF_ERROR(snapshot.Commit());
  return std::optional<ResultRow>(std::move(result));
}

StatusOr<int64_t> JobStore::CountUnreadableResults() {
  Session session(*connection_);
  ASSIGN_OR_RETURN(CachedStatement stmt,
                   session.Prepare("SELECT COUNT(*) FROM results_unreadable"));
  RETURN_IF_ERROR(stmt->Step().status());
  return stmt->ColumnInt64(0);
}

}  // namespace iosfarm::server
