#include "worker/backends/cuda/device/data_movement_kernels.h"

#include "worker/backends/cuda/device/kernel_launch.cuh"
#include "worker/backends/cuda/planner/kernel_math.h"

namespace iosfarm::worker::cuda {
namespace {

__global__ void CopyRowsKernel(const float* src, int64_t src_pitch, float* dst, int64_t dst_pitch,
                               int64_t rows, int64_t width) {
  const int64_t n = rows * width;
  for (int64_t i = GlobalThreadIndex(); i < n; i += GridStride()) {
    int64_t s = 0, d = 0;
    math::CopyRowsOffsets(i, width, src_pitch, dst_pitch, &s, &d);
    dst[d] = src[s];
  }
}

__global__ void GatherKernel(const float* x, float* y, int64_t n, GatherParams p) {
  for (int64_t i = GlobalThreadIndex(); i < n; i += GridStride()) {
    y[i] = x[math::GatherOffset(i, p)];
  }
}

__global__ void PadKernel(const float* x, float* y, int64_t n, PadParams p) {
  for (int64_t i = GlobalThreadIndex(); i < n; i += GridStride()) {
    const int64_t offset = math::PadOffset(i, p);
    y[i] = offset < 0 ? p.value : x[offset];
  }
}

__global__ void ResizeKernel(const float* x, float* y, int64_t n, ResizeParams p) {
  for (int64_t i = GlobalThreadIndex(); i < n; i += GridStride()) {
    y[i] = math::ResizeValue(x, i, p);
  }
}

}  // namespace

cudaError_t LaunchCopyRows(const float* src, int64_t src_pitch, float* dst, int64_t dst_pitch,
                           int64_t rows, int64_t width, cudaStream_t stream) {
  if (rows <= 0 || width <= 0) return cudaSuccess;
  if (src_pitch < width || dst_pitch < width) return cudaErrorInvalidValue;
  CopyRowsKernel<<<GridFor(rows * width), kBlockThreads, 0, stream>>>(src, src_pitch, dst,
                                                                      dst_pitch, rows, width);
  return cudaGetLastError();
}

cudaError_t LaunchGather(const float* x, float* y, int64_t n, const GatherParams& params,
                         cudaStream_t stream) {
  if (n <= 0) return cudaSuccess;
  if (params.rank < 1 || params.rank > kMaxKernelRank) return cudaErrorInvalidValue;
  for (int d = 0; d < params.rank; ++d) {
    if (params.out_dims[d] < 1) return cudaErrorInvalidValue;
  }
  GatherKernel<<<GridFor(n), kBlockThreads, 0, stream>>>(x, y, n, params);
  return cudaGetLastError();
}

cudaError_t LaunchPad(const float* x, float* y, int64_t n, const PadParams& params,
                      cudaStream_t stream) {
  if (n <= 0) return cudaSuccess;
  if (params.rank < 1 || params.rank > kMaxKernelRank) return cudaErrorInvalidValue;
  for (int d = 0; d < params.rank; ++d) {
    if (params.out_dims[d] < 1 || params.in_dims[d] < 1) return cudaErrorInvalidValue;
  }
  PadKernel<<<GridFor(n), kBlockThreads, 0, stream>>>(x, y, n, params);
  return cudaGetLastError();
}

cudaError_t LaunchResize(const float* x, float* y, int64_t n, const ResizeParams& params,
                         cudaStream_t stream) {
  if (n <= 0) return cudaSuccess;
  if (params.in_h < 1 || params.in_w < 1 || params.out_h < 1 || params.out_w < 1 ||
      n != params.planes * params.out_h * params.out_w) {
    return cudaErrorInvalidValue;
  }
  ResizeKernel<<<GridFor(n), kBlockThreads, 0, stream>>>(x, y, n, params);
  return cudaGetLastError();
}

}  // namespace iosfarm::worker::cuda
