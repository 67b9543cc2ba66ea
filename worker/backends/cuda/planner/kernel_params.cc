#include "worker/backends/cuda/planner/kernel_params.h"

#include <variant>

#include "common/strings.h"
#include "worker/backends/cuda/planner/kernel_limits.h"

namespace iosfarm::worker::cuda {
namespace {

Status CheckRank(const graph::Shape& shape) {
  if (shape.empty() || shape.size() > static_cast<size_t>(kMaxKernelRank)) {
    return absl::InvalidArgumentError(
        StrCat("rank ", shape.size(), " outside [1, ", kMaxKernelRank, "]"));
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

UnaryKind UnaryMathKind(graph::UnaryFunction function) {
  switch (function) {
    case graph::UnaryFunction::kLeakyRelu:
      return UnaryKind::kLeakyRelu;
    case graph::UnaryFunction::kElu:
      return UnaryKind::kElu;
    case graph::UnaryFunction::kSelu:
      return UnaryKind::kSelu;
    case graph::UnaryFunction::kSoftplus:
      return UnaryKind::kSoftplus;
    case graph::UnaryFunction::kMish:
      return UnaryKind::kMish;
    case graph::UnaryFunction::kGelu:
      return UnaryKind::kGelu;
    case graph::UnaryFunction::kGeluTanh:
      return UnaryKind::kGeluTanh;
    case graph::UnaryFunction::kErf:
      return UnaryKind::kErf;
    case graph::UnaryFunction::kSqrt:
      return UnaryKind::kSqrt;
    case graph::UnaryFunction::kExp:
      return UnaryKind::kExp;
    case graph::UnaryFunction::kLog:
      return UnaryKind::kLog;
    case graph::UnaryFunction::kNeg:
      return UnaryKind::kNeg;
    case graph::UnaryFunction::kAbs:
      return UnaryKind::kAbs;
    case graph::UnaryFunction::kReciprocal:
      return UnaryKind::kReciprocal;
    case graph::UnaryFunction::kPow:
      return UnaryKind::kPow;
  }
  return UnaryKind::kIdentity;
}

}  // namespace

StatusOr<UnaryParams> MakeUnaryParams(graph::OpType type, const graph::Attributes& attrs) {
  switch (type) {
    case graph::OpType::kRelu:
      return UnaryParams{UnaryKind::kRelu, 0.0f, 0.0f};
    case graph::OpType::kSigmoid:
      return UnaryParams{UnaryKind::kSigmoid, 0.0f, 0.0f};
    case graph::OpType::kTanh:
      return UnaryParams{UnaryKind::kTanh, 0.0f, 0.0f};
    case graph::OpType::kHardSwish:
      return UnaryParams{UnaryKind::kHardSwish, 0.0f, 0.0f};
    case graph::OpType::kClip: {
      const auto* a = std::get_if<graph::ClipAttrs>(&attrs);
      if (a == nullptr) return absl::InvalidArgumentError("Clip without ClipAttrs");
      return UnaryParams{UnaryKind::kClip, a->min, a->max};
    }
    case graph::OpType::kHardSigmoid: {
      const auto* a = std::get_if<graph::HardSigmoidAttrs>(&attrs);
      if (a == nullptr) return absl::InvalidArgumentError("HardSigmoid without attributes");
      return UnaryParams{UnaryKind::kHardSigmoid, a->alpha, a->beta};
    }
    case graph::OpType::kUnaryMath: {
      const auto* a = std::get_if<graph::UnaryMathAttrs>(&attrs);
      if (a == nullptr) return absl::InvalidArgumentError("UnaryMath without UnaryMathAttrs");
      return UnaryParams{UnaryMathKind(a->function), a->alpha, a->beta};
    }
    default:
      return absl::InvalidArgumentError(
          StrCat(graph::OpTypeName(type), " is not an element-wise activation"));
  }
}

UnaryParams ConvActivationParams(const graph::ConvAttrs& attrs) {
  switch (attrs.activation) {
    case graph::Activation::kNone:
      return {UnaryKind::kIdentity, 0.0f, 0.0f};
    case graph::Activation::kRelu:
      return {UnaryKind::kRelu, 0.0f, 0.0f};
    case graph::Activation::kClip:
      return {UnaryKind::kClip, attrs.clip_min, attrs.clip_max};
    case graph::Activation::kSigmoid:
      return {UnaryKind::kSigmoid, 0.0f, 0.0f};
    case graph::Activation::kTanh:
      return {UnaryKind::kTanh, 0.0f, 0.0f};
  }
  return {};
}

StatusOr<BinaryKind> MakeBinaryKind(graph::OpType type) {
  switch (type) {
    case graph::OpType::kAdd:
      return BinaryKind::kAdd;
    case graph::OpType::kSub:
      return BinaryKind::kSub;
    case graph::OpType::kMul:
      return BinaryKind::kMul;
    case graph::OpType::kDiv:
      return BinaryKind::kDiv;
    default:
      return absl::InvalidArgumentError(StrCat(graph::OpTypeName(type), " is not binary"));
  }
}

StatusOr<BroadcastParams> MakeBroadcastParams(const graph::Shape& a, const graph::Shape& b,
                                              const graph::Shape& y) {
  RETURN_IF_ERROR(CheckRank(y));
  BroadcastParams p;
  if (a == y && b == y) return p;
  if (a.size() > y.size() || b.size() > y.size()) {
    return absl::InvalidArgumentError("an operand has a higher rank than the output");
  }
  p.rank = static_cast<int>(y.size());
  for (const graph::Shape* operand : {&a, &b}) {
    const std::vector<int64_t> own = Strides(*operand);
    const size_t lead = y.size() - operand->size();
    int64_t* out = operand == &a ? p.a_strides : p.b_strides;
    for (size_t d = 0; d < y.size(); ++d) {
      if (d < lead) {
        out[d] = 0;
        continue;
      }
      const int64_t dim = (*operand)[d - lead];
      if (dim != 1 && dim != y[d]) {
        return absl::InvalidArgumentError(StrCat("operand ", graph::ShapeToString(*operand),
                                                 " does not broadcast to ",
                                                 graph::ShapeToString(y)));
      }
      out[d] = dim == 1 ? 0 : own[d - lead];
    }
  }
  for (size_t d = 0; d < y.size(); ++d) p.out_dims[d] = y[d];
  return p;
}

StatusOr<GatherParams> MakeSliceParams(const graph::SliceAttrs& attrs, const graph::Shape& x,
                                       const graph::Shape& y) {
  RETURN_IF_ERROR(CheckRank(x));
  if (y.size() != x.size()) return absl::InvalidArgumentError("slice changes the rank");
  const std::vector<int64_t> strides = Strides(x);
  std::vector<int64_t> start(x.size(), 0), step(x.size(), 1);
  for (size_t i = 0; i < attrs.axes.size(); ++i) {
    const int64_t axis = attrs.axes[i];
    if (axis < 0 || axis >= static_cast<int64_t>(x.size()) || i >= attrs.starts.size() ||
        i >= attrs.steps.size()) {
      return absl::InvalidArgumentError("slice axis out of range");
    }
    start[axis] = attrs.starts[i];
    step[axis] = attrs.steps[i];
  }
  GatherParams p;
  p.rank = static_cast<int>(x.size());
  for (size_t d = 0; d < x.size(); ++d) {
    p.out_dims[d] = y[d];
    p.base += start[d] * strides[d];
    p.in_strides[d] = step[d] * strides[d];
  }
  return p;
}

StatusOr<GatherParams> MakeTransposeParams(const std::vector<int64_t>& perm,
                                           const graph::Shape& x, const graph::Shape& y) {
  RETURN_IF_ERROR(CheckRank(x));
  if (y.size() != x.size() || perm.size() != x.size()) {
    return absl::InvalidArgumentError("transpose ranks differ");
  }
  const std::vector<int64_t> strides = Strides(x);
  GatherParams p;
  p.rank = static_cast<int>(x.size());
  for (size_t d = 0; d < x.size(); ++d) {
    if (perm[d] < 0 || perm[d] >= static_cast<int64_t>(x.size())) {
      return absl::InvalidArgumentError("transpose perm out of range");
    }
    p.out_dims[d] = y[d];
    p.in_strides[d] = strides[static_cast<size_t>(perm[d])];
  }
  return p;
}

StatusOr<PadParams> MakePadParams(const graph::PadAttrs& attrs, const graph::Shape& x,
                                  const graph::Shape& y) {
  RETURN_IF_ERROR(CheckRank(x));
  if (y.size() != x.size() || attrs.pads.size() != 2 * x.size()) {
    return absl::InvalidArgumentError("pad ranks differ");
  }
  const std::vector<int64_t> strides = Strides(x);
  PadParams p;
  p.rank = static_cast<int>(x.size());
  p.value = attrs.value;
  switch (attrs.mode) {
    case graph::PadMode::kConstant:
      p.mode = PadKind::kConstant;
      break;
    case graph::PadMode::kReflect:
      p.mode = PadKind::kReflect;
      break;
    case graph::PadMode::kEdge:
      p.mode = PadKind::kEdge;
      break;
  }
  for (size_t d = 0; d < x.size(); ++d) {
    p.out_dims[d] = y[d];
    p.in_dims[d] = x[d];
    p.in_strides[d] = strides[d];
    p.pad_begin[d] = attrs.pads[d];
  }
  return p;
}

StatusOr<ConvTransposeParams> MakeConvTransposeParams(const graph::ConvTransposeAttrs& attrs,
                                                      const graph::Shape& x,
                                                      const graph::Shape& y) {
  if (x.size() != 4 || y.size() != 4 || x[0] != y[0] || y[1] != attrs.out_channels ||
      attrs.groups < 1 || x[1] % attrs.groups != 0 || attrs.out_channels % attrs.groups != 0) {
    return absl::InvalidArgumentError(StrCat("conv-transpose of ", graph::ShapeToString(x), " to ",
                                             graph::ShapeToString(y),
                                             " does not match its attributes"));
  }
  ConvTransposeParams p;
  p.batch = x[0];
  p.channels = x[1];
  p.out_channels = attrs.out_channels;
  p.groups = attrs.groups;
  p.in_h = x[2];
  p.in_w = x[3];
  p.out_h = y[2];
  p.out_w = y[3];
  p.kernel_h = attrs.kernel[0];
  p.kernel_w = attrs.kernel[1];
  p.stride_h = attrs.stride[0];
  p.stride_w = attrs.stride[1];
  p.dilation_h = attrs.dilation[0];
  p.dilation_w = attrs.dilation[1];
  p.pad_top = attrs.pads[0];
  p.pad_left = attrs.pads[1];
  return p;
}

// ResizeParams' enums mirror graph::ResizeAttrs' member by member.
static_assert(static_cast<int>(graph::ResizeMode::kLinear) ==
              static_cast<int>(ResizeModeKind::kLinear));
static_assert(static_cast<int>(graph::ResizeCoordinates::kHalfPixel) ==
                  static_cast<int>(ResizeCoordinatesKind::kHalfPixel) &&
              static_cast<int>(graph::ResizeCoordinates::kPytorchHalfPixel) ==
                  static_cast<int>(ResizeCoordinatesKind::kPytorchHalfPixel) &&
              static_cast<int>(graph::ResizeCoordinates::kAlignCorners) ==
                  static_cast<int>(ResizeCoordinatesKind::kAlignCorners) &&
              static_cast<int>(graph::ResizeCoordinates::kAsymmetric) ==
                  static_cast<int>(ResizeCoordinatesKind::kAsymmetric));
static_assert(static_cast<int>(graph::NearestRounding::kRoundPreferFloor) ==
                  static_cast<int>(NearestRoundingKind::kRoundPreferFloor) &&
              static_cast<int>(graph::NearestRounding::kRoundPreferCeil) ==
                  static_cast<int>(NearestRoundingKind::kRoundPreferCeil) &&
              static_cast<int>(graph::NearestRounding::kFloor) ==
                  static_cast<int>(NearestRoundingKind::kFloor) &&
              static_cast<int>(graph::NearestRounding::kCeil) ==
                  static_cast<int>(NearestRoundingKind::kCeil));

StatusOr<ResizeParams> MakeResizeParams(const graph::ResizeAttrs& attrs, const graph::Shape& x,
                                        const graph::Shape& y) {
  if (x.size() != 4 || y.size() != 4 || x[0] != y[0] || x[1] != y[1] || y[2] != attrs.size[0] ||
      y[3] != attrs.size[1]) {
    return absl::InvalidArgumentError(StrCat("resize of ", graph::ShapeToString(x), " to ",
                                             graph::ShapeToString(y), " is not one of H and W"));
  }
  ResizeParams p;
  p.planes = x[0] * x[1];
  p.in_h = x[2];
  p.in_w = x[3];
  p.out_h = y[2];
  p.out_w = y[3];
  p.scale_h = attrs.scale[0];
  p.scale_w = attrs.scale[1];
  p.mode = static_cast<ResizeModeKind>(static_cast<int>(attrs.mode));
  p.coordinates = static_cast<ResizeCoordinatesKind>(static_cast<int>(attrs.coordinates));
  p.rounding = static_cast<NearestRoundingKind>(static_cast<int>(attrs.rounding));
  return p;
}

StatusOr<ReduceParams> MakeReduceParams(graph::OpType type, const graph::ReduceAttrs& attrs,
                                        const graph::Shape& x) {
  RETURN_IF_ERROR(CheckRank(x));
  ReduceFunctionKind function = ReduceFunctionKind::kMean;
  switch (type) {
    case graph::OpType::kReduceMean:
      break;
    case graph::OpType::kReduceSum:
      function = ReduceFunctionKind::kSum;
      break;
    case graph::OpType::kReduceMax:
      function = ReduceFunctionKind::kMax;
      break;
    case graph::OpType::kReduceMin:
      function = ReduceFunctionKind::kMin;
      break;
    default:
      return absl::InvalidArgumentError(
          StrCat(graph::OpTypeName(type), " is not a reduction over axes"));
  }
  std::vector<bool> reduced(x.size(), attrs.axes.empty());
  for (int64_t axis : attrs.axes) {
    if (axis < 0 || axis >= static_cast<int64_t>(x.size())) {
      return absl::InvalidArgumentError("reduce axis out of range");
    }
    reduced[static_cast<size_t>(axis)] = true;
  }
  const std::vector<int64_t> strides = Strides(x);
  ReduceParams p;
  p.function = function;
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
  return p;
}

StatusOr<Pool2dParams> MakePool2dParams(graph::OpType type, const graph::PoolAttrs& attrs,
                                        const graph::Shape& x, const graph::Shape& y) {
  if (x.size() != 4 || y.size() != 4) return absl::InvalidArgumentError("pool is not 4-D");
  Pool2dParams p;
  p.planes = x[0] * x[1];
  p.in_h = x[2];
  p.in_w = x[3];
  p.out_h = y[2];
  p.out_w = y[3];
  p.kernel_h = attrs.kernel[0];
  p.kernel_w = attrs.kernel[1];
  p.stride_h = attrs.stride[0];
  p.stride_w = attrs.stride[1];
  p.pad_top = attrs.pads[0];
  p.pad_left = attrs.pads[1];
  p.pad_bottom = attrs.pads[2];
  p.pad_right = attrs.pads[3];
  p.is_max = type == graph::OpType::kMaxPool;
  p.count_include_pad = attrs.count_include_pad;
  return p;
}

}  // namespace iosfarm::worker::cuda
