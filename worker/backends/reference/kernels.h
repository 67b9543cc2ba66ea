// Reference kernels: plain, obviously correct loops for every operator of the
// graph IR, on dense row-major fp32 tensors.
//
// They favour clarity over speed (accumulations in double), and serve as the
// oracle of the conformance suite and as the fallback of other backends for
// ops their libraries lack. Callers pass shapes that shape inference accepted
// (graph/shape_inference.h) and output views of the inferred shapes; kernels
// do not re-check them. Outputs must not alias inputs. Kernels are pure
// functions of their arguments and thread-safe.
#ifndef IOSFARM_WORKER_BACKENDS_REFERENCE_KERNELS_H_
#define IOSFARM_WORKER_BACKENDS_REFERENCE_KERNELS_H_

#include <cstdint>
#include <vector>

#include "graph/attributes.h"
#include "graph/op_type.h"
#include "graph/tensor.h"

namespace iosfarm::worker::reference {

// A dense row-major tensor owned by someone else.
struct ConstView {
  const float* data = nullptr;
  graph::Shape shape;
};
struct MutableView {
  float* data = nullptr;
  graph::Shape shape;
};

// y = act(conv(x, w) + bias). x [N, C, H, W]; w [OC, C/groups, KH, KW];
// bias [OC] or nullptr.
void Conv2D(const graph::ConvAttrs& attrs, const ConstView& x, const float* w,
            const float* bias, const MutableView& y);

// y = conv_transpose(x, w) + bias (ConvTransposeAttrs). x [N, C, H, W]; w
// [C, OC/groups, KH, KW]; bias [OC] or nullptr.
void ConvTranspose2D(const graph::ConvTransposeAttrs& attrs, const ConstView& x, const float* w,
                     const float* bias, const MutableView& y);

// Applies a Conv's fused activation in place to `n` values.
void ApplyActivation(graph::Activation activation, float clip_min, float clip_max, float* data,
                     int64_t n);

// MaxPool / AveragePool. Average divisor: the window's elements inside the
// input, or when count_include_pad the elements inside the input plus the
// explicit pads (never the extra row/column of ceil_mode), as ONNX Runtime
// and PyTorch.
void Pool2D(graph::OpType type, const graph::PoolAttrs& attrs, const ConstView& x,
            const MutableView& y);

// GlobalAveragePool / GlobalMaxPool: [N, C, H, W] -> [N, C, 1, 1].
void GlobalPool(graph::OpType type, const ConstView& x, const MutableView& y);

// Relu, Clip, Sigmoid, HardSigmoid, HardSwish, Tanh, UnaryMath (attrs of the op type).
void Unary(graph::OpType type, const graph::Attributes& attrs, const ConstView& x,
           const MutableView& y);

// Add, Sub, Mul, Div with numpy (multidirectional) broadcasting.
void Binary(graph::OpType type, const ConstView& a, const ConstView& b, const MutableView& y);

void Concat(int64_t axis, const std::vector<ConstView>& xs, const MutableView& y);
void Split(int64_t axis, const ConstView& x, const std::vector<MutableView>& ys);
void Slice(const graph::SliceAttrs& attrs, const ConstView& x, const MutableView& y);
void Pad(const graph::PadAttrs& attrs, const ConstView& x, const MutableView& y);
void Transpose(const std::vector<int64_t>& perm, const ConstView& x, const MutableView& y);
// [N, C, H, W] -> [N, C, size[0], size[1]] (ResizeAttrs).
void Resize(const graph::ResizeAttrs& attrs, const ConstView& x, const MutableView& y);
// Reshape, Flatten, Identity, Dropout, Constant: element order unchanged.
void Copy(const ConstView& x, const MutableView& y);

// ReduceMean, ReduceSum, ReduceMax, ReduceMin (`type`) over attrs.axes.
void Reduce(graph::OpType type, const graph::ReduceAttrs& attrs, const ConstView& x,
            const MutableView& y);
void Softmax(int64_t axis, const ConstView& x, const MutableView& y);
// Inference batch norm over axis 1; the four parameters have x.shape[1] values.
void BatchNorm(float epsilon, const ConstView& x, const float* scale, const float* bias,
               const float* mean, const float* var, const MutableView& y);

// Y = alpha * A' B' + beta * C; c is nullptr or a tensor broadcastable to Y.
void Gemm(const graph::GemmAttrs& attrs, const ConstView& a, const ConstView& b,
          const ConstView* c, const MutableView& y);
// numpy matmul: 1-D operands promoted and their unit dim removed, batch
// dimensions broadcast.
void MatMul(const ConstView& a, const ConstView& b, const MutableView& y);

}  // namespace iosfarm::worker::reference

#endif  // IOSFARM_WORKER_BACKENDS_REFERENCE_KERNELS_H_
