// Ticker: calls a function on a thread of its own at a fixed interval until
// stopped, for progress displays that keep their clock going on a terminal
// while nothing else redraws them (job_watch.h, search_progress.h).
//
// The first call comes one interval after construction; Stop() wakes the
// thread at once and joins it, so no call starts after Stop() returns.
// Thread-safe: Stop() may be called from any thread, and more than once.
#ifndef IOSFARM_CLIENT_TICKER_H_
#define IOSFARM_CLIENT_TICKER_H_

#include <functional>
#include <thread>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"

namespace iosfarm::client {

class Ticker {
 public:
  // Starts ticking when `on`; otherwise never calls `tick`.
  Ticker(bool on, absl::Duration interval, std::function<void()> tick);
  ~Ticker();  // Stop()
  Ticker(const Ticker&) = delete;
  Ticker& operator=(const Ticker&) = delete;

  void Stop();

 private:
  void Loop();

  const absl::Duration interval_;
  const std::function<void()> tick_;
  absl::Mutex mu_;
  bool stopped_ ABSL_GUARDED_BY(mu_) = false;
  absl::Mutex join_mu_;  // one Stop() joins at a time
  std::thread thread_ ABSL_GUARDED_BY(join_mu_);
};

}  // namespace iosfarm::client

#endif  // IOSFARM_CLIENT_TICKER_H_
