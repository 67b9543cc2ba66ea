// The parameter types of the backend's own CUDA kernels
// (elementwise_kernels.h, data_movement_kernels.h, reduce_kernels.h): plain
// C++ shared by the kernels (.cu, compiled for the device), their host-side
// construction (kernel_params.h) and host tests (kernel_math.h), so none of
// those needs a CUDA header. No absl (nvcc compiles this as CUDA 17).
#ifndef IOSFARM_WORKER_BACKENDS_CUDA_PLANNER_KERNEL_TYPES_H_
#define IOSFARM_WORKER_BACKENDS_CUDA_PLANNER_KERNEL_TYPES_H_

#include <cstdint>

#include "worker/backends/cuda/planner/kernel_limits.h"

namespace iosfarm::worker::cuda {

enum class UnaryKind : int {
  kIdentity,
  kRelu,         // max(x, 0)
  kClip,         // min(max(x, a), b)
  kSigmoid,      // 1 / (1 + exp(-x))
  kHardSigmoid,  // min(max(a * x + b, 0), 1)
  kHardSwish,    // x * min(max(x / 6 + 1/2, 0), 1)
  kTanh,
  // UnaryMath (graph::UnaryMathAttrs; a, b: its alpha, beta)
  kLeakyRelu,   // x >= 0 ? x : a * x
  kElu,         // x >= 0 ? x : a * (exp(x) - 1)
  kSelu,        // b * (x > 0 ? x : a * (exp(x) - 1))
  kSoftplus,    // log(1 + exp(x))
  kMish,        // x * tanh(softplus(x))
  kGelu,        // x / 2 * (1 + erf(x / sqrt(2)))
  kGeluTanh,    // x / 2 * (1 + tanh(sqrt(2 / pi) * (x + 0.044715 x^3)))
  kErf,
  kSqrt,
  kExp,
  kLog,
  kNeg,
  kAbs,
  kReciprocal,  // 1 / x
  kPow,         // x ^ a
};

struct UnaryParams {
  UnaryKind kind = UnaryKind::kIdentity;
  float a = 0.0f;
  float b = 0.0f;
};

enum class BinaryKind : int { kAdd, kSub, kMul, kDiv };

// Numpy broadcasting: output element with multi-index idx (over out_dims,
// last dimension fastest) reads a[sum idx[d] * a_strides[d]] and
// b[sum idx[d] * b_strides[d]] (stride 0 along broadcast dimensions).
// rank == 0 means no broadcasting: a, b and y all have n elements.
struct BroadcastParams {
  int rank = 0;
  int64_t out_dims[kMaxKernelRank] = {};
  int64_t a_strides[kMaxKernelRank] = {};
  int64_t b_strides[kMaxKernelRank] = {};
};

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

// The reductions, in graph::OpType's words: kReduceMean, kReduceSum,
// kReduceMax, kReduceMin.
enum class ReduceFunctionKind : int { kMean, kSum, kMax, kMin };

// Output element o (o < n_out) is the `function` of x over the reduced
// dimensions: o's multi-index over kept_dims (last fastest) gives the base
// offset sum idx[d] * kept_strides[d]; r < count's multi-index over
// reduced_dims adds sum idx[d] * reduced_strides[d]. kept_rank may be 0 (one
// output).
struct ReduceParams {
  ReduceFunctionKind function = ReduceFunctionKind::kMean;
  int kept_rank = 0;
  int reduced_rank = 0;
  int64_t count = 1;  // prod(reduced_dims)
  int64_t kept_dims[kMaxKernelRank] = {};
  int64_t kept_strides[kMaxKernelRank] = {};
  int64_t reduced_dims[kMaxKernelRank] = {};
  int64_t reduced_strides[kMaxKernelRank] = {};
};

// MaxPool / AveragePool over planes = N * C planes, exactly as the reference
// kernel (worker/backends/reference/window_kernels.cc): windows clipped to
// the input; the average divides by the elements inside the input, or with
// count_include_pad by the window clipped to the explicitly padded input.
struct Pool2dParams {
  int64_t planes = 0;
  int64_t in_h = 0, in_w = 0;
  int64_t out_h = 0, out_w = 0;
  int64_t kernel_h = 1, kernel_w = 1;
  int64_t stride_h = 1, stride_w = 1;
  int64_t pad_top = 0, pad_left = 0, pad_bottom = 0, pad_right = 0;
  bool is_max = true;
  bool count_include_pad = false;
};

// Resize of H and W over planes = N * C planes, as graph::ResizeAttrs
// describes it (enums with the same order as its ResizeMode,
// ResizeCoordinates and NearestRounding).
enum class ResizeModeKind : int { kNearest, kLinear };
enum class ResizeCoordinatesKind : int {
  kHalfPixel,
  kPytorchHalfPixel,
  kAlignCorners,
  kAsymmetric
};
enum class NearestRoundingKind : int { kRoundPreferFloor, kRoundPreferCeil, kFloor, kCeil };
struct ResizeParams {
  int64_t planes = 0;
  int64_t in_h = 0, in_w = 0;
  int64_t out_h = 0, out_w = 0;
  float scale_h = 1.0f, scale_w = 1.0f;
  ResizeModeKind mode = ResizeModeKind::kNearest;
  ResizeCoordinatesKind coordinates = ResizeCoordinatesKind::kHalfPixel;
  NearestRoundingKind rounding = NearestRoundingKind::kRoundPreferFloor;
};

// ConvTranspose of [batch, channels, in_h, in_w] to [batch, out_channels,
// out_h, out_w], as graph::ConvTransposeAttrs describes it; the weight is
// [channels, out_channels / groups, kernel_h, kernel_w].
struct ConvTransposeParams {
  int64_t batch = 0, channels = 0, out_channels = 0, groups = 1;
  int64_t in_h = 0, in_w = 0;
  int64_t out_h = 0, out_w = 0;
  int64_t kernel_h = 1, kernel_w = 1;
  int64_t stride_h = 1, stride_w = 1;
  int64_t dilation_h = 1, dilation_w = 1;
  int64_t pad_top = 0, pad_left = 0;
};

}  // namespace iosfarm::worker::cuda

#endif  // IOSFARM_WORKER_BACKENDS_CUDA_PLANNER_KERNEL_TYPES_H_
