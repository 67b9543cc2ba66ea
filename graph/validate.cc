#include "graph/validate.h"

#include <set>

#include "common/strings.h"
#include "graph/shape_inference.h"

namespace iosfarm::graph {
namespace {

Status Invalid(const Graph& graph, std::string_view what) {
  return absl::InvalidArgumentError(StrCat("graph '", graph.name(), "': ", what));
}

std::string NodeLabel(const Node& node) {
  return StrCat("node '", node.name, "' (", OpTypeName(node.type), ")");
}

Status CheckIdsAndProducers(const Graph& graph) {
  const int num_values = graph.num_values();
  std::vector<int> produced(num_values, 0);
  std::set<std::string_view> names;
  for (NodeId n = 0; n < graph.num_nodes(); ++n) {
    const Node& node = graph.node(n);
    if (node.name.empty()) return Invalid(graph, StrCat("node #", n, " has no name"));
    if (!names.insert(node.name).second) {
      return Invalid(graph, StrCat("duplicate node name '", node.name, "'"));
    }
    if (!AttributesMatch(node.type, node.attrs)) {
      return Invalid(graph, StrCat(NodeLabel(node), ": attributes do not match op type"));
    }
    for (ValueId v : node.inputs) {
      if (v < 0 || v >= num_values) {
        return Invalid(graph, StrCat(NodeLabel(node), ": input id ", v, " out of range"));
      }
    }
    if (node.outputs.empty()) {
      return Invalid(graph, StrCat(NodeLabel(node), " has no outputs"));
    }
    for (size_t i = 0; i < node.outputs.size(); ++i) {
      const ValueId v = node.outputs[i];
      if (v < 0 || v >= num_values) {
        return Invalid(graph, StrCat(NodeLabel(node), ": output id ", v, " out of range"));
      }
      if (++produced[v] > 1) {
        return Invalid(graph, StrCat("value '", graph.value(v).name,
                                           "' is produced by more than one node"));
      }
      if (graph.value(v).producer != n || graph.value(v).producer_output != static_cast<int>(i)) {
        return Invalid(graph, StrCat("value '", graph.value(v).name,
                                           "' does not record its producer ", NodeLabel(node)));
      }
    }
    for (const auto& [role, tensor] : node.weights) {
      if (tensor.has_data() &&
          static_cast<int64_t>(tensor.data.size()) != tensor.num_elements()) {
        return Invalid(graph, StrCat(NodeLabel(node), ": weight '", role, "' has ",
                                           tensor.data.size(), " values for shape ",
                                           ShapeToString(tensor.shape)));
      }
    }
  }
  std::vector<bool> is_input(num_values, false);
  if (graph.inputs().empty()) return Invalid(graph, "has no inputs");
  for (ValueId v : graph.inputs()) {
    if (v < 0 || v >= num_values) return Invalid(graph, "graph input id out of range");
    if (produced[v] > 0) {
      return Invalid(graph, StrCat("graph input '", graph.value(v).name,
                                         "' is also produced by a node"));
    }
    is_input[v] = true;
  }
  for (const Node& node : graph.nodes()) {
    for (ValueId v : node.inputs) {
      if (produced[v] == 0 && !is_input[v]) {
        return Invalid(graph, StrCat(NodeLabel(node), " reads '", graph.value(v).name,
                                           "', which no node produces and is not a graph "
                                           "input (dangling input)"));
      }
    }
  }
  if (graph.outputs().empty()) return Invalid(graph, "has no outputs");
  for (ValueId v : graph.outputs()) {
    if (v < 0 || v >= num_values) return Invalid(graph, "graph output id out of range");
    if (produced[v] == 0 && !is_input[v]) {
      return Invalid(graph, StrCat("graph output '", graph.value(v).name,
                                         "' is produced by no node"));
    }
  }
  return absl::OkStatus();
}

Status CheckShapes(const Graph& graph, const std::vector<NodeId>& order) {
  for (ValueId v : graph.inputs()) {
    if (graph.value(v).shape.empty()) {
      return Invalid(graph, StrCat("graph input '", graph.value(v).name, "' has no shape"));
    }
  }
  for (NodeId n : order) {
    const Node& node = graph.node(n);
    std::vector<Shape> input_shapes;
    for (ValueId v : node.inputs) input_shapes.push_back(graph.value(v).shape);
    auto inferred = InferNodeShapes(node, input_shapes);
    if (!inferred.ok()) return Invalid(graph, ToStd(inferred.status().message()));
    for (size_t i = 0; i < node.outputs.size(); ++i) {
      const Value& value = graph.value(node.outputs[i]);
      if (value.shape != (*inferred)[i]) {
        return Invalid(graph, StrCat(NodeLabel(node), ": output '", value.name,
                                           "' has shape ", ShapeToString(value.shape),
                                           " but inference gives ",
                                           ShapeToString((*inferred)[i]), " (shape mismatch)"));
      }
    }
  }
  return absl::OkStatus();
}

}  // namespace

Status Validate(const Graph& graph) {
  RETURN_IF_ERROR(CheckIdsAndProducers(graph));
  ASSIGN_OR_RETURN(std::vector<NodeId> order, graph.TopologicalOrder());
  return CheckShapes(graph, order);
}

}  // namespace iosfarm::graph
