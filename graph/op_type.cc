#include "graph/op_type.h"

#include <array>

namespace iosfarm::graph {
namespace {

constexpr std::array<std::string_view, kNumOpTypes> kNames = {
    "Constant",   "Conv",       "MaxPool",     "AveragePool",
    "GlobalAveragePool",        "GlobalMaxPool",
    "Relu",       "Clip",       "Sigmoid",     "HardSigmoid",
    "HardSwish",  "Tanh",       "Add",         "Sub",
    "Mul",        "Div",        "Concat",      "Split",
    "Slice",      "Pad",        "Reshape",     "Flatten",
    "Transpose",  "ReduceMean", "Gemm",        "MatMul",
    "Softmax",    "BatchNormalization",        "Resize",
    "UnaryMath",  "ConvTranspose", "ReduceSum",   "ReduceMax",
    "ReduceMin",
    "Identity",   "Dropout",
};

}  // namespace

std::string_view OpTypeName(OpType type) { return kNames[static_cast<int>(type)]; }

std::optional<OpType> OpTypeFromName(std::string_view name) {
  for (int i = 0; i < kNumOpTypes; ++i) {
    if (kNames[i] == name) return static_cast<OpType>(i);
  }
  return std::nullopt;
}

bool IsElementwiseBinary(OpType type) {
  return type == OpType::kAdd || type == OpType::kSub || type == OpType::kMul ||
         type == OpType::kDiv;
}

bool IsActivation(OpType type) {
  switch (type) {
    IOSFARM_ACTIVATION_OP_CASES:
      return true;
    default:
      return false;
  }
}

}  // namespace iosfarm::graph
