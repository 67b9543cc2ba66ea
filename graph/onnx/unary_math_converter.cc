// The element-wise functions of one tensor that become one UnaryMath node
// (graph::UnaryMathAttrs): LeakyRelu, Elu, Selu, Softplus, Mish, Erf, Sqrt,
// Exp, Log, Neg, Abs, Reciprocal, and Pow with a constant scalar exponent.
// (On constant inputs they fold at import instead. ONNX's own Gelu is of
// opset 20, past the importer's; exports of opsets up to 17 spell GELU with
// Erf.)
#include "graph/onnx/op_converters.h"

namespace iosfarm::graph::onnx_import::converters_internal {
namespace {

Status AddUnaryMath(const NodeView& node, ImportContext& ctx, UnaryFunction function,
                    float alpha = 0.0f, float beta = 0.0f) {
  ASSIGN_OR_RETURN(ValueId x, ctx.ActivationInput(node, 0));
  return ctx.AddNode(node, OpType::kUnaryMath, UnaryMathAttrs{function, alpha, beta}, {x})
      .status();
}

// The default of each attribute is the ONNX operator's.
Status ConvertWithAlpha(const NodeView& node, ImportContext& ctx, UnaryFunction function,
                        float default_alpha) {
  RETURN_IF_ERROR(CheckArity(node, ctx, 1, 1, 1));
  ASSIGN_OR_RETURN(float alpha, node.GetFloat("alpha", default_alpha));
  return AddUnaryMath(node, ctx, function, alpha);
}

}  // namespace

Status ConvertUnaryMath(const NodeView& node, ImportContext& ctx, UnaryFunction function) {
  switch (function) {
    case UnaryFunction::kLeakyRelu:
      return ConvertWithAlpha(node, ctx, function, 0.01f);
    case UnaryFunction::kElu:
      return ConvertWithAlpha(node, ctx, function, 1.0f);
    case UnaryFunction::kSelu: {
      RETURN_IF_ERROR(CheckArity(node, ctx, 1, 1, 1));
      ASSIGN_OR_RETURN(float alpha, node.GetFloat("alpha", 1.67326319217681884765625f));
      ASSIGN_OR_RETURN(float gamma, node.GetFloat("gamma", 1.05070102214813232421875f));
      return AddUnaryMath(node, ctx, function, alpha, gamma);
    }
    case UnaryFunction::kPow: {
      RETURN_IF_ERROR(CheckArity(node, ctx, 2, 2, 1));
      if (!ctx.IsConstant(node.input(1))) {
        return node.Error(
            "Pow is supported with a constant scalar exponent only (input 1 is computed)");
      }
      ASSIGN_OR_RETURN(ConstPtr exponent, ctx.ConstantInput(node, 1, "exponent"));
      if (exponent->num_elements() != 1) {
        return node.Errorf("Pow is supported with a constant scalar exponent only, got shape ",
                           ShapeToString(exponent->dims));
      }
      return AddUnaryMath(node, ctx, function, static_cast<float>(exponent->AsDouble(0)));
    }
    default:
      RETURN_IF_ERROR(CheckArity(node, ctx, 1, 1, 1));
      return AddUnaryMath(node, ctx, function);
  }
}

}  // namespace iosfarm::graph::onnx_import::converters_internal
