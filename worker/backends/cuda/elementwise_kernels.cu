#include "worker/backends/cuda/elementwise_kernels.h"

#include "worker/backends/cuda/kernel_launch.cuh"

namespace iosfarm::worker::cuda {
namespace {

__device__ inline float Clamp(float v, float lo, float hi) { return fminf(fmaxf(v, lo), hi); }

__device__ inline float ApplyUnary(float v, const UnaryParams& f) {
  switch (f.kind) {
    case UnaryKind::kIdentity:
      return v;
    case UnaryKind::kRelu:
      return v > 0.0f ? v : 0.0f;
    case UnaryKind::kClip:
      return Clamp(v, f.a, f.b);
    case UnaryKind::kSigmoid:
      return 1.0f / (1.0f + expf(-v));
    case UnaryKind::kHardSigmoid:
      return Clamp(f.a * v + f.b, 0.0f, 1.0f);
    case UnaryKind::kHardSwish:
      return v * Clamp(v / 6.0f + 0.5f, 0.0f, 1.0f);
    case UnaryKind::kTanh:
      return tanhf(v);
  }
  return v;
}

__global__ void UnaryKernel(const float* x, float* y, int64_t n, UnaryParams f) {
  for (int64_t i = GlobalThreadIndex(); i < n; i += GridStride()) y[i] = ApplyUnary(x[i], f);
}

__global__ void BiasActivationKernel(float* y, const float* bias, int64_t n, int64_t channels,
                                     int64_t inner, UnaryParams f) {
  for (int64_t i = GlobalThreadIndex(); i < n; i += GridStride()) {
    float v = y[i];
    if (bias != nullptr) v += bias[(i / inner) % channels];
    y[i] = ApplyUnary(v, f);
  }
}

__global__ void ChannelAffineKernel(const float* x, const float* scale, const float* shift,
                                    float* y, int64_t n, int64_t channels, int64_t inner) {
  for (int64_t i = GlobalThreadIndex(); i < n; i += GridStride()) {
    const int64_t c = (i / inner) % channels;
    y[i] = x[i] * scale[c] + shift[c];
  }
}

__device__ inline float ApplyBinary(BinaryKind kind, float a, float b) {
  switch (kind) {
    case BinaryKind::kAdd:
      return a + b;
    case BinaryKind::kSub:
      return a - b;
    case BinaryKind::kMul:
      return a * b;
    case BinaryKind::kDiv:
      return a / b;
  }
  return 0.0f;
}

__global__ void BinaryKernel(BinaryKind kind, const float* a, const float* b, float* y, int64_t n,
                             BroadcastParams p) {
  for (int64_t i = GlobalThreadIndex(); i < n; i += GridStride()) {
    int64_t ia = i, ib = i;
    if (p.rank > 0) {
      ia = 0;
      ib = 0;
      int64_t rest = i;
      for (int d = p.rank - 1; d >= 0; --d) {
        const int64_t index = rest % p.out_dims[d];
        rest /= p.out_dims[d];
        ia += index * p.a_strides[d];
        ib += index * p.b_strides[d];
      }
    }
    y[i] = ApplyBinary(kind, a[ia], b[ib]);
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
