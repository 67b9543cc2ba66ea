// Pooling, activation and softmax steps on cuDNN (legacy API), with the
// backend's own kernels where cuDNN cannot express the op exactly.
#include <variant>

#include "common/strings.h"
#include "worker/backends/cuda/device/cuda_handles.h"
#include "worker/backends/cuda/device/cuda_status.h"
#include "worker/backends/cuda/device/elementwise_kernels.h"
#include "worker/backends/cuda/device/op_factories.h"
#include "worker/backends/cuda/device/reduce_kernels.h"
#include "worker/backends/cuda/planner/kernel_params.h"

namespace iosfarm::worker::cuda {
namespace {

Status CheckUnaryStep(const Step& step) {
  if (step.inputs.size() != 1 || step.outputs.size() != 1 ||
      step.inputs[0].shape != step.outputs[0].shape) {
    return absl::InternalError("malformed element-wise step");
  }
  return absl::OkStatus();
}

// cudnnPoolingForward: symmetric pads and floor-mode output sizes.
class CudnnPoolOp final : public DeviceOp {
 public:
  static StatusOr<std::unique_ptr<DeviceOp>> Create(const Step& step, const DeviceOpContext& ctx,
                                                    cudnnPoolingMode_t mode) {
    const graph::PoolAttrs& a = std::get<graph::PoolAttrs>(step.attrs);
    const graph::Shape& x = step.inputs[0].shape;
    const graph::Shape& y = step.outputs[0].shape;
    std::unique_ptr<CudnnPoolOp> op(new CudnnPoolOp());
    op->x_ = ctx.Ptr(step.inputs[0]);
    op->y_ = ctx.Ptr(step.outputs[0]);
    std::array<int, 4> xi{}, yi{};
    for (int d = 0; d < 4; ++d) {
      ASSIGN_OR_RETURN(xi[d], ToInt(x[d], "input dimension"));
      ASSIGN_OR_RETURN(yi[d], ToInt(y[d], "output dimension"));
    }
    ASSIGN_OR_RETURN(int kh, ToInt(a.kernel[0], "kernel"));
    ASSIGN_OR_RETURN(int kw, ToInt(a.kernel[1], "kernel"));
    ASSIGN_OR_RETURN(int ph, ToInt(a.pads[0], "pad"));
    ASSIGN_OR_RETURN(int pw, ToInt(a.pads[1], "pad"));
    ASSIGN_OR_RETURN(int sh, ToInt(a.stride[0], "stride"));
    ASSIGN_OR_RETURN(int sw, ToInt(a.stride[1], "stride"));
    ASSIGN_OR_RETURN(op->x_desc_, CreateTensorDesc(xi[0], xi[1], xi[2], xi[3]));
    ASSIGN_OR_RETURN(op->y_desc_, CreateTensorDesc(yi[0], yi[1], yi[2], yi[3]));
    ASSIGN_OR_RETURN(op->pool_desc_, CreatePoolingDesc(mode, kh, kw, ph, pw, sh, sw));
    int n = 0, c = 0, h = 0, w = 0;
    RETURN_IF_ERROR(CudnnCall(cudnnGetPooling2dForwardOutputDim(op->pool_desc_.get(),
                                                                op->x_desc_.get(), &n, &c, &h, &w),
                              "cudnnGetPooling2dForwardOutputDim"));
    if (n != yi[0] || c != yi[1] || h != yi[2] || w != yi[3]) {
      return absl::InternalError(StrCat("cuDNN pools to [", n, ",", c, ",", h, ",", w,
                                        "], the graph to ", graph::ShapeToString(y)));
    }
    return std::unique_ptr<DeviceOp>(std::move(op));
  }

  Status Enqueue(const Lane& lane) const override {
    const float one = 1.0f, zero = 0.0f;
    return CudnnCall(cudnnPoolingForward(lane.cudnn, pool_desc_.get(), &one, x_desc_.get(), x_,
                                         &zero, y_desc_.get(), y_),
                     "cudnnPoolingForward");
  }

 private:
  CudnnPoolOp() = default;
  const float* x_ = nullptr;
  float* y_ = nullptr;
  UniqueTensorDesc x_desc_, y_desc_;
  UniquePoolingDesc pool_desc_;
};

// The backend's kernel, exactly the reference semantics (any pads, ceil mode).
class KernelPoolOp final : public DeviceOp {
 public:
  KernelPoolOp(const float* x, float* y, const Pool2dParams& params)
      : x_(x), y_(y), params_(params) {}
  Status Enqueue(const Lane& lane) const override {
    return CudaCall(LaunchPool2d(x_, y_, params_, lane.stream), "pool kernel");
  }

 private:
  const float* x_;
  float* y_;
  Pool2dParams params_;
};

// cudnnActivationForward on a 4-D tensor (its own NCHW shape).
class CudnnActivationOp final : public DeviceOp {
 public:
  static StatusOr<std::unique_ptr<DeviceOp>> Create(const Step& step, const DeviceOpContext& ctx,
                                                    cudnnActivationMode_t mode) {
    std::unique_ptr<CudnnActivationOp> op(new CudnnActivationOp());
    op->x_ = ctx.Ptr(step.inputs[0]);
    op->y_ = ctx.Ptr(step.outputs[0]);
    const graph::Shape& s = step.inputs[0].shape;
    std::array<int, 4> d{};
    for (int i = 0; i < 4; ++i) {
      ASSIGN_OR_RETURN(d[i], ToInt(s[i], "dimension"));
    }
    ASSIGN_OR_RETURN(op->desc_, CreateTensorDesc(d[0], d[1], d[2], d[3]));
    ASSIGN_OR_RETURN(op->activation_, CreateActivationDesc(mode));
    return std::unique_ptr<DeviceOp>(std::move(op));
  }

  Status Enqueue(const Lane& lane) const override {
    const float one = 1.0f, zero = 0.0f;
    return CudnnCall(cudnnActivationForward(lane.cudnn, activation_.get(), &one, desc_.get(), x_,
                                            &zero, desc_.get(), y_),
                     "cudnnActivationForward");
  }

 private:
  CudnnActivationOp() = default;
  const float* x_ = nullptr;
  float* y_ = nullptr;
  UniqueTensorDesc desc_;
  UniqueActivationDesc activation_;
};

class KernelUnaryOp final : public DeviceOp {
 public:
  KernelUnaryOp(const float* x, float* y, int64_t n, UnaryParams f) : x_(x), y_(y), n_(n), f_(f) {}
  Status Enqueue(const Lane& lane) const override {
    return CudaCall(LaunchUnary(x_, y_, n_, f_, lane.stream), "unary kernel");
  }

 private:
  const float* x_;
  float* y_;
  int64_t n_;
  UnaryParams f_;
};

// cudnnSoftmaxForward over `axis`, viewing the tensor as [outer, size,
// inner, 1] in CUDNN_SOFTMAX_MODE_CHANNEL (softmax over C per (N, H, W)).
class SoftmaxOp final : public DeviceOp {
 public:
  static StatusOr<std::unique_ptr<DeviceOp>> Create(const Step& step, const DeviceOpContext& ctx) {
    RETURN_IF_ERROR(CheckUnaryStep(step));
    const graph::Shape& s = step.inputs[0].shape;
    const int64_t axis = std::get<graph::SoftmaxAttrs>(step.attrs).axis;
    if (axis < 0 || axis >= static_cast<int64_t>(s.size())) {
      return absl::InternalError("softmax axis out of range");
    }
    int64_t outer = 1, inner = 1;
    for (int64_t d = 0; d < axis; ++d) outer *= s[d];
    for (int64_t d = axis + 1; d < static_cast<int64_t>(s.size()); ++d) inner *= s[d];
    std::unique_ptr<SoftmaxOp> op(new SoftmaxOp());
    op->x_ = ctx.Ptr(step.inputs[0]);
    op->y_ = ctx.Ptr(step.outputs[0]);
    ASSIGN_OR_RETURN(int n, ToInt(outer, "softmax outer size"));
    ASSIGN_OR_RETURN(int c, ToInt(s[axis], "softmax axis size"));
    ASSIGN_OR_RETURN(int h, ToInt(inner, "softmax inner size"));
    ASSIGN_OR_RETURN(op->desc_, CreateTensorDesc(n, c, h, 1));
    return std::unique_ptr<DeviceOp>(std::move(op));
  }

  Status Enqueue(const Lane& lane) const override {
    const float one = 1.0f, zero = 0.0f;
    return CudnnCall(cudnnSoftmaxForward(lane.cudnn, CUDNN_SOFTMAX_ACCURATE,
                                         CUDNN_SOFTMAX_MODE_CHANNEL, &one, desc_.get(), x_, &zero,
                                         desc_.get(), y_),
                     "cudnnSoftmaxForward");
  }

 private:
  SoftmaxOp() = default;
  const float* x_ = nullptr;
  float* y_ = nullptr;
  UniqueTensorDesc desc_;
};

}  // namespace

StatusOr<std::unique_ptr<DeviceOp>> MakePoolOp(const Step& step, const DeviceOpContext& ctx) {
  if (step.inputs.size() != 1 || step.outputs.size() != 1 || step.inputs[0].shape.size() != 4 ||
      step.outputs[0].shape.size() != 4) {
    return absl::InternalError("malformed pool step");
  }
  const graph::PoolAttrs& a = std::get<graph::PoolAttrs>(step.attrs);
  const graph::Shape& x = step.inputs[0].shape;
  const graph::Shape& y = step.outputs[0].shape;
  const bool is_max = step.op == graph::OpType::kMaxPool;
  // cuDNN pools with symmetric pads and floor((in + 2 pad - kernel) / stride)
  // + 1 outputs; then every window lies inside the padded input, so its
  // include-pad divisor is the full window, as the reference's.
  bool cudnn_exact = a.pads[0] == a.pads[2] && a.pads[1] == a.pads[3];
  for (int d = 0; d < 2 && cudnn_exact; ++d) {
    const int64_t floor_out = (x[2 + d] + 2 * a.pads[d] - a.kernel[d]) / a.stride[d] + 1;
    cudnn_exact = floor_out == y[2 + d];
  }
  if (cudnn_exact) {
    const cudnnPoolingMode_t mode = is_max ? CUDNN_POOLING_MAX
                                    : a.count_include_pad
                                        ? CUDNN_POOLING_AVERAGE_COUNT_INCLUDE_PADDING
                                        : CUDNN_POOLING_AVERAGE_COUNT_EXCLUDE_PADDING;
    return CudnnPoolOp::Create(step, ctx, mode);
  }
  ASSIGN_OR_RETURN(const Pool2dParams p, MakePool2dParams(step.op, a, x, y));
  return std::unique_ptr<DeviceOp>(
      new KernelPoolOp(ctx.Ptr(step.inputs[0]), ctx.Ptr(step.outputs[0]), p));
}

StatusOr<std::unique_ptr<DeviceOp>> MakeUnaryOp(const Step& step, const DeviceOpContext& ctx) {
  RETURN_IF_ERROR(CheckUnaryStep(step));
  const bool four_d = step.inputs[0].shape.size() == 4;
  if (four_d) {
    switch (step.op) {
      case graph::OpType::kRelu:
        return CudnnActivationOp::Create(step, ctx, CUDNN_ACTIVATION_RELU);
      case graph::OpType::kSigmoid:
        return CudnnActivationOp::Create(step, ctx, CUDNN_ACTIVATION_SIGMOID);
      case graph::OpType::kTanh:
        return CudnnActivationOp::Create(step, ctx, CUDNN_ACTIVATION_TANH);
      default:
        break;
    }
  }
  ASSIGN_OR_RETURN(const UnaryParams f, MakeUnaryParams(step.op, step.attrs));
  return std::unique_ptr<DeviceOp>(new KernelUnaryOp(
      ctx.Ptr(step.inputs[0]), ctx.Ptr(step.outputs[0]), step.inputs[0].num_elements(), f));
}

StatusOr<std::unique_ptr<DeviceOp>> MakeSoftmaxOp(const Step& step, const DeviceOpContext& ctx) {
  return SoftmaxOp::Create(step, ctx);
}

}  // namespace iosfarm::worker::cuda
