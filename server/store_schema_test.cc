#include "server/store_schema.h"

#include <filesystem>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "common/strings.h"
#include "server/farm_store.h"
#include "server/sqlite_db.h"
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
  for (const char* table :
       {"devices", "latencies", "models", "jobs", "results", "phase_log", "schema_migrations"}) {
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
  EXPECT_EQ(FarmStore::kSchemaVersion, kSchemaVersion);
}

TEST_F(StoreSchemaTest, NewFileGetsCurrentSchema) {
  const std::string path = PathOf("new.db");
  ASSERT_TRUE(FarmStore::Open(path).ok());
  ExpectCurrentSchema(path);
  // Opening again applies nothing twice.
  ASSERT_TRUE(FarmStore::Open(path).ok());
  ExpectCurrentSchema(path);
}

TEST_F(StoreSchemaTest, ZeroByteFileIsMigrated) {
  const std::string path = PathOf("empty.db");
  WriteFileBytes(path, "");
  auto store = FarmStore::Open(path);
  ASSERT_TRUE(store.ok()) << store.status();
  store->reset();
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
  auto store = FarmStore::Open(path);
  ASSERT_TRUE(store.ok()) << store.status();
  store->reset();
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

TEST_F(StoreSchemaTest, MigratesStepByStepKeepingData) {
  const std::string path = PathOf("steps.db");
  {
    auto store = FarmStore::Open(path);
    ASSERT_TRUE(store.ok());
    ASSERT_TRUE((*store)->UpsertDevice("h100-sxm", "H100", "cuda", 10).ok());
  }
  const std::vector<Migration> steps = WithNextStep(kNextStep);
  {
    auto store = FarmStore::OpenWithMigrations(path, steps);
    ASSERT_TRUE(store.ok()) << store.status();
    auto devices = (*store)->ListDevices();
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
  auto old = FarmStore::Open(path);
  ASSERT_FALSE(old.ok());
  EXPECT_TRUE(absl::IsFailedPrecondition(old.status())) << old.status();
}

TEST_F(StoreSchemaTest, AVersion1FileGainsJobResumesKeepingItsJobs) {
  const std::string path = PathOf("v1.db");
  int64_t id = 0;
  {
    auto store = FarmStore::OpenWithMigrations(path, Migrations().first(1));
    ASSERT_TRUE(store.ok()) << store.status();
    ModelRow model;
    model.digest = "d1";
    model.name = "squeezenet";
    model.source = "zoo";
    model.batch = 1;
    ASSERT_TRUE((*store)->PutModel(model).ok());
    JobRow job;
    job.model_digest = "d1";
    job.device_key = "k";
    auto created = (*store)->CreateJob(job);
    ASSERT_TRUE(created.ok()) << created.status();
    id = *created;
  }
  auto store = FarmStore::Open(path);
  ASSERT_TRUE(store.ok()) << store.status();
  auto job = (*store)->GetJob(id);
  ASSERT_TRUE(job.ok() && job->has_value());
  EXPECT_EQ((*job)->model_name, "squeezenet");
  EXPECT_EQ((*job)->resumes, 0);
  auto counted = (*store)->AddResumes(id, 1);
  ASSERT_TRUE(counted.ok()) << counted.status();
  EXPECT_EQ(*counted, 1);
}

TEST_F(StoreSchemaTest, MigratesFromEmptyThroughEveryStep) {
  const std::string path = PathOf("all.db");
  ASSERT_TRUE(FarmStore::OpenWithMigrations(path, WithNextStep(kNextStep)).ok());
  auto db = SqliteDb::Open(path);
  ASSERT_TRUE(db.ok());
  EXPECT_EQ(QueryInt(**db, "PRAGMA user_version"), kNext);
  EXPECT_EQ(QueryInt(**db, "SELECT MAX(version) FROM schema_migrations"), kNext);
}

TEST_F(StoreSchemaTest, FailingStepIsRolledBackWhole) {
  const std::string path = PathOf("fail.db");
  ASSERT_TRUE(FarmStore::Open(path).ok());
  auto store = FarmStore::OpenWithMigrations(
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
  auto store = FarmStore::OpenWithMigrations(PathOf("gap.db"), gap);
  ASSERT_FALSE(store.ok());
  EXPECT_TRUE(absl::IsInternal(store.status()));
}

TEST_F(StoreSchemaTest, RefusesNewerSchemaWithoutChangingTheFile) {
  const std::string path = PathOf("newer.db");
  {
    auto store = FarmStore::Open(path);
    ASSERT_TRUE(store.ok());
    ASSERT_TRUE((*store)->UpsertDevice("a100", "", "cuda", 1).ok());
  }
  {
    auto db = SqliteDb::Open(path);
    ASSERT_TRUE(db.ok());
    ASSERT_TRUE((*db)->Exec("PRAGMA journal_mode=DELETE").ok());
    ASSERT_TRUE((*db)->SetUserVersion(kSchemaVersion + 41).ok());
  }
  const std::string before = ReadFileBytes(path);
  auto store = FarmStore::Open(path);
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
  ASSERT_TRUE(FarmStore::Open(path).ok());
  {
    auto db = SqliteDb::Open(path);
    ASSERT_TRUE(db.ok());
    ASSERT_TRUE((*db)->SetUserVersion(kSchemaVersion + 1).ok());
  }
  const std::string before = ReadFileBytes(path);
  auto store = FarmStore::Open(path);
  ASSERT_FALSE(store.ok());
  EXPECT_TRUE(absl::IsFailedPrecondition(store.status())) << store.status();
  EXPECT_EQ(ReadFileBytes(path), before);
}

TEST_F(StoreSchemaTest, RefusesNonDatabaseFileWithoutChangingIt) {
  const std::string path = PathOf("notes.txt");
  const std::string text = "these are my notes, not a database\n";
  WriteFileBytes(path, text);
  auto store = FarmStore::Open(path);
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
  store = FarmStore::Open(path);
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
  auto store = FarmStore::Open(path);
  ASSERT_FALSE(store.ok());
  EXPECT_TRUE(absl::IsInvalidArgument(store.status())) << store.status();
  const std::string message(store.status().message());
  EXPECT_THAT(message, HasSubstr(path));
  EXPECT_THAT(message, HasSubstr("customers"));
  EXPECT_EQ(ReadFileBytes(path), before);
}

TEST_F(StoreSchemaTest, DirectoryOrMissingFolderFailsClearly) {
  auto store = FarmStore::Open(dir_.string());
  ASSERT_FALSE(store.ok());
  EXPECT_THAT(std::string(store.status().message()), HasSubstr(dir_.string()));
  const std::string missing = PathOf("no/such/folder/x.db");
  store = FarmStore::Open(missing);
  ASSERT_FALSE(store.ok());
  EXPECT_THAT(std::string(store.status().message()), HasSubstr(missing));
}

}  // namespace
}  // namespace iosfarm::server
