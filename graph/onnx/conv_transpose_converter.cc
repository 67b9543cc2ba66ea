// ConvTranspose (opsets 11-17) as the IR's ConvTranspose of 4-D NCHW inputs
// (graph/attributes.h ConvTransposeAttrs): strides, dilations, groups,
// explicit pads, output_padding, output_shape, and auto_pad (NOTSET, VALID,
// SAME_UPPER, SAME_LOWER), with the pads that the ONNX operator's text
// derives from output_shape and auto_pad resolved at import. Anything else is
// refused naming the attribute.
#include "graph/onnx/op_converters.h"
#include "graph/onnx/shape_helpers.h"

namespace iosfarm::graph::onnx_import::converters_internal {
namespace {

// The output's spatial dims that `output_shape` asks for (2 entries, or 4
// with N and C), nullopt when absent.
StatusOr<std::optional<std::array<int64_t, 2>>> OutputShape(const NodeView& node) {
  ASSIGN_OR_RETURN(auto values, node.GetInts("output_shape"));
  if (!values.has_value() || values->empty()) return std::optional<std::array<int64_t, 2>>();
  if (values->size() != 2 && values->size() != 4) {
    return node.Errorf("attribute 'output_shape' has ", values->size(),
                       " entries, expected 2 (H, W) or 4 (N, C, H, W)");
  }
  const size_t h = values->size() - 2;
  return std::optional<std::array<int64_t, 2>>(
      std::array<int64_t, 2>{(*values)[h], (*values)[h + 1]});
}

}  // namespace

Status ConvertConvTranspose(const NodeView& node, ImportContext& ctx) {
  RETURN_IF_ERROR(CheckArity(node, ctx, 2, 3, 1));
  ASSIGN_OR_RETURN(ValueId x, ctx.ActivationInput(node, 0));
  const Shape& in = ctx.ShapeOf(x);
  if (in.size() != 4) {
    return node.Errorf("only 2-D transposed convolution on 4-D NCHW input is supported, ",
                       "input has shape ", ShapeToString(in));
  }
  ASSIGN_OR_RETURN(ConstPtr w, ctx.ConstantInput(node, 1, "W"));
  ASSIGN_OR_RETURN(ConstPtr b, ctx.OptionalConstantInput(node, 2, "B"));
  if (w->rank() != 4) {
    return node.Errorf("weight 'W' must be 4-D [C, out_channels / group, kH, kW], got shape ",
                       ShapeToString(w->dims));
  }
  ConvTransposeAttrs attrs;
  ASSIGN_OR_RETURN(attrs.groups, node.GetInt("group", 1));
  if (attrs.groups < 1 || w->dims[0] != in[1] || in[1] % attrs.groups != 0) {
    return node.Errorf("weight 'W' of shape ", ShapeToString(w->dims), " and group ", attrs.groups,
                       " do not fit an input of ", in[1], " channels");
  }
  attrs.out_channels = w->dims[1] * attrs.groups;
  attrs.kernel = {w->dims[2], w->dims[3]};
  RETURN_IF_ERROR(CheckKernelShape(node, *w));
  ASSIGN_OR_RETURN(attrs.stride, SpatialPair(node, "strides", 1));
  ASSIGN_OR_RETURN(attrs.dilation, SpatialPair(node, "dilations", 1));
  ASSIGN_OR_RETURN(attrs.output_padding, SpatialPair(node, "output_padding", 0));
  for (int i = 0; i < 2; ++i) {
    if (attrs.stride[i] < 1 || attrs.dilation[i] < 1) {
      return node.Error("strides and dilations must be positive");
    }
    if (attrs.output_padding[i] < 0 ||
        attrs.output_padding[i] >= std::max(attrs.stride[i], attrs.dilation[i])) {
      return node.Errorf("output_padding ", attrs.output_padding[i],
                         " must be at least 0 and smaller than the stride or the dilation");
    }
  }
  ASSIGN_OR_RETURN(std::string auto_pad, node.GetString("auto_pad", "NOTSET"));
  using SpatialSize = std::optional<std::array<int64_t, 2>>;
  ASSIGN_OR_RETURN(SpatialSize output_shape, OutputShape(node));
  if (auto_pad != "NOTSET" && auto_pad != "VALID" && auto_pad != "SAME_UPPER" &&
      auto_pad != "SAME_LOWER") {
    return node.Errorf("auto_pad '", auto_pad, "' is not supported");
  }
  if (!output_shape.has_value() && (auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER")) {
    output_shape = std::array<int64_t, 2>{in[2] * attrs.stride[0], in[3] * attrs.stride[1]};
  }
  if (output_shape.has_value()) {
    // ONNX's rule: the total padding that gives output_shape, split evenly
    // with the odd one at the end for SAME_UPPER, at the start otherwise.
    for (int i = 0; i < 2; ++i) {
      const int64_t total = attrs.stride[i] * (in[2 + i] - 1) + attrs.output_padding[i] +
                            (attrs.kernel[i] - 1) * attrs.dilation[i] + 1 - (*output_shape)[i];
      if (total < 0) {
        return node.Errorf("output_shape ", (*output_shape)[i], " is larger than ",
                           (*output_shape)[i] + total,
                           ", what the kernel, strides and output_padding reach without pads; "
                           "not supported");
      }
      const bool upper = auto_pad == "SAME_UPPER";
      attrs.pads[i] = upper ? total / 2 : total - total / 2;
      attrs.pads[2 + i] = upper ? total - total / 2 : total / 2;
    }
  } else if (auto_pad == "NOTSET") {
    ASSIGN_OR_RETURN(auto pads, node.GetIntsOfSize("pads", 4));
    if (pads.has_value()) {
      for (int i = 0; i < 4; ++i) {
        if ((*pads)[i] < 0) return node.Error("pads must not be negative");
        attrs.pads[i] = (*pads)[i];
      }
    }
  }
  std::map<std::string, Tensor> weights;
  if (!w->is_float()) return node.Errorf("weight 'W' must be floating point");
  ASSIGN_OR_RETURN(weights["W"], ctx.WeightTensor(node, *w, "W"));
  if (b != nullptr) {
    if (!b->is_float() || b->num_elements() != attrs.out_channels) {
      return node.Errorf("bias 'B' must hold ", attrs.out_channels, " floats, got shape ",
                         ShapeToString(b->dims));
    }
    ASSIGN_OR_RETURN(weights["B"], ctx.WeightTensor(node, *b, "B"));
    weights["B"].shape = {attrs.out_channels};
    attrs.has_bias = true;
  }
  return ctx.AddNode(node, OpType::kConvTranspose, attrs, {x}, std::move(weights)).status();
}

}  // namespace iosfarm::graph::onnx_import::converters_internal
