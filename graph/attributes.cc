#include "graph/attributes.h"

namespace iosfarm::graph {

std::string_view ActivationName(Activation activation) {
  switch (activation) {
    case Activation::kNone:
      return "none";
    case Activation::kRelu:
      return "relu";
    case Activation::kClip:
      return "clip";
    case Activation::kSigmoid:
      return "sigmoid";
    case Activation::kTanh:
      return "tanh";
  }
  return "?";
}

std::string_view PadModeName(PadMode mode) {
  switch (mode) {
    case PadMode::kConstant:
      return "constant";
    case PadMode::kReflect:
      return "reflect";
    case PadMode::kEdge:
      return "edge";
  }
  return "?";
}

std::string_view UnaryFunctionName(UnaryFunction function) {
  switch (function) {
    case UnaryFunction::kLeakyRelu:
      return "LeakyRelu";
    case UnaryFunction::kElu:
      return "Elu";
    case UnaryFunction::kSelu:
      return "Selu";
    case UnaryFunction::kSoftplus:
      return "Softplus";
    case UnaryFunction::kMish:
      return "Mish";
    case UnaryFunction::kGelu:
      return "Gelu";
    case UnaryFunction::kGeluTanh:
      return "GeluTanh";
    case UnaryFunction::kErf:
      return "Erf";
    case UnaryFunction::kSqrt:
      return "Sqrt";
    case UnaryFunction::kExp:
      return "Exp";
    case UnaryFunction::kLog:
      return "Log";
    case UnaryFunction::kNeg:
      return "Neg";
    case UnaryFunction::kAbs:
      return "Abs";
    case UnaryFunction::kReciprocal:
      return "Reciprocal";
    case UnaryFunction::kPow:
      return "Pow";
  }
  return "?";
}

std::string_view ResizeModeName(ResizeMode mode) {
  return mode == ResizeMode::kLinear ? "linear" : "nearest";
}

std::string_view ResizeCoordinatesName(ResizeCoordinates mode) {
  switch (mode) {
    case ResizeCoordinates::kHalfPixel:
      return "half_pixel";
    case ResizeCoordinates::kPytorchHalfPixel:
      return "pytorch_half_pixel";
    case ResizeCoordinates::kAlignCorners:
      return "align_corners";
    case ResizeCoordinates::kAsymmetric:
      return "asymmetric";
  }
  return "?";
}

std::string_view NearestRoundingName(NearestRounding rounding) {
  switch (rounding) {
    case NearestRounding::kRoundPreferFloor:
      return "round_prefer_floor";
    case NearestRounding::kRoundPreferCeil:
      return "round_prefer_ceil";
    case NearestRounding::kFloor:
      return "floor";
    case NearestRounding::kCeil:
      return "ceil";
  }
  return "?";
}

Attributes DefaultAttributes(OpType type) {
  switch (type) {
    case OpType::kConv:
      return ConvAttrs{};
    case OpType::kMaxPool:
    case OpType::kAveragePool:
      return PoolAttrs{};
    case OpType::kClip:
      return ClipAttrs{};
    case OpType::kHardSigmoid:
      return HardSigmoidAttrs{};
    case OpType::kConcat:
      return ConcatAttrs{};
    case OpType::kSplit:
      return SplitAttrs{};
    case OpType::kSlice:
      return SliceAttrs{};
    case OpType::kPad:
      return PadAttrs{};
    case OpType::kReshape:
      return ReshapeAttrs{};
    case OpType::kFlatten:
      return FlattenAttrs{};
    case OpType::kTranspose:
      return TransposeAttrs{};
    IOSFARM_REDUCE_OP_CASES:
      return ReduceAttrs{};
    case OpType::kGemm:
      return GemmAttrs{};
    case OpType::kSoftmax:
      return SoftmaxAttrs{};
    case OpType::kBatchNormalization:
      return BatchNormAttrs{};
    case OpType::kResize:
      return ResizeAttrs{};
    case OpType::kUnaryMath:
      return UnaryMathAttrs{};
    case OpType::kConvTranspose:
      return ConvTransposeAttrs{};
    default:
      return NoAttrs{};
  }
}

bool AttributesMatch(OpType type, const Attributes& attrs) {
  return DefaultAttributes(type).index() == attrs.index();
}

}  // namespace iosfarm::graph
