// Per-operator attributes of the graph IR.
//
// Every node carries one `Attributes` variant alternative matching its OpType
// (see AttributesMatch). Spatial fields are (height, width); pads are
// {top, left, bottom, right}. Lists such as axes are normalised to
// non-negative axes by importers and builders.
#ifndef IOSFARM_GRAPH_ATTRIBUTES_H_
#define IOSFARM_GRAPH_ATTRIBUTES_H_

#include <array>
#include <cstdint>
#include <limits>
#include <string_view>
#include <variant>
#include <vector>

#include "graph/op_type.h"

namespace iosfarm::graph {

// Activation fused into a Conv (applied after bias).
enum class Activation { kNone, kRelu, kClip, kSigmoid, kTanh };
std::string_view ActivationName(Activation activation);

struct NoAttrs {
  bool operator==(const NoAttrs&) const = default;
};

// Conv: input [N, C, H, W]; weight "W" [out_channels, C/groups, kh, kw];
// optional weight "B" [out_channels] when has_bias.
struct ConvAttrs {
  int64_t out_channels = 0;
  std::array<int64_t, 2> kernel = {1, 1};
  std::array<int64_t, 2> stride = {1, 1};
  std::array<int64_t, 2> dilation = {1, 1};
  std::array<int64_t, 4> pads = {0, 0, 0, 0};  // top, left, bottom, right
  int64_t groups = 1;
  bool has_bias = false;
  Activation activation = Activation::kNone;
  float clip_min = 0.0f;  // used when activation == kClip
  float clip_max = 6.0f;
  bool operator==(const ConvAttrs&) const = default;
};

// ConvTranspose: input [N, C, H, W]; weight "W" [C, out_channels/groups,
// kh, kw] (ONNX's layout); optional weight "B" [out_channels] when has_bias.
// Input pixel (h, w) adds its products to output pixel (h * stride - top +
// i * dilation, w * stride - left + j * dilation) for kernel tap (i, j);
// output H = (H - 1) * stride - top - bottom + (kh - 1) * dilation +
// output_padding + 1 (W likewise), output_padding below the stride or the
// dilation.
struct ConvTransposeAttrs {
  int64_t out_channels = 0;
  std::array<int64_t, 2> kernel = {1, 1};
  std::array<int64_t, 2> stride = {1, 1};
  std::array<int64_t, 2> dilation = {1, 1};
  std::array<int64_t, 4> pads = {0, 0, 0, 0};  // top, left, bottom, right
  std::array<int64_t, 2> output_padding = {0, 0};
  int64_t groups = 1;
  bool has_bias = false;
  bool operator==(const ConvTransposeAttrs&) const = default;
};

// MaxPool / AveragePool (global pools use NoAttrs).
struct PoolAttrs {
  std::array<int64_t, 2> kernel = {1, 1};
  std::array<int64_t, 2> stride = {1, 1};
  std::array<int64_t, 4> pads = {0, 0, 0, 0};  // top, left, bottom, right
  bool ceil_mode = false;
  bool count_include_pad = false;  // AveragePool only
  bool operator==(const PoolAttrs&) const = default;
};

struct ClipAttrs {
  float min = -std::numeric_limits<float>::infinity();
  float max = std::numeric_limits<float>::infinity();
  bool operator==(const ClipAttrs&) const = default;
};

// y = max(0, min(1, alpha * x + beta)).
struct HardSigmoidAttrs {
  float alpha = 0.2f;
  float beta = 0.5f;
  bool operator==(const HardSigmoidAttrs&) const = default;
};

struct ConcatAttrs {
  int64_t axis = 1;
  bool operator==(const ConcatAttrs&) const = default;
};

// Splits one input into sizes.size() outputs along axis.
struct SplitAttrs {
  int64_t axis = 1;
  std::vector<int64_t> sizes;
  bool operator==(const SplitAttrs&) const = default;
};

// Static slice; starts/ends already clamped to [0, dim], steps > 0.
struct SliceAttrs {
  std::vector<int64_t> axes;
  std::vector<int64_t> starts;
  std::vector<int64_t> ends;
  std::vector<int64_t> steps;
  bool operator==(const SliceAttrs&) const = default;
};

enum class PadMode { kConstant, kReflect, kEdge };
std::string_view PadModeName(PadMode mode);

// pads as in ONNX: [x1_begin, x2_begin, ..., x1_end, x2_end, ...], >= 0.
struct PadAttrs {
  std::vector<int64_t> pads;
  PadMode mode = PadMode::kConstant;
  float value = 0.0f;
  bool operator==(const PadAttrs&) const = default;
};

// Target shape, fully resolved (no 0 or -1 entries).
struct ReshapeAttrs {
  std::vector<int64_t> shape;
  bool operator==(const ReshapeAttrs&) const = default;
};

struct FlattenAttrs {
  int64_t axis = 1;
  bool operator==(const FlattenAttrs&) const = default;
};

struct TransposeAttrs {
  std::vector<int64_t> perm;
  bool operator==(const TransposeAttrs&) const = default;
};

// ReduceMean, ReduceSum, ReduceMax, ReduceMin over `axes` (empty: all).
struct ReduceAttrs {
  std::vector<int64_t> axes;  // sorted, unique
  bool keepdims = true;
  bool operator==(const ReduceAttrs&) const = default;
};

// Gemm: Y = alpha * A' * B' + beta * C with A the node's input [M, K] (or
// [K, M] when trans_a), weight "B" and optional weight "C" (broadcast to [M, N]).
struct GemmAttrs {
  float alpha = 1.0f;
  float beta = 1.0f;
  bool trans_a = false;
  bool trans_b = false;
  bool operator==(const GemmAttrs&) const = default;
};

struct SoftmaxAttrs {
  int64_t axis = -1;  // normalised to a non-negative axis
  bool operator==(const SoftmaxAttrs&) const = default;
};

// BatchNormalization (inference): weights "scale", "bias", "mean", "var", [C].
struct BatchNormAttrs {
  float epsilon = 1e-5f;
  bool operator==(const BatchNormAttrs&) const = default;
};

// Resize of [N, C, H, W] to [N, C, size[0], size[1]] (ONNX Resize of H and
// W). Output pixel (y, x) samples input coordinates
// given by `coordinates` from `scale` (the factor the coordinate transform
// divides by: out / in when the model gives sizes, the model's scales when
// it gives those), each axis on its own:
//   half_pixel          (y + 0.5) / scale - 0.5
//   pytorch_half_pixel  the same, but 0 when the output axis has length 1
//   align_corners       y * (in - 1) / (out - 1), 0 when out == 1
//   asymmetric          y / scale
// kNearest rounds that coordinate by `rounding`; kLinear interpolates the
// two neighbours (bilinear over H and W). Coordinates are clamped into
// [0, in - 1], as the edge values the ONNX reference pads with.
enum class ResizeMode { kNearest, kLinear };
enum class ResizeCoordinates { kHalfPixel, kPytorchHalfPixel, kAlignCorners, kAsymmetric };
enum class NearestRounding { kRoundPreferFloor, kRoundPreferCeil, kFloor, kCeil };
std::string_view ResizeModeName(ResizeMode mode);                // "nearest", "linear"
std::string_view ResizeCoordinatesName(ResizeCoordinates mode);  // ONNX spelling
std::string_view NearestRoundingName(NearestRounding rounding);  // ONNX spelling
struct ResizeAttrs {
  std::array<int64_t, 2> size = {1, 1};  // output H, W
  std::array<float, 2> scale = {1.0f, 1.0f};
  ResizeMode mode = ResizeMode::kNearest;
  ResizeCoordinates coordinates = ResizeCoordinates::kHalfPixel;
  NearestRounding rounding = NearestRounding::kRoundPreferFloor;
  bool operator==(const ResizeAttrs&) const = default;
};

// A function of each element on its own (OpType::kUnaryMath), as the ONNX
// operator of the same name computes it in fp32:
//   LeakyRelu   x >= 0 ? x : alpha * x
//   Elu         x >= 0 ? x : alpha * (exp(x) - 1)
//   Selu        beta * (x > 0 ? x : alpha * (exp(x) - 1))   (beta: ONNX's gamma)
//   Softplus    log(1 + exp(x))
//   Mish        x * tanh(softplus(x))
//   Gelu        x / 2 * (1 + erf(x / sqrt(2)))
//   GeluTanh    x / 2 * (1 + tanh(sqrt(2 / pi) * (x + 0.044715 * x^3)))
//               (ONNX Gelu with approximate = "tanh")
//   Erf, Sqrt, Exp, Log, Neg, Abs, Reciprocal (1 / x)
//   Pow         x ^ alpha (ONNX Pow with a constant scalar exponent)
enum class UnaryFunction {
  kLeakyRelu,
  kElu,
  kSelu,
  kSoftplus,
  kMish,
  kGelu,
  kGeluTanh,
  kErf,
  kSqrt,
  kExp,
  kLog,
  kNeg,
  kAbs,
  kReciprocal,
  kPow,
};
inline constexpr UnaryFunction kAllUnaryFunctions[] = {
    UnaryFunction::kLeakyRelu, UnaryFunction::kElu,  UnaryFunction::kSelu,
    UnaryFunction::kSoftplus,  UnaryFunction::kMish, UnaryFunction::kGelu,
    UnaryFunction::kGeluTanh,  UnaryFunction::kErf,  UnaryFunction::kSqrt,
    UnaryFunction::kExp,       UnaryFunction::kLog,  UnaryFunction::kNeg,
    UnaryFunction::kAbs,       UnaryFunction::kReciprocal, UnaryFunction::kPow,
};
std::string_view UnaryFunctionName(UnaryFunction function);  // as above ("LeakyRelu", ...)
struct UnaryMathAttrs {
  UnaryFunction function = UnaryFunction::kAbs;
  float alpha = 0.0f;
  float beta = 0.0f;
  bool operator==(const UnaryMathAttrs&) const = default;
};

using Attributes = std::variant<NoAttrs, ConvAttrs, PoolAttrs, ClipAttrs, HardSigmoidAttrs,
                                ConcatAttrs, SplitAttrs, SliceAttrs, PadAttrs, ReshapeAttrs,
                                FlattenAttrs, TransposeAttrs, ReduceAttrs, GemmAttrs, SoftmaxAttrs,
                                BatchNormAttrs, ResizeAttrs, UnaryMathAttrs, ConvTransposeAttrs>;

// True when `attrs` holds the alternative that `type` requires.
bool AttributesMatch(OpType type, const Attributes& attrs);

// Default-constructed attributes of the alternative `type` requires.
Attributes DefaultAttributes(OpType type);

}  // namespace iosfarm::graph

#endif  // IOSFARM_GRAPH_ATTRIBUTES_H_
