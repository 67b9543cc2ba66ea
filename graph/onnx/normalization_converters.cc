// ONNX operators imported as several IR nodes of the ops every backend runs
// (ImportContext::AddPartNode), each computing what the operator computes in
// fp32:
//   PRelu(X, slope)           Relu(X) - slope * Relu(-X); a slope of one
//                             value is one LeakyRelu node
//   InstanceNormalization     per (n, c) over the spatial axes, and
//   LayerNormalization        over axes [axis, rank) (opset 17):
//                             d = X - mean(X); Y = d / sqrt(mean(d * d) + eps)
//                             * scale + B (the two-pass variance)
// torch exports GroupNorm as InstanceNormalization of the input reshaped to
// [N, groups, -1], so it imports through the same path.
#include "graph/onnx/op_converters.h"

#include <numeric>
#include <optional>

#include "graph/onnx/shape_helpers.h"
#include "graph/shape_inference.h"

namespace iosfarm::graph::onnx_import::converters_internal {
namespace {

// A constant input as an IR tensor of shape `shape` (same element count).
StatusOr<Tensor> ConstantAs(const NodeView& node, ImportContext& ctx, int i, std::string_view role,
                            const Shape& shape) {
  ASSIGN_OR_RETURN(ConstPtr constant, ctx.ConstantInput(node, i, role));
  if (!constant->is_float()) {
    return node.Errorf("input '", role, "' must be floating point, got ",
                       ConstKindName(constant->kind));
  }
  if (constant->num_elements() != NumElements(shape)) {
    return node.Errorf("input '", role, "' has shape ", ShapeToString(constant->dims),
                       ", expected ", NumElements(shape), " elements (", ShapeToString(shape), ")");
  }
  ASSIGN_OR_RETURN(Tensor tensor,
                   ToIrTensor(*constant, StrCat(node.Label(), " input '", role, "'")));
  tensor.shape = shape;
  return tensor;
}

// Y = (X - mean) / sqrt(mean((X - mean)^2) + epsilon) * scale + bias, the
// means over `axes`; `scale` and `bias` broadcast against X. The last node
// is the ONNX node's output.
Status AddNormalization(const NodeView& node, ImportContext& ctx, ValueId x,
                        std::vector<int64_t> axes, float epsilon, Tensor scale,
                        std::optional<Tensor> bias) {
  const ReduceAttrs reduce{std::move(axes), true};
  ASSIGN_OR_RETURN(ValueId mean, ctx.AddPartNode(node, "mean", OpType::kReduceMean, reduce, {x}));
  ASSIGN_OR_RETURN(ValueId d,
                   ctx.AddPartNode(node, "centered", OpType::kSub, NoAttrs{}, {x, mean}));
  ASSIGN_OR_RETURN(ValueId square,
                   ctx.AddPartNode(node, "square", OpType::kMul, NoAttrs{}, {d, d}));
  ASSIGN_OR_RETURN(ValueId variance,
                   ctx.AddPartNode(node, "variance", OpType::kReduceMean, reduce, {square}));
  ASSIGN_OR_RETURN(ValueId eps, ctx.AddPartConstant(node, "epsilon", Tensor{{1}, {epsilon}}));
  ASSIGN_OR_RETURN(ValueId shifted,
                   ctx.AddPartNode(node, "variance_eps", OpType::kAdd, NoAttrs{}, {variance, eps}));
  ASSIGN_OR_RETURN(ValueId deviation,
                   ctx.AddPartNode(node, "deviation", OpType::kUnaryMath,
                                   UnaryMathAttrs{UnaryFunction::kSqrt, 0.0f, 0.0f}, {shifted}));
  ASSIGN_OR_RETURN(ValueId normalized,
                   ctx.AddPartNode(node, "normalized", OpType::kDiv, NoAttrs{}, {d, deviation}));
  ASSIGN_OR_RETURN(ValueId scale_value, ctx.AddPartConstant(node, "scale", std::move(scale)));
  if (!bias.has_value()) {
    return ctx.AddNode(node, OpType::kMul, NoAttrs{}, {normalized, scale_value}).status();
  }
  ASSIGN_OR_RETURN(ValueId scaled, ctx.AddPartNode(node, "scaled", OpType::kMul, NoAttrs{},
                                                   {normalized, scale_value}));
  ASSIGN_OR_RETURN(ValueId bias_value, ctx.AddPartConstant(node, "bias", *std::move(bias)));
  return ctx.AddNode(node, OpType::kAdd, NoAttrs{}, {scaled, bias_value}).status();
}

}  // namespace

Status ConvertPRelu(const NodeView& node, ImportContext& ctx) {
  RETURN_IF_ERROR(CheckArity(node, ctx, 2, 2, 1));
  ASSIGN_OR_RETURN(ValueId x, ctx.ActivationInput(node, 0));
  if (ctx.IsConstant(node.input(1))) {
    ASSIGN_OR_RETURN(ConstPtr slope, ctx.ConstantInput(node, 1, "slope"));
    if (slope->num_elements() == 1 && slope->is_float()) {
      const float alpha = static_cast<float>(slope->AsDouble(0));
      return ctx
          .AddNode(node, OpType::kUnaryMath, UnaryMathAttrs{UnaryFunction::kLeakyRelu, alpha, 0.0f},
                   {x})
          .status();
    }
  }
  ASSIGN_OR_RETURN(ValueId slope, ctx.ActivationInput(node, 1));
  const Shape x_shape = ctx.ShapeOf(x);
  auto broadcast = BroadcastShapes(x_shape, ctx.ShapeOf(slope));
  if (!broadcast.ok() || *broadcast != x_shape) {
    return node.Errorf("slope of shape ", ShapeToString(ctx.ShapeOf(slope)),
                       " does not broadcast to the input's shape ", ShapeToString(x_shape));
  }
  ASSIGN_OR_RETURN(ValueId positive,
                   ctx.AddPartNode(node, "positive", OpType::kRelu, NoAttrs{}, {x}));
  ASSIGN_OR_RETURN(ValueId negated,
                   ctx.AddPartNode(node, "negated", OpType::kUnaryMath,
                                   UnaryMathAttrs{UnaryFunction::kNeg, 0.0f, 0.0f}, {x}));
  ASSIGN_OR_RETURN(ValueId negative,
                   ctx.AddPartNode(node, "negative", OpType::kRelu, NoAttrs{}, {negated}));
  ASSIGN_OR_RETURN(ValueId sloped,
                   ctx.AddPartNode(node, "sloped", OpType::kMul, NoAttrs{}, {slope, negative}));
  return ctx.AddNode(node, OpType::kSub, NoAttrs{}, {positive, sloped}).status();
}

Status ConvertInstanceNormalization(const NodeView& node, ImportContext& ctx) {
  RETURN_IF_ERROR(CheckArity(node, ctx, 3, 3, 1));
  ASSIGN_OR_RETURN(ValueId x, ctx.ActivationInput(node, 0));
  const Shape shape = ctx.ShapeOf(x);
  if (shape.size() < 3) {
    return node.Errorf("input of shape ", ShapeToString(shape),
                       " is not supported: InstanceNormalization needs N, C and at least one "
                       "spatial axis");
  }
  ASSIGN_OR_RETURN(float epsilon, node.GetFloat("epsilon", 1e-5f));
  Shape per_channel(shape.size() - 1, 1);  // [C, 1, ..., 1]: broadcasts over N and space
  per_channel[0] = shape[1];
  ASSIGN_OR_RETURN(Tensor scale, ConstantAs(node, ctx, 1, "scale", per_channel));
  ASSIGN_OR_RETURN(Tensor bias, ConstantAs(node, ctx, 2, "B", per_channel));
  std::vector<int64_t> axes(shape.size() - 2);
  std::iota(axes.begin(), axes.end(), 2);
  return AddNormalization(node, ctx, x, std::move(axes), epsilon, std::move(scale),
                          std::move(bias));
}

Status ConvertLayerNormalization(const NodeView& node, ImportContext& ctx) {
  RETURN_IF_ERROR(CheckArity(node, ctx, 2, 3, 1));
  ASSIGN_OR_RETURN(ValueId x, ctx.ActivationInput(node, 0));
  const Shape shape = ctx.ShapeOf(x);
  ASSIGN_OR_RETURN(int64_t axis, node.GetInt("axis", -1));
  ASSIGN_OR_RETURN(axis, NormalizeAxis(node, axis, static_cast<int64_t>(shape.size()), "axis"));
  ASSIGN_OR_RETURN(float epsilon, node.GetFloat("epsilon", 1e-5f));
  ASSIGN_OR_RETURN(int64_t stash_type, node.GetInt("stash_type", 1));
  if (stash_type != 1) {
    return node.Errorf("stash_type ", stash_type,
                       " is not supported (1: the statistics in fp32, as the importer computes)");
  }
  const Shape normalized(shape.begin() + axis, shape.end());  // broadcasts over the leading axes
  ASSIGN_OR_RETURN(Tensor scale, ConstantAs(node, ctx, 1, "Scale", normalized));
  std::optional<Tensor> bias;
  if (node.has_input(2)) {
    ASSIGN_OR_RETURN(bias, ConstantAs(node, ctx, 2, "B", normalized));
  }
  std::vector<int64_t> axes(shape.size() - static_cast<size_t>(axis));
  std::iota(axes.begin(), axes.end(), axis);
  return AddNormalization(node, ctx, x, std::move(axes), epsilon, std::move(scale),
                          std::move(bias));
}

}  // namespace iosfarm::graph::onnx_import::converters_internal
