#include "graph/onnx/shape_helpers.h"

#include <algorithm>
#include <limits>

#include "absl/strings/str_join.h"
#include "graph/tensor.h"

namespace iosfarm::graph::onnx_import {

StatusOr<int64_t> NormalizeAxis(const NodeView& node, int64_t axis, int64_t rank,
                                std::string_view field) {
  if (axis < -rank || axis >= rank) {
    return node.Errorf(field, " ", axis, " is out of range for rank ", rank);
  }
  return axis < 0 ? axis + rank : axis;
}

StatusOr<std::vector<int64_t>> NormalizeAxes(const NodeView& node, const std::vector<int64_t>& axes,
                                             int64_t rank, std::string_view field) {
  std::vector<int64_t> out;
  std::vector<bool> seen(static_cast<size_t>(std::max<int64_t>(rank, 0)), false);
  for (int64_t axis : axes) {
    ASSIGN_OR_RETURN(int64_t a, NormalizeAxis(node, axis, rank, field));
    if (seen[a]) return node.Errorf(field, " repeats axis ", a);
    seen[a] = true;
    out.push_back(a);
  }
  return out;
}

StatusOr<int64_t> CheckedMul(const NodeView& node, int64_t a, int64_t b, std::string_view what) {
  int64_t out;
  if (__builtin_mul_overflow(a, b, &out)) {
    return node.Errorf(what, ": ", a, " * ", b, " overflows int64");
  }
  return out;
}

StatusOr<int64_t> CheckedAdd(const NodeView& node, int64_t a, int64_t b, std::string_view what) {
  int64_t out;
  if (__builtin_add_overflow(a, b, &out)) {
    return node.Errorf(what, ": ", a, " + ", b, " overflows int64");
  }
  return out;
}

StatusOr<std::vector<int64_t>> ResolveReshapeTarget(const NodeView& node,
                                                    const std::vector<int64_t>& input,
                                                    std::vector<int64_t> target, bool allow_zero,
                                                    const std::optional<BatchRewrite>& batch) {
  const std::string shown = StrCat("[", absl::StrJoin(target, ","), "]");
  int64_t input_count = 1;
  for (int64_t d : input) {
    ASSIGN_OR_RETURN(input_count, CheckedMul(node, input_count, d, "input element count"));
  }
  if (batch.has_value() && batch->original != batch->batch && !target.empty() && !input.empty() &&
      target[0] == batch->original && input[0] == batch->batch) {
    target[0] = batch->batch;
  }
  int infer_index = -1;
  int64_t known = 1;
  for (size_t i = 0; i < target.size(); ++i) {
    int64_t& d = target[i];
    if (d == -1) {
      if (infer_index >= 0) return node.Errorf("shape ", shown, " has more than one -1");
      infer_index = static_cast<int>(i);
      continue;
    }
    if (d < -1) return node.Errorf("shape ", shown, " has invalid entry ", d);
    if (d == 0 && !allow_zero) {
      if (i >= input.size()) {
        return node.Errorf("shape ", shown, " copies dimension ", i, " (0) but the input ",
                           ShapeToString(input), " has rank ", input.size());
      }
      d = input[i];
    }
    ASSIGN_OR_RETURN(known, CheckedMul(node, known, d, "reshape element count"));
  }
  if (infer_index >= 0) {
    if (known == 0 || input_count % known != 0) {
      return node.Errorf("cannot reshape ", ShapeToString(input), " to ", shown);
    }
    target[infer_index] = input_count / known;
  } else if (known != input_count) {
    return node.Errorf("cannot reshape ", ShapeToString(input), " (", input_count, " elements) to ",
                       shown, " (", known, " elements)");
  }
  return target;
}

StatusOr<SliceRange> ClampSlice(const NodeView& node, int64_t dim, int64_t start, int64_t end,
                                int64_t step) {
  if (step == 0) return node.Error("slice step must not be 0");
  if (dim == 0) return SliceRange{0, step > 0 ? 1 : -1, 0};
  // A step larger than the dimension selects at most one element; clamping
  // it keeps the arithmetic below in range.
  const int64_t max_step = std::max<int64_t>(dim, 1);
  if (step > max_step) step = max_step;
  if (step < -max_step) step = -max_step;
  if (start < 0) start += dim;  // cannot overflow: dim >= 0
  if (end < 0) end += dim;
  SliceRange range;
  range.step = step;
  if (step > 0) {
    start = std::clamp<int64_t>(start, 0, dim);
    end = std::clamp<int64_t>(end, 0, dim);
    range.start = start;
    range.count = end > start ? (end - start + step - 1) / step : 0;
  } else {
    start = std::clamp<int64_t>(start, 0, dim - 1);
    end = std::clamp<int64_t>(end, -1, dim - 1);
    range.start = start;
    range.count = start > end ? (start - end + (-step) - 1) / (-step) : 0;
  }
  return range;
}

StatusOr<std::vector<int64_t>> ResolveSplitSizes(const NodeView& node, int64_t dim,
                                                 const std::optional<std::vector<int64_t>>& split,
                                                 int num_outputs) {
  if (num_outputs < 1) return node.Error("Split has no outputs");
  if (split.has_value()) {
    if (static_cast<int64_t>(split->size()) != num_outputs) {
      return node.Errorf("split has ", split->size(), " sizes for ", num_outputs, " outputs");
    }
    int64_t total = 0;
    for (int64_t size : *split) {
      if (size < 0) return node.Errorf("split size ", size, " is negative");
      ASSIGN_OR_RETURN(total, CheckedAdd(node, total, size, "split sizes"));
    }
    if (total != dim) {
      return node.Errorf("split sizes [", absl::StrJoin(*split, ","), "] sum to ", total,
                         " but the split dimension is ", dim);
    }
    return *split;
  }
  if (dim % num_outputs != 0) {
    return node.Errorf("dimension ", dim, " does not split evenly into ", num_outputs, " outputs");
  }
  return std::vector<int64_t>(static_cast<size_t>(num_outputs), dim / num_outputs);
}

StatusOr<std::array<int64_t, 4>> ResolveWindowPads(
    const NodeView& node, const std::string& auto_pad, const std::array<int64_t, 2>& input_hw,
    const std::array<int64_t, 2>& kernel, const std::array<int64_t, 2>& stride,
    const std::array<int64_t, 2>& dilation, const std::optional<std::vector<int64_t>>& pads) {
  constexpr int64_t kMaxWindow = int64_t{1} << 31;
  for (int i = 0; i < 2; ++i) {
    if (kernel[i] < 1 || kernel[i] > kMaxWindow) {
      return node.Errorf("kernel size ", kernel[i], " is out of range");
    }
    if (stride[i] < 1 || stride[i] > kMaxWindow) {
      return node.Errorf("stride ", stride[i], " is out of range");
    }
    if (dilation[i] < 1 || dilation[i] > kMaxWindow) {
      return node.Errorf("dilation ", dilation[i], " is out of range");
    }
  }
  std::array<int64_t, 4> out = {0, 0, 0, 0};
  if (auto_pad == "NOTSET" || auto_pad.empty()) {
    if (pads.has_value()) {
      if (pads->size() != 4) {
        return node.Errorf("attribute 'pads' has ", pads->size(), " entries, expected 4");
      }
      for (int i = 0; i < 4; ++i) {
        if ((*pads)[i] < 0 || (*pads)[i] > kMaxWindow) {
          return node.Errorf("attribute 'pads' entry ", (*pads)[i], " is out of range");
        }
        out[i] = (*pads)[i];  // ONNX [h_begin, w_begin, h_end, w_end] = {top, left, bottom, right}
      }
    }
    return out;
  }
  if (auto_pad == "VALID") return out;
  if (auto_pad != "SAME_UPPER" && auto_pad != "SAME_LOWER") {
    return node.Errorf("attribute 'auto_pad' has unknown value '", auto_pad, "'");
  }
  for (int i = 0; i < 2; ++i) {
    const int64_t in = input_hw[i];
    const int64_t out_size = (in + stride[i] - 1) / stride[i];
    // All terms are below 2^31 * 2^31 or the input size, so int64 holds them.
    const int64_t span = (kernel[i] - 1) * dilation[i] + 1;
    ASSIGN_OR_RETURN(int64_t reach, CheckedMul(node, out_size - 1, stride[i], "auto_pad"));
    ASSIGN_OR_RETURN(reach, CheckedAdd(node, reach, span, "auto_pad"));
    const int64_t total = std::max<int64_t>(0, reach - in);
    const int64_t small = total / 2, large = total - total / 2;
    out[i] = auto_pad == "SAME_UPPER" ? small : large;      // begin
    out[i + 2] = auto_pad == "SAME_UPPER" ? large : small;  // end
  }
  return out;
}

}  // namespace iosfarm::graph::onnx_import
