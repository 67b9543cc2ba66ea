// Resize (opsets 11-17, those the importer reads) as the IR's Resize of H
// and W (graph/attributes.h ResizeAttrs). Supported: 4-D inputs resized
// along H and W only, modes nearest and linear, coordinate transformation
// modes half_pixel, pytorch_half_pixel, align_corners and asymmetric, every
// nearest_mode, scales or sizes as constants; anything else is refused
// naming the attribute and what is supported.
#include <cmath>

#include "graph/onnx/op_converters.h"

namespace iosfarm::graph::onnx_import::converters_internal {
namespace {

// Floats of constant input i (nullopt when absent or empty, as exporters
// write "no scales").
StatusOr<std::optional<std::vector<double>>> OptionalScales(const NodeView& node,
                                                            ImportContext& ctx, int i) {
  ASSIGN_OR_RETURN(ConstPtr constant, ctx.OptionalConstantInput(node, i, "scales"));
  if (constant == nullptr || constant->num_elements() == 0) {
    return std::optional<std::vector<double>>();
  }
  std::vector<double> values;
  for (int64_t k = 0; k < constant->num_elements(); ++k) values.push_back(constant->AsDouble(k));
  return std::optional<std::vector<double>>(std::move(values));
}

StatusOr<std::optional<std::vector<int64_t>>> OptionalSizes(const NodeView& node,
                                                            ImportContext& ctx, int i) {
  ASSIGN_OR_RETURN(ConstPtr constant, ctx.OptionalConstantInput(node, i, "sizes"));
  if (constant == nullptr || constant->num_elements() == 0) {
    return std::optional<std::vector<int64_t>>();
  }
  ASSIGN_OR_RETURN(std::vector<int64_t> values,
                   ToIntList(*constant, StrCat(node.Label(), " input 'sizes'")));
  return std::optional<std::vector<int64_t>>(std::move(values));
}

StatusOr<ResizeMode> ParseMode(const NodeView& node) {
  ASSIGN_OR_RETURN(std::string mode, node.GetString("mode", "nearest"));
  if (mode == "nearest") return ResizeMode::kNearest;
  if (mode == "linear") return ResizeMode::kLinear;
  return node.Errorf("mode '", mode, "' is not supported (nearest and linear are)");
}

StatusOr<ResizeCoordinates> ParseCoordinates(const NodeView& node) {
  ASSIGN_OR_RETURN(std::string mode,
                   node.GetString("coordinate_transformation_mode", "half_pixel"));
  for (ResizeCoordinates c : {ResizeCoordinates::kHalfPixel, ResizeCoordinates::kPytorchHalfPixel,
                              ResizeCoordinates::kAlignCorners, ResizeCoordinates::kAsymmetric}) {
    if (ResizeCoordinatesName(c) == mode) return c;
  }
  return node.Errorf("coordinate_transformation_mode '", mode,
                     "' is not supported (half_pixel, pytorch_half_pixel, align_corners and "
                     "asymmetric are)");
}

StatusOr<NearestRounding> ParseRounding(const NodeView& node) {
  ASSIGN_OR_RETURN(std::string mode, node.GetString("nearest_mode", "round_prefer_floor"));
  for (NearestRounding r : {NearestRounding::kRoundPreferFloor, NearestRounding::kRoundPreferCeil,
                            NearestRounding::kFloor, NearestRounding::kCeil}) {
    if (NearestRoundingName(r) == mode) return r;
  }
  return node.Errorf("nearest_mode '", mode, "' is not supported");
}

// Output H, W and the coordinate transform's scales from `sizes` or
// `scales` (4 entries for N, C, H, W; N and C unchanged).
Status ResolveSize(const NodeView& node, const Shape& in,
                   const std::optional<std::vector<double>>& scales,
                   const std::optional<std::vector<int64_t>>& sizes, ResizeAttrs& attrs) {
  if (sizes.has_value()) {
    if (sizes->size() != 4) {
      return node.Errorf("'sizes' has ", sizes->size(), " entries, expected 4 (N, C, H, W)");
    }
    if ((*sizes)[0] != in[0] || (*sizes)[1] != in[1]) {
      return node.Errorf("resizing N or C (sizes ", (*sizes)[0], ", ", (*sizes)[1],
                         " of an input of ", in[0], ", ", in[1],
                         ") is not supported; only H and W are resized");
    }
    for (int d = 0; d < 2; ++d) {
      const int64_t out = (*sizes)[2 + d];
      if (out < 1) return node.Errorf("'sizes' ", out, " must be positive");
      attrs.size[d] = out;
      attrs.scale[d] =
          static_cast<float>(static_cast<double>(out) / static_cast<double>(in[2 + d]));
    }
    return absl::OkStatus();
  }
  if (!scales.has_value()) return node.Error("needs 'scales' or 'sizes'");
  if (scales->size() != 4) {
    return node.Errorf("'scales' has ", scales->size(), " entries, expected 4 (N, C, H, W)");
  }
  if ((*scales)[0] != 1.0 || (*scales)[1] != 1.0) {
    return node.Errorf("resizing N or C (scales ", (*scales)[0], ", ", (*scales)[1],
                       ") is not supported; only H and W are resized");
  }
  for (int d = 0; d < 2; ++d) {
    const double scale = (*scales)[2 + d];
    if (!(scale > 0.0) || !std::isfinite(scale)) {
      return node.Errorf("'scales' ", scale, " must be positive");
    }
    const double out = std::floor(static_cast<double>(in[2 + d]) * scale);
    if (out < 1 || out > 1e12) {
      return node.Errorf("scale ", scale, " of a dimension of ", in[2 + d], " gives ", out,
                         " output elements");
    }
    attrs.size[d] = static_cast<int64_t>(out);
    attrs.scale[d] = static_cast<float>(scale);
  }
  return absl::OkStatus();
}

StatusOr<ValueId> ResizeInput(const NodeView& node, ImportContext& ctx) {
  ASSIGN_OR_RETURN(ValueId x, ctx.ActivationInput(node, 0));
  const Shape& in = ctx.ShapeOf(x);
  if (in.size() != 4) {
    return node.Errorf("input of shape ", ShapeToString(in),
                       " is not supported: only 4-D (N, C, H, W) inputs are resized");
  }
  return x;
}

}  // namespace

Status ConvertResize(const NodeView& node, ImportContext& ctx) {
  RETURN_IF_ERROR(CheckArity(node, ctx, 1, 4, 1));
  ASSIGN_OR_RETURN(ValueId x, ResizeInput(node, ctx));
  ResizeAttrs attrs;
  ASSIGN_OR_RETURN(attrs.mode, ParseMode(node));
  ASSIGN_OR_RETURN(attrs.coordinates, ParseCoordinates(node));
  ASSIGN_OR_RETURN(attrs.rounding, ParseRounding(node));
  // Inputs: X, roi (only for tf_crop_and_resize), scales, sizes.
  ASSIGN_OR_RETURN(std::optional<std::vector<double>> scales, OptionalScales(node, ctx, 2));
  ASSIGN_OR_RETURN(std::optional<std::vector<int64_t>> sizes, OptionalSizes(node, ctx, 3));
  if (scales.has_value() && sizes.has_value()) {
    return node.Error("gives both 'scales' and 'sizes'; ONNX allows only one");
  }
  RETURN_IF_ERROR(ResolveSize(node, ctx.ShapeOf(x), scales, sizes, attrs));
  return ctx.AddNode(node, OpType::kResize, attrs, {x}).status();
}

}  // namespace iosfarm::graph::onnx_import::converters_internal
