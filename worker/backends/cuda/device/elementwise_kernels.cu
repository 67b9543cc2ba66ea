#include "worker/backends/cuda/device/elementwise_kernels.h"

#include "worker/backends/cuda/device/kernel_launch.cuh"
#include "worker/backends/cuda/planner/kernel_math.h"

namespace iosfarm::worker::cuda {
namespace {

__global__ void UnaryKernel(const float* x, float* y, int64_t n, UnaryParams f) {
  for (int64_t i = GlobalThreadIndex(); i < n; i += GridStride()) {
    y[i] = math::ApplyUnary(x[i], f);
  }
}

__global__ void BiasActivationKernel(float* y, const float* bias, int64_t n, int64_t channels,
                                     int64_t inner, UnaryParams f) {
  for (int64_t i = GlobalThreadIndex(); i < n; i += GridStride()) {
    float v = y[i];
    if (bias != nullptr) v += bias[math::Channel(i, channels, inner)];
    y[i] = math::ApplyUnary(v, f);
  }
}

__global__ void BiasResidualActivationKernel(float* y, const float* bias, const float* z,
                                             int64_t n, int64_t channels, int64_t inner,
                                             UnaryParams f) {
  for (int64_t i = GlobalThreadIndex(); i < n; i += GridStride()) {
    const float b = bias != nullptr ? bias[math::Channel(i, channels, inner)] : 0.0f;
    y[i] = math::BiasResidualActivation(y[i], b, z[i], f);
  }
}

__global__ void ChannelAffineKernel(const float* x, const float* scale, const float* shift,
                                    float* y, int64_t n, int64_t channels, int64_t inner) {
  for (int64_t i = GlobalThreadIndex(); i < n; i += GridStride()) {
    const int64_t c = math::Channel(i, channels, inner);
    y[i] = x[i] * scale[c] + shift[c];
  }
}

__global__ void BinaryKernel(BinaryKind kind, const float* a, const float* b, float* y, int64_t n,
                             BroadcastParams p) {
  for (int64_t i = GlobalThreadIndex(); i < n; i += GridStride()) {
    int64_t ia = 0, ib = 0;
    math::BroadcastOffsets(i, p, &ia, &ib);
    y[i] = math::ApplyBinary(kind, a[ia], b[ib]);
  }
}

}  // namespace

cudaError_t LaunchUnary(const float* x, float* y, int64_t n, UnaryParams f, cudaStream_t stream) {
  if (n <= 0) return cudaSuccess;
  UnaryKernel<<<GridFor(n), kBlockThreads, 0, stream>>>(x, y, n, f);
  return cudaGetLastError();
}

cudaError_t LaunchBiasActivation(float* y, const float* bias, int64_t n, int64_t channels,
                                 int64_t inner, UnaryParams f, cudaStream_t stream) {
  if (n <= 0) return cudaSuccess;
  if (channels < 1 || inner < 1) return cudaErrorInvalidValue;
  BiasActivationKernel<<<GridFor(n), kBlockThreads, 0, stream>>>(y, bias, n, channels, inner, f);
  return cudaGetLastError();
}

cudaError_t LaunchBiasResidualActivation(float* y, const float* bias, const float* z, int64_t n,
                                         int64_t channels, int64_t inner, UnaryParams f,
                                         cudaStream_t stream) {
  if (n <= 0) return cudaSuccess;
  if (channels < 1 || inner < 1 || z == nullptr) return cudaErrorInvalidValue;
  BiasResidualActivationKernel<<<GridFor(n), kBlockThreads, 0, stream>>>(y, bias, z, n, channels,
                                                                        inner, f);
  return cudaGetLastError();
}

cudaError_t LaunchChannelAffine(const float* x, const float* scale, const float* shift, float* y,
                                int64_t n, int64_t channels, int64_t inner, cudaStream_t stream) {
  if (n <= 0) return cudaSuccess;
  if (channels < 1 || inner < 1) return cudaErrorInvalidValue;
  ChannelAffineKernel<<<GridFor(n), kBlockThreads, 0, stream>>>(x, scale, shift, y, n, channels,
                                                                inner);
  return cudaGetLastError();
}

cudaError_t LaunchBinary(BinaryKind kind, const float* a, const float* b, float* y, int64_t n,
                         const BroadcastParams& params, cudaStream_t stream) {
  if (n <= 0) return cudaSuccess;
  if (params.rank < 0 || params.rank > kMaxKernelRank) return cudaErrorInvalidValue;
  for (int d = 0; d < params.rank; ++d) {
    if (params.out_dims[d] < 1) return cudaErrorInvalidValue;
  }
  BinaryKernel<<<GridFor(n), kBlockThreads, 0, stream>>>(kind, a, b, y, n, params);
  return cudaGetLastError();
}

}  // namespace iosfarm::worker::cuda
