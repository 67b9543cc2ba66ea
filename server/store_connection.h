// StoreConnection: the one SQLite connection that the farm's stores
// (LatencyDb, JobStore; farm_database.h) share, with its mutex and its cache
// of prepared statements.
//
// Opening a file inspects it first (store_schema.h: a file that is not an
// iosfarm database, or is newer than this binary, is refused unchanged), then
// opens it read-write (WAL, synchronous=NORMAL) and migrates it to the newest
// schema. Every store call takes a Session, which holds the mutex for the
// whole call; statements come from the cache and are reset when the call
// ends, so no statement keeps a read transaction open between calls.
//
// Thread safety: a StoreConnection may be used from any thread; Sessions
// serialise all use of the connection (one store call at a time across both
// stores). It is shared (std::shared_ptr) by the stores that use it and
// closes when the last one goes.
#ifndef IOSFARM_SERVER_STORE_CONNECTION_H_
#define IOSFARM_SERVER_STORE_CONNECTION_H_

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>
#include <unordered_map>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "common/status.h"
#include "server/sqlite_db.h"
#include "server/store_schema.h"

namespace iosfarm::server {

// A prepared statement borrowed from the cache for one call; reset (bindings
// cleared) when it goes out of scope.
class CachedStatement {
 public:
  explicit CachedStatement(Statement* stmt) : stmt_(stmt) {}
  CachedStatement(CachedStatement&& other) noexcept : stmt_(other.stmt_) { other.stmt_ = nullptr; }
  CachedStatement& operator=(CachedStatement&&) = delete;
  ~CachedStatement() {
    if (stmt_ != nullptr) (void)stmt_->Reset();
  }
  Statement* operator->() const { return stmt_; }
  Statement& operator*() const { return *stmt_; }

  // Binds `values` to parameters ?1, ?2, ... in order: integers as INTEGER,
  // floating point as REAL, anything else as TEXT (blobs: BindBlob).
  template <typename... Values>
  Status Bind(const Values&... values) {
    Status status;
    int index = 0;
    ((status.ok() ? (void)(status = BindOne(++index, values)) : (void)0), ...);
    return status;
  }

  // Reads columns 0, 1, ... of the current row into `out` in order:
  // integers, floating point, or strings (TEXT; blobs: ColumnBlob).
  template <typename... Out>
  void Read(Out&... out) const {
    int column = 0;
    (ReadOne(column++, out), ...);
  }

  // Steps once: false when there is no row; otherwise reads it as Read.
  template <typename... Out>
  StatusOr<bool> StepAndRead(Out&... out) {
    ASSIGN_OR_RETURN(bool row, stmt_->Step());
    if (row) Read(out...);
    return row;
  }

 private:
  template <typename T>
  void ReadOne(int column, T& out) const {
    if constexpr (std::is_integral_v<T>) {
      out = static_cast<T>(stmt_->ColumnInt64(column));
    } else if constexpr (std::is_floating_point_v<T>) {
      out = static_cast<T>(stmt_->ColumnDouble(column));
    } else {
      out = stmt_->ColumnText(column);
    }
  }

  template <typename T>
  Status BindOne(int index, const T& value) {
    if constexpr (std::is_integral_v<T>) {
      return stmt_->BindInt64(index, static_cast<int64_t>(value));
    } else if constexpr (std::is_floating_point_v<T>) {
      return stmt_->BindDouble(index, static_cast<double>(value));
    } else {
      return stmt_->BindText(index, std::string_view(value));
    }
  }

  Statement* stmt_;
};

class StoreConnection {
 public:
  // Opens or creates the file and migrates it with `migrations`.
  // FailedPrecondition for a file whose schema is newer than `migrations`;
  // InvalidArgument (naming the file) for a file that is not an iosfarm
  // database (both leave the file unchanged); Unavailable when the file
  // cannot be opened; Internal when a migration step fails (rolled back).
  static StatusOr<std::shared_ptr<StoreConnection>> Open(const std::string& path,
                                                         std::span<const Migration> migrations);
  StoreConnection(const StoreConnection&) = delete;
  StoreConnection& operator=(const StoreConnection&) = delete;
  ~StoreConnection();

  // A server checks this at start rather than failing at its first write:
  // the file passes SQLite's quick_check (DataLoss naming the file and the
  // first problem otherwise) and takes a write (FailedPrecondition for a
  // read-only file or directory). Changes nothing.
  Status CheckUsable();

  const std::string& path() const { return path_; }

  // Exclusive use of the connection for one store call (RAII over the mutex).
  class ABSL_SCOPED_LOCKABLE Session {
   public:
    explicit Session(StoreConnection& connection) ABSL_EXCLUSIVE_LOCK_FUNCTION(connection.mu_)
        : connection_(connection), lock_(&connection.mu_) {}
    ~Session() ABSL_UNLOCK_FUNCTION() = default;
    Session(const Session&) = delete;
    Session& operator=(const Session&) = delete;

    // For transactions, Changes() and LastInsertRowId().
    SqliteDb& db() ABSL_NO_THREAD_SAFETY_ANALYSIS { return *connection_.db_; }
    // The cached prepared statement for `sql` (prepared on first use).
    StatusOr<CachedStatement> Prepare(std::string_view sql) ABSL_NO_THREAD_SAFETY_ANALYSIS;

   private:
    StoreConnection& connection_;
    absl::MutexLock lock_;
  };

 private:
  StoreConnection(std::unique_ptr<SqliteDb> db, std::string path);

  const std::string path_;
  absl::Mutex mu_;
  std::unique_ptr<SqliteDb> db_ ABSL_GUARDED_BY(mu_);
  // Declared after db_ so statements are finalised before the connection closes.
  std::unordered_map<std::string, std::unique_ptr<Statement>> statements_ ABSL_GUARDED_BY(mu_);
};

}  // namespace iosfarm::server

#endif  // IOSFARM_SERVER_STORE_CONNECTION_H_
