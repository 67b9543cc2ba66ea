#include "common/clock.h"

#include <chrono>
#include <cmath>

namespace iosfarm {
namespace {

class WallClock final : public Clock {
 public:
  double NowSeconds() const override {
    using namespace std::chrono;
    return duration<double>(system_clock::now().time_since_epoch()).count();
  }
};

}  // namespace

int64_t Clock::NowUnixMs() const { return std::llround(NowSeconds() * 1000.0); }

const Clock& SystemClock() {
  static const WallClock clock;
  return clock;
}

void FakeClock::Advance(double seconds) {
  double now = now_s_.load();
  while (!now_s_.compare_exchange_weak(now, now + seconds)) {
  }
}

double NowSeconds() { return SystemClock().NowSeconds(); }

int64_t NowUnixMs() { return SystemClock().NowUnixMs(); }

}  // namespace iosfarm
