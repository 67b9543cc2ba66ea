#include "worker/backends/profiling.h"

#include <algorithm>
#include <cmath>

#include "common/strings.h"

namespace iosfarm::worker {
namespace {

double Quantile(const std::vector<double>& sorted, double q) {
  const double position = q * static_cast<double>(sorted.size() - 1);
  const size_t below = static_cast<size_t>(std::floor(position));
  const size_t above = std::min(below + 1, sorted.size() - 1);
  const double fraction = position - static_cast<double>(below);
  return sorted[below] + (sorted[above] - sorted[below]) * fraction;
}

double Median(std::vector<double> samples) {
  std::sort(samples.begin(), samples.end());
  return Quantile(samples, 0.5);
}

}  // namespace

Status ValidateProfileOptions(const ProfileOptions& o) {
  if (o.warmup < 0) return absl::InvalidArgumentError("profile option warmup must be >= 0");
  if (o.min_repeats < 1) {
    return absl::InvalidArgumentError("profile option min_repeats must be >= 1");
  }
  if (o.max_repeats < o.min_repeats) {
    return absl::InvalidArgumentError(StrCat("profile option max_repeats (", o.max_repeats,
                                             ") must be >= min_repeats (", o.min_repeats, ")"));
  }
  if (!(o.stable_fraction > 0)) {
    return absl::InvalidArgumentError("profile option stable_fraction must be > 0");
  }
  if (!(o.max_seconds > 0)) {
    return absl::InvalidArgumentError("profile option max_seconds must be > 0");
  }
  return absl::OkStatus();
}

StatusOr<LatencyStats> SummarizeSamples(std::vector<double> samples) {
  if (samples.empty()) return absl::InvalidArgumentError("no timing samples");
  std::sort(samples.begin(), samples.end());
  LatencyStats stats;
  stats.repeats = static_cast<int>(samples.size());
  stats.median_ms = Quantile(samples, 0.5);
  stats.p10_ms = Quantile(samples, 0.1);
  stats.p90_ms = Quantile(samples, 0.9);
  double mean = 0;
  for (double s : samples) mean += s;
  mean /= static_cast<double>(samples.size());
  double variance = 0;
  for (double s : samples) variance += (s - mean) * (s - mean);
  variance /= static_cast<double>(samples.size());
  stats.cv = mean > 0 ? std::sqrt(variance) / mean : 0;
  return stats;
}

StatusOr<LatencyStats> MeasureLatency(const std::function<StatusOr<double>()>& run_once,
                                      const ProfileOptions& options) {
  RETURN_IF_ERROR(ValidateProfileOptions(options));
  for (int i = 0; i < options.warmup; ++i) {
    ASSIGN_OR_RETURN(double ignored, run_once());
    (void)ignored;
  }
  std::vector<double> samples;
  double total_ms = 0;
  double previous_median = -1;
  while (static_cast<int>(samples.size()) < options.max_repeats) {
    ASSIGN_OR_RETURN(double ms, run_once());
    if (!(ms >= 0) || !std::isfinite(ms)) {
      return absl::InternalError(StrCat("timing sample ", ms, " ms is not a finite duration"));
    }
    samples.push_back(ms);
    total_ms += ms;
    const int n = static_cast<int>(samples.size());
    if (total_ms >= options.max_seconds * 1000.0 && n >= 1) break;
    // Stable: the median moved less than stable_fraction since min_repeats
    // samples ago.
    if (n >= options.min_repeats && n % options.min_repeats == 0) {
      const double median = Median(samples);
      if (previous_median >= 0 &&
          std::abs(median - previous_median) <= options.stable_fraction * previous_median) {
        break;
      }
      previous_median = median;
    }
  }
  return SummarizeSamples(std::move(samples));
}

}  // namespace iosfarm::worker
