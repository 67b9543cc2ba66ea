#include "worker/backends/residual_fusion.h"

#include <algorithm>
#include <variant>

namespace iosfarm::worker {
namespace {

using graph::NodeId;
using graph::OpType;
using graph::ValueId;

// Where each node of the stage sits: group and index, or -1.
struct Position {
  int group = -1;
  int index = -1;
};

bool IsGraphOutput(const graph::Graph& graph, ValueId v) {
  return std::find(graph.outputs().begin(), graph.outputs().end(), v) != graph.outputs().end();
}

// The sole consumer of `v`, if it has exactly one and reads it once.
NodeId SoleConsumer(const graph::Graph& graph, ValueId v,
                    const std::vector<std::vector<NodeId>>& consumers) {
  if (consumers[v].size() != 1) return graph::kNoNode;
  const NodeId reader = consumers[v][0];
  const auto& inputs = graph.node(reader).inputs;
  if (std::count(inputs.begin(), inputs.end(), v) != 1) return graph::kNoNode;
  return reader;
}

bool FusableConv(const graph::Graph& graph, NodeId id) {
  const graph::Node& node = graph.node(id);
  if (node.type != OpType::kConv || node.inputs.size() != 1 || node.outputs.size() != 1) {
    return false;
  }
  const auto* attrs = std::get_if<graph::ConvAttrs>(&node.attrs);
  return attrs != nullptr && attrs->activation == graph::Activation::kNone &&
         graph.value(node.outputs[0]).shape.size() == 4;
}

}  // namespace

ResidualFusions ResidualFusions::Find(const graph::Graph& graph,
                                      const scheduler::ios::Stage& stage) {
  return Find(graph, stage, graph.Consumers());
}

ResidualFusions ResidualFusions::Find(const graph::Graph& graph,
                                      const scheduler::ios::Stage& stage,
                                      const std::vector<std::vector<NodeId>>& consumers) {
  ResidualFusions result;
  if (stage.strategy != scheduler::ios::Strategy::kConcurrent) return result;
  std::map<NodeId, Position> where;
  for (size_t g = 0; g < stage.groups.size(); ++g) {
    for (size_t i = 0; i < stage.groups[g].size(); ++i) {
      const NodeId id = stage.groups[g][i];
      if (id < 0 || id >= graph.num_nodes()) return result;  // malformed: the backend says so
      if (where.count(id) != 0) return result;                // listed twice: likewise
      where[id] = {static_cast<int>(g), static_cast<int>(i)};
    }
  }
  const auto same_group_after = [&](NodeId later, NodeId earlier) {
    const Position& a = where.at(later);
    const Position& b = where.at(earlier);
    return a.group == b.group && a.index > b.index;
  };
  for (const auto& [add, add_pos] : where) {
    const graph::Node& add_node = graph.node(add);
    if (add_node.type != OpType::kAdd || add_node.inputs.size() != 2 ||
        add_node.outputs.size() != 1) {
      continue;
    }
    const ValueId sum = add_node.outputs[0];
    for (int k = 0; k < 2; ++k) {
      const ValueId c = add_node.inputs[k];
      const ValueId z = add_node.inputs[1 - k];
      const NodeId conv = graph.value(c).producer;
      if (c == z || conv == graph::kNoNode || where.count(conv) == 0 ||
          result.absorbed_.count(conv) != 0 || !FusableConv(graph, conv) ||
          !same_group_after(add, conv) || SoleConsumer(graph, c, consumers) != add ||
          IsGraphOutput(graph, c)) {
        continue;
      }
      const graph::Shape& shape = graph.value(c).shape;
      if (graph.value(z).shape != shape || graph.value(sum).shape != shape) continue;
      // z is ready at the Add: produced outside the stage, or earlier in the group.
      const NodeId z_producer = graph.value(z).producer;
      if (z_producer != graph::kNoNode && where.count(z_producer) != 0 &&
          !same_group_after(add, z_producer)) {
        continue;
      }
      ResidualFusion fusion;
      fusion.conv = conv;
      fusion.add = add;
      fusion.residual = z;
      fusion.output = sum;
      const NodeId relu = SoleConsumer(graph, sum, consumers);
      if (relu != graph::kNoNode && graph.node(relu).type == OpType::kRelu &&
          graph.node(relu).outputs.size() == 1 && where.count(relu) != 0 &&
          same_group_after(relu, add) && !IsGraphOutput(graph, sum)) {
        fusion.relu = relu;
        fusion.output = graph.node(relu).outputs[0];
        result.absorbed_.insert(relu);
      }
      result.absorbed_.insert(conv);
      result.by_add_[add] = fusion;
      break;
    }
  }
  return result;
}

const ResidualFusion* ResidualFusions::AtAdd(NodeId node) const {
  auto it = by_add_.find(node);
  return it == by_add_.end() ? nullptr : &it->second;
}

std::vector<ResidualFusion> ResidualFusions::all() const {
  std::vector<ResidualFusion> out;
  for (const auto& [add, fusion] : by_add_) out.push_back(fusion);
  return out;
}

}  // namespace iosfarm::worker
