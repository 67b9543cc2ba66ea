#include "scheduler/ios/stages/stage_graph.h"

#include <unordered_map>
#include <unordered_set>

#include "common/strings.h"
#include "scheduler/ios/op_dag.h"

namespace iosfarm::scheduler::ios {

StatusOr<graph::Graph> ExtractStageGraph(const graph::Graph& graph, const Stage& stage) {
  std::unordered_set<graph::NodeId> members;
  std::vector<graph::NodeId> order;
  for (const auto& group : stage.groups) {
    for (graph::NodeId id : group) {
      if (id < 0 || id >= graph.num_nodes()) {
        return absl::InvalidArgumentError(StrCat("stage node id ", id, " out of range"));
      }
      if (IsFreeNode(graph.node(id))) {
        return absl::InvalidArgumentError(
            StrCat("stage lists Constant node '", graph.node(id).name, "'"));
      }
      if (!members.insert(id).second) {
        return absl::InvalidArgumentError(
            StrCat("stage lists '", graph.node(id).name, "' twice"));
      }
      order.push_back(id);
    }
  }
  if (order.empty()) return absl::InvalidArgumentError("empty stage");
  graph::Graph out(StrCat(graph.name(), "/stage"));
  std::unordered_map<graph::ValueId, graph::ValueId> value_map;  // old -> new
  std::unordered_set<graph::ValueId> read_inside;
  // Inputs and copied Constants first, then the stage's ops in order.
  for (graph::NodeId id : order) {
    for (graph::ValueId v : graph.node(id).inputs) {
      const graph::Value& value = graph.value(v);
      if (value.producer != graph::kNoNode && members.count(value.producer)) {
        read_inside.insert(v);
        continue;
      }
      if (value_map.count(v)) continue;
      if (value.producer != graph::kNoNode && IsFreeNode(graph.node(value.producer))) {
        graph::Node constant = graph.node(value.producer);
        constant.inputs.clear();
        constant.outputs.clear();
        const graph::NodeId copy = out.AddNode(std::move(constant), 1);
        const graph::ValueId new_value = out.node(copy).outputs[0];
        out.mutable_value(new_value).name = value.name;
        out.mutable_value(new_value).shape = value.shape;
        value_map[v] = new_value;
      } else {
        value_map[v] = out.AddInput(value.name, value.shape);
      }
    }
  }
  for (graph::NodeId id : order) {
    const graph::Node& original = graph.node(id);
    graph::Node node = original;
    node.outputs.clear();
    for (graph::ValueId& v : node.inputs) v = value_map.at(v);
    const graph::NodeId copy = out.AddNode(std::move(node), static_cast<int>(original.outputs.size()));
    for (size_t i = 0; i < original.outputs.size(); ++i) {
      const graph::ValueId old_value = original.outputs[i];
      const graph::ValueId new_value = out.node(copy).outputs[i];
      out.mutable_value(new_value).name = graph.value(old_value).name;
      out.mutable_value(new_value).shape = graph.value(old_value).shape;
      value_map[old_value] = new_value;
    }
  }
  for (graph::NodeId id : order) {
    for (graph::ValueId v : graph.node(id).outputs) {
      if (!read_inside.count(v)) out.AddOutput(value_map.at(v));
    }
  }
  return out;
}

}  // namespace iosfarm::scheduler::ios
