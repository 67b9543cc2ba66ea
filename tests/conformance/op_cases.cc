#include "tests/conformance/op_cases.h"

#include <limits>
#include <optional>

#include "graph/graph_builder.h"
#include "worker/backends/weights.h"

namespace iosfarm::conformance {
namespace {

using graph::Attributes;
using graph::GraphBuilder;
using graph::OpType;
using graph::Shape;
using graph::Tensor;
using graph::ValueId;

using Weights = std::map<std::string, Tensor>;

// A weight of `shape` without data (materialised by the executors).
Tensor Shaped(Shape shape) {
  Tensor t;
  t.shape = std::move(shape);
  return t;
}

// A weight of `shape` with values U(low, high).
Tensor Filled(Shape shape, float low, float high, uint64_t seed) {
  Tensor t = Shaped(std::move(shape));
  t.data.resize(static_cast<size_t>(t.num_elements()));
  worker::FillUniform(seed, low, high, t.data);
  return t;
}

ValueId Constant(GraphBuilder& b, Tensor value, const std::string& name) {
  Weights w;
  w["value"] = std::move(value);
  return b.AddNode(OpType::kConstant, graph::NoAttrs{}, {}, name, std::move(w))[0];
}

// One node `type` reading fresh graph inputs of `inputs` shapes; every
// output is a graph output.
StatusOr<graph::Graph> SingleOp(const std::vector<Shape>& inputs, OpType type, Attributes attrs,
                                Weights weights = {}) {
  GraphBuilder b("case");
  std::vector<ValueId> xs;
  for (size_t i = 0; i < inputs.size(); ++i) xs.push_back(b.Input("x" + std::to_string(i), inputs[i]));
  for (ValueId y : b.AddNode(type, std::move(attrs), xs, "op", std::move(weights))) b.Output(y);
  return std::move(b).Finish();
}

graph::ConvAttrs ConvA(int64_t out, std::array<int64_t, 2> kernel, std::array<int64_t, 2> stride,
                       std::array<int64_t, 4> pads, std::array<int64_t, 2> dilation,
                       int64_t groups, bool bias, graph::Activation act, float clip_min = 0,
                       float clip_max = 6) {
  const graph::ConvAttrs a{out, kernel, stride, dilation, pads, groups, bias, act, clip_min,
                          clip_max};
  return a;
}

StatusOr<graph::Graph> Conv(Shape in, const graph::ConvAttrs& a) {
  Weights w;
  w["W"] = Shaped({a.out_channels, in[1] / a.groups, a.kernel[0], a.kernel[1]});
  if (a.has_bias) w["B"] = Shaped({a.out_channels});
  return SingleOp({in}, OpType::kConv, a, std::move(w));
}

StatusOr<graph::Graph> ConvTranspose(Shape in, const graph::ConvTransposeAttrs& a) {
  Weights w;
  w["W"] = Shaped({in[1], a.out_channels / a.groups, a.kernel[0], a.kernel[1]});
  if (a.has_bias) w["B"] = Shaped({a.out_channels});
  return SingleOp({in}, OpType::kConvTranspose, a, std::move(w));
}

StatusOr<graph::Graph> Pool(OpType type, Shape in, std::array<int64_t, 2> kernel,
                            std::array<int64_t, 2> stride, std::array<int64_t, 4> pads,
                            bool ceil_mode, bool include_pad) {
  graph::PoolAttrs a;
  a.kernel = kernel;
  a.stride = stride;
  a.pads = pads;
  a.ceil_mode = ceil_mode;
  a.count_include_pad = include_pad;
  return SingleOp({in}, type, a);
}

// x * 4 (so that inputs span [-4, 4] and reach every branch of clipping
// activations), then the activation.
StatusOr<graph::Graph> ActivationCase(OpType type, Attributes attrs, Shape in) {
  GraphBuilder b("case");
  ValueId x = b.Input("x", in);
  Tensor four = Shaped({1});
  four.data = {4.0f};
  ValueId scaled = b.Mul(x, Constant(b, four, "four"), "scale");
  b.Output(b.AddNode(type, std::move(attrs), {scaled}, "op")[0]);
  return std::move(b).Finish();
}

// UnaryMath `function` of x * 4 (signed), or of |x * 4| + 0.1 for functions
// of positive numbers (Sqrt, Log, Reciprocal, a fractional Pow).
StatusOr<graph::Graph> UnaryMathCase(graph::UnaryFunction function, Shape in, float alpha = 0.0f,
                                     float beta = 0.0f, bool positive = false) {
  GraphBuilder b("case");
  ValueId x = b.Input("x", in);
  Tensor four = Shaped({1});
  four.data = {4.0f};
  ValueId scaled = b.Mul(x, Constant(b, four, "four"), "scale");
  if (positive) {
    Tensor tenth = Shaped({1});
    tenth.data = {0.1f};
    scaled = b.Add(b.UnaryMath(scaled, graph::UnaryFunction::kAbs, "abs"),
                   Constant(b, tenth, "tenth"), "shift");
  }
  b.Output(b.UnaryMath(scaled, function, "op", alpha, beta));
  return std::move(b).Finish();
}

// a (op) b; `b_constant` makes b a Constant in [0.5, 1.5] (safe divisors).
StatusOr<graph::Graph> Binary(OpType type, Shape a_shape, Shape b_shape, bool b_constant) {
  GraphBuilder b("case");
  ValueId a = b.Input("a", a_shape);
  ValueId rhs = b_constant ? Constant(b, Filled(b_shape, 0.5f, 1.5f, 77), "divisor")
                           : b.Input("b", b_shape);
  b.Output(b.Binary(type, a, rhs, "op"));
  return std::move(b).Finish();
}

StatusOr<graph::Graph> Gemm(Shape a_shape, graph::GemmAttrs attrs, Shape b_shape,
                            std::optional<Shape> c_shape) {
  Weights w;
  w["B"] = Shaped(b_shape);
  if (c_shape.has_value()) w["C"] = Shaped(*c_shape);
  return SingleOp({a_shape}, OpType::kGemm, attrs, std::move(w));
}

StatusOr<graph::Graph> MatMulWeight(Shape a_shape, Shape b_shape) {
  Weights w;
  w["B"] = Shaped(b_shape);
  return SingleOp({a_shape}, OpType::kMatMul, graph::NoAttrs{}, std::move(w));
}

StatusOr<graph::Graph> BatchNorm(Shape in) {
  Weights w;
  for (const char* role : {"scale", "bias", "mean", "var"}) w[role] = Shaped({in[1]});
  graph::BatchNormAttrs a;
  a.epsilon = 1e-3f;
  return SingleOp({in}, OpType::kBatchNormalization, a, std::move(w));
}

// conv -> flatten -> gemm and conv -> reshape -> transpose: layouts change
// between ops.
StatusOr<graph::Graph> ConvFlattenGemm() {
  GraphBuilder b("case");
  graph::ConvSpec spec;
  spec.out_channels = 24;
  spec.kernel = {3, 3};
  spec.stride = {2, 2};
  spec.activation = graph::Activation::kRelu;
  ValueId y = b.Conv(b.Input("x", {2, 16, 9, 9}), spec, "conv");
  y = b.Flatten(y, 1, "flatten");
  b.Output(b.Linear(y, 7, "fc"));
  return std::move(b).Finish();
}

StatusOr<graph::Graph> ConvReshapeTranspose() {
  GraphBuilder b("case");
  graph::ConvSpec spec;
  spec.out_channels = 32;
  spec.kernel = {1, 1};
  ValueId y = b.Conv(b.Input("x", {1, 8, 6, 6}), spec, "conv");
  y = b.Reshape(y, {1, 32, 36}, "reshape");
  y = b.Transpose(y, {0, 2, 1}, "transpose");
  y = b.Reshape(y, {1, 36, 4, 8}, "back");
  b.Output(b.GlobalAveragePool(y, "gap"));
  return std::move(b).Finish();
}

std::vector<GraphCase> MakeCases() {
  using graph::Activation;
  std::vector<GraphCase> cases = {
      // Conv
      {"conv_3x3_bias_relu",
       [] { return Conv({1, 8, 10, 10}, ConvA(16, {3, 3}, {1, 1}, {1, 1, 1, 1}, {1, 1}, 1, true, Activation::kRelu)); }},
      {"conv_3x3_s2_asym_pads_clip",
       [] { return Conv({1, 8, 11, 11}, ConvA(12, {3, 3}, {2, 2}, {0, 1, 1, 0}, {1, 1}, 1, false, Activation::kClip, -0.2f, 0.3f)); }},
      {"conv_5x5_dilated_sigmoid",
       [] { return Conv({1, 6, 12, 12}, ConvA(8, {5, 5}, {1, 1}, {4, 4, 4, 4}, {2, 2}, 1, true, Activation::kSigmoid)); }},
      {"conv_grouped_tanh",
       [] { return Conv({1, 16, 9, 9}, ConvA(32, {3, 3}, {1, 1}, {1, 1, 1, 1}, {1, 1}, 4, true, Activation::kTanh)); }},
      {"conv_depthwise_s2_relu",
       [] { return Conv({1, 32, 14, 14}, ConvA(32, {3, 3}, {2, 2}, {1, 1, 1, 1}, {1, 1}, 32, true, Activation::kRelu)); }},
      {"conv_1x1_batch2",
       [] { return Conv({2, 64, 7, 7}, ConvA(40, {1, 1}, {1, 1}, {0, 0, 0, 0}, {1, 1}, 1, true, Activation::kNone)); }},
      {"conv_1x7",
       [] { return Conv({1, 16, 9, 9}, ConvA(24, {1, 7}, {1, 1}, {0, 3, 0, 3}, {1, 1}, 1, true, Activation::kNone)); }},
      {"conv_7x7_s2_stem",
       [] { return Conv({1, 3, 32, 32}, ConvA(16, {7, 7}, {2, 2}, {3, 3, 3, 3}, {1, 1}, 1, true, Activation::kRelu)); }},
      {"conv_mixed_stride_dilation",
       [] { return Conv({1, 8, 13, 13}, ConvA(8, {3, 2}, {2, 1}, {1, 0, 0, 1}, {1, 2}, 1, true, Activation::kNone)); }},
      // ConvTranspose: out, kernel, stride, dilation, pads, output padding, groups, bias
      {"conv_transpose_4x4_s2", [] { return ConvTranspose({1, 16, 7, 7}, {8, {4, 4}, {2, 2}, {1, 1}, {1, 1, 1, 1}, {0, 0}, 1, true}); }},
      {"conv_transpose_3x3_s2_output_padding", [] { return ConvTranspose({2, 8, 5, 6}, {12, {3, 3}, {2, 2}, {1, 1}, {1, 1, 1, 1}, {1, 1}, 1, false}); }},
      {"conv_transpose_2x2_s2_grouped", [] { return ConvTranspose({1, 12, 6, 6}, {6, {2, 2}, {2, 2}, {1, 1}, {0, 0, 0, 0}, {0, 0}, 3, true}); }},
      {"conv_transpose_dilated_asym_pads", [] { return ConvTranspose({1, 6, 8, 7}, {4, {3, 2}, {1, 2}, {2, 1}, {2, 0, 1, 1}, {1, 1}, 2, true}); }},
      {"conv_transpose_output_padding_past_pads", [] { return ConvTranspose({1, 4, 4, 4}, {4, {2, 2}, {2, 2}, {1, 1}, {0, 0, 0, 0}, {1, 1}, 1, false}); }},
      // Pools
      {"maxpool_3x3_s2", [] { return Pool(OpType::kMaxPool, {1, 16, 13, 13}, {3, 3}, {2, 2}, {0, 0, 0, 0}, false, false); }},
      {"maxpool_3x3_s1_p1", [] { return Pool(OpType::kMaxPool, {1, 24, 8, 8}, {3, 3}, {1, 1}, {1, 1, 1, 1}, false, false); }},
      {"maxpool_ceil", [] { return Pool(OpType::kMaxPool, {1, 16, 14, 14}, {3, 3}, {2, 2}, {0, 0, 0, 0}, true, false); }},
      {"maxpool_2x2_asym_pads", [] { return Pool(OpType::kMaxPool, {1, 8, 7, 7}, {2, 2}, {2, 2}, {0, 0, 1, 1}, false, false); }},
      {"avgpool_include_pad", [] { return Pool(OpType::kAveragePool, {1, 16, 9, 9}, {3, 3}, {1, 1}, {1, 1, 1, 1}, false, true); }},
      {"avgpool_exclude_pad", [] { return Pool(OpType::kAveragePool, {1, 16, 9, 9}, {3, 3}, {1, 1}, {1, 1, 1, 1}, false, false); }},
      {"avgpool_ceil_exclude", [] { return Pool(OpType::kAveragePool, {1, 16, 14, 14}, {3, 3}, {2, 2}, {1, 1, 1, 1}, true, false); }},
      {"avgpool_ceil_include", [] { return Pool(OpType::kAveragePool, {1, 16, 14, 14}, {3, 3}, {2, 2}, {0, 0, 0, 0}, true, true); }},
      {"avgpool_ceil_include_pads", [] { return Pool(OpType::kAveragePool, {1, 8, 10, 10}, {3, 3}, {2, 2}, {1, 1, 1, 1}, true, true); }},
      {"global_avgpool", [] { return SingleOp({{2, 40, 7, 7}}, OpType::kGlobalAveragePool, graph::NoAttrs{}); }},
      {"global_maxpool", [] { return SingleOp({{1, 3, 5, 5}}, OpType::kGlobalMaxPool, graph::NoAttrs{}); }},
      // Activations
      {"relu", [] { return ActivationCase(OpType::kRelu, graph::NoAttrs{}, {2, 24, 5, 5}); }},
      {"relu_2d", [] { return ActivationCase(OpType::kRelu, graph::NoAttrs{}, {3, 17}); }},
      {"clip_asymmetric", [] { return ActivationCase(OpType::kClip, graph::ClipAttrs{-0.5f, 0.25f}, {2, 24, 5, 5}); }},
      {"clip_relu6", [] { return ActivationCase(OpType::kClip, graph::ClipAttrs{0.0f, 6.0f}, {1, 3, 4, 4}); }},
      {"clip_no_max", [] { return ActivationCase(OpType::kClip, graph::ClipAttrs{-0.3f, std::numeric_limits<float>::infinity()}, {3, 17}); }},
      {"sigmoid", [] { return ActivationCase(OpType::kSigmoid, graph::NoAttrs{}, {2, 24, 5, 5}); }},
      {"hardsigmoid", [] { return ActivationCase(OpType::kHardSigmoid, graph::HardSigmoidAttrs{0.2f, 0.5f}, {2, 24, 5, 5}); }},
      {"hardsigmoid_onesixth", [] { return ActivationCase(OpType::kHardSigmoid, graph::HardSigmoidAttrs{1.0f / 6, 0.5f}, {3, 17}); }},
      {"hardswish", [] { return ActivationCase(OpType::kHardSwish, graph::NoAttrs{}, {2, 24, 5, 5}); }},
      {"tanh", [] { return ActivationCase(OpType::kTanh, graph::NoAttrs{}, {1, 40, 3, 3}); }},
      // UnaryMath
      {"leaky_relu", [] { return UnaryMathCase(graph::UnaryFunction::kLeakyRelu, {2, 24, 5, 5}, 0.01f); }},
      {"leaky_relu_2d", [] { return UnaryMathCase(graph::UnaryFunction::kLeakyRelu, {3, 17}, 0.2f); }},
      {"elu", [] { return UnaryMathCase(graph::UnaryFunction::kElu, {2, 24, 5, 5}, 1.0f); }},
      {"selu", [] { return UnaryMathCase(graph::UnaryFunction::kSelu, {2, 24, 5, 5}, 1.6732632f, 1.0507010f); }},
      {"softplus", [] { return UnaryMathCase(graph::UnaryFunction::kSoftplus, {2, 24, 5, 5}); }},
      {"mish", [] { return UnaryMathCase(graph::UnaryFunction::kMish, {2, 24, 5, 5}); }},
      {"gelu", [] { return UnaryMathCase(graph::UnaryFunction::kGelu, {2, 24, 5, 5}); }},
      {"gelu_tanh", [] { return UnaryMathCase(graph::UnaryFunction::kGeluTanh, {3, 17}); }},
      {"erf", [] { return UnaryMathCase(graph::UnaryFunction::kErf, {2, 24, 5, 5}); }},
      {"sqrt", [] { return UnaryMathCase(graph::UnaryFunction::kSqrt, {2, 24, 5, 5}, 0, 0, true); }},
      {"exp", [] { return UnaryMathCase(graph::UnaryFunction::kExp, {2, 24, 5, 5}); }},
      {"log", [] { return UnaryMathCase(graph::UnaryFunction::kLog, {2, 24, 5, 5}, 0, 0, true); }},
      {"neg", [] { return UnaryMathCase(graph::UnaryFunction::kNeg, {3, 17}); }},
      {"abs", [] { return UnaryMathCase(graph::UnaryFunction::kAbs, {2, 24, 5, 5}); }},
      {"reciprocal", [] { return UnaryMathCase(graph::UnaryFunction::kReciprocal, {2, 24, 5, 5}, 0, 0, true); }},
      {"pow_square", [] { return UnaryMathCase(graph::UnaryFunction::kPow, {2, 24, 5, 5}, 2.0f); }},
      {"pow_fraction", [] { return UnaryMathCase(graph::UnaryFunction::kPow, {3, 17}, 0.5f, 0, true); }},
      // Element-wise binary with broadcasting
      {"add_same_shape", [] { return Binary(OpType::kAdd, {2, 24, 5, 5}, {2, 24, 5, 5}, false); }},
      {"add_channel_broadcast", [] { return Binary(OpType::kAdd, {2, 24, 5, 5}, {1, 24, 1, 1}, false); }},
      {"add_lower_rank", [] { return Binary(OpType::kAdd, {2, 24, 5, 5}, {24, 1, 1}, false); }},
      {"add_first_broadcast", [] { return Binary(OpType::kAdd, {1, 24, 1, 1}, {2, 24, 5, 5}, false); }},
      {"sub_last_dim", [] { return Binary(OpType::kSub, {2, 24, 5, 5}, {5}, false); }},
      {"sub_first_broadcast", [] { return Binary(OpType::kSub, {1, 24, 1, 1}, {2, 24, 5, 5}, false); }},
      {"mul_both_broadcast", [] { return Binary(OpType::kMul, {1, 24, 1, 1}, {1, 1, 5, 5}, false); }},
      {"mul_2d_row", [] { return Binary(OpType::kMul, {3, 17}, {17}, false); }},
      {"div_same_shape", [] { return Binary(OpType::kDiv, {2, 24, 5, 5}, {2, 24, 5, 5}, true); }},
      {"div_channel_broadcast", [] { return Binary(OpType::kDiv, {2, 24, 5, 5}, {1, 24, 1, 1}, true); }},
      {"div_first_broadcast", [] { return Binary(OpType::kDiv, {1, 24, 1, 1}, {2, 24, 5, 5}, true); }},
      // Concat / Split / Slice / Pad
      {"concat_channels", [] { return SingleOp({{1, 8, 6, 6}, {1, 16, 6, 6}, {1, 5, 6, 6}}, OpType::kConcat, graph::ConcatAttrs{1}); }},
      {"concat_channels_wide", [] { return SingleOp({{2, 24, 4, 4}, {2, 40, 4, 4}}, OpType::kConcat, graph::ConcatAttrs{1}); }},
      {"concat_height", [] { return SingleOp({{1, 16, 3, 6}, {1, 16, 5, 6}}, OpType::kConcat, graph::ConcatAttrs{2}); }},
      {"concat_2d", [] { return SingleOp({{3, 5}, {3, 7}}, OpType::kConcat, graph::ConcatAttrs{1}); }},
      {"concat_batch", [] { return SingleOp({{1, 5}, {2, 5}}, OpType::kConcat, graph::ConcatAttrs{0}); }},
      {"split_channels", [] { return SingleOp({{1, 40, 6, 6}}, OpType::kSplit, graph::SplitAttrs{1, {8, 24, 8}}); }},
      {"split_height", [] { return SingleOp({{1, 16, 9, 4}}, OpType::kSplit, graph::SplitAttrs{2, {4, 5}}); }},
      {"split_2d", [] { return SingleOp({{3, 20}}, OpType::kSplit, graph::SplitAttrs{1, {5, 15}}); }},
      {"slice_spatial_steps", [] { return SingleOp({{1, 24, 10, 10}}, OpType::kSlice, graph::SliceAttrs{{2, 3}, {1, 0}, {9, 10}, {2, 3}}); }},
      {"slice_channels", [] { return SingleOp({{1, 24, 4, 4}}, OpType::kSlice, graph::SliceAttrs{{1}, {4}, {20}, {1}}); }},
      {"slice_2d", [] { return SingleOp({{6, 10}}, OpType::kSlice, graph::SliceAttrs{{0, 1}, {1, 2}, {5, 9}, {1, 2}}); }},
      {"pad_constant", [] { return SingleOp({{1, 8, 5, 5}}, OpType::kPad, graph::PadAttrs{{0, 0, 1, 2, 0, 0, 2, 1}, graph::PadMode::kConstant, 0.5f}); }},
      {"pad_reflect", [] { return SingleOp({{1, 24, 5, 5}}, OpType::kPad, graph::PadAttrs{{0, 0, 2, 1, 0, 0, 1, 2}, graph::PadMode::kReflect, 0.0f}); }},
      {"pad_edge", [] { return SingleOp({{2, 8, 4, 5}}, OpType::kPad, graph::PadAttrs{{0, 0, 3, 0, 0, 0, 0, 2}, graph::PadMode::kEdge, 0.0f}); }},
      {"pad_channels", [] { return SingleOp({{1, 16, 3, 3}}, OpType::kPad, graph::PadAttrs{{0, 2, 0, 0, 0, 1, 0, 0}, graph::PadMode::kConstant, -1.0f}); }},
      // Resize (segmentation heads: bilinear half_pixel up; nearest, down)
      {"resize_linear_up", [] { return SingleOp({{1, 16, 7, 5}}, OpType::kResize, graph::ResizeAttrs{{14, 10}, {2.0f, 2.0f}, graph::ResizeMode::kLinear, graph::ResizeCoordinates::kHalfPixel, graph::NearestRounding::kRoundPreferFloor}); }},
      {"resize_linear_align_corners", [] { return SingleOp({{2, 8, 5, 6}}, OpType::kResize, graph::ResizeAttrs{{9, 13}, {1.8f, 13.0f / 6}, graph::ResizeMode::kLinear, graph::ResizeCoordinates::kAlignCorners, graph::NearestRounding::kRoundPreferFloor}); }},
      {"resize_nearest_up", [] { return SingleOp({{1, 8, 4, 4}}, OpType::kResize, graph::ResizeAttrs{{12, 8}, {3.0f, 2.0f}, graph::ResizeMode::kNearest, graph::ResizeCoordinates::kAsymmetric, graph::NearestRounding::kFloor}); }},
      {"resize_nearest_down", [] { return SingleOp({{1, 24, 9, 9}}, OpType::kResize, graph::ResizeAttrs{{4, 3}, {4.0f / 9, 1.0f / 3}, graph::ResizeMode::kNearest, graph::ResizeCoordinates::kHalfPixel, graph::NearestRounding::kRoundPreferCeil}); }},
      // Shape ops
      {"reshape_4d_to_4d", [] { return SingleOp({{2, 24, 4, 4}}, OpType::kReshape, graph::ReshapeAttrs{{2, 12, 8, 4}}); }},
      {"reshape_4d_to_2d", [] { return SingleOp({{2, 24, 4, 4}}, OpType::kReshape, graph::ReshapeAttrs{{2, 384}}); }},
      {"reshape_2d_to_4d", [] { return SingleOp({{2, 60}}, OpType::kReshape, graph::ReshapeAttrs{{2, 30, 2, 1}}); }},
      {"flatten_axis1", [] { return SingleOp({{2, 24, 3, 3}}, OpType::kFlatten, graph::FlattenAttrs{1}); }},
      {"flatten_axis2", [] { return SingleOp({{2, 24, 3, 3}}, OpType::kFlatten, graph::FlattenAttrs{2}); }},
      {"flatten_axis0", [] { return SingleOp({{2, 3, 4}}, OpType::kFlatten, graph::FlattenAttrs{0}); }},
      {"transpose_to_nhwc", [] { return SingleOp({{2, 24, 3, 5}}, OpType::kTranspose, graph::TransposeAttrs{{0, 2, 3, 1}}); }},
      {"transpose_2d", [] { return SingleOp({{3, 17}}, OpType::kTranspose, graph::TransposeAttrs{{1, 0}}); }},
      {"transpose_shuffle", [] { return SingleOp({{2, 3, 4, 5}}, OpType::kTranspose, graph::TransposeAttrs{{3, 1, 0, 2}}); }},
      // Reductions, normalisation
      {"reducemean_spatial_keepdims", [] { return SingleOp({{2, 24, 5, 5}}, OpType::kReduceMean, graph::ReduceAttrs{{2, 3}, true}); }},
      {"reducemean_spatial", [] { return SingleOp({{2, 24, 5, 5}}, OpType::kReduceMean, graph::ReduceAttrs{{2, 3}, false}); }},
      {"reducemean_channels", [] { return SingleOp({{2, 24, 5, 5}}, OpType::kReduceMean, graph::ReduceAttrs{{1}, false}); }},
      {"reducemean_all", [] { return SingleOp({{3, 17}}, OpType::kReduceMean, graph::ReduceAttrs{{}, false}); }},
      {"reducesum_channels_keepdims", [] { return SingleOp({{2, 24, 5, 5}}, OpType::kReduceSum, graph::ReduceAttrs{{1}, true}); }},
      {"reducesum_spatial", [] { return SingleOp({{2, 16, 6, 5}}, OpType::kReduceSum, graph::ReduceAttrs{{2, 3}, false}); }},
      {"reducemax_channels_keepdims", [] { return SingleOp({{2, 24, 5, 5}}, OpType::kReduceMax, graph::ReduceAttrs{{1}, true}); }},
      {"reducemax_last_axis", [] { return SingleOp({{4, 7, 9}}, OpType::kReduceMax, graph::ReduceAttrs{{2}, false}); }},
      {"reducemin_spatial_keepdims", [] { return SingleOp({{1, 8, 7, 7}}, OpType::kReduceMin, graph::ReduceAttrs{{2, 3}, true}); }},
      {"reducemin_all", [] { return SingleOp({{3, 17}}, OpType::kReduceMin, graph::ReduceAttrs{{}, false}); }},
      {"softmax_logits", [] { return SingleOp({{3, 1000}}, OpType::kSoftmax, graph::SoftmaxAttrs{1}); }},
      {"softmax_channels", [] { return SingleOp({{2, 8, 3, 3}}, OpType::kSoftmax, graph::SoftmaxAttrs{1}); }},
      {"softmax_axis0", [] { return SingleOp({{4, 6}}, OpType::kSoftmax, graph::SoftmaxAttrs{0}); }},
      {"softmax_last_4d", [] { return SingleOp({{2, 24, 5, 5}}, OpType::kSoftmax, graph::SoftmaxAttrs{3}); }},
      {"batchnorm_4d", [] { return BatchNorm({2, 24, 5, 5}); }},
      {"batchnorm_2d", [] { return BatchNorm({4, 10}); }},
      {"batchnorm_3d", [] { return BatchNorm({2, 3, 5}); }},
      // Gemm / MatMul
      {"gemm_linear", [] { return Gemm({4, 64}, graph::GemmAttrs{1, 1, false, true}, {10, 64}, Shape{10}); }},
      {"gemm_alpha_beta_full_c", [] { return Gemm({4, 64}, graph::GemmAttrs{0.5f, 2.0f, false, false}, {64, 10}, Shape{4, 10}); }},
      {"gemm_trans_a_column_c", [] { return Gemm({64, 4}, graph::GemmAttrs{1, 0.5f, true, true}, {10, 64}, Shape{4, 1}); }},
      {"gemm_no_c", [] { return Gemm({3, 20}, graph::GemmAttrs{2, 1, false, false}, {20, 6}, std::nullopt); }},
      {"gemm_scalar_c", [] { return Gemm({3, 20}, graph::GemmAttrs{1, 1, false, false}, {20, 6}, Shape{1}); }},
      {"matmul_weight", [] { return MatMulWeight({4, 64}, {64, 12}); }},
      {"matmul_batched_inputs", [] { return SingleOp({{2, 4, 8}, {2, 8, 6}}, OpType::kMatMul, graph::NoAttrs{}); }},
      {"matmul_broadcast", [] { return SingleOp({{2, 1, 4, 5}, {3, 5, 6}}, OpType::kMatMul, graph::NoAttrs{}); }},
      {"matmul_vector_matrix", [] { return MatMulWeight({8}, {8, 5}); }},
      {"matmul_matrix_vector", [] { return MatMulWeight({3, 4, 8}, {8}); }},
      // Identity-like
      {"identity", [] { return SingleOp({{2, 24, 5, 5}}, OpType::kIdentity, graph::NoAttrs{}); }},
      {"dropout", [] { return SingleOp({{3, 17}}, OpType::kDropout, graph::NoAttrs{}); }},
      {"constant_operand", [] { return Binary(OpType::kAdd, {1, 16, 4, 4}, {16, 1, 1}, true); }},
      // Chains across layouts
      {"chain_conv_flatten_gemm", ConvFlattenGemm},
      {"chain_conv_reshape_transpose", ConvReshapeTranspose},
  };
  return cases;
}

}  // namespace

const std::vector<GraphCase>& OpCases() {
  static const auto* const kCases = new std::vector<GraphCase>(MakeCases());
  return *kCases;
}

}  // namespace iosfarm::conformance
