// A thin RAII layer over SQLite for the latency database and job store.
//
// SqliteDb owns one connection opened in WAL mode with foreign keys on and a
// busy timeout. Statement wraps a prepared statement; bind parameters are
// 1-based as in SQLite. Errors are Status values naming the database file and
// the SQL that failed. A SqliteDb and its Statements must be used from one
// thread at a time (SQLite "multi-thread" mode); they are not copyable.
#ifndef IOSFARM_SERVER_SQLITE_DB_H_
#define IOSFARM_SERVER_SQLITE_DB_H_

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "common/status.h"

struct sqlite3;
struct sqlite3_stmt;

namespace iosfarm::server {

class Statement {
 public:
  Statement(Statement&& other) noexcept;
  Statement& operator=(Statement&&) = delete;
  ~Statement();

  Status BindInt64(int index, int64_t value);
  Status BindDouble(int index, double value);
  Status BindText(int index, std::string_view value);
  Status BindBlob(int index, std::string_view bytes);

  // Advances: true while a row is available, false when done.
  StatusOr<bool> Step();
  // Resets for re-execution with new bindings.
  Status Reset();

  int64_t ColumnInt64(int column) const;
  double ColumnDouble(int column) const;
  std::string ColumnText(int column) const;
  std::string ColumnBlob(int column) const;

 private:
  friend class SqliteDb;
  Statement(sqlite3* db, sqlite3_stmt* stmt, std::string sql)
      : db_(db), stmt_(stmt), sql_(std::move(sql)) {}
  Status Check(int code, std::string_view what) const;

  sqlite3* db_;
  sqlite3_stmt* stmt_;
  std::string sql_;
};

class SqliteDb {
 public:
  // Opens (creating if needed) the database file at `path`.
  static StatusOr<std::unique_ptr<SqliteDb>> Open(const std::string& path);
  ~SqliteDb();
  SqliteDb(const SqliteDb&) = delete;
  SqliteDb& operator=(const SqliteDb&) = delete;

  // Runs one or more statements that return no rows.
  Status Exec(std::string_view sql);
  StatusOr<Statement> Prepare(std::string_view sql);

  // PRAGMA user_version: the schema version used by migrations.
  StatusOr<int64_t> UserVersion();
  Status SetUserVersion(int64_t version);

  const std::string& path() const { return path_; }

 private:
  SqliteDb(sqlite3* db, std::string path) : db_(db), path_(std::move(path)) {}
  sqlite3* db_;
  std::string path_;
};

}  // namespace iosfarm::server

#endif  // IOSFARM_SERVER_SQLITE_DB_H_
