// The graph IR: a model's computation DAG for one batch size.
//
// A Graph owns nodes (operators) and values (tensors). Every value is either a
// graph input or the output of exactly one node; nodes refer to their input and
// output values by id. Ids are dense indices and stay valid while the graph
// lives (nodes are never removed in place: passes build a new Graph).
//
// Construction does not check anything beyond id ranges; Validate()
// (graph/validate.h) checks structure and shapes, and InferShapes()
// (graph/shape_inference.h) fills value shapes. A Graph is a value type: copy
// it freely; it is not thread-safe for concurrent mutation.
#ifndef IOSFARM_GRAPH_GRAPH_H_
#define IOSFARM_GRAPH_GRAPH_H_

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "common/status.h"
#include "graph/attributes.h"
#include "graph/op_type.h"
#include "graph/tensor.h"

namespace iosfarm::graph {

using NodeId = int32_t;
using ValueId = int32_t;
inline constexpr NodeId kNoNode = -1;

struct Value {
  std::string name;
  Shape shape;                // empty until known (scalars do not occur as activations)
  NodeId producer = kNoNode;  // kNoNode for graph inputs and dangling values
  int32_t producer_output = 0;
};

struct Node {
  std::string name;
  OpType type = OpType::kIdentity;
  Attributes attrs;
  std::vector<ValueId> inputs;
  std::vector<ValueId> outputs;
  // Constant parameters by role: Conv "W"/"B", Gemm "B"/"C", MatMul "B",
  // BatchNormalization "scale"/"bias"/"mean"/"var", Constant "value".
  std::map<std::string, Tensor> weights;
};

class Graph {
 public:
  Graph() = default;
  explicit Graph(std::string name) : name_(std::move(name)) {}

  const std::string& name() const { return name_; }
  void set_name(std::string name) { name_ = std::move(name); }

  // Adds a graph input of the given shape.
  ValueId AddInput(std::string name, Shape shape);

  // Adds a value with no producer yet (importers resolve names first and call
  // AddNode later). A value never produced is reported by Validate as dangling.
  ValueId AddValue(std::string name);

  // Adds a node. If node.outputs is empty, `num_outputs` fresh values are
  // created, named "<node name>:<i>" (or "<node name>" when there is one).
  // Otherwise the given output values get this node as producer. Returns the id.
  NodeId AddNode(Node node, int num_outputs = 1);

  // Marks an existing value that no node produces as a graph input (used by
  // deserialisation, which keeps value ids).
  void MarkInput(ValueId value) { inputs_.push_back(value); }

  // Marks a value as a graph output (order is kept).
  void AddOutput(ValueId value) { outputs_.push_back(value); }

  const std::vector<Node>& nodes() const { return nodes_; }
  const std::vector<Value>& values() const { return values_; }
  const std::vector<ValueId>& inputs() const { return inputs_; }
  const std::vector<ValueId>& outputs() const { return outputs_; }
  int num_nodes() const { return static_cast<int>(nodes_.size()); }
  int num_values() const { return static_cast<int>(values_.size()); }

  const Node& node(NodeId id) const { return nodes_[id]; }
  Node& mutable_node(NodeId id) { return nodes_[id]; }
  const Value& value(ValueId id) const { return values_[id]; }
  Value& mutable_value(ValueId id) { return values_[id]; }

  // For each value, the nodes that read it (a node reading a value twice is
  // listed once). O(nodes + edges).
  std::vector<std::vector<NodeId>> Consumers() const;

  // For each node, the distinct nodes producing its inputs (graph-level
  // predecessors), in input order.
  std::vector<std::vector<NodeId>> Predecessors() const;

  // Nodes in a topological order (stable: ties broken by id). Fails with
  // InvalidArgument naming a node on a cycle.
  StatusOr<std::vector<NodeId>> TopologicalOrder() const;

 private:
  std::string name_;
  std::vector<Node> nodes_;
  std::vector<Value> values_;
  std::vector<ValueId> inputs_;
  std::vector<ValueId> outputs_;
};

}  // namespace iosfarm::graph

#endif  // IOSFARM_GRAPH_GRAPH_H_
