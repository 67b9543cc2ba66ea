#include "worker/backends/cuda/device/stream_timer.h"

#include <algorithm>
#include <cmath>

#include "common/strings.h"
#include "worker/backends/cuda/device/cuda_status.h"
#include "worker/backends/cuda/diagnostics/hold_kernel.h"

namespace iosfarm::worker::cuda {

StatusOr<StreamTimer> StreamTimer::Create() {
  ASSIGN_OR_RETURN(UniqueEvent start, CreateEvent(/*timing=*/true));
  ASSIGN_OR_RETURN(UniqueEvent stop, CreateEvent(/*timing=*/true));
  return StreamTimer(std::move(start), std::move(stop));
}

StatusOr<double> StreamTimer::Time(cudaStream_t stream, const std::function<Status()>& enqueue,
                                   int launches) const {
  if (launches < 1) {
    return absl::InvalidArgumentError(StrCat("launches per sample must be >= 1, got ", launches));
  }
  RETURN_IF_ERROR(CudaCall(cudaEventRecord(start_.get(), stream), "cudaEventRecord (start)"));
  for (int i = 0; i < launches; ++i) {
    Status status = enqueue();
    if (!status.ok()) {
      (void)cudaStreamSynchronize(stream);
      return status;
    }
  }
  RETURN_IF_ERROR(CudaCall(cudaEventRecord(stop_.get(), stream), "cudaEventRecord (stop)"));
  RETURN_IF_ERROR(CudaCall(cudaEventSynchronize(stop_.get()), "cudaEventSynchronize"));
  float ms = 0.0f;
  RETURN_IF_ERROR(
      CudaCall(cudaEventElapsedTime(&ms, start_.get(), stop_.get()), "cudaEventElapsedTime"));
  return std::max(static_cast<double>(ms) / launches, kResolutionMs);
}

Status StreamTimer::Hold(cudaStream_t stream) {
  return CudaCall(
      LaunchHoldKernel(stream, static_cast<unsigned long long>(kDeviceOnlyHoldMs * 1e6)),
      "hold kernel");
}

StatusOr<double> StreamTimer::TimeDeviceOnly(cudaStream_t stream,
                                             const std::function<Status()>& enqueue,
                                             int launches) const {
  RETURN_IF_ERROR(Hold(stream));
  return Time(stream, enqueue, launches);
}

StatusOr<double> StreamTimer::TimeEachDeviceOnly(cudaStream_t stream,
                                                 const std::function<Status()>& before_each,
                                                 const std::function<Status()>& enqueue,
                                                 int launches) {
  if (launches < 1 || launches > kMaxLaunchesPerSample) {
    return absl::InvalidArgumentError(
        StrCat("launches per sample must be in [1, ", kMaxLaunchesPerSample, "], got ", launches));
  }
  while (each_.size() < 2 * static_cast<size_t>(launches)) {
    ASSIGN_OR_RETURN(UniqueEvent event, CreateEvent(/*timing=*/true));
    each_.push_back(std::move(event));
  }
  RETURN_IF_ERROR(Hold(stream));
  for (int i = 0; i < launches; ++i) {
    Status status = before_each();
    if (status.ok()) {
      status = CudaCall(cudaEventRecord(each_[2 * i].get(), stream), "cudaEventRecord (start)");
    }
    if (status.ok()) status = enqueue();
    if (status.ok()) {
      status = CudaCall(cudaEventRecord(each_[2 * i + 1].get(), stream), "cudaEventRecord (stop)");
    }
    if (!status.ok()) {
      (void)cudaStreamSynchronize(stream);
      return status;
    }
  }
  RETURN_IF_ERROR(
      CudaCall(cudaEventSynchronize(each_[2 * launches - 1].get()), "cudaEventSynchronize"));
  double total_ms = 0;
  for (int i = 0; i < launches; ++i) {
    float ms = 0.0f;
    RETURN_IF_ERROR(CudaCall(cudaEventElapsedTime(&ms, each_[2 * i].get(), each_[2 * i + 1].get()),
                             "cudaEventElapsedTime"));
    total_ms += ms;
  }
  return std::max(total_ms / launches, kResolutionMs);
}

int StreamTimer::LaunchesPerSample(double single_run_ms) {
  if (!(single_run_ms > 0)) return kMaxLaunchesPerSample;
  const double wanted = std::ceil(kSampleTargetMs / single_run_ms);
  return static_cast<int>(std::clamp(wanted, 1.0, static_cast<double>(kMaxLaunchesPerSample)));
}

}  // namespace iosfarm::worker::cuda
