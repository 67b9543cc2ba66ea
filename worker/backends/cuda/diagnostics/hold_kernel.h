// A kernel that keeps a stream busy for a while, callable from host C++
// (kept free of absl so nvcc only compiles CUDA code). Queued before timed
// work, it lets the host enqueue all of that work before the GPU reaches it,
// so events around the work time the GPU alone (StreamTimer::TimeDeviceOnly).
#ifndef IOSFARM_WORKER_BACKENDS_CUDA_DIAGNOSTICS_HOLD_KERNEL_H_
#define IOSFARM_WORKER_BACKENDS_CUDA_DIAGNOSTICS_HOLD_KERNEL_H_

#include <cuda_runtime_api.h>

namespace iosfarm::worker::cuda {

// One thread spins on the GPU's global timer for `nanoseconds`, on `stream`.
// Returns the launch error, if any.
cudaError_t LaunchHoldKernel(cudaStream_t stream, unsigned long long nanoseconds);

}  // namespace iosfarm::worker::cuda

#endif  // IOSFARM_WORKER_BACKENDS_CUDA_DIAGNOSTICS_HOLD_KERNEL_H_
