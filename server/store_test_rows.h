// Rows for the store tests (latency_db_test.cc, job_store_test.cc, ...):
// a latency, a model, a job, a typed result with every figure set.
// Header-only, used only by *_test.cc files.
#ifndef IOSFARM_SERVER_STORE_TEST_ROWS_H_
#define IOSFARM_SERVER_STORE_TEST_ROWS_H_

#include <gtest/gtest.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "common/strings.h"
#include "server/farm_database.h"
#include "server/job_rows.h"
#include "server/latency_db.h"
#include "server/sqlite_db.h"
#include "server/store_test_util.h"

namespace iosfarm::server {

// Opens (creating, migrating) the database at `path`; a failure is a test
// failure and gives null stores.
inline FarmDatabase OpenTestDatabase(const std::string& path) {
  auto database = OpenFarmDatabase(path);
  EXPECT_TRUE(database.ok()) << database.status();
  return database.ok() ? std::move(*database) : FarmDatabase();
}

// A fixture whose OpenStore() opens (or reopens) a file in the test's
// directory and returns one of its stores (`Store` is &FarmDatabase::latencies
// or &FarmDatabase::jobs); the store keeps the file open.
template <auto Store>
class StoreTest : public TempDirTest {
 protected:
  auto OpenStore(const std::string& name = "farm.db") {
    return std::move(OpenTestDatabase(PathOf(name)).*Store);
  }
};

inline StoredLatency Latency(double median, const std::string& worker = "w1",
                             int64_t when = 1000) {
  StoredLatency latency;
  latency.median_ms = median;
  latency.p10_ms = median * 0.9;
  latency.p90_ms = median * 1.2;
  latency.cv = 0.03;
  latency.repeats = 20;
  latency.worker = worker;
  latency.backend = "cuda";
  latency.measured_unix_ms = when;
  return latency;
}

inline ModelRow Model(const std::string& digest, const std::string& name, int64_t batch = 1) {
  ModelRow model;
  model.digest = digest;
  model.name = name;
  model.source = "zoo";
  model.batch = batch;
  model.ops = 42;
  model.created_unix_ms = 5;
  return model;
}

inline JobRow Job(const std::string& digest, const std::string& device, int64_t batch = 1) {
  JobRow job;
  job.model_digest = digest;
  job.device_key = device;
  job.owner = "alice";
  job.batch = batch;
  job.submitted_unix_ms = 100;
  return job;
}

inline std::vector<int64_t> Ids(const std::vector<JobRow>& jobs) {
  std::vector<int64_t> ids;
  for (const JobRow& job : jobs) ids.push_back(job.id);
  return ids;
}

// A result of job `job_id` with every figure set and distinct.
inline ResultRow FullResult(int64_t job_id) {
  ResultRow result;
  result.job_id = job_id;
  result.schedule_json = R"({"stages": [1, 2]})";
  result.measured = {{"ios", 0.7, 0.69, 0.72, 0.01, 20},
                     {"sequential", 0.8, 0.79, 0.83, 0.02, 21},
                     {"greedy", 0.9, 0.88, 0.95, 0.03, 22}};
  result.chosen = "sequential";
  result.predicted_ms = 0.65;
  result.search_s = 1.25;
  result.stages_profiled = 120;
  result.cache_hits = 30;
  result.candidates = 900;
  result.unique_signatures = 150;
  result.stages_measured = 140;
  result.lower_bound_misses = 7;
  result.largest_bound_miss_ms = 0.0125;
  result.search_cores = 2;
  result.stages = 11;
  result.worker = "w1";
  result.backend = "sim";
  result.device_key = "sim-test";
  return result;
}

// FullResult as a server of schema version 2 or 3 stored it reads in this
// binary: the figures of later versions (4: stages_measured; 7: the bound
// figures) read 0.
inline void ClearFiguresAfterVersion3(ResultRow& want) {
  want.stages_measured = 0;
  want.lower_bound_misses = 0;
  want.largest_bound_miss_ms = 0;
  want.search_cores = 0;
}

// Every field of `got` equals `want`'s.
inline void ExpectSameResult(const ResultRow& got, const ResultRow& want) {
  EXPECT_EQ(got.job_id, want.job_id);
  EXPECT_EQ(got.schedule_json, want.schedule_json);
  ASSERT_EQ(got.measured.size(), want.measured.size());
  for (size_t i = 0; i < want.measured.size(); ++i) {
    EXPECT_EQ(got.measured[i].name, want.measured[i].name) << i;
    EXPECT_DOUBLE_EQ(got.measured[i].median_ms, want.measured[i].median_ms) << i;
    EXPECT_DOUBLE_EQ(got.measured[i].p10_ms, want.measured[i].p10_ms) << i;
    EXPECT_DOUBLE_EQ(got.measured[i].p90_ms, want.measured[i].p90_ms) << i;
    EXPECT_DOUBLE_EQ(got.measured[i].cv, want.measured[i].cv) << i;
    EXPECT_EQ(got.measured[i].repeats, want.measured[i].repeats) << i;
  }
  EXPECT_EQ(got.chosen, want.chosen);
  EXPECT_DOUBLE_EQ(got.predicted_ms, want.predicted_ms);
  EXPECT_DOUBLE_EQ(got.search_s, want.search_s);
  EXPECT_EQ(got.stages_profiled, want.stages_profiled);
  EXPECT_EQ(got.cache_hits, want.cache_hits);
  EXPECT_EQ(got.candidates, want.candidates);
  EXPECT_EQ(got.unique_signatures, want.unique_signatures);
  EXPECT_EQ(got.stages_measured, want.stages_measured);
  EXPECT_EQ(got.lower_bound_misses, want.lower_bound_misses);
  EXPECT_DOUBLE_EQ(got.largest_bound_miss_ms, want.largest_bound_miss_ms);
  EXPECT_EQ(got.search_cores, want.search_cores);
  EXPECT_EQ(got.stages, want.stages);
  EXPECT_EQ(got.worker, want.worker);
  EXPECT_EQ(got.backend, want.backend);
  EXPECT_EQ(got.device_key, want.device_key);
}

// A queued job as a server of schema version 1-4 wrote it (this binary's
// JobStore writes columns those files lack); its id.
inline int64_t InsertOldJob(const std::string& path, const std::string& digest,
                            const std::string& device,
                            const std::string& model_name = "squeezenet") {
  auto db = SqliteDb::Open(path);
  EXPECT_TRUE(db.ok()) << db.status();
  if (!db.ok()) return 0;
  const Status inserted = (*db)->Exec(StrCat(
      "INSERT INTO jobs (model_digest, model_name, device_key, owner, retune_batch, batch, opt_r, "
      "opt_s, opt_block_size, opt_batch_size_limit, priority, state, error, submitted_unix_ms) "
      "VALUES ('",
      digest, "', '", model_name, "', '", device,
      "', 'alice', '', 1, 3, 8, 50, 64, "
      "0, 'queued', '', 100);"));
  EXPECT_TRUE(inserted.ok()) << inserted;
  return (*db)->LastInsertRowId();
}

// A schema-version-2 file at `path` (as a version-2 server left it) with one
// succeeded job per text of `result_jsons`, each stored as the job's
// results.result_json with schedule_json "{"job": <index>}". Returns the
// job ids, in order (empty after a failed assertion).
inline std::vector<int64_t> WriteVersion2Results(const std::string& path,
                                                 const std::vector<std::string>& result_jsons) {
  std::vector<int64_t> ids;
  auto v2 = OpenFarmDatabase(path, Migrations().first(2));
  EXPECT_TRUE(v2.ok()) << v2.status();
  if (!v2.ok()) return {};
  EXPECT_TRUE(v2->jobs->PutModel(Model("d1", "squeezenet")).ok());
  *v2 = FarmDatabase();
  for (size_t i = 0; i < result_jsons.size(); ++i) {
    const int64_t id = InsertOldJob(path, "d1", "sim-test");
    if (id == 0) return {};
    ids.push_back(id);
  }
  // In SQL: this binary's JobStore reads columns a version-2 file lacks.
  auto db = SqliteDb::Open(path);
  EXPECT_TRUE(db.ok()) << db.status();
  if (!db.ok()) return {};
  for (size_t i = 0; i < ids.size(); ++i) {
    auto succeed = (*db)->Prepare(
        "UPDATE jobs SET state = 'succeeded', started_unix_ms = 10, finished_unix_ms = 20 "
        "WHERE id = ?1");
    EXPECT_TRUE(succeed.ok()) << succeed.status();
    if (!succeed.ok()) return {};
    EXPECT_TRUE(succeed->BindInt64(1, ids[i]).ok());
    EXPECT_TRUE(succeed->Step().ok());
    auto insert = (*db)->Prepare(
        "INSERT INTO results (job_id, schedule_json, result_json) VALUES (?1, ?2, ?3)");
    EXPECT_TRUE(insert.ok()) << insert.status();
    if (!insert.ok()) return {};
    EXPECT_TRUE(insert->BindInt64(1, ids[i]).ok());
    EXPECT_TRUE(insert->BindText(2, "{\"job\": " + std::to_string(i) + "}").ok());
    EXPECT_TRUE(insert->BindText(3, result_jsons[i]).ok());
    EXPECT_TRUE(insert->Step().ok());
  }
  return ids;
}

}  // namespace iosfarm::server

#endif  // IOSFARM_SERVER_STORE_TEST_ROWS_H_
