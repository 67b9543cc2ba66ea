// The profiling protocol shared by every backend (docs/profiling.md).
//
// MeasureLatency runs `run_once` `options.warmup` times untimed, then timed
// until the stopping rule of ProfileOptions holds, and returns robust
// statistics. `run_once` performs one complete, synchronised execution and
// returns its duration in milliseconds (device events or a monotonic clock);
// an error stops the measurement and is returned.
#ifndef IOSFARM_WORKER_BACKENDS_PROFILING_H_
#define IOSFARM_WORKER_BACKENDS_PROFILING_H_

#include <functional>
#include <vector>

#include "common/status.h"
#include "worker/backends/backend.h"

namespace iosfarm::worker {

StatusOr<LatencyStats> MeasureLatency(const std::function<StatusOr<double>()>& run_once,
                                      const ProfileOptions& options);

// Median, p10, p90 (linear interpolation), coefficient of variation and count
// of `samples_ms`. InvalidArgument when empty.
StatusOr<LatencyStats> SummarizeSamples(std::vector<double> samples_ms);

// InvalidArgument naming the field when options are inconsistent.
Status ValidateProfileOptions(const ProfileOptions& options);

}  // namespace iosfarm::worker

#endif  // IOSFARM_WORKER_BACKENDS_PROFILING_H_
