// The transposed convolution kernel of the cuda backend (ConvTranspose),
// callable from host C++.
//
// A plain C-style launcher (no absl): it enqueues one kernel on `stream` and
// returns the launch error. Dense fp32 NCHW tensors; the weight is ONNX's
// [C, out_channels / groups, kH, kW]; nothing is launched for empty work.
// Each thread gathers one output element (math::ConvTransposeValue), the
// reference's semantics with a float accumulator.
#ifndef IOSFARM_WORKER_BACKENDS_CUDA_DEVICE_CONV_TRANSPOSE_KERNELS_H_
#define IOSFARM_WORKER_BACKENDS_CUDA_DEVICE_CONV_TRANSPOSE_KERNELS_H_

#include <cuda_runtime_api.h>

#include <cstdint>

#include "worker/backends/cuda/planner/kernel_types.h"

namespace iosfarm::worker::cuda {

// y[i] for the n = batch * out_channels * out_h * out_w output elements;
// `bias` is null or out_channels values.
cudaError_t LaunchConvTranspose(const float* x, const float* w, const float* bias, float* y,
                                int64_t n, const ConvTransposeParams& params, cudaStream_t stream);

}  // namespace iosfarm::worker::cuda

#endif  // IOSFARM_WORKER_BACKENDS_CUDA_DEVICE_CONV_TRANSPOSE_KERNELS_H_
