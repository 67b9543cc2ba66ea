// Reduction CUDA kernels of the cuda backend (ReduceMean, global pools, and
// the 2-D pooling cases cuDNN cannot express), callable from host C++.
//
// Plain C-style launchers (no absl): each enqueues one kernel on `stream`
// and returns the launch error. Dense fp32 NCHW tensors; sizes in elements.
#ifndef IOSFARM_WORKER_BACKENDS_CUDA_REDUCE_KERNELS_H_
#define IOSFARM_WORKER_BACKENDS_CUDA_REDUCE_KERNELS_H_

#include <cuda_runtime_api.h>

#include <cstdint>

#include "worker/backends/cuda/kernel_limits.h"

namespace iosfarm::worker::cuda {

// Output element o (o < n_out) is the mean of x over the reduced dimensions:
// o's multi-index over kept_dims (last fastest) gives the base offset
// sum idx[d] * kept_strides[d]; r < count's multi-index over reduced_dims
// adds sum idx[d] * reduced_strides[d]. kept_rank may be 0 (one output).
struct ReduceParams {
  int kept_rank = 0;
  int reduced_rank = 0;
  int64_t count = 1;  // prod(reduced_dims)
  int64_t kept_dims[kMaxKernelRank] = {};
  int64_t kept_strides[kMaxKernelRank] = {};
  int64_t reduced_dims[kMaxKernelRank] = {};
  int64_t reduced_strides[kMaxKernelRank] = {};
};

cudaError_t LaunchReduceMean(const float* x, float* y, int64_t n_out, const ReduceParams& params,
                             cudaStream_t stream);

// y[p] = max or mean of x[p * size, (p + 1) * size), p < planes.
cudaError_t LaunchGlobalPool(const float* x, float* y, int64_t planes, int64_t size, bool is_max,
                             cudaStream_t stream);

// MaxPool / AveragePool over planes = N * C planes, exactly as the reference
// kernel (worker/backends/reference/window_kernels.cc): windows clipped to
// the input; the average divides by the elements inside the input, or with
// count_include_pad by the window clipped to the explicitly padded input.
struct Pool2dParams {
  int64_t planes = 0;
  int64_t in_h = 0, in_w = 0;
  int64_t out_h = 0, out_w = 0;
  int64_t kernel_h = 1, kernel_w = 1;
  int64_t stride_h = 1, stride_w = 1;
  int64_t pad_top = 0, pad_left = 0, pad_bottom = 0, pad_right = 0;
  bool is_max = true;
  bool count_include_pad = false;
};

cudaError_t LaunchPool2d(const float* x, float* y, const Pool2dParams& params,
                         cudaStream_t stream);

}  // namespace iosfarm::worker::cuda

#endif  // IOSFARM_WORKER_BACKENDS_CUDA_REDUCE_KERNELS_H_
