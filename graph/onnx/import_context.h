// ImportContext: the state of one ONNX import, shared by the driver and the
// op converters.
//
// It maps every ONNX value name to what it is at import time: a constant
// (initializer, Constant node or folded value; initializers are decoded on
// first use) or an IR value of the graph under construction with a known
// static shape. Converters ask for inputs either as constants (weights,
// shape operands) or as IR values (a constant used as an activation becomes
// an IR Constant node, created once per name) and add IR nodes through
// AddNode, which infers and records their output shapes.
//
// Errors name the node and the input. Not thread-safe; the Graph and the
// ONNX protos passed in must outlive the context.
#ifndef IOSFARM_GRAPH_ONNX_IMPORT_CONTEXT_H_
#define IOSFARM_GRAPH_ONNX_IMPORT_CONTEXT_H_

#include <map>
#include <optional>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#include "common/status.h"
#include "graph/graph.h"
#include "graph/onnx/constant_folding.h"
#include "graph/onnx/onnx_node.h"
#include "graph/onnx/shape_helpers.h"

namespace iosfarm::graph::onnx_import {

class ImportContext {
 public:
  // `used` lists the value names that live nodes or graph outputs read.
  ImportContext(Graph& graph, int64_t max_tensor_elements, std::optional<BatchRewrite> batch,
                std::set<std::string> used);

  // Reserves an IR node name (the ONNX nodes' display names), so that nodes
  // the context invents (materialised constants) never take it.
  void ReserveNodeName(const std::string& name) { node_names_.insert(name); }

  // Registration (names are unique: OrderGraph checked them). An initializer
  // proto's data is freed once it is decoded (Constant): the context owns it
  // from here on.
  void AddInitializer(const std::string& name, onnx::TensorProto& proto);
  void AddGraphInput(const std::string& name, Shape shape);
  void SetConstant(const std::string& name, ConstPtr value);

  // Memory: `consumers` counts the reads of each name still to come (one per
  // node input slot of the nodes to import, one per graph output).
  // NodeImported(node) counts `node`'s reads as done; a constant read by no
  // one any more is dropped from the cache, so an import holds about the
  // model's weights once (IR copies) plus the tensors in flight. Reading a
  // dropped constant again is an Internal error (a miscount), never stale
  // data.
  void SetConsumers(std::unordered_map<std::string, int> consumers) {
    consumers_ = std::move(consumers);
  }
  void NodeImported(const NodeView& node);

  // True when `name` is a constant (initializer, constant or folded value).
  bool IsConstant(const std::string& name) const;
  // True when live nodes or graph outputs read `name`.
  bool IsUsed(const std::string& name) const { return used_.count(name) > 0; }

  // The constant `name` (decoding an initializer on first use). Errors when
  // the name is an activation or unknown.
  StatusOr<ConstPtr> Constant(const std::string& name);

  // Input i of `node` as a constant; error "input i ('role') must be a
  // constant" when it is an activation or absent.
  StatusOr<ConstPtr> ConstantInput(const NodeView& node, int i, std::string_view role);
  // As ConstantInput, but nullptr when the input is absent.
  StatusOr<ConstPtr> OptionalConstantInput(const NodeView& node, int i, std::string_view role);

  // The IR value of `name`; a constant is materialised as an IR Constant node.
  StatusOr<ValueId> Value(const std::string& name);
  // Input i of `node` as an IR value; error when absent.
  StatusOr<ValueId> ActivationInput(const NodeView& node, int i);

  const Shape& ShapeOf(ValueId value) const { return graph_.value(value).shape; }

  // The IR weight tensor (fp32 copy) of `constant` for role `role` of `node`.
  // Copies are counted: all IR weights together may hold at most
  // max_tensor_elements elements (a shared initializer counts per use).
  StatusOr<Tensor> WeightTensor(const NodeView& node, const ConstTensor& constant,
                                std::string_view role);

  // Adds an IR node for `node` with the given inputs; its outputs are IR
  // values named after the node's ONNX outputs (num_outputs of them), with
  // shapes inferred now. Fails when inference fails or an output exceeds the
  // element limit. Returns the output value ids.
  StatusOr<std::vector<ValueId>> AddNode(const NodeView& node, OpType type, Attributes attrs,
                                         std::vector<ValueId> inputs,
                                         std::map<std::string, Tensor> weights = {},
                                         int num_outputs = 1);

  // One part of `node`'s decomposition (an ONNX operator imported as several
  // IR nodes): an IR node named "<node>/<part>" whose one output no ONNX name
  // refers to. The decomposition's last node is AddNode's (it gives the ONNX
  // outputs). Shapes and limits as AddNode.
  StatusOr<ValueId> AddPartNode(const NodeView& node, std::string_view part, OpType type,
                                Attributes attrs, std::vector<ValueId> inputs);
  // An IR Constant node holding `tensor`, one part of `node`'s decomposition;
  // its elements count against the weight limit.
  StatusOr<ValueId> AddPartConstant(const NodeView& node, std::string_view part, Tensor tensor);

  FoldBudget& budget() { return budget_; }
  const std::optional<BatchRewrite>& batch() const { return batch_; }
  int64_t max_tensor_elements() const { return max_tensor_elements_; }
  Graph& graph() { return graph_; }

 private:
  struct Entry {
    ConstPtr constant;                         // set for constants
    onnx::TensorProto* initializer = nullptr;  // undecoded initializer
    ValueId value = -1;                        // IR value, once there is one
    bool dropped = false;                      // a constant no one reads any more
  };

  std::string UniqueNodeName(const std::string& base);
  // Infers `ir`'s output shapes, checks them against the element limit and
  // adds it with outputs named `output_names` (one per output).
  StatusOr<std::vector<ValueId>> AddInferredNode(const NodeView& node, Node ir,
                                                 const std::vector<std::string>& output_names);
  Status ReserveWeightElements(int64_t count, std::string_view what);
  StatusOr<ValueId> MaterializeConstant(const std::string& name, Entry& entry);
  // An IR Constant node `node_name` holding `tensor` as value `value_name`.
  ValueId AddConstantNode(std::string node_name, const std::string& value_name, Tensor tensor);

  Graph& graph_;
  int64_t max_tensor_elements_;
  std::optional<BatchRewrite> batch_;
  std::set<std::string> used_;
  FoldBudget budget_;
  int64_t weight_elements_left_;
  std::unordered_map<std::string, Entry> entries_;
  std::unordered_map<std::string, int> consumers_;
  std::set<std::string> node_names_;
};

}  // namespace iosfarm::graph::onnx_import

#endif  // IOSFARM_GRAPH_ONNX_IMPORT_CONTEXT_H_
