// ServerPhasePool: the threads that run the server's phases (enumerate,
// update). The farm scheduler never starts more server phases than there are
// slots, so a task never waits for a thread behind another.
//
// Thread-safe. Stop (also run by the destructor) drops the tasks not yet
// started and joins the threads after their running tasks return.
#ifndef IOSFARM_SERVER_SERVER_PHASE_POOL_H_
#define IOSFARM_SERVER_SERVER_PHASE_POOL_H_

#include <deque>
#include <functional>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"

namespace iosfarm::server {

class ServerPhasePool {
 public:
  explicit ServerPhasePool(int threads);  // at least one thread
  ~ServerPhasePool();
  ServerPhasePool(const ServerPhasePool&) = delete;
  ServerPhasePool& operator=(const ServerPhasePool&) = delete;

  // Runs `task` on a pool thread; after Stop it is dropped.
  void Post(std::function<void()> task) ABSL_LOCKS_EXCLUDED(mu_);
  // Idempotent; must not be called from a pool thread.
  void Stop() ABSL_LOCKS_EXCLUDED(mu_);

 private:
  void Loop() ABSL_LOCKS_EXCLUDED(mu_);

  absl::Mutex mu_;
  std::deque<std::function<void()>> tasks_ ABSL_GUARDED_BY(mu_);
  bool stop_ ABSL_GUARDED_BY(mu_) = false;
  std::vector<std::thread> threads_;
};

}  // namespace iosfarm::server

#endif  // IOSFARM_SERVER_SERVER_PHASE_POOL_H_
