#include "server/heartbeat_monitor.h"

#include <utility>

namespace iosfarm::server {

HeartbeatMonitor::HeartbeatMonitor(double interval_s, std::function<void()> check)
    : interval_s_(interval_s), check_(std::move(check)) {
  thread_ = std::thread([this] { Loop(); });
}

HeartbeatMonitor::~HeartbeatMonitor() { Stop(); }

void HeartbeatMonitor::Stop() {
  {
    absl::MutexLock lock(&mu_);
    stop_ = true;
  }
  if (thread_.joinable()) thread_.join();
}

void HeartbeatMonitor::Loop() {
  while (true) {
    {
      absl::MutexLock lock(&mu_);
      auto stopping = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return stop_; };
      mu_.AwaitWithTimeout(absl::Condition(&stopping), absl::Seconds(interval_s_));
      if (stop_) return;
    }
    check_();
  }
}

}  // namespace iosfarm::server
