#include "worker/backends/cuda/device/conv_transpose_kernels.h"

#include "worker/backends/cuda/device/kernel_launch.cuh"
#include "worker/backends/cuda/planner/kernel_math.h"

namespace iosfarm::worker::cuda {
namespace {

__global__ void ConvTransposeKernel(const float* x, const float* w, const float* bias, float* y,
                                    int64_t n, ConvTransposeParams p) {
  for (int64_t i = GlobalThreadIndex(); i < n; i += GridStride()) {
    y[i] = math::ConvTransposeValue(x, w, bias, i, p);
  }
}

}  // namespace

cudaError_t LaunchConvTranspose(const float* x, const float* w, const float* bias, float* y,
                                int64_t n, const ConvTransposeParams& params, cudaStream_t stream) {
  if (n <= 0) return cudaSuccess;
  if (params.in_h < 1 || params.in_w < 1 || params.groups < 1 ||
      n != params.batch * params.out_channels * params.out_h * params.out_w) {
    return cudaErrorInvalidValue;
  }
  ConvTransposeKernel<<<GridFor(n), kBlockThreads, 0, stream>>>(x, w, bias, y, n, params);
  return cudaGetLastError();
}

}  // namespace iosfarm::worker::cuda
