// HeartbeatMonitor: a thread that calls `check` once per interval until
// Stop, which wakes it at once. The coordinator's check finds the workers
// that went silent (WorkerRegistry::Silent) on its own clock, so tests call
// that check directly with a FakeClock instead of running this thread.
//
// Thread-safe. `check` runs on the monitor's thread and must not call Stop.
#ifndef IOSFARM_SERVER_HEARTBEAT_MONITOR_H_
#define IOSFARM_SERVER_HEARTBEAT_MONITOR_H_

#include <functional>
#include <thread>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"

namespace iosfarm::server {

class HeartbeatMonitor {
 public:
  HeartbeatMonitor(double interval_s, std::function<void()> check);
  ~HeartbeatMonitor();  // Stop()
  HeartbeatMonitor(const HeartbeatMonitor&) = delete;
  HeartbeatMonitor& operator=(const HeartbeatMonitor&) = delete;

  // Returns after a running check ends; idempotent.
  void Stop() ABSL_LOCKS_EXCLUDED(mu_);

 private:
  void Loop() ABSL_LOCKS_EXCLUDED(mu_);

  const double interval_s_;
  const std::function<void()> check_;
  absl::Mutex mu_;
  bool stop_ ABSL_GUARDED_BY(mu_) = false;
  std::thread thread_;
};

}  // namespace iosfarm::server

#endif  // IOSFARM_SERVER_HEARTBEAT_MONITOR_H_
