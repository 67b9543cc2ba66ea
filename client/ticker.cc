#include "client/ticker.h"

#include <utility>

namespace iosfarm::client {

Ticker::Ticker(bool on, absl::Duration interval, std::function<void()> tick)
    : interval_(interval), tick_(std::move(tick)) {
  absl::MutexLock lock(&join_mu_);
  if (on) thread_ = std::thread([this] { Loop(); });
}

Ticker::~Ticker() { Stop(); }

void Ticker::Stop() {
  {
    absl::MutexLock lock(&mu_);
    stopped_ = true;
  }
  absl::MutexLock lock(&join_mu_);
  if (thread_.joinable()) thread_.join();
}

void Ticker::Loop() {
  for (;;) {
    {
      absl::MutexLock lock(&mu_);
      if (mu_.AwaitWithTimeout(absl::Condition(&stopped_), interval_)) return;
    }
    tick_();
  }
}

}  // namespace iosfarm::client
