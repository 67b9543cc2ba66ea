// Reduction CUDA kernels of the cuda backend (ReduceMean, ReduceSum,
// ReduceMax, ReduceMin, global pools, and
// the 2-D pooling cases cuDNN cannot express), callable from host C++.
//
// Plain C-style launchers (no absl): each enqueues one kernel on `stream`
// and returns the launch error. Dense fp32 NCHW tensors; sizes in elements.
#ifndef IOSFARM_WORKER_BACKENDS_CUDA_DEVICE_REDUCE_KERNELS_H_
#define IOSFARM_WORKER_BACKENDS_CUDA_DEVICE_REDUCE_KERNELS_H_

#include <cuda_runtime_api.h>

#include <cstdint>

#include "worker/backends/cuda/planner/kernel_types.h"

namespace iosfarm::worker::cuda {

// y[o] for the n_out outputs, params.function over each one's reduced elements.
cudaError_t LaunchReduce(const float* x, float* y, int64_t n_out, const ReduceParams& params,
                         cudaStream_t stream);

// y[p] = max or mean of x[p * size, (p + 1) * size), p < planes.
cudaError_t LaunchGlobalPool(const float* x, float* y, int64_t planes, int64_t size, bool is_max,
                             cudaStream_t stream);

cudaError_t LaunchPool2d(const float* x, float* y, const Pool2dParams& params,
                         cudaStream_t stream);

}  // namespace iosfarm::worker::cuda

#endif  // IOSFARM_WORKER_BACKENDS_CUDA_DEVICE_REDUCE_KERNELS_H_
