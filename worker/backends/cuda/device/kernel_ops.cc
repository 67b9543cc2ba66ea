// Steps that run on the backend's own kernels (elementwise_kernels.h,
// data_movement_kernels.h, reduce_kernels.h, conv_transpose_kernels.h); their parameters are
// computed once, on the host (kernel_params.h).
#include <functional>
#include <variant>

#include "common/strings.h"
#include "worker/backends/cuda/device/conv_transpose_kernels.h"
#include "worker/backends/cuda/device/cuda_status.h"
#include "worker/backends/cuda/device/data_movement_kernels.h"
#include "worker/backends/cuda/device/elementwise_kernels.h"
#include "worker/backends/cuda/device/op_factories.h"
#include "worker/backends/cuda/device/reduce_kernels.h"
#include "worker/backends/cuda/planner/kernel_params.h"

namespace iosfarm::worker::cuda {
namespace {

// A DeviceOp whose Enqueue is one launcher call (its parameters captured).
class LaunchOp final : public DeviceOp {
 public:
  LaunchOp(std::function<cudaError_t(cudaStream_t)> launch, std::string what)
      : launch_(std::move(launch)), what_(std::move(what)) {}
  Status Enqueue(const Lane& lane) const override {
    return CudaCall(launch_(lane.stream), what_);
  }

 private:
  std::function<cudaError_t(cudaStream_t)> launch_;
  std::string what_;
};

std::unique_ptr<DeviceOp> Op(std::function<cudaError_t(cudaStream_t)> launch, std::string what) {
  return std::make_unique<LaunchOp>(std::move(launch), std::move(what));
}

StatusOr<std::unique_ptr<DeviceOp>> MakeBinary(const Step& step, const DeviceOpContext& ctx) {
  if (step.inputs.size() != 2 || step.outputs.size() != 1) {
    return absl::InternalError("malformed binary step");
  }
  ASSIGN_OR_RETURN(const BinaryKind kind, MakeBinaryKind(step.op));
  ASSIGN_OR_RETURN(const BroadcastParams p,
                   MakeBroadcastParams(step.inputs[0].shape, step.inputs[1].shape,
                                       step.outputs[0].shape));
  const float* a = ctx.Ptr(step.inputs[0]);
  const float* b = ctx.Ptr(step.inputs[1]);
  float* y = ctx.Ptr(step.outputs[0]);
  const int64_t n = step.outputs[0].num_elements();
  return Op([=](cudaStream_t s) { return LaunchBinary(kind, a, b, y, n, p, s); },
            "binary kernel");
}

StatusOr<std::unique_ptr<DeviceOp>> MakeCopy(const Step& step, const DeviceOpContext& ctx) {
  const CopyRows c = step.copy;
  const float* src = ctx.Ptr(step.inputs[0]) + c.src_offset;
  float* dst = ctx.Ptr(step.outputs[0]) + c.dst_offset;
  return Op(
      [=](cudaStream_t s) {
        return LaunchCopyRows(src, c.src_pitch, dst, c.dst_pitch, c.rows, c.width, s);
      },
      "copy kernel");
}

StatusOr<std::unique_ptr<DeviceOp>> MakeGather(const Step& step, const DeviceOpContext& ctx) {
  const graph::Shape& x = step.inputs[0].shape;
  const graph::Shape& y = step.outputs[0].shape;
  StatusOr<GatherParams> params =
      step.kind == StepKind::kTranspose
          ? MakeTransposeParams(std::get<graph::TransposeAttrs>(step.attrs).perm, x, y)
          : MakeSliceParams(std::get<graph::SliceAttrs>(step.attrs), x, y);
  RETURN_IF_ERROR(params.status());
  const GatherParams p = *params;
  const float* in = ctx.Ptr(step.inputs[0]);
  float* out = ctx.Ptr(step.outputs[0]);
  const int64_t n = step.outputs[0].num_elements();
  return Op([=](cudaStream_t s) { return LaunchGather(in, out, n, p, s); }, "gather kernel");
}

StatusOr<std::unique_ptr<DeviceOp>> MakePad(const Step& step, const DeviceOpContext& ctx) {
  ASSIGN_OR_RETURN(const PadParams p,
                   MakePadParams(std::get<graph::PadAttrs>(step.attrs), step.inputs[0].shape,
                                 step.outputs[0].shape));
  const float* in = ctx.Ptr(step.inputs[0]);
  float* out = ctx.Ptr(step.outputs[0]);
  const int64_t n = step.outputs[0].num_elements();
  return Op([=](cudaStream_t s) { return LaunchPad(in, out, n, p, s); }, "pad kernel");
}

StatusOr<std::unique_ptr<DeviceOp>> MakeResize(const Step& step, const DeviceOpContext& ctx) {
  ASSIGN_OR_RETURN(const ResizeParams p,
                   MakeResizeParams(std::get<graph::ResizeAttrs>(step.attrs), step.inputs[0].shape,
                                    step.outputs[0].shape));
  const float* in = ctx.Ptr(step.inputs[0]);
  float* out = ctx.Ptr(step.outputs[0]);
  const int64_t n = step.outputs[0].num_elements();
  return Op([=](cudaStream_t s) { return LaunchResize(in, out, n, p, s); }, "resize kernel");
}

StatusOr<std::unique_ptr<DeviceOp>> MakeConvTranspose(const Step& step,
                                                      const DeviceOpContext& ctx) {
  if (step.weights.empty()) return absl::InternalError("conv-transpose step without a weight");
  ASSIGN_OR_RETURN(const ConvTransposeParams p,
                   MakeConvTransposeParams(std::get<graph::ConvTransposeAttrs>(step.attrs),
                                           step.inputs[0].shape, step.outputs[0].shape));
  const float* in = ctx.Ptr(step.inputs[0]);
  const float* w = ctx.Weight(step.weights[0]);
  const float* bias = step.weights.size() > 1 ? ctx.Weight(step.weights[1]) : nullptr;
  float* out = ctx.Ptr(step.outputs[0]);
  const int64_t n = step.outputs[0].num_elements();
  return Op([=](cudaStream_t s) { return LaunchConvTranspose(in, w, bias, out, n, p, s); },
            "conv-transpose kernel");
}

StatusOr<std::unique_ptr<DeviceOp>> MakeReduce(const Step& step, const DeviceOpContext& ctx) {
  ASSIGN_OR_RETURN(
      const ReduceParams p,
      MakeReduceParams(step.op, std::get<graph::ReduceAttrs>(step.attrs), step.inputs[0].shape));
  const float* in = ctx.Ptr(step.inputs[0]);
  float* out = ctx.Ptr(step.outputs[0]);
  const int64_t n_out = step.outputs[0].num_elements();
  return Op([=](cudaStream_t s) { return LaunchReduce(in, out, n_out, p, s); }, "reduce kernel");
}

StatusOr<std::unique_ptr<DeviceOp>> MakeGlobalPool(const Step& step, const DeviceOpContext& ctx) {
  const graph::Shape& x = step.inputs[0].shape;
  if (x.size() != 4) return absl::InternalError("global pool input is not 4-D");
  const float* in = ctx.Ptr(step.inputs[0]);
  float* out = ctx.Ptr(step.outputs[0]);
  const int64_t planes = x[0] * x[1];
  const int64_t size = x[2] * x[3];
  const bool is_max = step.op == graph::OpType::kGlobalMaxPool;
  return Op([=](cudaStream_t s) { return LaunchGlobalPool(in, out, planes, size, is_max, s); },
            "global-pool kernel");
}

StatusOr<std::unique_ptr<DeviceOp>> MakeBatchNorm(const Step& step, const DeviceOpContext& ctx) {
  const graph::Shape& x = step.inputs[0].shape;
  if (x.size() < 2 || step.weights.size() != 2) {
    return absl::InternalError("malformed batch-norm step");
  }
  int64_t inner = 1;
  for (size_t d = 2; d < x.size(); ++d) inner *= x[d];
  const float* in = ctx.Ptr(step.inputs[0]);
  float* out = ctx.Ptr(step.outputs[0]);
  const float* scale = ctx.Weight(step.weights[0]);
  const float* shift = ctx.Weight(step.weights[1]);
  const int64_t n = step.inputs[0].num_elements();
  const int64_t channels = x[1];
  return Op(
      [=](cudaStream_t s) {
        return LaunchChannelAffine(in, scale, shift, out, n, channels, inner, s);
      },
      "batch-norm kernel");
}

}  // namespace

StatusOr<std::unique_ptr<DeviceOp>> MakeKernelOp(const Step& step, const DeviceOpContext& ctx) {
  if (step.kind != StepKind::kBinary &&
      (step.inputs.size() != 1 || step.outputs.size() != 1)) {
    return absl::InternalError("malformed step");
  }
  switch (step.kind) {
    case StepKind::kBinary:
      return MakeBinary(step, ctx);
    case StepKind::kCopyRows:
      return MakeCopy(step, ctx);
    case StepKind::kSlice:
    case StepKind::kTranspose:
      return MakeGather(step, ctx);
    case StepKind::kPad:
      return MakePad(step, ctx);
    case StepKind::kResize:
      return MakeResize(step, ctx);
    case StepKind::kConvTranspose:
      return MakeConvTranspose(step, ctx);
    case StepKind::kReduce:
      return MakeReduce(step, ctx);
    case StepKind::kGlobalPool:
      return MakeGlobalPool(step, ctx);
    case StepKind::kBatchNorm:
      return MakeBatchNorm(step, ctx);
    default:
      return absl::InternalError("not a kernel step");
  }
}

}  // namespace iosfarm::worker::cuda
