// Steps that run on the backend's own kernels (elementwise_kernels.h,
// data_movement_kernels.h, reduce_kernels.h): kernel parameters are computed
// here once, on the host.
#include <functional>
#include <variant>

#include "common/strings.h"
#include "worker/backends/cuda/cuda_status.h"
#include "worker/backends/cuda/data_movement_kernels.h"
#include "worker/backends/cuda/elementwise_kernels.h"
#include "worker/backends/cuda/kernel_limits.h"
#include "worker/backends/cuda/op_factories.h"
#include "worker/backends/cuda/reduce_kernels.h"

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

Status CheckRank(const graph::Shape& shape) {
  if (shape.empty() || shape.size() > static_cast<size_t>(kMaxKernelRank)) {
    return absl::InternalError(StrCat("rank ", shape.size(), " outside [1, ", kMaxKernelRank, "]"));
  }
  return absl::OkStatus();
}

std::vector<int64_t> Strides(const graph::Shape& shape) {
  std::vector<int64_t> strides(shape.size(), 1);
  for (int d = static_cast<int>(shape.size()) - 2; d >= 0; --d) {
    strides[d] = strides[d + 1] * shape[d + 1];
  }
  return strides;
}

// Strides of `shape` right-aligned to `rank`, 0 along broadcast dimensions.
std::vector<int64_t> BroadcastStrides(const graph::Shape& shape, size_t rank) {
  std::vector<int64_t> out(rank, 0);
  const std::vector<int64_t> own = Strides(shape);
  const size_t lead = rank - shape.size();
  for (size_t d = 0; d < shape.size(); ++d) out[lead + d] = shape[d] == 1 ? 0 : own[d];
  return out;
}

StatusOr<std::unique_ptr<DeviceOp>> MakeBinary(const Step& step, const DeviceOpContext& ctx) {
  if (step.inputs.size() != 2 || step.outputs.size() != 1) {
    return absl::InternalError("malformed binary step");
  }
  const graph::Shape& y = step.outputs[0].shape;
  RETURN_IF_ERROR(CheckRank(y));
  BinaryKind kind;
  switch (step.op) {
    case graph::OpType::kAdd:
      kind = BinaryKind::kAdd;
      break;
    case graph::OpType::kSub:
      kind = BinaryKind::kSub;
      break;
    case graph::OpType::kMul:
      kind = BinaryKind::kMul;
      break;
    case graph::OpType::kDiv:
      kind = BinaryKind::kDiv;
      break;
    default:
      return absl::InternalError("not a binary op");
  }
  BroadcastParams p;
  if (step.inputs[0].shape != y || step.inputs[1].shape != y) {
    if (step.inputs[0].shape.size() > y.size() || step.inputs[1].shape.size() > y.size()) {
      return absl::InternalError("binary operand of higher rank than the output");
    }
    p.rank = static_cast<int>(y.size());
    const std::vector<int64_t> sa = BroadcastStrides(step.inputs[0].shape, y.size());
    const std::vector<int64_t> sb = BroadcastStrides(step.inputs[1].shape, y.size());
    for (size_t d = 0; d < y.size(); ++d) {
      p.out_dims[d] = y[d];
      p.a_strides[d] = sa[d];
      p.b_strides[d] = sb[d];
    }
  }
  const float* a = ctx.Ptr(step.inputs[0]);
  const float* b = ctx.Ptr(step.inputs[1]);
  float* out = ctx.Ptr(step.outputs[0]);
  const int64_t n = step.outputs[0].num_elements();
  return Op([=](cudaStream_t s) { return LaunchBinary(kind, a, b, out, n, p, s); },
            "binary kernel");
}

StatusOr<std::unique_ptr<DeviceOp>> MakeCopy(const Step& step, const DeviceOpContext& ctx) {
  if (step.inputs.size() != 1 || step.outputs.size() != 1) {
    return absl::InternalError("malformed copy step");
  }
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
  RETURN_IF_ERROR(CheckRank(x));
  if (y.size() != x.size()) return absl::InternalError("gather changes the rank");
  const std::vector<int64_t> strides = Strides(x);
  GatherParams p;
  p.rank = static_cast<int>(y.size());
  for (size_t d = 0; d < y.size(); ++d) p.out_dims[d] = y[d];
  if (step.kind == StepKind::kTranspose) {
    const auto& perm = std::get<graph::TransposeAttrs>(step.attrs).perm;
    for (size_t d = 0; d < y.size(); ++d) {
      if (perm[d] < 0 || perm[d] >= static_cast<int64_t>(x.size())) {
        return absl::InternalError("transpose perm out of range");
      }
      p.in_strides[d] = strides[static_cast<size_t>(perm[d])];
    }
  } else {
    const auto& a = std::get<graph::SliceAttrs>(step.attrs);
    std::vector<int64_t> start(x.size(), 0), step_size(x.size(), 1);
    for (size_t i = 0; i < a.axes.size(); ++i) {
      const int64_t axis = a.axes[i];
      if (axis < 0 || axis >= static_cast<int64_t>(x.size())) {
        return absl::InternalError("slice axis out of range");
      }
      start[axis] = a.starts[i];
      step_size[axis] = a.steps[i];
    }
    for (size_t d = 0; d < x.size(); ++d) {
      p.base += start[d] * strides[d];
      p.in_strides[d] = step_size[d] * strides[d];
    }
  }
  const float* in = ctx.Ptr(step.inputs[0]);
  float* out = ctx.Ptr(step.outputs[0]);
  const int64_t n = step.outputs[0].num_elements();
  return Op([=](cudaStream_t s) { return LaunchGather(in, out, n, p, s); }, "gather kernel");
}

StatusOr<std::unique_ptr<DeviceOp>> MakePad(const Step& step, const DeviceOpContext& ctx) {
  const graph::Shape& x = step.inputs[0].shape;
  const graph::Shape& y = step.outputs[0].shape;
  RETURN_IF_ERROR(CheckRank(x));
  const auto& a = std::get<graph::PadAttrs>(step.attrs);
  if (y.size() != x.size() || a.pads.size() != 2 * x.size()) {
    return absl::InternalError("malformed pad step");
  }
  const std::vector<int64_t> strides = Strides(x);
  PadParams p;
  p.rank = static_cast<int>(x.size());
  p.value = a.value;
  p.mode = a.mode == graph::PadMode::kConstant ? PadKind::kConstant
           : a.mode == graph::PadMode::kReflect ? PadKind::kReflect
                                                : PadKind::kEdge;
  for (size_t d = 0; d < x.size(); ++d) {
    p.out_dims[d] = y[d];
    p.in_dims[d] = x[d];
    p.in_strides[d] = strides[d];
    p.pad_begin[d] = a.pads[d];
  }
  const float* in = ctx.Ptr(step.inputs[0]);
  float* out = ctx.Ptr(step.outputs[0]);
  const int64_t n = step.outputs[0].num_elements();
  return Op([=](cudaStream_t s) { return LaunchPad(in, out, n, p, s); }, "pad kernel");
}

StatusOr<std::unique_ptr<DeviceOp>> MakeReduceMean(const Step& step, const DeviceOpContext& ctx) {
  const graph::Shape& x = step.inputs[0].shape;
  RETURN_IF_ERROR(CheckRank(x));
  const auto& a = std::get<graph::ReduceMeanAttrs>(step.attrs);
  std::vector<bool> reduced(x.size(), a.axes.empty());
  for (int64_t axis : a.axes) {
    if (axis < 0 || axis >= static_cast<int64_t>(x.size())) {
      return absl::InternalError("reduce axis out of range");
    }
    reduced[static_cast<size_t>(axis)] = true;
  }
  const std::vector<int64_t> strides = Strides(x);
  ReduceParams p;
  for (size_t d = 0; d < x.size(); ++d) {
    if (reduced[d]) {
      p.reduced_dims[p.reduced_rank] = x[d];
      p.reduced_strides[p.reduced_rank] = strides[d];
      ++p.reduced_rank;
      p.count *= x[d];
    } else {
      p.kept_dims[p.kept_rank] = x[d];
      p.kept_strides[p.kept_rank] = strides[d];
      ++p.kept_rank;
    }
  }
  const float* in = ctx.Ptr(step.inputs[0]);
  float* out = ctx.Ptr(step.outputs[0]);
  const int64_t n_out = step.outputs[0].num_elements();
  return Op([=](cudaStream_t s) { return LaunchReduceMean(in, out, n_out, p, s); },
            "reduce-mean kernel");
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
    case StepKind::kReduceMean:
      return MakeReduceMean(step, ctx);
    case StepKind::kGlobalPool:
      return MakeGlobalPool(step, ctx);
    case StepKind::kBatchNorm:
      return MakeBatchNorm(step, ctx);
    default:
      return absl::InternalError("not a kernel step");
  }
}

}  // namespace iosfarm::worker::cuda
