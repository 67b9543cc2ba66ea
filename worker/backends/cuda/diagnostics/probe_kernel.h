// The probe kernel, callable from host C++ (kept free of absl so nvcc only
// compiles CUDA code).
#ifndef IOSFARM_WORKER_BACKENDS_CUDA_DIAGNOSTICS_PROBE_KERNEL_H_
#define IOSFARM_WORKER_BACKENDS_CUDA_DIAGNOSTICS_PROBE_KERNEL_H_

#include <cuda_runtime_api.h>

namespace iosfarm::worker::cuda {

// Writes out[i] = 3 * i + 1 for i < n on the current device, asynchronously
// on the default stream. Returns the launch error, if any.
cudaError_t LaunchProbeKernel(int* out, int n);

inline int ProbeKernelValue(int i) { return 3 * i + 1; }

// Launches an empty kernel (one thread) on `stream`: what a launch costs the
// host (MeasureLeastLaunchUs). Returns the launch error, if any.
cudaError_t LaunchEmptyKernel(cudaStream_t stream);

}  // namespace iosfarm::worker::cuda

#endif  // IOSFARM_WORKER_BACKENDS_CUDA_DIAGNOSTICS_PROBE_KERNEL_H_
