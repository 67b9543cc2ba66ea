// Data-movement CUDA kernels of the cuda backend (copies of strided rows,
// gathers for Slice and Transpose, Pad, Resize), callable from host C++.
//
// Plain C-style launchers (no absl): each enqueues one kernel on `stream`
// and returns the launch error. Dense fp32 tensors; sizes in elements;
// nothing is launched for empty work. Sources and destinations never overlap.
#ifndef IOSFARM_WORKER_BACKENDS_CUDA_DEVICE_DATA_MOVEMENT_KERNELS_H_
#define IOSFARM_WORKER_BACKENDS_CUDA_DEVICE_DATA_MOVEMENT_KERNELS_H_

#include <cuda_runtime_api.h>

#include <cstdint>

#include "worker/backends/cuda/planner/kernel_types.h"

namespace iosfarm::worker::cuda {

// dst[r * dst_pitch + i] = src[r * src_pitch + i] for r < rows, i < width.
cudaError_t LaunchCopyRows(const float* src, int64_t src_pitch, float* dst, int64_t dst_pitch,
                           int64_t rows, int64_t width, cudaStream_t stream);

// y[i] for the n = prod(out_dims) output elements.
cudaError_t LaunchGather(const float* x, float* y, int64_t n, const GatherParams& params,
                         cudaStream_t stream);

cudaError_t LaunchPad(const float* x, float* y, int64_t n, const PadParams& params,
                      cudaStream_t stream);

// Resize of H and W: y[i] for the n = planes * out_h * out_w output elements.
cudaError_t LaunchResize(const float* x, float* y, int64_t n, const ResizeParams& params,
                         cudaStream_t stream);

}  // namespace iosfarm::worker::cuda

#endif  // IOSFARM_WORKER_BACKENDS_CUDA_DEVICE_DATA_MOVEMENT_KERNELS_H_
