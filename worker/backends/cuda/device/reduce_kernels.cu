#include "worker/backends/cuda/device/reduce_kernels.h"

#include <cmath>

#include "worker/backends/cuda/device/kernel_launch.cuh"
#include "worker/backends/cuda/planner/kernel_math.h"

namespace iosfarm::worker::cuda {
namespace {

constexpr int kWarp = 32;
constexpr int kWarpsPerBlock = kBlockThreads / kWarp;

__device__ inline float WarpCombine(ReduceFunctionKind f, float v) {
  for (int offset = kWarp / 2; offset > 0; offset /= 2) {
    v = math::ReduceCombine(f, v, __shfl_down_sync(0xffffffffu, v, offset));
  }
  return v;
}

// One warp per output element; every lane of a warp runs the same number of
// loop iterations over outputs so the shuffles see full warps.
__global__ void ReduceKernel(const float* x, float* y, int64_t n_out, ReduceParams p) {
  const int lane = threadIdx.x % kWarp;
  const int64_t first_warp = static_cast<int64_t>(blockIdx.x) * kWarpsPerBlock + threadIdx.x / kWarp;
  const int64_t warps = static_cast<int64_t>(gridDim.x) * kWarpsPerBlock;
  for (int64_t o = first_warp; o < n_out; o += warps) {
    const int64_t base = math::ReduceBase(o, p);
    float acc = math::ReduceIdentity(p.function);
    for (int64_t r = lane; r < p.count; r += kWarp) {
      acc = math::ReduceCombine(p.function, acc, x[base + math::ReduceOffset(r, p)]);
    }
    acc = WarpCombine(p.function, acc);
    if (lane == 0) y[o] = math::ReduceFinish(p.function, acc, p.count);
  }
}

__global__ void GlobalPoolKernel(const float* x, float* y, int64_t planes, int64_t size,
                                 bool is_max) {
  const int lane = threadIdx.x % kWarp;
  const int64_t first_warp = static_cast<int64_t>(blockIdx.x) * kWarpsPerBlock + threadIdx.x / kWarp;
  const int64_t warps = static_cast<int64_t>(gridDim.x) * kWarpsPerBlock;
  for (int64_t plane = first_warp; plane < planes; plane += warps) {
    const float* in = x + plane * size;
    const ReduceFunctionKind f = is_max ? ReduceFunctionKind::kMax : ReduceFunctionKind::kMean;
    // Lanes that see no element keep the identity (-inf for max, 0 for sum).
    float acc = math::ReduceIdentity(f);
    for (int64_t i = lane; i < size; i += kWarp) acc = math::ReduceCombine(f, acc, in[i]);
    acc = WarpCombine(f, acc);
    if (lane == 0) y[plane] = math::ReduceFinish(f, acc, size);
  }
}

__global__ void Pool2dKernel(const float* x, float* y, Pool2dParams p) {
  const int64_t n = p.planes * p.out_h * p.out_w;
  for (int64_t i = GlobalThreadIndex(); i < n; i += GridStride()) y[i] = math::Pool2dValue(x, i, p);
}

unsigned int WarpGridFor(int64_t items) {
  int64_t blocks = (items + kWarpsPerBlock - 1) / kWarpsPerBlock;
  if (blocks > kMaxBlocks) blocks = kMaxBlocks;
  if (blocks < 1) blocks = 1;
  return static_cast<unsigned int>(blocks);
}

}  // namespace

cudaError_t LaunchReduce(const float* x, float* y, int64_t n_out, const ReduceParams& params,
                         cudaStream_t stream) {
  if (n_out <= 0) return cudaSuccess;
  if (params.kept_rank < 0 || params.kept_rank > kMaxKernelRank || params.reduced_rank < 0 ||
      params.reduced_rank > kMaxKernelRank || params.count < 1) {
    return cudaErrorInvalidValue;
  }
  ReduceKernel<<<WarpGridFor(n_out), kBlockThreads, 0, stream>>>(x, y, n_out, params);
  return cudaGetLastError();
}

cudaError_t LaunchGlobalPool(const float* x, float* y, int64_t planes, int64_t size, bool is_max,
                             cudaStream_t stream) {
  if (planes <= 0) return cudaSuccess;
  if (size < 1) return cudaErrorInvalidValue;
  GlobalPoolKernel<<<WarpGridFor(planes), kBlockThreads, 0, stream>>>(x, y, planes, size, is_max);
  return cudaGetLastError();
}

cudaError_t LaunchPool2d(const float* x, float* y, const Pool2dParams& params,
                         cudaStream_t stream) {
  const int64_t n = params.planes * params.out_h * params.out_w;
  if (n <= 0) return cudaSuccess;
  if (params.in_h < 1 || params.in_w < 1 || params.kernel_h < 1 || params.kernel_w < 1 ||
      params.stride_h < 1 || params.stride_w < 1) {
    return cudaErrorInvalidValue;
  }
  Pool2dKernel<<<GridFor(n), kBlockThreads, 0, stream>>>(x, y, params);
  return cudaGetLastError();
}

}  // namespace iosfarm::worker::cuda
