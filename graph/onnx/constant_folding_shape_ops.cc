// Folding of ops that move elements without arithmetic.
#include <algorithm>
#include <numeric>

#include "graph/onnx/constant_folding_internal.h"
#include "graph/onnx/shape_helpers.h"
#include "graph/tensor.h"

namespace iosfarm::graph::onnx_import::fold_internal {
namespace {

int64_t Product(const std::vector<int64_t>& dims, size_t begin, size_t end) {
  int64_t p = 1;
  for (size_t i = begin; i < end; ++i) p *= dims[i];  // bounded: dims of an existing tensor
  return p;
}

// Integer list from input i at opset >= `input_opset`, else from attribute
// `name`; nullopt when absent.
StatusOr<std::optional<std::vector<int64_t>>> IntsFromInputOrAttr(
    const NodeView& node, const std::vector<ConstPtr>& inputs, int i, std::string_view name,
    int64_t input_opset) {
  if (node.opset() >= input_opset) {
    if (i >= static_cast<int>(inputs.size()) || inputs[i] == nullptr) {
      return std::optional<std::vector<int64_t>>();
    }
    ASSIGN_OR_RETURN(std::vector<int64_t> values,
                     ToIntList(*inputs[i], StrCat(node.Label(), " input '", name, "'")));
    return std::optional<std::vector<int64_t>>(std::move(values));
  }
  return node.GetInts(name);
}

ConstTensor Relabel(const ConstTensor& src, std::vector<int64_t> dims) {
  ConstTensor out = src;
  out.dims = std::move(dims);
  return out;
}

}  // namespace

StatusOr<ConstTensor> FoldGather(const NodeView& node, const std::vector<ConstPtr>& inputs,
                                 FoldBudget& budget) {
  ASSIGN_OR_RETURN(const ConstTensor* data, RequiredInput(node, inputs, 0));
  ASSIGN_OR_RETURN(const ConstTensor* indices, RequiredInput(node, inputs, 1));
  if (data->rank() < 1) return node.Error("data must have rank >= 1");
  if (indices->is_float()) return node.Error("indices must be integers");
  ASSIGN_OR_RETURN(int64_t axis_attr, node.GetInt("axis", 0));
  ASSIGN_OR_RETURN(int64_t axis, NormalizeAxis(node, axis_attr, data->rank(), "axis"));
  const int64_t dim = data->dims[axis];
  std::vector<int64_t> index_values = indices->ints;
  for (int64_t& index : index_values) {
    if (index < -dim || index >= dim) {
      return node.Errorf("index ", index, " is out of range for axis ", axis, " of size ", dim);
    }
    if (index < 0) index += dim;
  }
  std::vector<int64_t> dims(data->dims.begin(), data->dims.begin() + axis);
  dims.insert(dims.end(), indices->dims.begin(), indices->dims.end());
  dims.insert(dims.end(), data->dims.begin() + axis + 1, data->dims.end());
  ASSIGN_OR_RETURN(int64_t count, ReserveDims(node, dims, budget));
  const int64_t outer = Product(data->dims, 0, axis);
  const int64_t inner = Product(data->dims, axis + 1, data->dims.size());
  const int64_t n = static_cast<int64_t>(index_values.size());
  ConstTensor out;
  out.kind = data->kind;
  out.dims = std::move(dims);
  auto source = [&](int64_t o, int64_t j, int64_t k) {
    return (o * dim + index_values[j]) * inner + k;
  };
  if (count > 0) {
    for (int64_t o = 0; o < outer; ++o) {
      for (int64_t j = 0; j < n; ++j) {
        for (int64_t k = 0; k < inner; ++k) {
          if (data->is_float()) {
            out.floats.push_back(data->floats[source(o, j, k)]);
          } else {
            out.ints.push_back(data->ints[source(o, j, k)]);
          }
        }
      }
    }
  }
  return out;
}

StatusOr<ConstTensor> FoldUnsqueeze(const NodeView& node, const std::vector<ConstPtr>& inputs,
                                    FoldBudget& budget) {
  ASSIGN_OR_RETURN(const ConstTensor* data, RequiredInput(node, inputs, 0));
  ASSIGN_OR_RETURN(auto axes, IntsFromInputOrAttr(node, inputs, 1, "axes", 13));
  if (!axes.has_value()) return node.Error("missing 'axes'");
  const int64_t out_rank = data->rank() + static_cast<int64_t>(axes->size());
  ASSIGN_OR_RETURN(std::vector<int64_t> normalized, NormalizeAxes(node, *axes, out_rank, "axes"));
  std::vector<bool> inserted(static_cast<size_t>(out_rank), false);
  for (int64_t a : normalized) inserted[a] = true;
  std::vector<int64_t> dims;
  size_t next = 0;
  for (int64_t i = 0; i < out_rank; ++i) dims.push_back(inserted[i] ? 1 : data->dims[next++]);
  RETURN_IF_ERROR(ReserveDims(node, dims, budget).status());
  return Relabel(*data, std::move(dims));
}

StatusOr<ConstTensor> FoldSqueeze(const NodeView& node, const std::vector<ConstPtr>& inputs,
                                  FoldBudget& budget) {
  ASSIGN_OR_RETURN(const ConstTensor* data, RequiredInput(node, inputs, 0));
  ASSIGN_OR_RETURN(auto axes, IntsFromInputOrAttr(node, inputs, 1, "axes", 13));
  std::vector<bool> drop(data->dims.size(), false);
  if (axes.has_value()) {
    ASSIGN_OR_RETURN(std::vector<int64_t> normalized,
                     NormalizeAxes(node, *axes, data->rank(), "axes"));
    for (int64_t a : normalized) {
      if (data->dims[a] != 1) {
        return node.Errorf("cannot squeeze axis ", a, " of size ", data->dims[a]);
      }
      drop[a] = true;
    }
  } else {
    for (size_t i = 0; i < drop.size(); ++i) drop[i] = data->dims[i] == 1;
  }
  std::vector<int64_t> dims;
  for (size_t i = 0; i < drop.size(); ++i) {
    if (!drop[i]) dims.push_back(data->dims[i]);
  }
  RETURN_IF_ERROR(ReserveDims(node, dims, budget).status());
  return Relabel(*data, std::move(dims));
}

StatusOr<ConstTensor> FoldConcat(const NodeView& node, const std::vector<ConstPtr>& inputs,
                                 FoldBudget& budget) {
  if (inputs.empty()) return node.Error("has no inputs");
  std::vector<const ConstTensor*> parts;
  for (int i = 0; i < static_cast<int>(inputs.size()); ++i) {
    ASSIGN_OR_RETURN(const ConstTensor* part, RequiredInput(node, inputs, i));
    parts.push_back(part);
  }
  const ConstTensor& first = *parts[0];
  if (first.rank() < 1) return node.Error("inputs must have rank >= 1");
  ASSIGN_OR_RETURN(int64_t axis_attr, node.GetInt("axis", 0));
  ASSIGN_OR_RETURN(int64_t axis, NormalizeAxis(node, axis_attr, first.rank(), "axis"));
  std::vector<int64_t> dims = first.dims;
  dims[axis] = 0;
  for (const ConstTensor* part : parts) {
    if (part->kind != first.kind) {
      return node.Errorf("inputs mix ", ConstKindName(first.kind), " and ",
                         ConstKindName(part->kind), " elements");
    }
    if (part->rank() != first.rank()) return node.Error("inputs have different ranks");
    for (int64_t d = 0; d < first.rank(); ++d) {
      if (d != axis && part->dims[d] != first.dims[d]) {
        return node.Errorf("input shapes ", ShapeToString(first.dims), " and ",
                           ShapeToString(part->dims), " differ outside axis ", axis);
      }
    }
    ASSIGN_OR_RETURN(dims[axis], CheckedAdd(node, dims[axis], part->dims[axis], "concat axis"));
  }
  ASSIGN_OR_RETURN(int64_t count, ReserveDims(node, dims, budget));
  ConstTensor out;
  out.kind = first.kind;
  out.dims = dims;
  if (count == 0) return out;
  const int64_t outer = Product(dims, 0, axis);
  const int64_t inner = Product(dims, axis + 1, dims.size());
  for (int64_t o = 0; o < outer; ++o) {
    for (const ConstTensor* part : parts) {
      const int64_t block = part->dims[axis] * inner;
      const int64_t begin = o * block;
      if (out.is_float()) {
        out.floats.insert(out.floats.end(), part->floats.begin() + begin,
                          part->floats.begin() + begin + block);
      } else {
        out.ints.insert(out.ints.end(), part->ints.begin() + begin,
                        part->ints.begin() + begin + block);
      }
    }
  }
  return out;
}

StatusOr<ConstTensor> FoldSlice(const NodeView& node, const std::vector<ConstPtr>& inputs,
                                FoldBudget& budget) {
  ASSIGN_OR_RETURN(const ConstTensor* data, RequiredInput(node, inputs, 0));
  ASSIGN_OR_RETURN(const ConstTensor* starts_t, RequiredInput(node, inputs, 1));
  ASSIGN_OR_RETURN(const ConstTensor* ends_t, RequiredInput(node, inputs, 2));
  ASSIGN_OR_RETURN(std::vector<int64_t> starts, ToIntList(*starts_t, node.Label() + " starts"));
  ASSIGN_OR_RETURN(std::vector<int64_t> ends, ToIntList(*ends_t, node.Label() + " ends"));
  std::vector<int64_t> axes(starts.size());
  std::iota(axes.begin(), axes.end(), 0);
  std::vector<int64_t> steps(starts.size(), 1);
  if (inputs.size() > 3 && inputs[3] != nullptr) {
    ASSIGN_OR_RETURN(axes, ToIntList(*inputs[3], node.Label() + " axes"));
  }
  if (inputs.size() > 4 && inputs[4] != nullptr) {
    ASSIGN_OR_RETURN(steps, ToIntList(*inputs[4], node.Label() + " steps"));
  }
  if (ends.size() != starts.size() || axes.size() != starts.size() ||
      steps.size() != starts.size()) {
    return node.Error("starts, ends, axes and steps must have equal lengths");
  }
  ASSIGN_OR_RETURN(axes, NormalizeAxes(node, axes, data->rank(), "axes"));
  std::vector<SliceRange> ranges(data->dims.size());
  std::vector<int64_t> dims = data->dims;
  for (size_t d = 0; d < dims.size(); ++d) ranges[d] = SliceRange{0, 1, dims[d]};
  for (size_t i = 0; i < axes.size(); ++i) {
    ASSIGN_OR_RETURN(ranges[axes[i]],
                     ClampSlice(node, data->dims[axes[i]], starts[i], ends[i], steps[i]));
    dims[axes[i]] = ranges[axes[i]].count;
  }
  ASSIGN_OR_RETURN(int64_t count, ReserveDims(node, dims, budget));
  const std::vector<int64_t> strides = Strides(data->dims);
  return MoveElements(*data, dims, count, [&](const std::vector<int64_t>& index) {
    int64_t offset = 0;
    for (size_t d = 0; d < index.size(); ++d) {
      offset += (ranges[d].start + index[d] * ranges[d].step) * strides[d];
    }
    return offset;
  });
}

StatusOr<std::vector<ConstPtr>> FoldSplit(const NodeView& node, const std::vector<ConstPtr>& inputs,
                                          FoldBudget& budget) {
  ASSIGN_OR_RETURN(const ConstTensor* data, RequiredInput(node, inputs, 0));
  if (data->rank() < 1) return node.Error("input must have rank >= 1");
  ASSIGN_OR_RETURN(int64_t axis_attr, node.GetInt("axis", 0));
  ASSIGN_OR_RETURN(int64_t axis, NormalizeAxis(node, axis_attr, data->rank(), "axis"));
  ASSIGN_OR_RETURN(auto split, IntsFromInputOrAttr(node, inputs, 1, "split", 13));
  ASSIGN_OR_RETURN(std::vector<int64_t> sizes,
                   ResolveSplitSizes(node, data->dims[axis], split, node.num_outputs()));
  RETURN_IF_ERROR(budget.Reserve(node, data->num_elements()));
  const std::vector<int64_t> strides = Strides(data->dims);
  std::vector<ConstPtr> outs;
  int64_t begin = 0;
  for (int64_t size : sizes) {
    std::vector<int64_t> dims = data->dims;
    dims[axis] = size;
    const int64_t count = NumElements(dims);
    outs.push_back(std::make_shared<ConstTensor>(
        MoveElements(*data, dims, count, [&](const std::vector<int64_t>& index) {
          int64_t offset = 0;
          for (size_t d = 0; d < index.size(); ++d) {
            offset += (index[d] + (static_cast<int64_t>(d) == axis ? begin : 0)) * strides[d];
          }
          return offset;
        })));
    begin += size;
  }
  return outs;
}

StatusOr<ConstTensor> FoldReshape(const NodeView& node, const std::vector<ConstPtr>& inputs,
                                  FoldBudget& budget) {
  ASSIGN_OR_RETURN(const ConstTensor* data, RequiredInput(node, inputs, 0));
  ASSIGN_OR_RETURN(const ConstTensor* shape_t, RequiredInput(node, inputs, 1));
  ASSIGN_OR_RETURN(std::vector<int64_t> target, ToIntList(*shape_t, node.Label() + " shape"));
  ASSIGN_OR_RETURN(int64_t allow_zero, node.GetInt("allowzero", 0));
  ASSIGN_OR_RETURN(
      std::vector<int64_t> dims,
      ResolveReshapeTarget(node, data->dims, std::move(target), allow_zero != 0, std::nullopt));
  RETURN_IF_ERROR(ReserveDims(node, dims, budget).status());
  return Relabel(*data, std::move(dims));
}

StatusOr<ConstTensor> FoldFlatten(const NodeView& node, const std::vector<ConstPtr>& inputs,
                                  FoldBudget& budget) {
  ASSIGN_OR_RETURN(const ConstTensor* data, RequiredInput(node, inputs, 0));
  ASSIGN_OR_RETURN(int64_t axis, node.GetInt("axis", 1));
  if (axis < -data->rank() || axis > data->rank()) {
    return node.Errorf("axis ", axis, " is out of range for rank ", data->rank());
  }
  if (axis < 0) axis += data->rank();
  std::vector<int64_t> dims = {Product(data->dims, 0, axis),
                               Product(data->dims, axis, data->dims.size())};
  RETURN_IF_ERROR(ReserveDims(node, dims, budget).status());
  return Relabel(*data, std::move(dims));
}

StatusOr<ConstTensor> FoldTranspose(const NodeView& node, const std::vector<ConstPtr>& inputs,
                                    FoldBudget& budget) {
  ASSIGN_OR_RETURN(const ConstTensor* data, RequiredInput(node, inputs, 0));
  ASSIGN_OR_RETURN(auto perm_attr, node.GetInts("perm"));
  std::vector<int64_t> perm(data->dims.size());
  if (perm_attr.has_value()) {
    perm = *perm_attr;
  } else {
    std::iota(perm.rbegin(), perm.rend(), 0);
  }
  if (perm.size() != data->dims.size()) {
    return node.Errorf("perm has ", perm.size(), " entries for rank ", data->rank());
  }
  std::vector<bool> seen(perm.size(), false);
  for (int64_t p : perm) {
    if (p < 0 || p >= data->rank() || seen[p]) return node.Error("perm is not a permutation");
    seen[p] = true;
  }
  std::vector<int64_t> dims;
  for (int64_t p : perm) dims.push_back(data->dims[p]);
  ASSIGN_OR_RETURN(int64_t count, ReserveDims(node, dims, budget));
  const std::vector<int64_t> strides = Strides(data->dims);
  return MoveElements(*data, dims, count, [&](const std::vector<int64_t>& index) {
    int64_t offset = 0;
    for (size_t d = 0; d < index.size(); ++d) offset += index[d] * strides[perm[d]];
    return offset;
  });
}

StatusOr<ConstTensor> FoldExpand(const NodeView& node, const std::vector<ConstPtr>& inputs,
                                 FoldBudget& budget) {
  ASSIGN_OR_RETURN(const ConstTensor* data, RequiredInput(node, inputs, 0));
  ASSIGN_OR_RETURN(const ConstTensor* shape_t, RequiredInput(node, inputs, 1));
  ASSIGN_OR_RETURN(std::vector<int64_t> shape, ToIntList(*shape_t, node.Label() + " shape"));
  for (int64_t d : shape) {
    if (d < 0) return node.Errorf("shape entry ", d, " is negative");
  }
  ASSIGN_OR_RETURN(std::vector<int64_t> dims, BroadcastDims(node, {data->dims, shape}));
  ASSIGN_OR_RETURN(int64_t count, ReserveDims(node, dims, budget));
  const std::vector<int64_t> strides = BroadcastStrides(data->dims, dims.size());
  return MoveElements(*data, dims, count, [&](const std::vector<int64_t>& index) {
    int64_t offset = 0;
    for (size_t d = 0; d < index.size(); ++d) offset += index[d] * strides[d];
    return offset;
  });
}

}  // namespace iosfarm::graph::onnx_import::fold_internal
