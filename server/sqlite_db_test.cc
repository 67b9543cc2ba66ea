#include "server/sqlite_db.h"

#include <filesystem>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace iosfarm::server {
namespace {

using ::testing::HasSubstr;

class SqliteDbTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("iosfarm_sqlite_test_" + std::to_string(::getpid()));
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::filesystem::path dir_;
};

TEST_F(SqliteDbTest, PersistsRowsAcrossReopenInWalMode) {
  const std::string path = (dir_ / "latency.db").string();
  {
    auto db = SqliteDb::Open(path);
    ASSERT_TRUE(db.ok()) << db.status();
    ASSERT_TRUE((*db)->Exec("CREATE TABLE t (k TEXT PRIMARY KEY, v REAL, b BLOB)").ok());
    auto insert = (*db)->Prepare("INSERT INTO t VALUES (?1, ?2, ?3)");
    ASSERT_TRUE(insert.ok()) << insert.status();
    for (int i = 0; i < 3; ++i) {
      ASSERT_TRUE(insert->BindText(1, "sig" + std::to_string(i)).ok());
      ASSERT_TRUE(insert->BindDouble(2, 0.5 * i).ok());
      ASSERT_TRUE(insert->BindBlob(3, std::string("\0\1x", 3)).ok());
      ASSERT_TRUE(insert->Step().ok());
      ASSERT_TRUE(insert->Reset().ok());
    }
    ASSERT_TRUE((*db)->SetUserVersion(7).ok());
  }
  auto db = SqliteDb::Open(path);
  ASSERT_TRUE(db.ok());
  EXPECT_EQ(*(*db)->UserVersion(), 7);
  auto mode = (*db)->Prepare("PRAGMA journal_mode");
  ASSERT_TRUE(mode.ok() && *mode->Step());
  EXPECT_EQ(mode->ColumnText(0), "wal");
  auto select = (*db)->Prepare("SELECT k, v, b FROM t ORDER BY k");
  ASSERT_TRUE(select.ok());
  int rows = 0;
  while (*select->Step()) {
    EXPECT_EQ(select->ColumnText(0), "sig" + std::to_string(rows));
    EXPECT_DOUBLE_EQ(select->ColumnDouble(1), 0.5 * rows);
    EXPECT_EQ(select->ColumnBlob(2), std::string("\0\1x", 3));
    ++rows;
  }
  EXPECT_EQ(rows, 3);
}

TEST_F(SqliteDbTest, ErrorsNameFileAndSql) {
  auto db = SqliteDb::Open((dir_ / "e.db").string());
  ASSERT_TRUE(db.ok());
  Status status = (*db)->Exec("CREATE TABLE");
  ASSERT_FALSE(status.ok());
  EXPECT_THAT(std::string(status.message()), HasSubstr("e.db"));
  EXPECT_THAT(std::string(status.message()), HasSubstr("CREATE TABLE"));
  auto bad = (*db)->Prepare("SELECT * FROM missing_table");
  ASSERT_FALSE(bad.ok());
  EXPECT_THAT(std::string(bad.status().message()), HasSubstr("missing_table"));

  ASSERT_TRUE((*db)->Exec("CREATE TABLE u (k INTEGER PRIMARY KEY)").ok());
  ASSERT_TRUE((*db)->Exec("INSERT INTO u VALUES (1)").ok());
  auto dup = (*db)->Prepare("INSERT INTO u VALUES (1)");
  ASSERT_TRUE(dup.ok());
  auto step = dup->Step();
  ASSERT_FALSE(step.ok());
  EXPECT_THAT(std::string(step.status().message()), HasSubstr("UNIQUE"));
}

TEST_F(SqliteDbTest, OpeningADirectoryFailsClearly) {
  auto db = SqliteDb::Open(dir_.string());
  ASSERT_FALSE(db.ok());
  EXPECT_THAT(std::string(db.status().message()), HasSubstr(dir_.string()));
}

int64_t CountRows(SqliteDb& db) {
  auto count = db.Prepare("SELECT COUNT(*) FROM t");
  EXPECT_TRUE(count.ok() && *count->Step());
  return count->ColumnInt64(0);
}

TEST_F(SqliteDbTest, TransactionCommitsOrRollsBack) {
  auto db = SqliteDb::Open((dir_ / "tx.db").string());
  ASSERT_TRUE(db.ok());
  ASSERT_TRUE((*db)->Exec("CREATE TABLE t (k INTEGER PRIMARY KEY)").ok());
  {
    auto tx = Transaction::Begin(**db);
    ASSERT_TRUE(tx.ok()) << tx.status();
    ASSERT_TRUE((*db)->Exec("INSERT INTO t VALUES (1)").ok());
    EXPECT_EQ((*db)->Changes(), 1);
    EXPECT_EQ((*db)->LastInsertRowId(), 1);
    ASSERT_TRUE(tx->Commit().ok());
    EXPECT_FALSE(tx->Commit().ok());
  }
  EXPECT_EQ(CountRows(**db), 1);
  {
    auto tx = Transaction::Begin(**db);
    ASSERT_TRUE(tx.ok());
    ASSERT_TRUE((*db)->Exec("INSERT INTO t VALUES (2)").ok());
    Transaction moved = std::move(*tx);
    // Destroyed without Commit: rolled back exactly once.
  }
  EXPECT_EQ(CountRows(**db), 1);
  // A new transaction can begin after the rollback.
  auto tx = Transaction::Begin(**db);
  ASSERT_TRUE(tx.ok()) << tx.status();
}

TEST_F(SqliteDbTest, ReadOnlyOpenDoesNotCreateOrWrite) {
  const std::string path = (dir_ / "ro.db").string();
  EXPECT_FALSE(SqliteDb::OpenReadOnly(path).ok());
  EXPECT_FALSE(std::filesystem::exists(path));
  {
    auto db = SqliteDb::Open(path);
    ASSERT_TRUE(db.ok());
    ASSERT_TRUE((*db)->Exec("CREATE TABLE t (k INTEGER PRIMARY KEY)").ok());
  }
  auto db = SqliteDb::OpenReadOnly(path);
  ASSERT_TRUE(db.ok()) << db.status();
  EXPECT_EQ(CountRows(**db), 0);
  EXPECT_FALSE((*db)->Exec("INSERT INTO t VALUES (1)").ok());
}

}  // namespace
}  // namespace iosfarm::server
