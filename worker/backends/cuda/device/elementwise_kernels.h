// Element-wise CUDA kernels of the cuda backend, callable from host C++.
//
// Plain C-style launchers (no absl: nvcc compiles this as CUDA 17): each
// enqueues one kernel on `stream` and returns the launch error. Tensors are
// dense fp32; sizes are in elements; nothing is launched for n == 0.
#ifndef IOSFARM_WORKER_BACKENDS_CUDA_DEVICE_ELEMENTWISE_KERNELS_H_
#define IOSFARM_WORKER_BACKENDS_CUDA_DEVICE_ELEMENTWISE_KERNELS_H_

#include <cuda_runtime_api.h>

#include <cstdint>

#include "worker/backends/cuda/planner/kernel_types.h"

namespace iosfarm::worker::cuda {

// y[i] = f(x[i]), i < n. x and y may be the same pointer.
cudaError_t LaunchUnary(const float* x, float* y, int64_t n, UnaryParams f, cudaStream_t stream);

// In place: y[i] = f(y[i] + bias[c]) with c = (i / inner) % channels (NCHW
// channel of element i); bias may be null (no bias).
cudaError_t LaunchBiasActivation(float* y, const float* bias, int64_t n, int64_t channels,
                                 int64_t inner, UnaryParams f, cudaStream_t stream);

// In place: y[i] = f(y[i] + bias[c] + z[i]), c as above; the epilogue of a
// conv with a fused residual add when cuDNN cannot fuse it. bias may be null;
// z has n elements and may not alias y.
cudaError_t LaunchBiasResidualActivation(float* y, const float* bias, const float* z, int64_t n,
                                         int64_t channels, int64_t inner, UnaryParams f,
                                         cudaStream_t stream);

// y[i] = x[i] * scale[c] + shift[c], c = (i / inner) % channels.
cudaError_t LaunchChannelAffine(const float* x, const float* scale, const float* shift, float* y,
                                int64_t n, int64_t channels, int64_t inner, cudaStream_t stream);

// y = a (op) b over the n output elements, IEEE fp32 arithmetic.
cudaError_t LaunchBinary(BinaryKind kind, const float* a, const float* b, float* y, int64_t n,
                         const BroadcastParams& params, cudaStream_t stream);

}  // namespace iosfarm::worker::cuda

#endif  // IOSFARM_WORKER_BACKENDS_CUDA_DEVICE_ELEMENTWISE_KERNELS_H_
