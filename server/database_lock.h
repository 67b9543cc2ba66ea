// DatabaseLock: one server per database file.
//
// Two servers on one database would both resume the same jobs and profile
// everything twice. The server takes an exclusive flock(2) on "<db>.lock"
// (a file beside the database; SQLite's own locks are fcntl locks on the
// database and are not touched) for as long as it runs. The kernel drops the
// lock when the process dies, kill -9 included, so a stale lock file never
// blocks a restart. The holder's pid is written into the file for the error
// message.
//
// Movable, not copyable; the destructor releases the lock.
#ifndef IOSFARM_SERVER_DATABASE_LOCK_H_
#define IOSFARM_SERVER_DATABASE_LOCK_H_

#include <string>

#include "common/status.h"

namespace iosfarm::server {

class DatabaseLock {
 public:
  // FailedPrecondition naming the database and the holder's pid when another
  // process (or another server in this process) holds it; Unavailable when
  // the lock file cannot be created.
  static StatusOr<DatabaseLock> Acquire(const std::string& db_path);

  DatabaseLock(DatabaseLock&& other) noexcept : fd_(other.fd_) { other.fd_ = -1; }
  DatabaseLock& operator=(DatabaseLock&& other) noexcept;
  DatabaseLock(const DatabaseLock&) = delete;
  DatabaseLock& operator=(const DatabaseLock&) = delete;
  ~DatabaseLock();

 private:
  explicit DatabaseLock(int fd) : fd_(fd) {}
  int fd_ = -1;
};

}  // namespace iosfarm::server

#endif  // IOSFARM_SERVER_DATABASE_LOCK_H_
