#include "server/store_connection.h"

#include "common/clock.h"
#include "common/strings.h"

namespace iosfarm::server {

StoreConnection::StoreConnection(std::unique_ptr<SqliteDb> db, std::string path)
    : path_(std::move(path)), db_(std::move(db)) {}

StoreConnection::~StoreConnection() {
  absl::MutexLock lock(&mu_);
  statements_.clear();
  db_.reset();
}

StatusOr<std::shared_ptr<StoreConnection>> StoreConnection::Open(
    const std::string& path, std::span<const Migration> migrations) {
  // Inspect first through a read-only connection: opening read-write switches
  // the journal mode to WAL, which would change a file we must refuse.
  RETURN_IF_ERROR(InspectDatabaseFile(path, migrations));
  ASSIGN_OR_RETURN(std::unique_ptr<SqliteDb> db, SqliteDb::Open(path));
  // In WAL mode, NORMAL keeps every commit across a process crash (SIGKILL
  // included) and the file consistent across power loss, where only the last
  // commits may be lost; FULL would fsync on every commit.
  RETURN_IF_ERROR(db->Exec("PRAGMA synchronous=NORMAL"));
  RETURN_IF_ERROR(MigrateSchema(*db, migrations, NowUnixMs()));
  return std::shared_ptr<StoreConnection>(new StoreConnection(std::move(db), path));
}

Status StoreConnection::CheckUsable() {
  absl::MutexLock lock(&mu_);
  {
    ASSIGN_OR_RETURN(Statement check, db_->Prepare("PRAGMA quick_check(1)"));
    auto row = check.Step();
    if (!row.ok()) {
      return absl::DataLossError(StrCat("database '", path_, "' is damaged: ",
                                        ToStd(row.status().message())));
    }
    const std::string verdict = *row ? check.ColumnText(0) : std::string("no answer");
    if (verdict != "ok") {
      return absl::DataLossError(StrCat("database '", path_, "' is damaged: ", verdict,
                                        " (restore it from a backup, docs/operations.md)"));
    }
  }
  Status write = db_->Exec(
      "BEGIN IMMEDIATE; CREATE TABLE iosfarm_write_probe (x INTEGER); ROLLBACK;");
  if (!write.ok()) {
    (void)db_->Exec("ROLLBACK");
    return absl::FailedPreconditionError(StrCat("database '", path_,
                                                "' cannot be written (read-only file or "
                                                "directory?): ", ToStd(write.message())));
  }
  return absl::OkStatus();
}

StatusOr<CachedStatement> StoreConnection::Session::Prepare(std::string_view sql) {
  auto& statements = connection_.statements_;
  auto it = statements.find(std::string(sql));
  if (it == statements.end()) {
    ASSIGN_OR_RETURN(Statement stmt, connection_.db_->Prepare(sql));
    it = statements.emplace(std::string(sql), std::make_unique<Statement>(std::move(stmt))).first;
  }
  return CachedStatement(it->second.get());
}

}  // namespace iosfarm::server
