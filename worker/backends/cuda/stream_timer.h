// StreamTimer: GPU time of work enqueued on one stream, from CUDA events.
#ifndef IOSFARM_WORKER_BACKENDS_CUDA_STREAM_TIMER_H_
#define IOSFARM_WORKER_BACKENDS_CUDA_STREAM_TIMER_H_

#include <cuda_runtime_api.h>

#include <functional>

#include "common/status.h"
#include "worker/backends/cuda/cuda_handles.h"

namespace iosfarm::worker::cuda {

class StreamTimer {
 public:
  static StatusOr<StreamTimer> Create();

  // Resolution of CUDA event timing (about half a microsecond).
  static constexpr double kResolutionMs = 0.0005;

  // Records a start event on `stream`, calls `enqueue`, records a stop event
  // and waits for it; returns the elapsed GPU time in milliseconds (which
  // includes any time the GPU waited for the host to enqueue), at least
  // kResolutionMs (work that takes less, e.g. a stage of views only, cannot
  // be told from nothing). On an enqueue error the stream is drained and the
  // error returned.
  StatusOr<double> Time(cudaStream_t stream, const std::function<Status()>& enqueue) const;

 private:
  StreamTimer(UniqueEvent start, UniqueEvent stop)
      : start_(std::move(start)), stop_(std::move(stop)) {}

  UniqueEvent start_;
  UniqueEvent stop_;
};

}  // namespace iosfarm::worker::cuda

#endif  // IOSFARM_WORKER_BACKENDS_CUDA_STREAM_TIMER_H_
