#include "graph/onnx/constant_folding.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>
#include <set>
#include <string>

#include "graph/onnx/constant_folding_internal.h"
#include "graph/onnx/shape_helpers.h"

namespace iosfarm::graph::onnx_import {

Status FoldBudget::Reserve(const NodeView& node, int64_t count) {
  if (count > max_tensor_elements_) {
    return node.Errorf("folded constant of ", count, " elements exceeds the limit of ",
                       max_tensor_elements_, " elements");
  }
  if (count > remaining_) {
    return node.Error("constant folding exceeds its memory budget (too many folded elements)");
  }
  remaining_ -= count;
  return absl::OkStatus();
}

namespace fold_internal {

std::vector<int64_t> Strides(const std::vector<int64_t>& dims) {
  std::vector<int64_t> strides(dims.size(), 1);
  for (int64_t i = static_cast<int64_t>(dims.size()) - 2; i >= 0; --i) {
    strides[i] = strides[i + 1] * dims[i + 1];
  }
  return strides;
}

StatusOr<const ConstTensor*> RequiredInput(const NodeView& node,
                                           const std::vector<ConstPtr>& inputs, int i) {
  if (i >= static_cast<int>(inputs.size()) || inputs[i] == nullptr) {
    return node.Errorf("missing required input ", i);
  }
  return inputs[i].get();
}

StatusOr<int64_t> ReserveDims(const NodeView& node, const std::vector<int64_t>& dims,
                              FoldBudget& budget) {
  ASSIGN_OR_RETURN(int64_t count, CheckedElementCount(dims, budget.max_tensor_elements(),
                                                      node.Label() + " output"));
  RETURN_IF_ERROR(budget.Reserve(node, count));
  return count;
}

StatusOr<std::vector<int64_t>> BroadcastDims(const NodeView& node,
                                             const std::vector<std::vector<int64_t>>& shapes) {
  size_t rank = 0;
  for (const auto& s : shapes) rank = std::max(rank, s.size());
  std::vector<int64_t> out(rank, 1);
  for (const auto& s : shapes) {
    const size_t offset = rank - s.size();
    for (size_t i = 0; i < s.size(); ++i) {
      const int64_t d = s[i];
      int64_t& o = out[offset + i];
      if (d == o || d == 1) continue;
      if (o == 1) {
        o = d;
        continue;
      }
      std::string shown;
      for (const auto& t : shapes) shown += ShapeToString(t) + " ";
      return node.Errorf("shapes ", shown, "do not broadcast");
    }
  }
  return out;
}

std::vector<int64_t> BroadcastStrides(const std::vector<int64_t>& in, size_t out_rank) {
  std::vector<int64_t> strides(out_rank, 0);
  const std::vector<int64_t> own = Strides(in);
  const size_t offset = out_rank - in.size();
  for (size_t i = 0; i < in.size(); ++i) strides[offset + i] = in[i] == 1 ? 0 : own[i];
  return strides;
}

}  // namespace fold_internal

namespace {

using fold_internal::FoldCast;
using fold_internal::FoldConcat;
using fold_internal::FoldConstantOfShape;
using fold_internal::FoldElementwise;
using fold_internal::FoldExpand;
using fold_internal::FoldFlatten;
using fold_internal::FoldGather;
using fold_internal::FoldRange;
using fold_internal::FoldReshape;
using fold_internal::FoldSlice;
using fold_internal::FoldSplit;
using fold_internal::FoldSqueeze;
using fold_internal::FoldTranspose;
using fold_internal::FoldUnsqueeze;
using fold_internal::FoldWhere;
using fold_internal::RequiredInput;
using fold_internal::ReserveDims;

StatusOr<ConstTensor> FoldConstant(const NodeView& node, FoldBudget& budget) {
  int set = 0;
  for (const char* name : {"value", "value_float", "value_floats", "value_int", "value_ints",
                           "sparse_value", "value_string", "value_strings"}) {
    if (node.HasAttribute(name)) ++set;
  }
  if (set != 1) return node.Errorf("needs exactly one value attribute, has ", set);
  if (node.HasAttribute("sparse_value") || node.HasAttribute("value_string") ||
      node.HasAttribute("value_strings")) {
    return node.Error("sparse and string constants are not supported");
  }
  ASSIGN_OR_RETURN(const onnx::TensorProto* proto, node.GetTensor("value"));
  if (proto != nullptr) {
    ASSIGN_OR_RETURN(ConstTensor t, ConstTensorFromProto(*proto, budget.max_tensor_elements(),
                                                         node.Label() + " attribute 'value'"));
    RETURN_IF_ERROR(budget.Reserve(node, t.num_elements()));
    return t;
  }
  if (node.HasAttribute("value_float")) {
    ASSIGN_OR_RETURN(float v, node.GetFloat("value_float", 0.0f));
    return MakeFloatTensor({}, {v});
  }
  if (node.HasAttribute("value_int")) {
    ASSIGN_OR_RETURN(int64_t v, node.GetInt("value_int", 0));
    return MakeIntTensor({}, {v});
  }
  if (node.HasAttribute("value_floats")) {
    ASSIGN_OR_RETURN(auto v, node.GetFloats("value_floats"));
    RETURN_IF_ERROR(budget.Reserve(node, static_cast<int64_t>(v->size())));
    const int64_t n = static_cast<int64_t>(v->size());
    return MakeFloatTensor({n}, std::move(*v));
  }
  ASSIGN_OR_RETURN(auto v, node.GetInts("value_ints"));
  RETURN_IF_ERROR(budget.Reserve(node, static_cast<int64_t>(v->size())));
  const int64_t n = static_cast<int64_t>(v->size());
  return MakeIntTensor({n}, std::move(*v));
}

StatusOr<std::vector<ConstPtr>> Single(const NodeView& node, StatusOr<ConstTensor> result) {
  if (!result.ok()) return result.status();
  std::vector<ConstPtr> outs(static_cast<size_t>(std::max(node.num_outputs(), 1)));
  outs[0] = std::make_shared<const ConstTensor>(std::move(result).value());
  return outs;
}

StatusOr<std::vector<ConstPtr>> FoldDropout(const NodeView& node,
                                            const std::vector<ConstPtr>& inputs,
                                            FoldBudget& budget) {
  ASSIGN_OR_RETURN(const ConstTensor* x, RequiredInput(node, inputs, 0));
  if (inputs.size() > 2 && inputs[2] != nullptr) {
    ASSIGN_OR_RETURN(double training, ToScalar(*inputs[2], node.Label() + " training_mode"));
    if (training != 0.0) return node.Error("training-mode node is not supported");
  }
  std::vector<ConstPtr> outs(static_cast<size_t>(std::max(node.num_outputs(), 1)));
  outs[0] = inputs[0];
  if (node.num_outputs() > 1 && !node.output(1).empty()) {
    ASSIGN_OR_RETURN(int64_t count, ReserveDims(node, x->dims, budget));
    ConstTensor mask = MakeZeroTensor(ConstKind::kBool, x->dims, count);
    for (int64_t& v : mask.ints) v = 1;
    outs[1] = std::make_shared<const ConstTensor>(std::move(mask));
  }
  return outs;
}

const std::set<std::string_view>& FoldableOps() {
  static const auto* const kOps = new std::set<std::string_view>{"Identity",
                                                                 "Dropout",
                                                                 "Constant",
                                                                 "Shape",
                                                                 "Size",
                                                                 "Gather",
                                                                 "Unsqueeze",
                                                                 "Squeeze",
                                                                 "Concat",
                                                                 "Slice",
                                                                 "Split",
                                                                 "Reshape",
                                                                 "Flatten",
                                                                 "Transpose",
                                                                 "Expand",
                                                                 "Cast",
                                                                 "ConstantOfShape",
                                                                 "Range",
                                                                 "Where",
                                                                 "Add",
                                                                 "Sub",
                                                                 "Mul",
                                                                 "Div",
                                                                 "Pow",
                                                                 "Min",
                                                                 "Max",
                                                                 "Equal",
                                                                 "Less",
                                                                 "Greater",
                                                                 "LessOrEqual",
                                                                 "GreaterOrEqual",
                                                                 "And",
                                                                 "Or",
                                                                 "Xor",
                                                                 "Not",
                                                                 "Neg",
                                                                 "Abs",
                                                                 "Sqrt",
                                                                 "Floor",
                                                                 "Ceil",
                                                                 "Reciprocal",
                                                                 "Relu",
                                                                 "Exp",
                                                                 "Sigmoid"};
  return *kOps;
}

}  // namespace

bool IsFoldableOp(std::string_view op_type) { return FoldableOps().count(op_type) > 0; }

StatusOr<ConstPtr> FoldShapeOf(const NodeView& node, const std::vector<int64_t>& shape,
                               FoldBudget& budget) {
  if (node.op_type() == "Size") {
    ASSIGN_OR_RETURN(int64_t count, CheckedElementCount(shape, std::numeric_limits<int64_t>::max(),
                                                        node.Label() + " input"));
    return std::make_shared<const ConstTensor>(MakeIntTensor({}, {count}));
  }
  const int64_t rank = static_cast<int64_t>(shape.size());
  ASSIGN_OR_RETURN(int64_t start, node.GetInt("start", 0));
  ASSIGN_OR_RETURN(int64_t end, node.GetInt("end", rank));
  if (start < 0) start += rank;
  if (end < 0) end += rank;
  start = std::clamp<int64_t>(start, 0, rank);
  end = std::clamp<int64_t>(end, 0, rank);
  std::vector<int64_t> dims;
  if (end > start) dims.assign(shape.begin() + start, shape.begin() + end);
  RETURN_IF_ERROR(budget.Reserve(node, static_cast<int64_t>(dims.size())));
  const int64_t n = static_cast<int64_t>(dims.size());
  return std::make_shared<const ConstTensor>(MakeIntTensor({n}, std::move(dims)));
}

StatusOr<std::vector<ConstPtr>> FoldNode(const NodeView& node, const std::vector<ConstPtr>& inputs,
                                         FoldBudget& budget) {
  const std::string& op = node.op_type();
  if (node.num_outputs() < 1) return node.Error("has no outputs");
  if (op == "Identity") {
    ASSIGN_OR_RETURN(const ConstTensor* x, RequiredInput(node, inputs, 0));
    (void)x;
    std::vector<ConstPtr> outs(static_cast<size_t>(node.num_outputs()));
    outs[0] = inputs[0];
    return outs;
  }
  if (op == "Dropout") return FoldDropout(node, inputs, budget);
  if (op == "Constant") return Single(node, FoldConstant(node, budget));
  if (op == "Shape" || op == "Size") {
    ASSIGN_OR_RETURN(const ConstTensor* x, RequiredInput(node, inputs, 0));
    ASSIGN_OR_RETURN(ConstPtr out, FoldShapeOf(node, x->dims, budget));
    std::vector<ConstPtr> outs(static_cast<size_t>(node.num_outputs()));
    outs[0] = std::move(out);
    return outs;
  }
  if (op == "Gather") return Single(node, FoldGather(node, inputs, budget));
  if (op == "Unsqueeze") return Single(node, FoldUnsqueeze(node, inputs, budget));
  if (op == "Squeeze") return Single(node, FoldSqueeze(node, inputs, budget));
  if (op == "Concat") return Single(node, FoldConcat(node, inputs, budget));
  if (op == "Slice") return Single(node, FoldSlice(node, inputs, budget));
  if (op == "Split") return FoldSplit(node, inputs, budget);
  if (op == "Reshape") return Single(node, FoldReshape(node, inputs, budget));
  if (op == "Flatten") return Single(node, FoldFlatten(node, inputs, budget));
  if (op == "Transpose") return Single(node, FoldTranspose(node, inputs, budget));
  if (op == "Expand") return Single(node, FoldExpand(node, inputs, budget));
  if (op == "ConstantOfShape") return Single(node, FoldConstantOfShape(node, inputs, budget));
  if (op == "Range") return Single(node, FoldRange(node, inputs, budget));
  if (op == "Where") return Single(node, FoldWhere(node, inputs, budget));
  if (op == "Cast") {
    ASSIGN_OR_RETURN(const ConstTensor* x, RequiredInput(node, inputs, 0));
    return Single(node, FoldCast(node, *x, budget));
  }
  if (FoldableOps().count(op) > 0) return Single(node, FoldElementwise(node, inputs, budget));
  return node.Error("cannot be folded");
}

}  // namespace iosfarm::graph::onnx_import
