// StreamTimer: GPU time of work enqueued on one stream, from CUDA events.
#ifndef IOSFARM_WORKER_BACKENDS_CUDA_DEVICE_STREAM_TIMER_H_
#define IOSFARM_WORKER_BACKENDS_CUDA_DEVICE_STREAM_TIMER_H_

#include <cuda_runtime_api.h>

#include <functional>
#include <vector>

#include "common/status.h"
#include "worker/backends/cuda/device/cuda_handles.h"

namespace iosfarm::worker::cuda {

class StreamTimer {
 public:
  static StatusOr<StreamTimer> Create();

  // Resolution of CUDA event timing (about half a microsecond).
  static constexpr double kResolutionMs = 0.0005;

  // Records a start event on `stream`, calls `enqueue` `launches` times back
  // to back, records a stop event and waits for it; returns the elapsed GPU
  // time per launch in milliseconds (which includes any time the GPU waited
  // for the host to enqueue), at least kResolutionMs (work that takes less,
  // e.g. a stage of views only, cannot be told from nothing). On an enqueue
  // error the stream is drained and the error returned.
  //
  // With one launch the sample also holds the host's latency to its first
  // kernel (the GPU idles from the start event until that kernel arrives,
  // about 5-12 µs on an H200); launches back to back pay it once, as the
  // stages of a whole schedule do.
  StatusOr<double> Time(cudaStream_t stream, const std::function<Status()>& enqueue,
                        int launches = 1) const;

  // As Time, after a kernel that keeps `stream` busy for kDeviceOnlyHoldMs:
  // the host has enqueued the launches before the GPU reaches them, so the
  // sample is the GPU's time alone, without the host's enqueueing (what the
  // work costs inside a CUDA graph). The launches' host time must stay under
  // the hold.
  static constexpr double kDeviceOnlyHoldMs = 0.25;

  // As TimeDeviceOnly, but `before_each` is enqueued before every launch and
  // only the launches are timed, each between an event pair of its own:
  // the mean GPU time of one launch after `before_each` (e.g. a write that
  // evicts the L2 cache). At most kMaxLaunchesPerSample launches.
  StatusOr<double> TimeEachDeviceOnly(cudaStream_t stream,
                                      const std::function<Status()>& before_each,
                                      const std::function<Status()>& enqueue, int launches);
  StatusOr<double> TimeDeviceOnly(cudaStream_t stream, const std::function<Status()>& enqueue,
                                  int launches) const;

  // How many launches one timed sample of work that took `single_run_ms` in
  // a one-launch sample holds: enough for the sample to last about
  // kSampleTargetMs, at least 1, at most kMaxLaunchesPerSample.
  static constexpr double kSampleTargetMs = 0.2;
  static constexpr int kMaxLaunchesPerSample = 16;
  static int LaunchesPerSample(double single_run_ms);

 private:
  StreamTimer(UniqueEvent start, UniqueEvent stop)
      : start_(std::move(start)), stop_(std::move(stop)) {}

  // Enqueues the kernel that keeps `stream` busy for kDeviceOnlyHoldMs.
  static Status Hold(cudaStream_t stream);

  UniqueEvent start_;
  UniqueEvent stop_;
  std::vector<UniqueEvent> each_;  // TimeEachDeviceOnly's pairs, made on first use
};

}  // namespace iosfarm::worker::cuda

#endif  // IOSFARM_WORKER_BACKENDS_CUDA_DEVICE_STREAM_TIMER_H_
