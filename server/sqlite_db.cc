#include "server/sqlite_db.h"

#include <sqlite3.h>

#include "common/strings.h"

namespace iosfarm::server {

Statement::Statement(Statement&& other) noexcept
    : db_(other.db_), stmt_(other.stmt_), sql_(std::move(other.sql_)) {
  other.stmt_ = nullptr;
}

Statement::~Statement() { sqlite3_finalize(stmt_); }

Status Statement::Check(int code, std::string_view what) const {
  if (code == SQLITE_OK || code == SQLITE_ROW || code == SQLITE_DONE) return absl::OkStatus();
  return absl::InternalError(StrCat("sqlite ", what, " failed (", sqlite3_errstr(code), ": ",
                                    sqlite3_errmsg(db_), ") in: ", sql_));
}

Status Statement::BindInt64(int index, int64_t value) {
  return Check(sqlite3_bind_int64(stmt_, index, value), "bind");
}

Status Statement::BindDouble(int index, double value) {
  return Check(sqlite3_bind_double(stmt_, index, value), "bind");
}

Status Statement::BindText(int index, std::string_view value) {
  return Check(sqlite3_bind_text(stmt_, index, value.data(), static_cast<int>(value.size()),
                                 SQLITE_TRANSIENT),
               "bind");
}

Status Statement::BindBlob(int index, std::string_view bytes) {
  return Check(sqlite3_bind_blob(stmt_, index, bytes.data(), static_cast<int>(bytes.size()),
                                 SQLITE_TRANSIENT),
               "bind");
}

StatusOr<bool> Statement::Step() {
  const int code = sqlite3_step(stmt_);
  RETURN_IF_ERROR(Check(code, "step"));
  return code == SQLITE_ROW;
}

Status Statement::Reset() {
  RETURN_IF_ERROR(Check(sqlite3_reset(stmt_), "reset"));
  return Check(sqlite3_clear_bindings(stmt_), "clear bindings");
}

int64_t Statement::ColumnInt64(int column) const { return sqlite3_column_int64(stmt_, column); }

double Statement::ColumnDouble(int column) const { return sqlite3_column_double(stmt_, column); }

std::string Statement::ColumnText(int column) const {
  const auto* text = sqlite3_column_text(stmt_, column);
  const int size = sqlite3_column_bytes(stmt_, column);
  return text == nullptr ? std::string() : std::string(reinterpret_cast<const char*>(text), size);
}

std::string Statement::ColumnBlob(int column) const {
  const void* blob = sqlite3_column_blob(stmt_, column);
  const int size = sqlite3_column_bytes(stmt_, column);
  return blob == nullptr ? std::string() : std::string(static_cast<const char*>(blob), size);
}

StatusOr<std::unique_ptr<SqliteDb>> SqliteDb::Open(const std::string& path) {
  sqlite3* raw = nullptr;
  const int code = sqlite3_open_v2(path.c_str(), &raw,
                                   SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE |
                                       SQLITE_OPEN_NOMUTEX,
                                   nullptr);
  if (code != SQLITE_OK) {
    std::string message = raw != nullptr ? sqlite3_errmsg(raw) : sqlite3_errstr(code);
    sqlite3_close(raw);
    return absl::UnavailableError(StrCat("cannot open database '", path, "': ", message));
  }
  std::unique_ptr<SqliteDb> db(new SqliteDb(raw, path));
  sqlite3_busy_timeout(raw, 5000);
  Status status = db->Exec("PRAGMA journal_mode=WAL; PRAGMA foreign_keys=ON;");
  if (!status.ok()) {
    return absl::UnavailableError(StrCat("cannot use database '", path, "': ",
                                         ToStd(status.message())));
  }
  return db;
}

StatusOr<std::unique_ptr<SqliteDb>> SqliteDb::OpenReadOnly(const std::string& path) {
  sqlite3* raw = nullptr;
  const int code =
      sqlite3_open_v2(path.c_str(), &raw, SQLITE_OPEN_READONLY | SQLITE_OPEN_NOMUTEX, nullptr);
  if (code != SQLITE_OK) {
    std::string message = raw != nullptr ? sqlite3_errmsg(raw) : sqlite3_errstr(code);
    sqlite3_close(raw);
    return absl::UnavailableError(StrCat("cannot open database '", path, "': ", message));
  }
  sqlite3_busy_timeout(raw, 5000);
  return std::unique_ptr<SqliteDb>(new SqliteDb(raw, path));
}

SqliteDb::~SqliteDb() { sqlite3_close_v2(db_); }

Status SqliteDb::Exec(std::string_view sql) {
  char* error = nullptr;
  const std::string text(sql);
  const int code = sqlite3_exec(db_, text.c_str(), nullptr, nullptr, &error);
  if (code != SQLITE_OK) {
    std::string message = error != nullptr ? error : sqlite3_errstr(code);
    sqlite3_free(error);
    return absl::InternalError(StrCat("sqlite error in '", path_, "': ", message, " in: ", sql));
  }
  return absl::OkStatus();
}

StatusOr<Statement> SqliteDb::Prepare(std::string_view sql) {
  sqlite3_stmt* stmt = nullptr;
  const int code =
      sqlite3_prepare_v2(db_, sql.data(), static_cast<int>(sql.size()), &stmt, nullptr);
  if (code != SQLITE_OK) {
    return absl::InternalError(StrCat("sqlite cannot prepare (", sqlite3_errmsg(db_),
                                      ") in '", path_, "': ", sql));
  }
  return Statement(db_, stmt, std::string(sql));
}

StatusOr<int64_t> SqliteDb::UserVersion() {
  ASSIGN_OR_RETURN(Statement stmt, Prepare("PRAGMA user_version"));
  ASSIGN_OR_RETURN(bool row, stmt.Step());
  if (!row) return absl::InternalError("PRAGMA user_version returned no row");
  return stmt.ColumnInt64(0);
}

Status SqliteDb::SetUserVersion(int64_t version) {
  return Exec(StrCat("PRAGMA user_version = ", version));
}

int64_t SqliteDb::Changes() const { return sqlite3_changes(db_); }

int64_t SqliteDb::LastInsertRowId() const { return sqlite3_last_insert_rowid(db_); }

StatusOr<Transaction> Transaction::Begin(SqliteDb& db) {
  RETURN_IF_ERROR(db.Exec("BEGIN IMMEDIATE"));
  return Transaction(&db);
}

StatusOr<Transaction> Transaction::BeginRead(SqliteDb& db) {
  RETURN_IF_ERROR(db.Exec("BEGIN DEFERRED"));
  return Transaction(&db);
}

Transaction::~Transaction() {
  if (db_ != nullptr) (void)db_->Exec("ROLLBACK");
}

Status Transaction::Commit() {
  if (db_ == nullptr) return absl::FailedPreconditionError("transaction already finished");
  RETURN_IF_ERROR(db_->Exec("COMMIT"));
  db_ = nullptr;
  return absl::OkStatus();
}

}  // namespace iosfarm::server
