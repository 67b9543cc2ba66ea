// Folding of ops that compute values: element-wise arithmetic, comparisons
// and logic with broadcasting, Cast, Where, ConstantOfShape, Range.
#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>
#include <string>

#include "graph/onnx/constant_folding_internal.h"

namespace iosfarm::graph::onnx_import::fold_internal {
namespace {

enum class BinaryOp {
  kAdd,
  kSub,
  kMul,
  kDiv,
  kPow,
  kMin,
  kMax,
  kEqual,
  kLess,
  kGreater,
  kLessOrEqual,
  kGreaterOrEqual,
  kAnd,
  kOr,
  kXor,
};

std::optional<BinaryOp> BinaryOpFromName(std::string_view op_type) {
  static const std::pair<std::string_view, BinaryOp> kOps[] = {
      {"Add", BinaryOp::kAdd},
      {"Sub", BinaryOp::kSub},
      {"Mul", BinaryOp::kMul},
      {"Div", BinaryOp::kDiv},
      {"Pow", BinaryOp::kPow},
      {"Min", BinaryOp::kMin},
      {"Max", BinaryOp::kMax},
      {"Equal", BinaryOp::kEqual},
      {"Less", BinaryOp::kLess},
      {"Greater", BinaryOp::kGreater},
      {"LessOrEqual", BinaryOp::kLessOrEqual},
      {"GreaterOrEqual", BinaryOp::kGreaterOrEqual},
      {"And", BinaryOp::kAnd},
      {"Or", BinaryOp::kOr},
      {"Xor", BinaryOp::kXor},
  };
  for (const auto& [name, op] : kOps) {
    if (name == op_type) return op;
  }
  return std::nullopt;
}

bool IsComparison(BinaryOp op) {
  return op == BinaryOp::kEqual || op == BinaryOp::kLess || op == BinaryOp::kGreater ||
         op == BinaryOp::kLessOrEqual || op == BinaryOp::kGreaterOrEqual;
}

bool IsLogical(BinaryOp op) {
  return op == BinaryOp::kAnd || op == BinaryOp::kOr || op == BinaryOp::kXor;
}

template <typename T>
bool Compare(BinaryOp op, T a, T b) {
  switch (op) {
    case BinaryOp::kEqual:
      return a == b;
    case BinaryOp::kLess:
      return a < b;
    case BinaryOp::kGreater:
      return a > b;
    case BinaryOp::kLessOrEqual:
      return a <= b;
    case BinaryOp::kGreaterOrEqual:
      return a >= b;
    default:
      return false;
  }
}

float FloatBinary(BinaryOp op, float a, float b) {
  switch (op) {
    case BinaryOp::kAdd:
      return a + b;
    case BinaryOp::kSub:
      return a - b;
    case BinaryOp::kMul:
      return a * b;
    case BinaryOp::kDiv:
      return a / b;
    case BinaryOp::kPow:
      return std::pow(a, b);
    case BinaryOp::kMin:
      return std::fmin(a, b);
    case BinaryOp::kMax:
      return std::fmax(a, b);
    default:
      return 0.0f;
  }
}

// Integer arithmetic; nullopt on overflow, division by zero or Pow.
std::optional<int64_t> IntBinary(BinaryOp op, int64_t a, int64_t b) {
  int64_t out = 0;
  switch (op) {
    case BinaryOp::kAdd:
      if (__builtin_add_overflow(a, b, &out)) return std::nullopt;
      return out;
    case BinaryOp::kSub:
      if (__builtin_sub_overflow(a, b, &out)) return std::nullopt;
      return out;
    case BinaryOp::kMul:
      if (__builtin_mul_overflow(a, b, &out)) return std::nullopt;
      return out;
    case BinaryOp::kDiv:
      if (b == 0 || (a == std::numeric_limits<int64_t>::min() && b == -1)) return std::nullopt;
      return a / b;
    case BinaryOp::kMin:
      return std::min(a, b);
    case BinaryOp::kMax:
      return std::max(a, b);
    case BinaryOp::kAnd:
      return (a != 0 && b != 0) ? 1 : 0;
    case BinaryOp::kOr:
      return (a != 0 || b != 0) ? 1 : 0;
    case BinaryOp::kXor:
      return ((a != 0) != (b != 0)) ? 1 : 0;
    default:
      return std::nullopt;
  }
}

// Calls fn(out_index, offsets) for every element of a broadcast output.
template <typename Fn>
void RunBroadcast(const std::vector<int64_t>& dims, int64_t count,
                  const std::vector<std::vector<int64_t>>& strides, Fn fn) {
  std::vector<int64_t> index(dims.size(), 0);
  std::vector<int64_t> offsets(strides.size(), 0);
  for (int64_t n = 0; n < count; ++n) {
    if (!fn(n, offsets)) return;
    for (int64_t k = static_cast<int64_t>(dims.size()) - 1; k >= 0; --k) {
      for (size_t t = 0; t < strides.size(); ++t) offsets[t] += strides[t][k];
      if (++index[k] < dims[k]) break;
      for (size_t t = 0; t < strides.size(); ++t) offsets[t] -= strides[t][k] * dims[k];
      index[k] = 0;
    }
  }
}

StatusOr<ConstTensor> FoldBinary(const NodeView& node, BinaryOp op, const ConstTensor& a,
                                 const ConstTensor& b, FoldBudget& budget) {
  if (a.kind != b.kind) {
    return node.Errorf("operands have different element kinds (", ConstKindName(a.kind), " and ",
                       ConstKindName(b.kind), ")");
  }
  if (IsLogical(op) != (a.kind == ConstKind::kBool) && op != BinaryOp::kEqual) {
    return node.Errorf("operands of ", node.op_type(), " cannot be ", ConstKindName(a.kind));
  }
  if (op == BinaryOp::kPow && !a.is_float()) {
    return node.Error("Pow of integer constants is not supported");
  }
  ASSIGN_OR_RETURN(std::vector<int64_t> dims, BroadcastDims(node, {a.dims, b.dims}));
  ASSIGN_OR_RETURN(int64_t count, ReserveDims(node, dims, budget));
  const std::vector<std::vector<int64_t>> strides = {BroadcastStrides(a.dims, dims.size()),
                                                     BroadcastStrides(b.dims, dims.size())};
  ConstTensor out;
  out.dims = dims;
  if (IsComparison(op)) {
    out.kind = ConstKind::kBool;
    out.ints.reserve(static_cast<size_t>(count));
    RunBroadcast(dims, count, strides, [&](int64_t, const std::vector<int64_t>& o) {
      out.ints.push_back(a.is_float() ? Compare(op, a.floats[o[0]], b.floats[o[1]])
                                      : Compare(op, a.ints[o[0]], b.ints[o[1]]));
      return true;
    });
    return out;
  }
  out.kind = a.kind;
  if (a.is_float()) {
    out.floats.reserve(static_cast<size_t>(count));
    RunBroadcast(dims, count, strides, [&](int64_t, const std::vector<int64_t>& o) {
      out.floats.push_back(FloatBinary(op, a.floats[o[0]], b.floats[o[1]]));
      return true;
    });
    return out;
  }
  out.ints.reserve(static_cast<size_t>(count));
  Status status;
  RunBroadcast(dims, count, strides, [&](int64_t, const std::vector<int64_t>& o) {
    std::optional<int64_t> v = IntBinary(op, a.ints[o[0]], b.ints[o[1]]);
    if (!v.has_value()) {
      status = node.Errorf("integer ", node.op_type(), " of ", a.ints[o[0]], " and ", b.ints[o[1]],
                           " overflows or divides by zero");
      return false;
    }
    out.ints.push_back(*v);
    return true;
  });
  RETURN_IF_ERROR(status);
  return out;
}

StatusOr<ConstTensor> FoldUnary(const NodeView& node, const ConstTensor& x, FoldBudget& budget) {
  const std::string& op = node.op_type();
  ASSIGN_OR_RETURN(int64_t count, ReserveDims(node, x.dims, budget));
  (void)count;
  ConstTensor out = x;
  if (op == "Not") {
    if (x.kind != ConstKind::kBool) return node.Error("input must be bool");
    for (int64_t& v : out.ints) v = v != 0 ? 0 : 1;
    return out;
  }
  if (x.kind == ConstKind::kBool) return node.Error("input cannot be bool");
  if (x.is_float()) {
    for (float& v : out.floats) {
      if (op == "Neg")
        v = -v;
      else if (op == "Abs")
        v = std::fabs(v);
      else if (op == "Sqrt")
        v = std::sqrt(v);
      else if (op == "Floor")
        v = std::floor(v);
      else if (op == "Ceil")
        v = std::ceil(v);
      else if (op == "Reciprocal")
        v = 1.0f / v;
      else if (op == "Relu")
        v = v > 0.0f ? v : 0.0f;
      else if (op == "Exp")
        v = std::exp(v);
      else if (op == "Sigmoid")
        v = 1.0f / (1.0f + std::exp(-v));
    }
    return out;
  }
  for (int64_t& v : out.ints) {
    if (op == "Neg" || op == "Abs") {
      if (v == std::numeric_limits<int64_t>::min()) {
        return node.Errorf("integer ", op, " of ", v, " overflows");
      }
      v = (op == "Neg" || v < 0) ? -v : v;
    } else if (op == "Relu") {
      v = v > 0 ? v : 0;
    } else if (op == "Floor" || op == "Ceil") {
      // integers are unchanged
    } else {
      return node.Errorf(op, " of integer constants is not supported");
    }
  }
  return out;
}

// Float to int64 with C truncation; nullopt when not representable.
std::optional<int64_t> FloatToInt(float v) {
  if (!std::isfinite(v)) return std::nullopt;
  const double d = std::trunc(static_cast<double>(v));
  if (d < -9223372036854775808.0 || d >= 9223372036854775808.0) return std::nullopt;
  return static_cast<int64_t>(d);
}

// Wraps v to the integer ONNX type `to` (two's complement, as C casts do).
std::optional<int64_t> WrapToType(int64_t v, int32_t to) {
  switch (to) {
    case onnx::TensorProto::INT8:
      return static_cast<int8_t>(v);
    case onnx::TensorProto::UINT8:
      return static_cast<uint8_t>(v);
    case onnx::TensorProto::INT16:
      return static_cast<int16_t>(v);
    case onnx::TensorProto::UINT16:
      return static_cast<uint16_t>(v);
    case onnx::TensorProto::INT32:
      return static_cast<int32_t>(v);
    case onnx::TensorProto::UINT32:
      return static_cast<uint32_t>(v);
    case onnx::TensorProto::UINT64:
      if (v < 0) return std::nullopt;
      return v;
    default:
      return v;
  }
}

}  // namespace

StatusOr<ConstTensor> FoldWhere(const NodeView& node, const std::vector<ConstPtr>& inputs,
                                FoldBudget& budget) {
  ASSIGN_OR_RETURN(const ConstTensor* cond, RequiredInput(node, inputs, 0));
  ASSIGN_OR_RETURN(const ConstTensor* x, RequiredInput(node, inputs, 1));
  ASSIGN_OR_RETURN(const ConstTensor* y, RequiredInput(node, inputs, 2));
  if (cond->is_float()) return node.Error("condition must be bool");
  if (x->kind != y->kind) return node.Error("X and Y have different element kinds");
  ASSIGN_OR_RETURN(std::vector<int64_t> dims, BroadcastDims(node, {cond->dims, x->dims, y->dims}));
  ASSIGN_OR_RETURN(int64_t count, ReserveDims(node, dims, budget));
  const std::vector<std::vector<int64_t>> strides = {BroadcastStrides(cond->dims, dims.size()),
                                                     BroadcastStrides(x->dims, dims.size()),
                                                     BroadcastStrides(y->dims, dims.size())};
  ConstTensor out;
  out.kind = x->kind;
  out.dims = dims;
  RunBroadcast(dims, count, strides, [&](int64_t, const std::vector<int64_t>& o) {
    const bool take_x = cond->ints[o[0]] != 0;
    if (out.is_float()) {
      out.floats.push_back(take_x ? x->floats[o[1]] : y->floats[o[2]]);
    } else {
      out.ints.push_back(take_x ? x->ints[o[1]] : y->ints[o[2]]);
    }
    return true;
  });
  return out;
}

StatusOr<ConstTensor> FoldCast(const NodeView& node, const ConstTensor& x, FoldBudget& budget) {
  ASSIGN_OR_RETURN(int64_t to, node.GetInt("to", -1));
  if (to < 0 || to > std::numeric_limits<int32_t>::max()) {
    return node.Errorf("attribute 'to' has invalid value ", to);
  }
  const int32_t to_type = static_cast<int32_t>(to);
  ASSIGN_OR_RETURN(ConstKind kind, KindOfDataType(to_type, node.Label() + " attribute 'to'"));
  ASSIGN_OR_RETURN(int64_t count, ReserveDims(node, x.dims, budget));
  ConstTensor out;
  out.kind = kind;
  out.dims = x.dims;
  if (kind == ConstKind::kFloat) {
    out.floats.reserve(static_cast<size_t>(count));
    for (int64_t i = 0; i < count; ++i) {
      out.floats.push_back(x.is_float() ? x.floats[i] : static_cast<float>(x.ints[i]));
    }
    return out;
  }
  out.ints.reserve(static_cast<size_t>(count));
  for (int64_t i = 0; i < count; ++i) {
    std::optional<int64_t> v;
    if (kind == ConstKind::kBool) {
      v = x.is_float() ? (x.floats[i] != 0.0f ? 1 : 0) : (x.ints[i] != 0 ? 1 : 0);
    } else {
      v = x.is_float() ? FloatToInt(x.floats[i]) : std::optional<int64_t>(x.ints[i]);
      if (v.has_value()) v = WrapToType(*v, to_type);
    }
    if (!v.has_value()) {
      return node.Errorf("value ", x.AsDouble(i), " cannot be cast to ", OnnxDataTypeName(to_type));
    }
    out.ints.push_back(*v);
  }
  return out;
}

StatusOr<ConstTensor> FoldConstantOfShape(const NodeView& node, const std::vector<ConstPtr>& inputs,
                                          FoldBudget& budget) {
  ASSIGN_OR_RETURN(const ConstTensor* shape_t, RequiredInput(node, inputs, 0));
  ASSIGN_OR_RETURN(std::vector<int64_t> dims, ToIntList(*shape_t, node.Label() + " input"));
  ConstTensor value = MakeFloatTensor({1}, {0.0f});
  ASSIGN_OR_RETURN(const onnx::TensorProto* proto, node.GetTensor("value"));
  if (proto != nullptr) {
    ASSIGN_OR_RETURN(value, ConstTensorFromProto(*proto, 1, node.Label() + " attribute 'value'"));
    if (value.num_elements() != 1) return node.Error("attribute 'value' must hold one element");
  }
  ASSIGN_OR_RETURN(int64_t count, ReserveDims(node, dims, budget));
  ConstTensor out;
  out.kind = value.kind;
  out.dims = std::move(dims);
  if (out.is_float()) {
    out.floats.assign(static_cast<size_t>(count), value.floats[0]);
  } else {
    out.ints.assign(static_cast<size_t>(count), value.ints[0]);
  }
  return out;
}

StatusOr<ConstTensor> FoldRange(const NodeView& node, const std::vector<ConstPtr>& inputs,
                                FoldBudget& budget) {
  ASSIGN_OR_RETURN(const ConstTensor* start, RequiredInput(node, inputs, 0));
  ASSIGN_OR_RETURN(const ConstTensor* limit, RequiredInput(node, inputs, 1));
  ASSIGN_OR_RETURN(const ConstTensor* delta, RequiredInput(node, inputs, 2));
  for (const ConstTensor* t : {start, limit, delta}) {
    if (t->num_elements() != 1) return node.Error("start, limit and delta must be scalars");
    if (t->kind != start->kind || t->kind == ConstKind::kBool) {
      return node.Error("start, limit and delta must have one numeric element kind");
    }
  }
  if (start->is_float()) {
    const double s = start->floats[0], l = limit->floats[0], d = delta->floats[0];
    const double n = std::ceil((l - s) / d);
    if (d == 0.0 || !std::isfinite(n)) return node.Error("delta must be non-zero and finite");
    if (n > static_cast<double>(budget.max_tensor_elements())) {
      return node.Errorf("range of ", n, " elements exceeds the limit");
    }
    const int64_t count = n > 0 ? static_cast<int64_t>(n) : 0;
    RETURN_IF_ERROR(budget.Reserve(node, count));
    ConstTensor out = MakeFloatTensor({count}, {});
    for (int64_t i = 0; i < count; ++i) {
      out.floats.push_back(static_cast<float>(s + static_cast<double>(i) * d));
    }
    return out;
  }
  const __int128 s = start->ints[0], l = limit->ints[0], d = delta->ints[0];
  if (d == 0) return node.Error("delta must be non-zero");
  __int128 n = (l - s) / d;
  if ((l - s) % d != 0) ++n;  // ceil: quotient truncates and the signs agree when n > 0
  if ((l - s > 0) != (d > 0)) n = 0;
  if (n > budget.max_tensor_elements()) {
    return node.Error("range exceeds the element limit");
  }
  const int64_t count = n > 0 ? static_cast<int64_t>(n) : 0;
  RETURN_IF_ERROR(budget.Reserve(node, count));
  ConstTensor out = MakeIntTensor({count}, {});
  for (int64_t i = 0; i < count; ++i) out.ints.push_back(static_cast<int64_t>(s + i * d));
  return out;
}

StatusOr<ConstTensor> FoldElementwise(const NodeView& node, const std::vector<ConstPtr>& inputs,
                                      FoldBudget& budget) {
  const std::string& op = node.op_type();
  if (std::optional<BinaryOp> binary = BinaryOpFromName(op); binary.has_value()) {
    const bool variadic = *binary == BinaryOp::kMin || *binary == BinaryOp::kMax;
    if (!variadic && inputs.size() != 2) return node.Error("expects 2 inputs");
    ASSIGN_OR_RETURN(const ConstTensor* first, RequiredInput(node, inputs, 0));
    ConstTensor acc = *first;
    for (int i = 1; i < static_cast<int>(inputs.size()); ++i) {
      ASSIGN_OR_RETURN(const ConstTensor* next, RequiredInput(node, inputs, i));
      ASSIGN_OR_RETURN(acc, FoldBinary(node, *binary, acc, *next, budget));
    }
    return acc;
  }
  ASSIGN_OR_RETURN(const ConstTensor* x, RequiredInput(node, inputs, 0));
  return FoldUnary(node, *x, budget);
}

}  // namespace iosfarm::graph::onnx_import::fold_internal
