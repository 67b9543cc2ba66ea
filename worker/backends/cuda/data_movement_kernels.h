// Data-movement CUDA kernels of the cuda backend (copies of strided rows,
// gathers for Slice and Transpose, Pad), callable from host C++.
//
// Plain C-style launchers (no absl): each enqueues one kernel on `stream`
// and returns the launch error. Dense fp32 tensors; sizes in elements;
// nothing is launched for empty work. Sources and destinations never overlap.
#ifndef IOSFARM_WORKER_BACKENDS_CUDA_DATA_MOVEMENT_KERNELS_H_
#define IOSFARM_WORKER_BACKENDS_CUDA_DATA_MOVEMENT_KERNELS_H_

#include <cuda_runtime_api.h>

#include <cstdint>

#include "worker/backends/cuda/kernel_limits.h"

namespace iosfarm::worker::cuda {

// dst[r * dst_pitch + i] = src[r * src_pitch + i] for r < rows, i < width.
cudaError_t LaunchCopyRows(const float* src, int64_t src_pitch, float* dst, int64_t dst_pitch,
                           int64_t rows, int64_t width, cudaStream_t stream);

// Output element with multi-index idx over out_dims (last fastest) reads
// x[base + sum idx[d] * in_strides[d]]. Slice: base = sum start[d] *
// stride[d], in_strides[d] = step[d] * stride[d]; Transpose: base = 0,
// in_strides[d] = stride[perm[d]].
struct GatherParams {
  int rank = 0;
  int64_t base = 0;
  int64_t out_dims[kMaxKernelRank] = {};
  int64_t in_strides[kMaxKernelRank] = {};
};

// y[i] for the n = prod(out_dims) output elements.
cudaError_t LaunchGather(const float* x, float* y, int64_t n, const GatherParams& params,
                         cudaStream_t stream);

enum class PadKind : int { kConstant, kReflect, kEdge };

// Output index idx[d] maps to input index idx[d] - pad_begin[d]; outside
// [0, in_dims[d]) it is `value` (kConstant), mirrored without repeating the
// edge (kReflect; pads are smaller than the dimension) or clamped (kEdge).
struct PadParams {
  int rank = 0;
  PadKind mode = PadKind::kConstant;
  float value = 0.0f;
  int64_t out_dims[kMaxKernelRank] = {};
  int64_t in_dims[kMaxKernelRank] = {};
  int64_t in_strides[kMaxKernelRank] = {};
  int64_t pad_begin[kMaxKernelRank] = {};
};

cudaError_t LaunchPad(const float* x, float* y, int64_t n, const PadParams& params,
                      cudaStream_t stream);

}  // namespace iosfarm::worker::cuda

#endif  // IOSFARM_WORKER_BACKENDS_CUDA_DATA_MOVEMENT_KERNELS_H_
