#include "server/store_schema.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <functional>
#include <vector>

#include "common/strings.h"
#include "server/farm_database.h"
#include "server/sqlite_db.h"
#include "server/store_test_rows.h"
#include "server/store_test_util.h"

namespace iosfarm::server {
namespace {

using ::testing::HasSubstr;

using StoreSchemaTest = TempDirTest;

int64_t QueryInt(SqliteDb& db, const std::string& sql) {
  auto stmt = db.Prepare(sql);
  EXPECT_TRUE(stmt.ok()) << stmt.status();
  if (!stmt.ok()) return -1;
  auto row = stmt->Step();
  EXPECT_TRUE(row.ok() && *row) << sql;
  return stmt->ColumnInt64(0);
}

bool HasTable(SqliteDb& db, const std::string& table) {
  return QueryInt(db, "SELECT COUNT(*) FROM sqlite_master WHERE type = 'table' AND name = '" +
                          table + "'") == 1;
}

void ExpectCurrentSchema(const std::string& path) {
  auto db = SqliteDb::Open(path);
  ASSERT_TRUE(db.ok()) << db.status();
  EXPECT_EQ(QueryInt(**db, "PRAGMA user_version"), kSchemaVersion);
  EXPECT_EQ(QueryInt(**db, "PRAGMA application_id"), kApplicationId);
  EXPECT_EQ(QueryInt(**db, "SELECT COUNT(*) FROM schema_migrations"), kSchemaVersion);
  for (const char* table : {"devices", "latencies", "models", "jobs", "results", "result_latencies",
                            "results_unreadable", "phase_log", "schema_migrations"}) {
    EXPECT_TRUE(HasTable(**db, table)) << table;
  }
  EXPECT_EQ(QueryInt(**db, "SELECT COUNT(*) FROM pragma_integrity_check WHERE "
                           "integrity_check <> 'ok'"),
            0);
}

TEST_F(StoreSchemaTest, MigrationListIsConsecutiveFromOne) {
  auto steps = Migrations();
  ASSERT_EQ(static_cast<int64_t>(steps.size()), kSchemaVersion);
  for (size_t i = 0; i < steps.size(); ++i) EXPECT_EQ(steps[i].version, int64_t(i) + 1);
  EXPECT_EQ(steps.back().version, kSchemaVersion);
}

TEST_F(StoreSchemaTest, NewFileGetsCurrentSchema) {
  const std::string path = PathOf("new.db");
  ASSERT_TRUE(OpenFarmDatabase(path).ok());
  ExpectCurrentSchema(path);
  // Opening again applies nothing twice.
  ASSERT_TRUE(OpenFarmDatabase(path).ok());
  ExpectCurrentSchema(path);
}

TEST_F(StoreSchemaTest, ZeroByteFileIsMigrated) {
  const std::string path = PathOf("empty.db");
  WriteFileBytes(path, "");
  auto store = OpenFarmDatabase(path);
  ASSERT_TRUE(store.ok()) << store.status();
  *store = FarmDatabase();
  ExpectCurrentSchema(path);
}

TEST_F(StoreSchemaTest, HandMadeVersionZeroFileIsMigrated) {
  const std::string path = PathOf("v0.db");
  {
    // A real SQLite file (rollback journal) with no tables and user_version 0.
    auto db = SqliteDb::Open(path);
    ASSERT_TRUE(db.ok());
    ASSERT_TRUE((*db)->Exec("PRAGMA journal_mode=DELETE; CREATE TABLE scratch (a); "
                            "DROP TABLE scratch;")
                    .ok());
  }
  ASSERT_GT(std::filesystem::file_size(path), 0u);
  auto store = OpenFarmDatabase(path);
  ASSERT_TRUE(store.ok()) << store.status();
  *store = FarmDatabase();
  ExpectCurrentSchema(path);
  auto db = SqliteDb::Open(path);
  ASSERT_TRUE(db.ok());
  auto mode = (*db)->Prepare("PRAGMA journal_mode");
  ASSERT_TRUE(mode.ok() && *mode->Step());
  EXPECT_EQ(mode->ColumnText(0), "wal");
}

// A future step after this binary's newest that adds a table and a column.
constexpr int64_t kNext = kSchemaVersion + 1;
constexpr Migration kNextStep = {kNext, "test: notes table and devices.rack",
                                 "CREATE TABLE notes (id INTEGER PRIMARY KEY, text TEXT NOT NULL);"
                                 "ALTER TABLE devices ADD COLUMN rack TEXT NOT NULL DEFAULT '';"};

// This binary's steps followed by `next`.
std::vector<Migration> WithNextStep(const Migration& next) {
  std::vector<Migration> steps(Migrations().begin(), Migrations().end());
  steps.push_back(next);
  return steps;
}

// Creates `path` at schema `version` (this binary's first steps) holding the
// model d1 (squeezenet), for the jobs a test then writes as that version did.
void CreateOldFileWithModel(const std::string& path, size_t version) {
  auto store = OpenFarmDatabase(path, Migrations().first(version));
  ASSERT_TRUE(store.ok()) << store.status();
  ASSERT_TRUE(store->jobs->PutModel(Model("d1", "squeezenet")).ok());
}

// Creates `path` at schema `version` (this binary's first steps) holding one
// device row, written in SQL with `columns` and `values` as that version
// had them (this binary's UpsertDevice writes columns it lacks).
void CreateOldFileWithDevice(const std::string& path, size_t version, const std::string& columns,
                             const std::string& values) {
  {
    auto store = OpenFarmDatabase(path, Migrations().first(version));
    ASSERT_TRUE(store.ok()) << store.status();
  }
  auto db = SqliteDb::Open(path);
  ASSERT_TRUE(db.ok()) << db.status();
  ASSERT_TRUE((*db)->Exec("INSERT INTO devices (" + columns + ") VALUES (" + values + ")").ok());
}

// Opens `path` (an older file, CreateOldFileWithDevice) with this binary,
// hands `key`'s migrated floor to `read` (which checks it and may change
// it), registers the key again with that floor as a worker would, hands
// what is then stored to `stored`, and checks that the file is at the
// current schema once closed.
void ReregisterMigratedFloor(
    const std::string& path, const std::string& key,
    const std::function<void(scheduler::ios::DeviceFloor&)>& read,
    const std::function<void(const scheduler::ios::DeviceFloor&)>& stored) {
  {
    auto store = OpenFarmDatabase(path);
    ASSERT_TRUE(store.ok()) << store.status();
    auto floor = store->latencies->DeviceFloorOf(key);
    ASSERT_TRUE(floor.ok()) << floor.status();
    read(*floor);
    ASSERT_TRUE(store->latencies->UpsertDevice(key, "", "", 30, 0, *floor).ok());
    auto again = store->latencies->DeviceFloorOf(key);
    ASSERT_TRUE(again.ok()) << again.status();
    stored(*again);
  }
  ExpectCurrentSchema(path);
}

TEST_F(StoreSchemaTest, MigratesStepByStepKeepingData) {
  const std::string path = PathOf("steps.db");
  {
    auto store = OpenFarmDatabase(path);
    ASSERT_TRUE(store.ok());
    ASSERT_TRUE(store->latencies->UpsertDevice("h100-sxm", "H100", "cuda", 10).ok());
  }
  const std::vector<Migration> steps = WithNextStep(kNextStep);
  {
    auto store = OpenFarmDatabase(path, steps);
    ASSERT_TRUE(store.ok()) << store.status();
    auto devices = store->latencies->ListDevices();
    ASSERT_TRUE(devices.ok()) << devices.status();
    ASSERT_EQ(devices->size(), 1u);
    EXPECT_EQ((*devices)[0].key, "h100-sxm");
  }
  {
    auto db = SqliteDb::Open(path);
    ASSERT_TRUE(db.ok());
    EXPECT_EQ(QueryInt(**db, "PRAGMA user_version"), kNext);
    EXPECT_TRUE(HasTable(**db, "notes"));
    EXPECT_EQ(QueryInt(**db, "SELECT COUNT(*) FROM schema_migrations"), kNext);
    EXPECT_EQ(QueryInt(**db, "SELECT COUNT(*) FROM devices WHERE rack = ''"), 1);
  }
  // This binary refuses the newer file.
  auto old = OpenFarmDatabase(path);
  ASSERT_FALSE(old.ok());
  EXPECT_TRUE(absl::IsFailedPrecondition(old.status())) << old.status();
}

TEST_F(StoreSchemaTest, AVersion1FileGainsJobResumesKeepingItsJobs) {
  const std::string path = PathOf("v1.db");
  int64_t id = 0;
  {
    auto store = OpenFarmDatabase(path, Migrations().first(1));
    ASSERT_TRUE(store.ok()) << store.status();
    ModelRow model;
    model.digest = "d1";
    model.name = "squeezenet";
    model.source = "zoo";
    model.batch = 1;
    ASSERT_TRUE(store->jobs->PutModel(model).ok());
  }
  id = InsertOldJob(path, "d1", "k");
  auto store = OpenFarmDatabase(path);
  ASSERT_TRUE(store.ok()) << store.status();
  auto job = store->jobs->GetJob(id);
  ASSERT_TRUE(job.ok() && job->has_value());
  EXPECT_EQ((*job)->model_name, "squeezenet");
  EXPECT_EQ((*job)->resumes, 0);
  auto counted = store->jobs->AddResumes(id, 1);
  ASSERT_TRUE(counted.ok()) << counted.status();
  EXPECT_EQ(*counted, 1);
}

// A version-2 file as a version-2 server left it: results as JSON text
// (written by JobRunner::ApplyMeasure then; nlohmann sorts the keys; the
// figures of FullResult), a job without a result, latencies. Version 3 keeps
// every figure in columns.
TEST_F(StoreSchemaTest, AVersion2FileGainsTypedResultsKeepingEveryFigure) {
  const std::string path = PathOf("v2.db");
  const std::vector<int64_t> ids = WriteVersion2Results(
      path,
      {R"({"backend":"sim","cache_hits":30,"candidates":900,"chosen":"sequential",)"
       R"("device_key":"sim-test","measured":{)"
       R"("greedy":{"cv":0.03,"median_ms":0.9,"p10_ms":0.88,"p90_ms":0.95,"repeats":22},)"
       R"("ios":{"cv":0.01,"median_ms":0.7,"p10_ms":0.69,"p90_ms":0.72,"repeats":20},)"
       R"("sequential":{"cv":0.02,"median_ms":0.8,"p10_ms":0.79,"p90_ms":0.83,"repeats":21}},)"
       R"("predicted_ms":0.65,"search_s":1.25,"stages":11,"stages_profiled":120,)"
       R"("unique_signatures":150,"worker":"w1"})",
       R"({"measured":{"ios":{"median_ms":2.0,"p10_ms":1.9,"p90_ms":2.1,"cv":0.0,"repeats":3}},)"
       R"("predicted_ms":2,"search_s":0.5,"stages_profiled":0,"cache_hits":9,"candidates":9,)"
       R"("unique_signatures":9,"stages":1,"worker":"w1","backend":"sim","device_key":"k"})"});
  ASSERT_EQ(ids.size(), 2u);
  int64_t queued = 0;
  {
    auto v2 = OpenFarmDatabase(path, Migrations().first(2));
    ASSERT_TRUE(v2.ok()) << v2.status();
    ASSERT_TRUE(v2->latencies->PutLatencies("h100", {{5, Latency(0.5)}}).ok());
  }
  queued = InsertOldJob(path, "d1", "k");
  auto store = OpenFarmDatabase(path);
  ASSERT_TRUE(store.ok()) << store.status();
  EXPECT_EQ(*store->jobs->CountUnreadableResults(), 0);
  ResultRow want = FullResult(ids[0]);
  want.schedule_json = "{\"job\": 0}";
  ClearFiguresAfterVersion3(want);
  auto first = store->jobs->GetResult(ids[0]);
  ASSERT_TRUE(first.ok() && first->has_value()) << first.status();
  ExpectSameResult(**first, want);
  auto second = store->jobs->GetResult(ids[1]);
  ASSERT_TRUE(second.ok() && second->has_value()) << second.status();
  ASSERT_EQ((*second)->measured.size(), 1u);
  EXPECT_DOUBLE_EQ((*second)->measured[0].median_ms, 2.0);
  EXPECT_DOUBLE_EQ((*second)->predicted_ms, 2.0);  // an integer in the JSON
  EXPECT_EQ((*second)->chosen, "ios");
  EXPECT_EQ((*second)->cache_hits, 9);
  // Jobs, the job without a result and the latencies are all kept.
  EXPECT_EQ((*store->jobs->GetJob(ids[1]))->state, JobState::kSucceeded);
  EXPECT_FALSE(store->jobs->GetResult(queued)->has_value());
  EXPECT_EQ((*store->jobs->GetJob(queued))->state, JobState::kQueued);
  EXPECT_EQ(*store->latencies->CountLatencies("h100"), 1);
  *store = FarmDatabase();
  ExpectCurrentSchema(path);
  auto db = SqliteDb::Open(path);
  ASSERT_TRUE(db.ok());
  EXPECT_EQ(QueryInt(**db, "SELECT COUNT(*) FROM pragma_table_info('results') "
                           "WHERE name = 'result_json'"),
            0);
  EXPECT_EQ(QueryInt(**db, "SELECT COUNT(*) FROM pragma_foreign_key_check"), 0);
}

// A version-3 file with a finished job (its result and measurements) and a
// running one: version 4 keeps every figure and reads stages_measured as 0.
TEST_F(StoreSchemaTest, AVersion3FileGainsStagesMeasuredKeepingJobsAndResults) {
  const std::string path = PathOf("v3.db");
  int64_t done = 0, running = 0;
  ASSERT_NO_FATAL_FAILURE(CreateOldFileWithModel(path, 3));
  done = InsertOldJob(path, "d1", "sim-test");
  running = InsertOldJob(path, "d1", "sim-test");
  {
    // In SQL: this binary's JobStore writes columns a version-3 file lacks.
    auto db = SqliteDb::Open(path);
    ASSERT_TRUE(db.ok()) << db.status();
    ASSERT_TRUE((*db)->Exec(StrCat(
        "UPDATE jobs SET state = 'succeeded', started_unix_ms = 10, finished_unix_ms = 20, "
        "blocks_total = 4, blocks_done = 4, stages_profiled = 120, cache_hits = 30, "
        "candidates = 900, unique_signatures = 150, phase = 'measure' WHERE id = ", done, ";"
        "UPDATE jobs SET state = 'running', started_unix_ms = 30, blocks_total = 6, "
        "blocks_done = 2, stages_profiled = 7, cache_hits = 5, candidates = 80, "
        "unique_signatures = 12, phase = 'profile' WHERE id = ", running, ";"
        "INSERT INTO results (job_id, schedule_json, chosen, predicted_ms, search_s, "
        "stages_profiled, cache_hits, candidates, unique_signatures, stages, worker, backend, "
        "device_key) VALUES (", done, ", '{\"stages\": [1, 2]}', 'sequential', 0.65, 1.25, "
        "120, 30, 900, 150, 11, 'w1', 'sim', 'sim-test');"
        "INSERT INTO result_latencies VALUES (", done, ", 'ios', 0, 0.7, 0.69, 0.72, 0.01, 20),"
        "(", done, ", 'sequential', 1, 0.8, 0.79, 0.83, 0.02, 21),"
        "(", done, ", 'greedy', 2, 0.9, 0.88, 0.95, 0.03, 22);"))
                    .ok());
  }
  auto store = OpenFarmDatabase(path);
  ASSERT_TRUE(store.ok()) << store.status();
  ResultRow want = FullResult(done);  // the figures written above
  ClearFiguresAfterVersion3(want);
  auto result = store->jobs->GetResult(done);
  ASSERT_TRUE(result.ok() && result->has_value()) << result.status();
  ExpectSameResult(**result, want);
  const JobRow finished = **store->jobs->GetJob(done);
  EXPECT_EQ(finished.state, JobState::kSucceeded);
  EXPECT_EQ(finished.finished_unix_ms, 20);
  EXPECT_EQ(finished.unique_signatures, 150);
  EXPECT_EQ(finished.stages_measured, 0);
  JobRow job = **store->jobs->GetJob(running);
  EXPECT_EQ(job.state, JobState::kRunning);
  EXPECT_EQ(job.blocks_done, 2);
  EXPECT_EQ(job.stages_profiled, 7);
  EXPECT_EQ(job.cache_hits, 5);
  EXPECT_EQ(job.candidates, 80);
  EXPECT_EQ(job.unique_signatures, 12);
  EXPECT_EQ(job.phase, "profile");
  EXPECT_EQ(job.stages_measured, 0);
  // The new column is written like the others.
  job.stages_measured = 11;
  ASSERT_TRUE(store->jobs->UpdateJobProgress(job).ok());
  EXPECT_EQ((*store->jobs->GetJob(running))->stages_measured, 11);
  *store = FarmDatabase();
  ExpectCurrentSchema(path);
  auto db = SqliteDb::Open(path);
  ASSERT_TRUE(db.ok());
  EXPECT_EQ(QueryInt(**db, "SELECT COUNT(*) FROM pragma_foreign_key_check"), 0);
}

// A version-4 file's jobs ran one batch at a time: version 5 reads their cap
// as 1; new jobs keep theirs (0: as many as the key has idle GPUs).
TEST_F(StoreSchemaTest, AVersion4FileGainsMaxParallelBatchesOfOne) {
  const std::string path = PathOf("v4.db");
  ASSERT_NO_FATAL_FAILURE(CreateOldFileWithModel(path, 4));
  const int64_t old_job = InsertOldJob(path, "d1", "k");
  auto store = OpenFarmDatabase(path);
  ASSERT_TRUE(store.ok()) << store.status();
  EXPECT_EQ((*store->jobs->GetJob(old_job))->options.max_parallel_batches, 1);
  JobRow fresh = Job("d1", "k");
  fresh.options.max_parallel_batches = 0;
  const int64_t auto_id = *store->jobs->CreateJob(fresh);
  fresh.options.max_parallel_batches = 6;
  const int64_t six_id = *store->jobs->CreateJob(fresh);
  EXPECT_EQ((*store->jobs->GetJob(auto_id))->options.max_parallel_batches, 0);
  EXPECT_EQ((*store->jobs->GetJob(six_id))->options.max_parallel_batches, 6);
  *store = FarmDatabase();
  ExpectCurrentSchema(path);
}

// A version-5 file's device keys read 0 cores (no core bound) until a worker
// registers them again, keeping the rest of their row.
TEST_F(StoreSchemaTest, AVersion5FileGainsDeviceCoresOfZero) {
  const std::string path = PathOf("v5.db");
  ASSERT_NO_FATAL_FAILURE(CreateOldFileWithDevice(
      path, 5, "key, description, backend, first_seen_unix_ms, last_seen_unix_ms",
      "'local-cpu', 'oneDNN, 2 threads', 'cpu', 10, 20"));
  auto store = OpenFarmDatabase(path);
  ASSERT_TRUE(store.ok()) << store.status();
  EXPECT_EQ(*store->latencies->DeviceCores("local-cpu"), 0);
  auto devices = store->latencies->ListDevices();
  ASSERT_TRUE(devices.ok()) << devices.status();
  ASSERT_EQ(devices->size(), 1u);
  EXPECT_EQ((*devices)[0].description, "oneDNN, 2 threads");
  EXPECT_EQ((*devices)[0].backend, "cpu");
  EXPECT_EQ((*devices)[0].first_seen_unix_ms, 10);
  EXPECT_EQ((*devices)[0].cores, 0);
  ASSERT_TRUE(store->latencies->UpsertDevice("local-cpu", "", "cpu", 30, 2).ok());
  EXPECT_EQ(*store->latencies->DeviceCores("local-cpu"), 2);
  *store = FarmDatabase();
  ExpectCurrentSchema(path);
}

// A version-7 file's device keys read no device floor until a worker
// registers them again, keeping the rest of their row.
TEST_F(StoreSchemaTest, AVersion7FileGainsNoDeviceFloor) {
  const std::string path = PathOf("v7.db");
  ASSERT_NO_FATAL_FAILURE(CreateOldFileWithDevice(
      path, 7, "key, description, backend, first_seen_unix_ms, last_seen_unix_ms, cores",
      "'sim-h100', 'sim h100', 'sim', 10, 20, 0"));
  auto store = OpenFarmDatabase(path);
  ASSERT_TRUE(store.ok()) << store.status();
  EXPECT_FALSE(store->latencies->DeviceFloorOf("sim-h100")->bounds_anything());
  auto devices = store->latencies->ListDevices();
  ASSERT_TRUE(devices.ok()) << devices.status();
  ASSERT_EQ(devices->size(), 1u);
  EXPECT_EQ((*devices)[0].description, "sim h100");
  EXPECT_EQ((*devices)[0].first_seen_unix_ms, 10);
  scheduler::ios::DeviceFloor floor;
  floor.launch_ms = 0.003;
  ASSERT_TRUE(store->latencies->UpsertDevice("sim-h100", "", "sim", 30, 0, floor).ok());
  EXPECT_DOUBLE_EQ(store->latencies->DeviceFloorOf("sim-h100")->launch_ms, 0.003);
  *store = FarmDatabase();
  ExpectCurrentSchema(path);
}

// A version-8 file's device floors read no issue order (their bound left
// out) until a worker registers them again, keeping the rest of the floor.
TEST_F(StoreSchemaTest, AVersion8FileGainsNoIssueOrder) {
  const std::string path = PathOf("v8.db");
  ASSERT_NO_FATAL_FAILURE(CreateOldFileWithDevice(
      path, 8,
      "key, description, backend, first_seen_unix_ms, last_seen_unix_ms, cores, floor_launch_ms",
      "'sim-h100', 'sim h100', 'sim', 10, 20, 0, 0.003"));
  using Order = scheduler::ios::DeviceFloor::IssueOrder;
  ReregisterMigratedFloor(
      path, "sim-h100",
      [](scheduler::ios::DeviceFloor& floor) {
        EXPECT_DOUBLE_EQ(floor.launch_ms, 0.003);
        EXPECT_EQ(floor.issue_order, Order::kUnknown);
        floor.issue_order = Order::kRoundRobin;
      },
      [](const scheduler::ios::DeviceFloor& floor) {
        EXPECT_EQ(floor.issue_order, Order::kRoundRobin);
      });
}

// A version-9 file's device floors read as timed from an idle device, as
// every floor stored then was, until a worker registers them again.
TEST_F(StoreSchemaTest, AVersion9FileGainsFloorsNotTimedBackToBack) {
  const std::string path = PathOf("v9.db");
  ASSERT_NO_FATAL_FAILURE(CreateOldFileWithDevice(
      path, 9,
      "key, description, backend, first_seen_unix_ms, last_seen_unix_ms, cores, floor_launch_ms, "
      "floor_issue_order",
      "'sim-h100', 'sim h100', 'sim', 10, 20, 0, 0.003, 1"));
  ReregisterMigratedFloor(
      path, "sim-h100",
      [](scheduler::ios::DeviceFloor& floor) {
        EXPECT_DOUBLE_EQ(floor.launch_ms, 0.003);
        EXPECT_EQ(floor.issue_order, scheduler::ios::DeviceFloor::IssueOrder::kRoundRobin);
        EXPECT_FALSE(floor.back_to_back);
        EXPECT_EQ(floor.free_ops, scheduler::ios::DeviceFloor::FreeOps::kViews);
        floor.issue_order = scheduler::ios::DeviceFloor::IssueOrder::kUnknown;
        floor.back_to_back = true;
      },
      [](const scheduler::ios::DeviceFloor& floor) { EXPECT_TRUE(floor.back_to_back); });
}

// A version-10 file's device floors read no contention, as every floor
// stored then claimed none, until a worker registers them again.
TEST_F(StoreSchemaTest, AVersion10FileGainsFloorsWithoutContention) {
  const std::string path = PathOf("v10.db");
  ASSERT_NO_FATAL_FAILURE(CreateOldFileWithDevice(
      path, 10,
      "key, description, backend, first_seen_unix_ms, last_seen_unix_ms, cores, floor_launch_ms, "
      "floor_back_to_back, floor_free_ops",
      "'cuda-h200', 'H200', 'cuda', 10, 20, 0, 0.003, 1, 1"));
  ReregisterMigratedFloor(
      path, "cuda-h200",
      [](scheduler::ios::DeviceFloor& floor) {
        EXPECT_DOUBLE_EQ(floor.launch_ms, 0.003);
        EXPECT_TRUE(floor.back_to_back);
        EXPECT_EQ(floor.free_ops, scheduler::ios::DeviceFloor::FreeOps::kViewsAndFusable);
        EXPECT_DOUBLE_EQ(floor.contention, 0);
        floor.contention = 0.05;
      },
      [](const scheduler::ios::DeviceFloor& floor) {
        EXPECT_DOUBLE_EQ(floor.contention, 0.05);
        EXPECT_TRUE(floor.back_to_back);
      });
}

// A version-6 file's results read no bound misses and no core bound; new
// results keep theirs.
TEST_F(StoreSchemaTest, AVersion6FileGainsBoundFiguresOfZeroInItsResults) {
  const std::string path = PathOf("v6.db");
  ASSERT_NO_FATAL_FAILURE(CreateOldFileWithModel(path, 6));
  const int64_t old_job = InsertOldJob(path, "d1", "sim-test");
  {
    // In SQL: this binary's PutResult writes columns a version-6 file lacks.
    auto db = SqliteDb::Open(path);
    ASSERT_TRUE(db.ok()) << db.status();
    ASSERT_TRUE(
        (*db)
            ->Exec(StrCat(
                "INSERT INTO results (job_id, schedule_json, chosen, predicted_ms, search_s, "
                "stages_profiled, cache_hits, candidates, unique_signatures, stages_measured, "
                "stages, "
                "worker, backend, device_key) VALUES (",
                old_job,
                ", '{\"stages\": [1, 2]}', 'ios', "
                "0.65, 1.25, 120, 30, 900, 150, 140, 11, 'w1', 'sim', 'sim-test');"))
            .ok());
  }
  auto store = OpenFarmDatabase(path);
  ASSERT_TRUE(store.ok()) << store.status();
  auto old_result = store->jobs->GetResult(old_job);
  ASSERT_TRUE(old_result.ok() && old_result->has_value()) << old_result.status();
  EXPECT_EQ((*old_result)->stages_measured, 140);
  EXPECT_EQ((*old_result)->lower_bound_misses, 0);
  EXPECT_EQ((*old_result)->largest_bound_miss_ms, 0);
  EXPECT_EQ((*old_result)->search_cores, 0);
  const int64_t new_job = *store->jobs->CreateJob(Job("d1", "sim-test"));
  const ResultRow want = FullResult(new_job);
  ASSERT_TRUE(store->jobs->PutResult(want).ok());
  auto new_result = store->jobs->GetResult(new_job);
  ASSERT_TRUE(new_result.ok() && new_result->has_value()) << new_result.status();
  ExpectSameResult(**new_result, want);
  *store = FarmDatabase();
  ExpectCurrentSchema(path);
}

TEST_F(StoreSchemaTest, MigratesFromEmptyThroughEveryStep) {
  const std::string path = PathOf("all.db");
  ASSERT_TRUE(OpenFarmDatabase(path, WithNextStep(kNextStep)).ok());
  auto db = SqliteDb::Open(path);
  ASSERT_TRUE(db.ok());
  EXPECT_EQ(QueryInt(**db, "PRAGMA user_version"), kNext);
  EXPECT_EQ(QueryInt(**db, "SELECT MAX(version) FROM schema_migrations"), kNext);
}

TEST_F(StoreSchemaTest, FailingStepIsRolledBackWhole) {
  const std::string path = PathOf("fail.db");
  ASSERT_TRUE(OpenFarmDatabase(path).ok());
  auto store = OpenFarmDatabase(
      path, WithNextStep({kNext, "broken", "CREATE TABLE half (a); SELECT no_such_function();"}));
  ASSERT_FALSE(store.ok());
  EXPECT_TRUE(absl::IsInternal(store.status())) << store.status();
  EXPECT_THAT(std::string(store.status().message()), HasSubstr(StrCat("version ", kNext)));
  auto db = SqliteDb::Open(path);
  ASSERT_TRUE(db.ok());
  EXPECT_EQ(QueryInt(**db, "PRAGMA user_version"), kSchemaVersion);
  EXPECT_FALSE(HasTable(**db, "half"));
  EXPECT_EQ(QueryInt(**db, "SELECT COUNT(*) FROM schema_migrations"), kSchemaVersion);
}

TEST_F(StoreSchemaTest, OutOfOrderMigrationListIsAnError) {
  const Migration gap[] = {{1, "one", "CREATE TABLE a (x);"}, {3, "three", "CREATE TABLE b (x);"}};
  auto store = OpenFarmDatabase(PathOf("gap.db"), gap);
  ASSERT_FALSE(store.ok());
  EXPECT_TRUE(absl::IsInternal(store.status()));
}

TEST_F(StoreSchemaTest, RefusesNewerSchemaWithoutChangingTheFile) {
  const std::string path = PathOf("newer.db");
  {
    auto store = OpenFarmDatabase(path);
    ASSERT_TRUE(store.ok());
    ASSERT_TRUE(store->latencies->UpsertDevice("a100", "", "cuda", 1).ok());
  }
  {
    auto db = SqliteDb::Open(path);
    ASSERT_TRUE(db.ok());
    ASSERT_TRUE((*db)->Exec("PRAGMA journal_mode=DELETE").ok());
    ASSERT_TRUE((*db)->SetUserVersion(kSchemaVersion + 41).ok());
  }
  const std::string before = ReadFileBytes(path);
  auto store = OpenFarmDatabase(path);
  ASSERT_FALSE(store.ok());
  EXPECT_TRUE(absl::IsFailedPrecondition(store.status())) << store.status();
  const std::string message(store.status().message());
  EXPECT_THAT(message, HasSubstr(path));
  EXPECT_THAT(message, HasSubstr(std::to_string(kSchemaVersion + 41)));
  EXPECT_THAT(message, HasSubstr("newer iosfarm"));
  EXPECT_EQ(ReadFileBytes(path), before);
  EXPECT_FALSE(std::filesystem::exists(path + "-wal"));
}

TEST_F(StoreSchemaTest, RefusesNewerSchemaInWalModeWithoutChangingIt) {
  const std::string path = PathOf("newer_wal.db");
  ASSERT_TRUE(OpenFarmDatabase(path).ok());
  {
    auto db = SqliteDb::Open(path);
    ASSERT_TRUE(db.ok());
    ASSERT_TRUE((*db)->SetUserVersion(kSchemaVersion + 1).ok());
  }
  const std::string before = ReadFileBytes(path);
  auto store = OpenFarmDatabase(path);
  ASSERT_FALSE(store.ok());
  EXPECT_TRUE(absl::IsFailedPrecondition(store.status())) << store.status();
  EXPECT_EQ(ReadFileBytes(path), before);
}

TEST_F(StoreSchemaTest, RefusesNonDatabaseFileWithoutChangingIt) {
  const std::string path = PathOf("notes.txt");
  const std::string text = "these are my notes, not a database\n";
  WriteFileBytes(path, text);
  auto store = OpenFarmDatabase(path);
  ASSERT_FALSE(store.ok());
  EXPECT_TRUE(absl::IsInvalidArgument(store.status())) << store.status();
  EXPECT_THAT(std::string(store.status().message()), HasSubstr(path));
  EXPECT_THAT(std::string(store.status().message()), HasSubstr("not an iosfarm database"));
  EXPECT_EQ(ReadFileBytes(path), text);
  EXPECT_FALSE(std::filesystem::exists(path + "-wal"));
  EXPECT_FALSE(std::filesystem::exists(path + "-shm"));

  // A longer file that only starts like one.
  const std::string fake = std::string("SQLite format 3") + '\0' + std::string(4096, 'x');
  WriteFileBytes(path, fake);
  store = OpenFarmDatabase(path);
  ASSERT_FALSE(store.ok());
  EXPECT_TRUE(absl::IsInvalidArgument(store.status())) << store.status();
  EXPECT_THAT(std::string(store.status().message()), HasSubstr(path));
  EXPECT_EQ(ReadFileBytes(path), fake);
}

TEST_F(StoreSchemaTest, RefusesAnotherApplicationsSqliteFile) {
  const std::string path = PathOf("other.db");
  {
    auto db = SqliteDb::Open(path);
    ASSERT_TRUE(db.ok());
    ASSERT_TRUE((*db)->Exec("PRAGMA journal_mode=DELETE; CREATE TABLE customers (name TEXT);"
                            "INSERT INTO customers VALUES ('ada');")
                    .ok());
  }
  const std::string before = ReadFileBytes(path);
  auto store = OpenFarmDatabase(path);
  ASSERT_FALSE(store.ok());
  EXPECT_TRUE(absl::IsInvalidArgument(store.status())) << store.status();
  const std::string message(store.status().message());
  EXPECT_THAT(message, HasSubstr(path));
  EXPECT_THAT(message, HasSubstr("customers"));
  EXPECT_EQ(ReadFileBytes(path), before);
}

TEST_F(StoreSchemaTest, DirectoryOrMissingFolderFailsClearly) {
  auto store = OpenFarmDatabase(dir_.string());
  ASSERT_FALSE(store.ok());
  EXPECT_THAT(std::string(store.status().message()), HasSubstr(dir_.string()));
  const std::string missing = PathOf("no/such/folder/x.db");
  store = OpenFarmDatabase(missing);
  ASSERT_FALSE(store.ok());
  EXPECT_THAT(std::string(store.status().message()), HasSubstr(missing));
}

}  // namespace
}  // namespace iosfarm::server
