#include "server/phase_padding.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <optional>
#include <utility>

#include "common/strings.h"

namespace iosfarm::server {

namespace farm = scheduler::farm;

StatusOr<std::map<farm::PhaseKind, double>> ParseSyntheticPhaseSeconds(const std::string& text) {
  std::map<farm::PhaseKind, double> out;
  size_t begin = 0;
  while (begin < text.size()) {
    size_t end = text.find(',', begin);
    if (end == std::string::npos) end = text.size();
    const std::string entry = text.substr(begin, end - begin);
    begin = end + 1;
    if (entry.empty()) continue;
    const size_t eq = entry.find('=');
    std::optional<farm::PhaseKind> kind;
    if (eq != std::string::npos) kind = farm::PhaseKindFromName(entry.substr(0, eq));
    char* parse_end = nullptr;
    const std::string value = eq == std::string::npos ? "" : entry.substr(eq + 1);
    const double seconds = std::strtod(value.c_str(), &parse_end);
    if (!kind || value.empty() || *parse_end != '\0' || !std::isfinite(seconds) || seconds < 0) {
      return absl::InvalidArgumentError(
          StrCat("--synthetic-phase-seconds: bad entry '", entry,
                 "' (expected KIND=SECONDS, KIND one of enumerate, build, profile, update, "
                 "measure, SECONDS >= 0)"));
    }
    out[*kind] = seconds;
  }
  return out;
}

PhasePadding::PhasePadding(std::map<farm::PhaseKind, double> minimum_s, const Clock& clock)
    : minimum_s_(std::move(minimum_s)), clock_(clock) {}

PhasePadding::~PhasePadding() { Stop(); }

double PhasePadding::Left(farm::PhaseKind kind, double dispatched_s) const {
  auto it = minimum_s_.find(kind);
  if (it == minimum_s_.end()) return 0;
  return std::max(0.0, dispatched_s + it->second - clock_.NowSeconds());
}

void PhasePadding::RunAt(double due_s, std::function<void()> task) {
  absl::MutexLock lock(&mu_);
  if (stop_) return;
  if (!thread_.joinable()) thread_ = std::thread([this] { Loop(); });
  delayed_.emplace(due_s, std::move(task));
}

void PhasePadding::Stop() {
  std::thread thread;
  {
    absl::MutexLock lock(&mu_);
    stop_ = true;
    delayed_.clear();
    thread.swap(thread_);
  }
  if (thread.joinable()) thread.join();
}

void PhasePadding::Loop() {
  absl::MutexLock lock(&mu_);
  while (!stop_) {
    if (delayed_.empty()) {
      auto ready = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
        return stop_ || !delayed_.empty();
      };
      mu_.Await(absl::Condition(&ready));
      continue;
    }
    const double wait_s = delayed_.begin()->first - clock_.NowSeconds();
    if (wait_s > 0) {
      // Wakes early for an earlier task or Stop; a new task re-checks.
      const double first = delayed_.begin()->first;
      auto changed = [this, first]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
        return stop_ || delayed_.empty() || delayed_.begin()->first < first;
      };
      mu_.AwaitWithTimeout(absl::Condition(&changed), absl::Seconds(wait_s));
      continue;
    }
    std::function<void()> task = std::move(delayed_.begin()->second);
    delayed_.erase(delayed_.begin());
    mu_.Unlock();
    task();
    mu_.Lock();
  }
}

}  // namespace iosfarm::server
