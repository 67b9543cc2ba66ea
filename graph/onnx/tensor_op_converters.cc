// Tensor ops: Concat, Split, Slice, Pad, Reshape, Flatten, Transpose,
// Squeeze/Unsqueeze (as Reshape), ReduceMean, Softmax, Cast (as Identity).
#include <algorithm>
#include <numeric>

#include "graph/onnx/op_converters.h"
#include "graph/onnx/shape_helpers.h"

namespace iosfarm::graph::onnx_import::converters_internal {
namespace {

int64_t Rank(const Shape& shape) { return static_cast<int64_t>(shape.size()); }

// Integer list from constant input i, or nullopt when absent.
StatusOr<std::optional<std::vector<int64_t>>> OptionalIntsInput(const NodeView& node,
                                                                ImportContext& ctx, int i,
                                                                std::string_view role) {
  ASSIGN_OR_RETURN(ConstPtr constant, ctx.OptionalConstantInput(node, i, role));
  if (constant == nullptr) return std::optional<std::vector<int64_t>>();
  ASSIGN_OR_RETURN(std::vector<int64_t> values,
                   ToIntList(*constant, StrCat(node.Label(), " input '", role, "'")));
  return std::optional<std::vector<int64_t>>(std::move(values));
}

// From constant input i at opset >= input_opset, else from the attribute.
StatusOr<std::optional<std::vector<int64_t>>> IntsFromInputOrAttr(const NodeView& node,
                                                                  ImportContext& ctx, int i,
                                                                  std::string_view name,
                                                                  int64_t input_opset) {
  if (node.opset() >= input_opset) return OptionalIntsInput(node, ctx, i, name);
  if (node.has_input(i)) {
    return node.Errorf("input ", i, " is not defined at opset ", node.opset(), "; use the '", name,
                       "' attribute");
  }
  return node.GetInts(name);
}

Status AddReshape(const NodeView& node, ImportContext& ctx, ValueId x, Shape shape) {
  return ctx.AddNode(node, OpType::kReshape, ReshapeAttrs{std::move(shape)}, {x}).status();
}

}  // namespace

Status ConvertConcat(const NodeView& node, ImportContext& ctx) {
  RETURN_IF_ERROR(CheckArity(node, ctx, 1, std::numeric_limits<int>::max(), 1));
  std::vector<ValueId> inputs;
  for (int i = 0; i < node.num_inputs(); ++i) {
    ASSIGN_OR_RETURN(ValueId v, ctx.ActivationInput(node, i));
    inputs.push_back(v);
  }
  ASSIGN_OR_RETURN(int64_t axis, node.GetInt("axis", std::numeric_limits<int64_t>::min()));
  if (axis == std::numeric_limits<int64_t>::min()) return node.Error("missing attribute 'axis'");
  ASSIGN_OR_RETURN(axis, NormalizeAxis(node, axis, Rank(ctx.ShapeOf(inputs[0])), "axis"));
  return ctx.AddNode(node, OpType::kConcat, ConcatAttrs{axis}, std::move(inputs)).status();
}

Status ConvertSplit(const NodeView& node, ImportContext& ctx) {
  RETURN_IF_ERROR(CheckArity(node, ctx, 1, 2, node.num_outputs()));
  ASSIGN_OR_RETURN(ValueId x, ctx.ActivationInput(node, 0));
  const Shape& shape = ctx.ShapeOf(x);
  ASSIGN_OR_RETURN(int64_t axis, node.GetInt("axis", 0));
  ASSIGN_OR_RETURN(axis, NormalizeAxis(node, axis, Rank(shape), "axis"));
  ASSIGN_OR_RETURN(auto split, IntsFromInputOrAttr(node, ctx, 1, "split", 13));
  ASSIGN_OR_RETURN(std::vector<int64_t> sizes,
                   ResolveSplitSizes(node, shape[axis], split, node.num_outputs()));
  return ctx
      .AddNode(node, OpType::kSplit, SplitAttrs{axis, std::move(sizes)}, {x}, {},
               node.num_outputs())
      .status();
}

Status ConvertSlice(const NodeView& node, ImportContext& ctx) {
  RETURN_IF_ERROR(CheckArity(node, ctx, 3, 5, 1));
  ASSIGN_OR_RETURN(ValueId x, ctx.ActivationInput(node, 0));
  const Shape shape = ctx.ShapeOf(x);
  ASSIGN_OR_RETURN(auto starts, OptionalIntsInput(node, ctx, 1, "starts"));
  ASSIGN_OR_RETURN(auto ends, OptionalIntsInput(node, ctx, 2, "ends"));
  ASSIGN_OR_RETURN(auto axes, OptionalIntsInput(node, ctx, 3, "axes"));
  ASSIGN_OR_RETURN(auto steps, OptionalIntsInput(node, ctx, 4, "steps"));
  if (!starts.has_value() || !ends.has_value()) return node.Error("missing 'starts' or 'ends'");
  const size_t n = starts->size();
  if (!axes.has_value()) {
    axes.emplace(n);
    std::iota(axes->begin(), axes->end(), 0);
  }
  if (!steps.has_value()) steps.emplace(n, 1);
  if (ends->size() != n || axes->size() != n || steps->size() != n) {
    return node.Error("starts, ends, axes and steps must have equal lengths");
  }
  ASSIGN_OR_RETURN(std::vector<int64_t> normalized,
                   NormalizeAxes(node, *axes, Rank(shape), "axes"));
  SliceAttrs attrs;
  for (size_t i = 0; i < n; ++i) {
    const int64_t axis = normalized[i];
    ASSIGN_OR_RETURN(SliceRange range,
                     ClampSlice(node, shape[axis], (*starts)[i], (*ends)[i], (*steps)[i]));
    if (range.step < 0) {
      return node.Errorf("negative step ", range.step, " on axis ", axis, " is not supported");
    }
    if (range.count == 0) {
      return node.Errorf("slice on axis ", axis, " of size ", shape[axis], " is empty");
    }
    if (range.start == 0 && range.step == 1 && range.count == shape[axis]) continue;  // no-op
    attrs.axes.push_back(axis);
    attrs.starts.push_back(range.start);
    attrs.ends.push_back(range.start + (range.count - 1) * range.step + 1);
    attrs.steps.push_back(range.step);
  }
  return ctx.AddNode(node, OpType::kSlice, std::move(attrs), {x}).status();
}

Status ConvertPad(const NodeView& node, ImportContext& ctx) {
  RETURN_IF_ERROR(CheckArity(node, ctx, 1, 3, 1));
  ASSIGN_OR_RETURN(ValueId x, ctx.ActivationInput(node, 0));
  const int64_t rank = Rank(ctx.ShapeOf(x));
  ASSIGN_OR_RETURN(auto pads, OptionalIntsInput(node, ctx, 1, "pads"));
  if (!pads.has_value()) return node.Error("missing input 'pads'");
  if (Rank(*pads) != 2 * rank) {
    return node.Errorf("'pads' has ", pads->size(), " entries, expected ", 2 * rank);
  }
  for (int64_t p : *pads) {
    if (p < 0) return node.Errorf("negative pad ", p, " (cropping) is not supported");
  }
  PadAttrs attrs;
  attrs.pads = *pads;
  ASSIGN_OR_RETURN(ConstPtr value, ctx.OptionalConstantInput(node, 2, "constant_value"));
  if (value != nullptr) {
    ASSIGN_OR_RETURN(double v, ToScalar(*value, node.Label() + " input 'constant_value'"));
    attrs.value = static_cast<float>(v);
  }
  ASSIGN_OR_RETURN(std::string mode, node.GetString("mode", "constant"));
  if (mode == "constant") {
    attrs.mode = PadMode::kConstant;
  } else if (mode == "reflect") {
    attrs.mode = PadMode::kReflect;
  } else if (mode == "edge") {
    attrs.mode = PadMode::kEdge;
  } else {
    return node.Errorf("pad mode '", mode, "' is not supported");
  }
  return ctx.AddNode(node, OpType::kPad, std::move(attrs), {x}).status();
}

Status ConvertReshape(const NodeView& node, ImportContext& ctx) {
  RETURN_IF_ERROR(CheckArity(node, ctx, 2, 2, 1));
  ASSIGN_OR_RETURN(ValueId x, ctx.ActivationInput(node, 0));
  ASSIGN_OR_RETURN(auto target, OptionalIntsInput(node, ctx, 1, "shape"));
  if (!target.has_value()) return node.Error("missing input 'shape'");
  ASSIGN_OR_RETURN(int64_t allow_zero, node.GetInt("allowzero", 0));
  ASSIGN_OR_RETURN(
      std::vector<int64_t> shape,
      ResolveReshapeTarget(node, ctx.ShapeOf(x), std::move(*target), allow_zero != 0, ctx.batch()));
  return AddReshape(node, ctx, x, std::move(shape));
}

Status ConvertFlatten(const NodeView& node, ImportContext& ctx) {
  RETURN_IF_ERROR(CheckArity(node, ctx, 1, 1, 1));
  ASSIGN_OR_RETURN(ValueId x, ctx.ActivationInput(node, 0));
  const int64_t rank = Rank(ctx.ShapeOf(x));
  ASSIGN_OR_RETURN(int64_t axis, node.GetInt("axis", 1));
  if (axis < -rank || axis > rank) {
    return node.Errorf("axis ", axis, " is out of range for rank ", rank);
  }
  if (axis < 0) axis += rank;
  return ctx.AddNode(node, OpType::kFlatten, FlattenAttrs{axis}, {x}).status();
}

Status ConvertTranspose(const NodeView& node, ImportContext& ctx) {
  RETURN_IF_ERROR(CheckArity(node, ctx, 1, 1, 1));
  ASSIGN_OR_RETURN(ValueId x, ctx.ActivationInput(node, 0));
  ASSIGN_OR_RETURN(auto perm, node.GetInts("perm"));
  TransposeAttrs attrs;
  if (perm.has_value()) {
    attrs.perm = *perm;
  } else {
    attrs.perm.resize(ctx.ShapeOf(x).size());
    std::iota(attrs.perm.rbegin(), attrs.perm.rend(), 0);
  }
  return ctx.AddNode(node, OpType::kTranspose, std::move(attrs), {x}).status();
}

Status ConvertSqueezeOrUnsqueeze(const NodeView& node, ImportContext& ctx) {
  const bool squeeze = node.op_type() == "Squeeze";
  RETURN_IF_ERROR(CheckArity(node, ctx, squeeze ? 1 : 1, 2, 1));
  ASSIGN_OR_RETURN(ValueId x, ctx.ActivationInput(node, 0));
  const Shape in = ctx.ShapeOf(x);
  ASSIGN_OR_RETURN(auto axes, IntsFromInputOrAttr(node, ctx, 1, "axes", 13));
  Shape out;
  if (squeeze) {
    std::vector<bool> drop(in.size(), false);
    if (axes.has_value()) {
      ASSIGN_OR_RETURN(std::vector<int64_t> normalized,
                       NormalizeAxes(node, *axes, Rank(in), "axes"));
      for (int64_t a : normalized) {
        if (in[a] != 1) return node.Errorf("cannot squeeze axis ", a, " of size ", in[a]);
        drop[a] = true;
      }
    } else {
      for (size_t i = 0; i < in.size(); ++i) drop[i] = in[i] == 1;
    }
    for (size_t i = 0; i < in.size(); ++i) {
      if (!drop[i]) out.push_back(in[i]);
    }
    if (out.empty()) return node.Error("squeezing to a scalar is not supported");
  } else {
    if (!axes.has_value()) return node.Error("missing 'axes'");
    const int64_t rank = Rank(in) + Rank(*axes);
    ASSIGN_OR_RETURN(std::vector<int64_t> normalized, NormalizeAxes(node, *axes, rank, "axes"));
    std::vector<bool> inserted(static_cast<size_t>(rank), false);
    for (int64_t a : normalized) inserted[a] = true;
    size_t next = 0;
    for (int64_t i = 0; i < rank; ++i) out.push_back(inserted[i] ? 1 : in[next++]);
  }
  return AddReshape(node, ctx, x, std::move(out));
}

Status ConvertReduce(const NodeView& node, ImportContext& ctx, OpType type) {
  // ReduceSum takes its axes as input 1 from opset 13 on; the others keep
  // the attribute through opset 17.
  const bool axes_input = type == OpType::kReduceSum && node.opset() >= 13;
  RETURN_IF_ERROR(CheckArity(node, ctx, 1, axes_input ? 2 : 1, 1));
  ASSIGN_OR_RETURN(ValueId x, ctx.ActivationInput(node, 0));
  const int64_t rank = Rank(ctx.ShapeOf(x));
  std::optional<std::vector<int64_t>> axes;
  if (axes_input) {
    ASSIGN_OR_RETURN(ConstPtr given, ctx.OptionalConstantInput(node, 1, "axes"));
    if (given != nullptr && given->num_elements() > 0) {
      ASSIGN_OR_RETURN(axes, ToIntList(*given, StrCat(node.Label(), " input 'axes'")));
    }
    ASSIGN_OR_RETURN(int64_t noop, node.GetInt("noop_with_empty_axes", 0));
    if (!axes.has_value() && noop != 0) {
      return ctx.AddNode(node, OpType::kIdentity, NoAttrs{}, {x}).status();
    }
  } else {
    ASSIGN_OR_RETURN(axes, node.GetInts("axes"));
  }
  ASSIGN_OR_RETURN(int64_t keepdims, node.GetInt("keepdims", 1));
  ReduceAttrs attrs;
  attrs.keepdims = keepdims != 0;
  if (axes.has_value() && !axes->empty()) {
    ASSIGN_OR_RETURN(attrs.axes, NormalizeAxes(node, *axes, rank, "axes"));
    std::sort(attrs.axes.begin(), attrs.axes.end());
  } else {
    attrs.axes.resize(static_cast<size_t>(rank));
    std::iota(attrs.axes.begin(), attrs.axes.end(), 0);
  }
  return ctx.AddNode(node, type, std::move(attrs), {x}).status();
}

Status ConvertSoftmax(const NodeView& node, ImportContext& ctx) {
  RETURN_IF_ERROR(CheckArity(node, ctx, 1, 1, 1));
  ASSIGN_OR_RETURN(ValueId x, ctx.ActivationInput(node, 0));
  const Shape& shape = ctx.ShapeOf(x);
  const bool coerced = node.opset() < 13;
  ASSIGN_OR_RETURN(int64_t axis, node.GetInt("axis", coerced ? 1 : -1));
  ASSIGN_OR_RETURN(axis, NormalizeAxis(node, axis, Rank(shape), "axis"));
  if (coerced) {
    // Before opset 13 the input is coerced to 2-D [prod(d[:axis]),
    // prod(d[axis:])]; that equals a softmax over `axis` only when the
    // dimensions after it are all 1.
    for (int64_t d = axis + 1; d < Rank(shape); ++d) {
      if (shape[d] != 1) {
        return node.Errorf("opset ", node.opset(), " softmax over axes ", axis, ".. of ",
                           ShapeToString(shape), " (2-D coercion) is not supported");
      }
    }
  }
  return ctx.AddNode(node, OpType::kSoftmax, SoftmaxAttrs{axis}, {x}).status();
}

Status ConvertCast(const NodeView& node, ImportContext& ctx) {
  RETURN_IF_ERROR(CheckArity(node, ctx, 1, 1, 1));
  ASSIGN_OR_RETURN(int64_t to, node.GetInt("to", 0));
  if (to != onnx::TensorProto::FLOAT) {
    return node.Errorf("cast of an activation to ",
                       OnnxDataTypeName(static_cast<int32_t>(std::clamp<int64_t>(to, -1, 1 << 20))),
                       " is not supported (activations are float)");
  }
  ASSIGN_OR_RETURN(ValueId x, ctx.ActivationInput(node, 0));
  return ctx.AddNode(node, OpType::kIdentity, NoAttrs{}, {x}).status();
}

}  // namespace iosfarm::graph::onnx_import::converters_internal
