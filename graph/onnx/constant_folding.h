// Constant folding of ONNX nodes whose inputs are all constants.
//
// The importer folds every node it can evaluate at import time: constant
// subgraphs (Constant, Identity over initializers, arithmetic on constants)
// and shape arithmetic (Shape of a value with a static shape, Gather,
// Unsqueeze, Concat, Slice, Reshape, Cast, Range, ...). The result is a
// ConstTensor per node output.
//
// Memory is bounded: every folded tensor is checked against the per-tensor
// limit and a running total (FoldBudget) before it is allocated. Integer
// arithmetic is checked for overflow and division by zero. Errors are
// InvalidArgument naming the node. Thread-compatible.
#ifndef IOSFARM_GRAPH_ONNX_CONSTANT_FOLDING_H_
#define IOSFARM_GRAPH_ONNX_CONSTANT_FOLDING_H_

#include <cstdint>
#include <memory>
#include <string_view>
#include <vector>

#include "common/status.h"
#include "graph/onnx/onnx_node.h"
#include "graph/onnx/onnx_tensor.h"

namespace iosfarm::graph::onnx_import {

// Constants are shared (Identity and Dropout alias their input).
using ConstPtr = std::shared_ptr<const ConstTensor>;

// Bounds the elements that folding may allocate.
class FoldBudget {
 public:
  FoldBudget(int64_t max_tensor_elements, int64_t max_total_elements)
      : max_tensor_elements_(max_tensor_elements), remaining_(max_total_elements) {}

  // Accounts for a new tensor of `count` elements made by `node`; error when
  // it exceeds the per-tensor limit or what remains of the total.
  Status Reserve(const NodeView& node, int64_t count);

  int64_t max_tensor_elements() const { return max_tensor_elements_; }

 private:
  int64_t max_tensor_elements_;
  int64_t remaining_;
};

// True for the op types FoldNode can evaluate.
bool IsFoldableOp(std::string_view op_type);

// Evaluates `node`. inputs[i] is null for an absent optional input (and
// inputs.size() == node.num_inputs()). Returns one constant per node output;
// outputs the op does not produce (e.g. an unused Dropout mask) are null.
StatusOr<std::vector<ConstPtr>> FoldNode(const NodeView& node, const std::vector<ConstPtr>& inputs,
                                         FoldBudget& budget);

// Shape (with opset-15 start/end) or Size of a value whose static shape is
// `shape`: the node's single output as a constant.
StatusOr<ConstPtr> FoldShapeOf(const NodeView& node, const std::vector<int64_t>& shape,
                               FoldBudget& budget);

}  // namespace iosfarm::graph::onnx_import

#endif  // IOSFARM_GRAPH_ONNX_CONSTANT_FOLDING_H_
