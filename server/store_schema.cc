#include "server/store_schema.h"

#include <array>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <vector>

#include "common/strings.h"

namespace iosfarm::server {
namespace {

// Version 1: devices, latencies, models, jobs, results, phase log.
constexpr const char kSchemaV1[] = R"sql(
CREATE TABLE devices (
  key TEXT PRIMARY KEY,
  description TEXT NOT NULL DEFAULT '',
  backend TEXT NOT NULL DEFAULT '',
  first_seen_unix_ms INTEGER NOT NULL,
  last_seen_unix_ms INTEGER NOT NULL,
  latency_count INTEGER NOT NULL DEFAULT 0,
  ignored_measurements INTEGER NOT NULL DEFAULT 0
);
CREATE TABLE latencies (
  device_key TEXT NOT NULL REFERENCES devices(key),
  signature INTEGER NOT NULL,
  median_ms REAL NOT NULL CHECK (median_ms >= 0),
  p10_ms REAL NOT NULL,
  p90_ms REAL NOT NULL,
  cv REAL NOT NULL,
  repeats INTEGER NOT NULL,
  worker TEXT NOT NULL,
  backend TEXT NOT NULL,
  measured_unix_ms INTEGER NOT NULL,
  PRIMARY KEY (device_key, signature)
) WITHOUT ROWID;
CREATE TABLE models (
  digest TEXT PRIMARY KEY,
  name TEXT NOT NULL,
  source TEXT NOT NULL CHECK (source IN ('zoo', 'onnx')),
  batch INTEGER NOT NULL,
  bytes BLOB NOT NULL,
  ops INTEGER NOT NULL,
  created_unix_ms INTEGER NOT NULL
);
CREATE INDEX models_by_name ON models(name);
CREATE TABLE jobs (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  model_digest TEXT NOT NULL REFERENCES models(digest),
  model_name TEXT NOT NULL,
  device_key TEXT NOT NULL,
  owner TEXT NOT NULL,
  retune_batch TEXT NOT NULL DEFAULT '',
  batch INTEGER NOT NULL,
  opt_r INTEGER NOT NULL,
  opt_s INTEGER NOT NULL,
  opt_block_size INTEGER NOT NULL,
  opt_batch_size_limit INTEGER NOT NULL,
  priority INTEGER NOT NULL,
  state TEXT NOT NULL
    CHECK (state IN ('queued', 'running', 'succeeded', 'failed', 'cancelled')),
  error TEXT NOT NULL DEFAULT '',
  submitted_unix_ms INTEGER NOT NULL,
  started_unix_ms INTEGER NOT NULL DEFAULT 0,
  finished_unix_ms INTEGER NOT NULL DEFAULT 0,
  blocks_total INTEGER NOT NULL DEFAULT 0,
  blocks_done INTEGER NOT NULL DEFAULT 0,
  stages_profiled INTEGER NOT NULL DEFAULT 0,
  cache_hits INTEGER NOT NULL DEFAULT 0,
  candidates INTEGER NOT NULL DEFAULT 0,
  unique_signatures INTEGER NOT NULL DEFAULT 0,
  phase TEXT NOT NULL DEFAULT ''
);
CREATE INDEX jobs_by_state ON jobs(state);
CREATE INDEX jobs_by_device ON jobs(device_key);
CREATE INDEX jobs_by_retune_batch ON jobs(retune_batch) WHERE retune_batch <> '';
CREATE INDEX jobs_by_model ON jobs(model_digest, batch);
CREATE TABLE results (
  job_id INTEGER PRIMARY KEY REFERENCES jobs(id),
  schedule_json TEXT NOT NULL,
  result_json TEXT NOT NULL
);
CREATE TABLE phase_log (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  job_id INTEGER NOT NULL REFERENCES jobs(id),
  phase TEXT NOT NULL CHECK (phase IN ('enumerate', 'build', 'profile', 'update', 'measure')),
  resource TEXT NOT NULL,
  worker TEXT NOT NULL,
  outcome TEXT NOT NULL,
  queued_s REAL NOT NULL,
  start_s REAL NOT NULL,
  end_s REAL NOT NULL,
  stages INTEGER NOT NULL,
  detail TEXT NOT NULL
);
CREATE INDEX phase_log_by_job ON phase_log(job_id, id);
)sql";

// Version 2: how often a server restart found the job unfinished since it
// last stored a measurement (the crash-loop guard, farm_coordinator.h).
constexpr const char kSchemaV2[] = R"sql(
ALTER TABLE jobs ADD COLUMN resumes INTEGER NOT NULL DEFAULT 0 CHECK (resumes >= 0);
)sql";

// Version 3: a job's result in typed columns (results) and its end-to-end
// measurements in a child table (result_latencies) instead of one JSON text
// (results.result_json). Version-2 results are converted with SQLite's JSON
// functions, reading them as the version-2 server did: a missing figure reads
// as 0, a missing `chosen` as 'ios', numbers as integers or reals alike. A
// result whose text that server could not read (not JSON, not an object, a
// figure of the wrong type) moves whole, with the reason, to
// results_unreadable: its job is kept and GetResult reports it as corrupt,
// as before. Nothing else changes.
constexpr const char kSchemaV3[] = R"sql(
CREATE TABLE results_unreadable (
  job_id INTEGER PRIMARY KEY REFERENCES jobs(id),
  schedule_json TEXT NOT NULL,
  result_json TEXT NOT NULL,
  reason TEXT NOT NULL
);
INSERT INTO results_unreadable (job_id, schedule_json, result_json, reason)
SELECT job_id, schedule_json, result_json, reason FROM (
  SELECT job_id, schedule_json, result_json, CASE
    WHEN NOT json_valid(result_json) THEN 'not JSON'
    WHEN json_type(result_json) <> 'object' THEN
      'a JSON ' || json_type(result_json) || ', not an object'
    ELSE (
      SELECT t.path || '.' || t.key || ' is ' || t.type FROM json_tree(result_json) t
      WHERE (t.path = '$' AND t.type NOT IN ('integer', 'real', 'true', 'false') AND
             t.key IN ('predicted_ms', 'search_s', 'stages_profiled', 'cache_hits',
                       'candidates', 'unique_signatures', 'stages'))
         OR (t.path = '$' AND t.type <> 'text' AND
             t.key IN ('worker', 'backend', 'device_key', 'chosen'))
         OR (t.path = '$.measured' AND t.type <> 'object' AND
             t.key IN ('ios', 'sequential', 'greedy'))
         OR (t.path IN ('$.measured.ios', '$.measured.sequential', '$.measured.greedy') AND
             t.type NOT IN ('integer', 'real', 'true', 'false') AND
             t.key IN ('median_ms', 'p10_ms', 'p90_ms', 'cv', 'repeats'))
      ORDER BY t.id LIMIT 1)
  END AS reason FROM results)
WHERE reason IS NOT NULL;
DELETE FROM results WHERE job_id IN (SELECT job_id FROM results_unreadable);

CREATE TABLE results_v3 (
  job_id INTEGER PRIMARY KEY REFERENCES jobs(id),
  schedule_json TEXT NOT NULL,
  chosen TEXT NOT NULL,
  predicted_ms REAL NOT NULL,
  search_s REAL NOT NULL,
  stages_profiled INTEGER NOT NULL,
  cache_hits INTEGER NOT NULL,
  candidates INTEGER NOT NULL,
  unique_signatures INTEGER NOT NULL,
  stages INTEGER NOT NULL,
  worker TEXT NOT NULL,
  backend TEXT NOT NULL,
  device_key TEXT NOT NULL
);
INSERT INTO results_v3
SELECT job_id, schedule_json,
  COALESCE(json_extract(result_json, '$.chosen'), 'ios'),
  CAST(COALESCE(json_extract(result_json, '$.predicted_ms'), 0) AS REAL),
  CAST(COALESCE(json_extract(result_json, '$.search_s'), 0) AS REAL),
  CAST(COALESCE(json_extract(result_json, '$.stages_profiled'), 0) AS INTEGER),
  CAST(COALESCE(json_extract(result_json, '$.cache_hits'), 0) AS INTEGER),
  CAST(COALESCE(json_extract(result_json, '$.candidates'), 0) AS INTEGER),
  CAST(COALESCE(json_extract(result_json, '$.unique_signatures'), 0) AS INTEGER),
  CAST(COALESCE(json_extract(result_json, '$.stages'), 0) AS INTEGER),
  COALESCE(json_extract(result_json, '$.worker'), ''),
  COALESCE(json_extract(result_json, '$.backend'), ''),
  COALESCE(json_extract(result_json, '$.device_key'), '')
FROM results;

CREATE TABLE result_latencies (
  job_id INTEGER NOT NULL REFERENCES results_v3(job_id),
  name TEXT NOT NULL CHECK (name <> ''),
  position INTEGER NOT NULL,
  median_ms REAL NOT NULL,
  p10_ms REAL NOT NULL,
  p90_ms REAL NOT NULL,
  cv REAL NOT NULL,
  repeats INTEGER NOT NULL,
  PRIMARY KEY (job_id, name)
) WITHOUT ROWID;
INSERT INTO result_latencies
SELECT r.job_id, n.name, n.position,
  CAST(COALESCE(json_extract(r.result_json, n.path || '.median_ms'), 0) AS REAL),
  CAST(COALESCE(json_extract(r.result_json, n.path || '.p10_ms'), 0) AS REAL),
  CAST(COALESCE(json_extract(r.result_json, n.path || '.p90_ms'), 0) AS REAL),
  CAST(COALESCE(json_extract(r.result_json, n.path || '.cv'), 0) AS REAL),
  CAST(COALESCE(json_extract(r.result_json, n.path || '.repeats'), 0) AS INTEGER)
FROM results r JOIN (SELECT 'ios' AS name, 0 AS position, '$.measured.ios' AS path
                     UNION ALL SELECT 'sequential', 1, '$.measured.sequential'
                     UNION ALL SELECT 'greedy', 2, '$.measured.greedy') n
WHERE json_type(r.result_json, n.path) = 'object';

DROP TABLE results;
ALTER TABLE results_v3 RENAME TO results;
)sql";

// Version 4: how many stage latencies a job's search obtained from outside
// (database hits or profiled), in its progress and its result. Jobs and
// results of earlier versions read 0.
constexpr const char kSchemaV4[] = R"sql(
ALTER TABLE jobs ADD COLUMN stages_measured INTEGER NOT NULL DEFAULT 0
  CHECK (stages_measured >= 0);
ALTER TABLE results ADD COLUMN stages_measured INTEGER NOT NULL DEFAULT 0
  CHECK (stages_measured >= 0);
)sql";

// Version 5: a job's cap on batches on workers at once (submit
// --max-parallel-batches; 0: as many as its key has idle GPUs) and the batch
// of each logged phase. Jobs of earlier versions ran one batch at a time and
// read 1; their phases read batch 0.
constexpr const char kSchemaV5[] = R"sql(
ALTER TABLE jobs ADD COLUMN opt_max_parallel_batches INTEGER NOT NULL DEFAULT 1
  CHECK (opt_max_parallel_batches >= 0);
ALTER TABLE phase_log ADD COLUMN batch INTEGER NOT NULL DEFAULT 0;
)sql";

// Version 6: the cores a device key's workers share a stage's groups over
// (RegisterWorker.cores; the cpu backend's threads), which a job's search
// takes for its core bound. Keys of earlier versions read 0 (no core bound)
// until a worker registers them again.
constexpr const char kSchemaV6[] = R"sql(
ALTER TABLE devices ADD COLUMN cores INTEGER NOT NULL DEFAULT 0 CHECK (cores >= 0);
)sql";

// Version 7: how far a job's stage measurements broke the bounded search's
// assumption (SearchStats::lower_bound_misses, largest_bound_miss_ms) and
// the cores its core bound used (0: none), in its result. Results of earlier
// versions read 0.
constexpr const char kSchemaV7[] = R"sql(
ALTER TABLE results ADD COLUMN lower_bound_misses INTEGER NOT NULL DEFAULT 0
  CHECK (lower_bound_misses >= 0);
ALTER TABLE results ADD COLUMN largest_bound_miss_ms REAL NOT NULL DEFAULT 0;
ALTER TABLE results ADD COLUMN search_cores INTEGER NOT NULL DEFAULT 0 CHECK (search_cores >= 0);
)sql";

// Version 8: what a device key's latest worker's device never beats
// (RegisterWorker.device_floor: per stage, per kernel launch, peak FLOP/s
// and bandwidth, whether issue adds to the work), which a job's search
// bounds stages by. Keys of earlier versions read all zeros (no floor) until
// a worker registers them again.
constexpr const char kSchemaV8[] = R"sql(
ALTER TABLE devices ADD COLUMN floor_stage_ms REAL NOT NULL DEFAULT 0 CHECK (floor_stage_ms >= 0);
ALTER TABLE devices ADD COLUMN floor_launch_ms REAL NOT NULL DEFAULT 0
  CHECK (floor_launch_ms >= 0);
ALTER TABLE devices ADD COLUMN floor_peak_gflops REAL NOT NULL DEFAULT 0
  CHECK (floor_peak_gflops >= 0);
ALTER TABLE devices ADD COLUMN floor_bandwidth_gbps REAL NOT NULL DEFAULT 0
  CHECK (floor_bandwidth_gbps >= 0);
ALTER TABLE devices ADD COLUMN floor_issue_adds INTEGER NOT NULL DEFAULT 0
  CHECK (floor_issue_adds IN (0, 1));
)sql";

// Version 9: the order a device key's latest worker issues a concurrent
// stage's kernels in (DeviceFloor::IssueOrder: 0 unknown, 1 round-robin, 2
// group by group), which tightens its floor. Keys of earlier versions read
// 0 until a worker registers them again.
constexpr const char kSchemaV9[] = R"sql(
ALTER TABLE devices ADD COLUMN floor_issue_order INTEGER NOT NULL DEFAULT 0
  CHECK (floor_issue_order IN (0, 1, 2));
)sql";

// Version 10: whether a device key's latest worker times a stage's runs back
// to back (DeviceFloor::back_to_back: only the issue's throughput bounds a
// run then), and which ops its floor counts no kernel for
// (DeviceFloor::FreeOps: 0 views, 1 also Add, Relu, Concat and Split). Keys
// of earlier versions read 0 and 0, as every floor of theirs was.
constexpr const char kSchemaV10[] = R"sql(
ALTER TABLE devices ADD COLUMN floor_back_to_back INTEGER NOT NULL DEFAULT 0
  CHECK (floor_back_to_back IN (0, 1));
ALTER TABLE devices ADD COLUMN floor_free_ops INTEGER NOT NULL DEFAULT 0
  CHECK (floor_free_ops IN (0, 1));
)sql";

// Version 11: what concurrent groups cost a device key's stages beyond
// sharing its peak (DeviceFloor::contention, a fraction of the work per
// extra group). Keys of earlier versions read 0, as every floor of theirs
// was.
constexpr const char kSchemaV11[] = R"sql(
ALTER TABLE devices ADD COLUMN floor_contention REAL NOT NULL DEFAULT 0
  CHECK (floor_contention >= 0);
)sql";

// Version 12: the stages a job's search was expected to measure when it was
// submitted (server/search_estimate.h); -1 where nothing estimated it.
constexpr const char kSchemaV12[] = R"sql(
ALTER TABLE jobs ADD COLUMN estimated_stages INTEGER NOT NULL DEFAULT -1
  CHECK (estimated_stages >= -1);
)sql";

constexpr std::array<Migration, 12> kMigrations = {{
    {1, "devices, latencies, models, jobs, results, phase_log", kSchemaV1},
    {2, "jobs.resumes", kSchemaV2},
    {3, "typed results: results columns, result_latencies, results_unreadable", kSchemaV3},
    {4, "jobs.stages_measured, results.stages_measured", kSchemaV4},
    {5, "jobs.opt_max_parallel_batches, phase_log.batch", kSchemaV5},
    {6, "devices.cores", kSchemaV6},
    {7, "results.lower_bound_misses, largest_bound_miss_ms, search_cores", kSchemaV7},
    {8, "devices.floor_*", kSchemaV8},
    {9, "devices.floor_issue_order", kSchemaV9},
    {10, "devices.floor_back_to_back, floor_free_ops", kSchemaV10},
    {11, "devices.floor_contention", kSchemaV11},
    {12, "jobs.estimated_stages", kSchemaV12},
}};

StatusOr<int64_t> PragmaInt(SqliteDb& db, const char* pragma) {
  ASSIGN_OR_RETURN(Statement stmt, db.Prepare(StrCat("PRAGMA ", pragma)));
  ASSIGN_OR_RETURN(bool row, stmt.Step());
  if (!row) return absl::InternalError(StrCat("PRAGMA ", pragma, " returned no row"));
  return stmt.ColumnInt64(0);
}

// The schema version of an open database, or an error if it is not an
// iosfarm database or newer than `newest`. An SQLite file without tables and
// without version is version 0 (a fresh file).
StatusOr<int64_t> CurrentVersion(SqliteDb& db, int64_t newest) {
  ASSIGN_OR_RETURN(int64_t application_id, PragmaInt(db, "application_id"));
  ASSIGN_OR_RETURN(int64_t version, PragmaInt(db, "user_version"));
  if (application_id == kApplicationId) {
    if (version > newest) {
      return absl::FailedPreconditionError(
          StrCat("database '", db.path(), "' has schema version ", version,
                 " but this iosfarm binary knows versions up to ", newest,
                 "; use a newer iosfarm (the file was left unchanged)"));
    }
    return version;
  }
  ASSIGN_OR_RETURN(Statement tables, db.Prepare("SELECT name FROM sqlite_master "
                                                "WHERE name NOT LIKE 'sqlite_%' ORDER BY name"));
  std::string names;
  int count = 0;
  while (true) {
    ASSIGN_OR_RETURN(bool row, tables.Step());
    if (!row) break;
    if (count < 5) names += StrCat(count > 0 ? ", " : "", tables.ColumnText(0));
    ++count;
  }
  if (application_id == 0 && version == 0 && count == 0) return 0;
  return absl::InvalidArgumentError(StrCat(
      "'", db.path(), "' is not an iosfarm database (application_id ", application_id,
      ", user_version ", version, ", ", count, " schema objects", count > 0 ? ": " : "", names,
      count > 5 ? ", ..." : "", "); the file was left unchanged"));
}

Status CheckMigrationList(std::span<const Migration> migrations) {
  for (size_t i = 0; i < migrations.size(); ++i) {
    if (migrations[i].version != static_cast<int64_t>(i) + 1) {
      return absl::InternalError(StrCat("migration list out of order at step ", i + 1,
                                        " (version ", migrations[i].version, ")"));
    }
  }
  return absl::OkStatus();
}

}  // namespace

std::span<const Migration> Migrations() { return kMigrations; }

Status InspectDatabaseFile(const std::string& path, std::span<const Migration> migrations) {
  std::error_code error;
  const auto status = std::filesystem::status(path, error);
  if (error || !std::filesystem::exists(status)) return absl::OkStatus();  // created on open
  if (!std::filesystem::is_regular_file(status)) {
    return absl::InvalidArgumentError(
        StrCat("'", path, "' is not an iosfarm database: not a regular file"));
  }
  const auto size = std::filesystem::file_size(path, error);
  if (error) {
    return absl::UnavailableError(StrCat("cannot read '", path, "': ", error.message()));
  }
  if (size == 0) return absl::OkStatus();  // SQLite treats an empty file as an empty database
  std::ifstream in(path, std::ios::binary);
  if (!in) return absl::UnavailableError(StrCat("cannot read '", path, "'"));
  static constexpr char kMagic[] = "SQLite format 3";  // 16 bytes with the NUL
  char header[sizeof(kMagic)] = {};
  in.read(header, sizeof(header));
  if (in.gcount() != static_cast<std::streamsize>(sizeof(header)) ||
      std::memcmp(header, kMagic, sizeof(kMagic)) != 0) {
    return absl::InvalidArgumentError(StrCat(
        "'", path, "' is not an iosfarm database: not an SQLite file; the file was left unchanged"));
  }
  in.close();
  ASSIGN_OR_RETURN(std::unique_ptr<SqliteDb> db, SqliteDb::OpenReadOnly(path));
  const int64_t newest = migrations.empty() ? 0 : migrations.back().version;
  StatusOr<int64_t> version = CurrentVersion(*db, newest);
  if (!version.ok() && absl::IsInternal(version.status())) {
    // SQLite could not read it (corrupt, encrypted, ...).
    return absl::InvalidArgumentError(StrCat("'", path, "' is not a usable iosfarm database: ",
                                             ToStd(version.status().message())));
  }
  return version.status();
}

Status MigrateSchema(SqliteDb& db, std::span<const Migration> migrations, int64_t now_unix_ms) {
  RETURN_IF_ERROR(CheckMigrationList(migrations));
  const int64_t newest = migrations.empty() ? 0 : migrations.back().version;
  while (true) {
    ASSIGN_OR_RETURN(Transaction tx, Transaction::Begin(db));
    ASSIGN_OR_RETURN(int64_t version, CurrentVersion(db, newest));
    if (version >= newest) return tx.Commit();
    const Migration& step = migrations[version];  // takes `version` to `version + 1`
    Status status = db.Exec(step.sql);
    if (status.ok()) {
      status = db.Exec(
          "CREATE TABLE IF NOT EXISTS schema_migrations ("
          "version INTEGER PRIMARY KEY, description TEXT NOT NULL, "
          "applied_unix_ms INTEGER NOT NULL)");
    }
    if (status.ok()) {
      auto note = db.Prepare("INSERT INTO schema_migrations VALUES (?1, ?2, ?3)");
      status = note.status();
      if (status.ok()) status = note->BindInt64(1, step.version);
      if (status.ok()) status = note->BindText(2, step.description);
      if (status.ok()) status = note->BindInt64(3, now_unix_ms);
      if (status.ok()) status = note->Step().status();
    }
    if (status.ok()) status = db.Exec(StrCat("PRAGMA application_id = ", kApplicationId));
    if (status.ok()) status = db.SetUserVersion(step.version);
    if (status.ok()) status = tx.Commit();
    if (!status.ok()) {
      return absl::InternalError(StrCat("migrating '", db.path(), "' to schema version ",
                                        step.version, " failed (rolled back): ",
                                        ToStd(status.message())));
    }
  }
}

}  // namespace iosfarm::server
