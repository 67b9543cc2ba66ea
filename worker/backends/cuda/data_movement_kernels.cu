#include "worker/backends/cuda/data_movement_kernels.h"

#include "worker/backends/cuda/kernel_launch.cuh"

namespace iosfarm::worker::cuda {
namespace {

__global__ void CopyRowsKernel(const float* src, int64_t src_pitch, float* dst, int64_t dst_pitch,
                               int64_t rows, int64_t width) {
  const int64_t n = rows * width;
  for (int64_t i = GlobalThreadIndex(); i < n; i += GridStride()) {
    const int64_t r = i / width;
    const int64_t c = i - r * width;
    dst[r * dst_pitch + c] = src[r * src_pitch + c];
  }
}

__global__ void GatherKernel(const float* x, float* y, int64_t n, GatherParams p) {
  for (int64_t i = GlobalThreadIndex(); i < n; i += GridStride()) {
    int64_t offset = p.base;
    int64_t rest = i;
    for (int d = p.rank - 1; d >= 0; --d) {
      const int64_t index = rest % p.out_dims[d];
      rest /= p.out_dims[d];
      offset += index * p.in_strides[d];
    }
    y[i] = x[offset];
  }
}

// Source index along one dimension, or -1 for the constant value.
__device__ inline int64_t PadSource(PadKind mode, int64_t i, int64_t n) {
  if (i >= 0 && i < n) return i;
  switch (mode) {
    case PadKind::kConstant:
      return -1;
    case PadKind::kEdge:
      return i < 0 ? 0 : n - 1;
    case PadKind::kReflect:
      return i < 0 ? -i : 2 * (n - 1) - i;
  }
  return -1;
}

__global__ void PadKernel(const float* x, float* y, int64_t n, PadParams p) {
  for (int64_t i = GlobalThreadIndex(); i < n; i += GridStride()) {
    int64_t offset = 0;
    bool constant = false;
    int64_t rest = i;
    for (int d = p.rank - 1; d >= 0; --d) {
      const int64_t index = rest % p.out_dims[d];
      rest /= p.out_dims[d];
      const int64_t source = PadSource(p.mode, index - p.pad_begin[d], p.in_dims[d]);
      if (source < 0) {
        constant = true;
      } else {
        offset += source * p.in_strides[d];
      }
    }
    y[i] = constant ? p.value : x[offset];
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

}  // namespace iosfarm::worker::cuda
