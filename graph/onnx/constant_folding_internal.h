// Internal helpers of constant folding, shared by constant_folding.cc
// (dispatch, Constant, Shape, Identity, Dropout), constant_folding_math.cc
// (element-wise math, Cast, Where, Range, ConstantOfShape) and
// constant_folding_shape_ops.cc (ops that move elements: Gather, Slice,
// Concat, Transpose, Reshape, ...). Not part of the importer's API.
#ifndef IOSFARM_GRAPH_ONNX_CONSTANT_FOLDING_INTERNAL_H_
#define IOSFARM_GRAPH_ONNX_CONSTANT_FOLDING_INTERNAL_H_

#include <cstdint>
#include <vector>

#include "common/status.h"
#include "graph/onnx/constant_folding.h"

namespace iosfarm::graph::onnx_import::fold_internal {

// Row-major strides of `dims`.
std::vector<int64_t> Strides(const std::vector<int64_t>& dims);

// Calls fn(index) for the first `count` multi-indices of `dims` in row-major
// order (count is the element count of dims).
template <typename Fn>
void ForEachIndex(const std::vector<int64_t>& dims, int64_t count, Fn fn) {
  std::vector<int64_t> index(dims.size(), 0);
  for (int64_t n = 0; n < count; ++n) {
    fn(index);
    for (int64_t k = static_cast<int64_t>(dims.size()) - 1; k >= 0; --k) {
      if (++index[k] < dims[k]) break;
      index[k] = 0;
    }
  }
}

// A tensor of src's kind with `dims` (count elements) whose element at
// multi-index i is src's element at flat offset source_offset(i).
template <typename Fn>
ConstTensor MoveElements(const ConstTensor& src, std::vector<int64_t> dims, int64_t count,
                         Fn source_offset) {
  ConstTensor out;
  out.kind = src.kind;
  out.dims = std::move(dims);
  if (src.is_float()) {
    out.floats.reserve(static_cast<size_t>(count));
    ForEachIndex(out.dims, count, [&](const std::vector<int64_t>& i) {
      out.floats.push_back(src.floats[source_offset(i)]);
    });
  } else {
    out.ints.reserve(static_cast<size_t>(count));
    ForEachIndex(out.dims, count, [&](const std::vector<int64_t>& i) {
      out.ints.push_back(src.ints[source_offset(i)]);
    });
  }
  return out;
}

// Input i, or an error naming the node when it is absent.
StatusOr<const ConstTensor*> RequiredInput(const NodeView& node,
                                           const std::vector<ConstPtr>& inputs, int i);

// Element count of `dims` within the budget's per-tensor limit, reserved.
StatusOr<int64_t> ReserveDims(const NodeView& node, const std::vector<int64_t>& dims,
                              FoldBudget& budget);

// Element-moving ops (constant_folding_shape_ops.cc).
StatusOr<ConstTensor> FoldGather(const NodeView& node, const std::vector<ConstPtr>& inputs,
                                 FoldBudget& budget);
StatusOr<ConstTensor> FoldUnsqueeze(const NodeView& node, const std::vector<ConstPtr>& inputs,
                                    FoldBudget& budget);
StatusOr<ConstTensor> FoldSqueeze(const NodeView& node, const std::vector<ConstPtr>& inputs,
                                  FoldBudget& budget);
StatusOr<ConstTensor> FoldConcat(const NodeView& node, const std::vector<ConstPtr>& inputs,
                                 FoldBudget& budget);
StatusOr<ConstTensor> FoldSlice(const NodeView& node, const std::vector<ConstPtr>& inputs,
                                FoldBudget& budget);
StatusOr<std::vector<ConstPtr>> FoldSplit(const NodeView& node, const std::vector<ConstPtr>& inputs,
                                          FoldBudget& budget);
StatusOr<ConstTensor> FoldReshape(const NodeView& node, const std::vector<ConstPtr>& inputs,
                                  FoldBudget& budget);
StatusOr<ConstTensor> FoldFlatten(const NodeView& node, const std::vector<ConstPtr>& inputs,
                                  FoldBudget& budget);
StatusOr<ConstTensor> FoldTranspose(const NodeView& node, const std::vector<ConstPtr>& inputs,
                                    FoldBudget& budget);
StatusOr<ConstTensor> FoldExpand(const NodeView& node, const std::vector<ConstPtr>& inputs,
                                 FoldBudget& budget);

// Value-computing ops (constant_folding_math.cc). FoldElementwise handles
// the binary, variadic (Min/Max) and unary element-wise ops.
StatusOr<ConstTensor> FoldElementwise(const NodeView& node, const std::vector<ConstPtr>& inputs,
                                      FoldBudget& budget);
StatusOr<ConstTensor> FoldWhere(const NodeView& node, const std::vector<ConstPtr>& inputs,
                                FoldBudget& budget);
StatusOr<ConstTensor> FoldCast(const NodeView& node, const ConstTensor& x, FoldBudget& budget);
StatusOr<ConstTensor> FoldConstantOfShape(const NodeView& node, const std::vector<ConstPtr>& inputs,
                                          FoldBudget& budget);
StatusOr<ConstTensor> FoldRange(const NodeView& node, const std::vector<ConstPtr>& inputs,
                                FoldBudget& budget);

// Broadcast of several shapes (numpy rules); error naming the node.
StatusOr<std::vector<int64_t>> BroadcastDims(const NodeView& node,
                                             const std::vector<std::vector<int64_t>>& shapes);

// For reading `in` at the multi-index of a broadcast output of rank
// `out_rank`: per output axis, the stride into `in` (0 where broadcast).
std::vector<int64_t> BroadcastStrides(const std::vector<int64_t>& in, size_t out_rank);

}  // namespace iosfarm::graph::onnx_import::fold_internal

#endif  // IOSFARM_GRAPH_ONNX_CONSTANT_FOLDING_INTERNAL_H_
