#include "server/database_lock.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>

#include "common/strings.h"

namespace iosfarm::server {

StatusOr<DatabaseLock> DatabaseLock::Acquire(const std::string& db_path) {
  const std::string path = db_path + ".lock";
  const int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0) {
    return absl::UnavailableError(
        StrCat("cannot create the lock file '", path, "': ", std::strerror(errno)));
  }
  if (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
    const int error = errno;
    char pid[32] = {0};
    const ssize_t n = ::pread(fd, pid, sizeof(pid) - 1, 0);
    ::close(fd);
    std::string holder = n > 0 ? std::string(pid, static_cast<size_t>(n)) : std::string();
    while (!holder.empty() && (holder.back() == '\n' || holder.back() == ' ')) holder.pop_back();
    if (error == EWOULDBLOCK) {
      return absl::FailedPreconditionError(
          StrCat("database '", db_path, "' is in use by another iosfarm server",
                 holder.empty() ? "" : StrCat(" (pid ", holder, ")"), "; stop it or use another --db"));
    }
    return absl::UnavailableError(StrCat("cannot lock '", path, "': ", std::strerror(error)));
  }
  const std::string pid = StrCat(::getpid(), "\n");
  if (::ftruncate(fd, 0) != 0 || ::pwrite(fd, pid.data(), pid.size(), 0) < 0) {
    // The lock holds anyway; the pid only improves the message.
  }
  return DatabaseLock(fd);
}

DatabaseLock& DatabaseLock::operator=(DatabaseLock&& other) noexcept {
  if (this != &other) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = other.fd_;
    other.fd_ = -1;
  }
  return *this;
}

DatabaseLock::~DatabaseLock() {
  if (fd_ >= 0) ::close(fd_);
}

}  // namespace iosfarm::server
