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
  // Opens an existing file read-only, changing nothing in it (no journal-mode
  // switch, no creation): for inspecting a file before deciding to use it.
  static StatusOr<std::unique_ptr<SqliteDb>> OpenReadOnly(const std::string& path);
  ~SqliteDb();
  SqliteDb(const SqliteDb&) = delete;
  SqliteDb& operator=(const SqliteDb&) = delete;

  // Runs one or more statements that return no rows.
  Status Exec(std::string_view sql);
  StatusOr<Statement> Prepare(std::string_view sql);

  // PRAGMA user_version: the schema version used by migrations.
  StatusOr<int64_t> UserVersion();
  Status SetUserVersion(int64_t version);

  // Rows changed by the last INSERT/UPDATE/DELETE on this connection.
  int64_t Changes() const;
  // Rowid of the last successful INSERT on this connection.
  int64_t LastInsertRowId() const;

  const std::string& path() const { return path_; }

 private:
  SqliteDb(sqlite3* db, std::string path) : db_(db), path_(std::move(path)) {}
  sqlite3* db_;
  std::string path_;
};

// A write transaction (BEGIN IMMEDIATE, so the write lock is taken up front
// and a busy database is reported at Begin, not mid-way). Rolls back on
// destruction unless Commit() succeeded. Borrows `db`, which must outlive it.
class Transaction {
 public:
  static StatusOr<Transaction> Begin(SqliteDb& db);
  // A read transaction (BEGIN DEFERRED): one consistent snapshot for several
  // reads. Commit() ends it.
  static StatusOr<Transaction> BeginRead(SqliteDb& db);
  Transaction(Transaction&& other) noexcept : db_(other.db_) { other.db_ = nullptr; }
  Transaction& operator=(Transaction&&) = delete;
  ~Transaction();

  // Commits; afterwards the destructor does nothing. On error the
  // transaction is rolled back by the destructor.
  Status Commit();

 private:
  explicit Transaction(SqliteDb* db) : db_(db) {}
  SqliteDb* db_;  // null once committed or moved from
};

}  // namespace iosfarm::server

#endif  // IOSFARM_SERVER_SQLITE_DB_H_
