// The operator types of the graph IR and their names.
#ifndef IOSFARM_GRAPH_OP_TYPE_H_
#define IOSFARM_GRAPH_OP_TYPE_H_

#include <optional>
#include <string_view>

namespace iosfarm::graph {

enum class OpType {
  kConstant,  // no inputs; one output whose value is the node's "value" weight
  kConv,
  kMaxPool,
  kAveragePool,
  kGlobalAveragePool,
  kGlobalMaxPool,
  kRelu,
  kClip,  // Relu6 is Clip(0, 6)
  kSigmoid,
  kHardSigmoid,
  kHardSwish,
  kTanh,
  kAdd,
  kSub,
  kMul,
  kDiv,
  kConcat,
  kSplit,
  kSlice,
  kPad,
  kReshape,
  kFlatten,
  kTranspose,
  kReduceMean,
  kGemm,
  kMatMul,
  kSoftmax,
  kBatchNormalization,
  kResize,         // spatial resampling of NCHW (ONNX Resize)
  kUnaryMath,      // one function per element (UnaryMathAttrs: LeakyRelu, Gelu, Erf, Sqrt, ...)
  kConvTranspose,  // a convolution's transpose (ONNX ConvTranspose)
  kReduceSum,      // ReduceAttrs, as kReduceMean
  kReduceMax,
  kReduceMin,
  kIdentity,  // removed by Simplify
  kDropout,   // removed by Simplify (inference)
};

inline constexpr int kNumOpTypes = static_cast<int>(OpType::kDropout) + 1;

// Stable name of an op type, e.g. "Conv", "AveragePool" (ONNX spelling).
std::string_view OpTypeName(OpType type);

// Inverse of OpTypeName; nullopt for unknown names.
std::optional<OpType> OpTypeFromName(std::string_view name);

// True for Add/Sub/Mul/Div.
bool IsElementwiseBinary(OpType type);
// True for Relu/Clip/Sigmoid/HardSigmoid/HardSwish/Tanh.
bool IsActivation(OpType type);

}  // namespace iosfarm::graph

// The case labels of the activation op types (IsActivation's set), for a switch
// over OpType that stays exhaustive (no default, so -Wswitch names a new type):
//   IOSFARM_ACTIVATION_OP_CASES:
//     return CompileUnary(node);
#define IOSFARM_ACTIVATION_OP_CASES            \
  case ::iosfarm::graph::OpType::kRelu:        \
  case ::iosfarm::graph::OpType::kClip:        \
  case ::iosfarm::graph::OpType::kSigmoid:     \
  case ::iosfarm::graph::OpType::kHardSigmoid: \
  case ::iosfarm::graph::OpType::kHardSwish:   \
  case ::iosfarm::graph::OpType::kTanh:        \
  case ::iosfarm::graph::OpType::kUnaryMath

// The case labels of the reductions over axes (ReduceAttrs), likewise.
#define IOSFARM_REDUCE_OP_CASES               \
  case ::iosfarm::graph::OpType::kReduceMean: \
  case ::iosfarm::graph::OpType::kReduceSum:  \
  case ::iosfarm::graph::OpType::kReduceMax:  \
  case ::iosfarm::graph::OpType::kReduceMin

#endif  // IOSFARM_GRAPH_OP_TYPE_H_
