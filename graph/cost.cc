#include "graph/cost.h"

namespace iosfarm::graph {
namespace {

constexpr int64_t kBytesPerElement = 4;  // fp32

// Arithmetic operations per output element of element-wise ops.
int64_t ElementwiseFlops(OpType type) {
  switch (type) {
    case OpType::kRelu:
    case OpType::kClip:
    case OpType::kAdd:
    case OpType::kSub:
    case OpType::kMul:
    case OpType::kDiv:
      return 1;
    case OpType::kHardSigmoid:
      return 3;
    case OpType::kHardSwish:
    case OpType::kSigmoid:
    case OpType::kTanh:
      return 4;
    case OpType::kBatchNormalization:
      return 2;
    case OpType::kSoftmax:
      return 3;
    default:
      return 0;
  }
}

// Arithmetic operations per element of a UnaryMath op (a transcendental
// counted as 4, as Sigmoid and Tanh above).
int64_t UnaryMathFlops(UnaryFunction function) {
  switch (function) {
    case UnaryFunction::kNeg:
    case UnaryFunction::kAbs:
    case UnaryFunction::kLeakyRelu:
      return 1;
    case UnaryFunction::kReciprocal:
    case UnaryFunction::kSqrt:
      return 2;
    case UnaryFunction::kElu:
    case UnaryFunction::kSelu:
    case UnaryFunction::kErf:
    case UnaryFunction::kExp:
    case UnaryFunction::kLog:
    case UnaryFunction::kPow:
      return 4;
    case UnaryFunction::kSoftplus:
    case UnaryFunction::kGelu:
    case UnaryFunction::kGeluTanh:
      return 8;
    case UnaryFunction::kMish:
      return 12;
  }
  return 4;
}

int64_t ActivationFlops(Activation activation) {
  switch (activation) {
    case Activation::kNone:
      return 0;
    case Activation::kRelu:
    case Activation::kClip:
      return 1;
    case Activation::kSigmoid:
    case Activation::kTanh:
      return 4;
  }
  return 0;
}

}  // namespace

OpCost& OpCost::operator+=(const OpCost& other) {
  macs += other.macs;
  flops += other.flops;
  params += other.params;
  bytes_read += other.bytes_read;
  bytes_written += other.bytes_written;
  return *this;
}

OpCost ComputeOpCost(const Graph& graph, const Node& node) {
  OpCost cost;
  int64_t input_elements = 0;
  for (ValueId v : node.inputs) input_elements += NumElements(graph.value(v).shape);
  int64_t output_elements = 0;
  for (ValueId v : node.outputs) output_elements += NumElements(graph.value(v).shape);
  for (const auto& [role, tensor] : node.weights) cost.params += tensor.num_elements();
  cost.bytes_read = kBytesPerElement * (input_elements + cost.params);
  cost.bytes_written = kBytesPerElement * output_elements;

  switch (node.type) {
    case OpType::kConv: {
      const auto& a = std::get<ConvAttrs>(node.attrs);
      const Shape& in = graph.value(node.inputs[0]).shape;
      const int64_t per_output = in[1] / a.groups * a.kernel[0] * a.kernel[1];
      cost.macs = output_elements * per_output;
      cost.flops = 2 * cost.macs + (a.has_bias ? output_elements : 0) +
                   ActivationFlops(a.activation) * output_elements;
      break;
    }
    case OpType::kConvTranspose: {
      // Every input element meets every tap of its group's output channels.
      const auto& a = std::get<ConvTransposeAttrs>(node.attrs);
      const int64_t input_elements = NumElements(graph.value(node.inputs[0]).shape);
      cost.macs = input_elements * (a.out_channels / a.groups) * a.kernel[0] * a.kernel[1];
      cost.flops = 2 * cost.macs + (a.has_bias ? output_elements : 0);
      break;
    }
    case OpType::kGemm: {
      const auto& a = std::get<GemmAttrs>(node.attrs);
      const Shape& in = graph.value(node.inputs[0]).shape;
      const int64_t k = a.trans_a ? in[0] : in[1];
      cost.macs = output_elements * k;
      cost.flops = 2 * cost.macs + (node.weights.count("C") ? output_elements : 0);
      break;
    }
    case OpType::kMatMul: {
      const Shape& a = graph.value(node.inputs[0]).shape;
      cost.macs = output_elements * a.back();
      cost.flops = 2 * cost.macs;
      break;
    }
    case OpType::kMaxPool:
    case OpType::kAveragePool: {
      const auto& a = std::get<PoolAttrs>(node.attrs);
      cost.flops = output_elements * a.kernel[0] * a.kernel[1];
      break;
    }
    case OpType::kGlobalAveragePool:
    case OpType::kGlobalMaxPool:
    IOSFARM_REDUCE_OP_CASES:
      cost.flops = input_elements;
      break;
    case OpType::kUnaryMath:
      cost.flops = UnaryMathFlops(std::get<UnaryMathAttrs>(node.attrs).function) * output_elements;
      break;
    case OpType::kResize:
      // Bilinear: three lerps (two flops each) and the weights; nearest
      // only copies.
      cost.flops =
          std::get<ResizeAttrs>(node.attrs).mode == ResizeMode::kLinear ? 8 * output_elements : 0;
      break;
    default:
      cost.flops = ElementwiseFlops(node.type) * output_elements;
      break;
  }
  return cost;
}

OpCost ComputeGraphCost(const Graph& graph) {
  OpCost total;
  for (const Node& node : graph.nodes()) total += ComputeOpCost(graph, node);
  return total;
}

bool LaunchesNoKernel(OpType type) {
  switch (type) {
    case OpType::kConstant:
    case OpType::kReshape:
    case OpType::kFlatten:
    case OpType::kIdentity:
    case OpType::kDropout:
      return true;
    default:
      return false;
  }
}

}  // namespace iosfarm::graph
