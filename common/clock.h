// Clock: the wall time a component reads, injected so that a test can drive
// it (FakeClock) instead of sleeping. Seconds since the Unix epoch, because
// job and phase times are stored and shown as dates.
//
// Thread-safe: both clocks may be read from any thread; FakeClock may be
// advanced while others read it.
#ifndef IOSFARM_COMMON_CLOCK_H_
#define IOSFARM_COMMON_CLOCK_H_

#include <atomic>
#include <cstdint>

namespace iosfarm {

class Clock {
 public:
  virtual ~Clock() = default;
  virtual double NowSeconds() const = 0;
  int64_t NowUnixMs() const;
};

// std::chrono::system_clock.
const Clock& SystemClock();

// Time stands still until the test moves it.
class FakeClock final : public Clock {
 public:
  explicit FakeClock(double start_s = 1.8e9) : now_s_(start_s) {}
  double NowSeconds() const override { return now_s_.load(); }
  void Advance(double seconds);

 private:
  std::atomic<double> now_s_;
};

// SystemClock().NowSeconds(), NowUnixMs().
double NowSeconds();
int64_t NowUnixMs();

}  // namespace iosfarm

#endif  // IOSFARM_COMMON_CLOCK_H_
