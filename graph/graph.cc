#include "graph/graph.h"

#include <algorithm>
#include <queue>

#include "common/strings.h"

namespace iosfarm::graph {

ValueId Graph::AddInput(std::string name, Shape shape) {
  ValueId id = AddValue(std::move(name));
  values_[id].shape = std::move(shape);
  inputs_.push_back(id);
  return id;
}

ValueId Graph::AddValue(std::string name) {
  values_.push_back(Value{std::move(name), {}, kNoNode, 0});
  return static_cast<ValueId>(values_.size() - 1);
}

NodeId Graph::AddNode(Node node, int num_outputs) {
  const NodeId id = static_cast<NodeId>(nodes_.size());
  if (node.outputs.empty()) {
    for (int i = 0; i < num_outputs; ++i) {
      node.outputs.push_back(AddValue(
          num_outputs == 1 ? node.name : StrCat(node.name, ":", i)));
    }
  }
  for (size_t i = 0; i < node.outputs.size(); ++i) {
    Value& value = values_[node.outputs[i]];
    value.producer = id;
    value.producer_output = static_cast<int32_t>(i);
  }
  nodes_.push_back(std::move(node));
  return id;
}

std::vector<std::vector<NodeId>> Graph::Consumers() const {
  std::vector<std::vector<NodeId>> consumers(values_.size());
  for (NodeId n = 0; n < num_nodes(); ++n) {
    for (ValueId v : nodes_[n].inputs) {
      auto& list = consumers[v];
      if (list.empty() || list.back() != n) list.push_back(n);
    }
  }
  return consumers;
}

std::vector<std::vector<NodeId>> Graph::Predecessors() const {
  std::vector<std::vector<NodeId>> preds(nodes_.size());
  for (NodeId n = 0; n < num_nodes(); ++n) {
    for (ValueId v : nodes_[n].inputs) {
      NodeId p = values_[v].producer;
      if (p == kNoNode) continue;
      auto& list = preds[n];
      if (std::find(list.begin(), list.end(), p) == list.end()) list.push_back(p);
    }
  }
  return preds;
}

StatusOr<std::vector<NodeId>> Graph::TopologicalOrder() const {
  const auto preds = Predecessors();
  std::vector<std::vector<NodeId>> succs(nodes_.size());
  std::vector<int> indegree(nodes_.size(), 0);
  for (NodeId n = 0; n < num_nodes(); ++n) {
    indegree[n] = static_cast<int>(preds[n].size());
    for (NodeId p : preds[n]) succs[p].push_back(n);
  }
  std::priority_queue<NodeId, std::vector<NodeId>, std::greater<>> ready;
  for (NodeId n = 0; n < num_nodes(); ++n) {
    if (indegree[n] == 0) ready.push(n);
  }
  std::vector<NodeId> order;
  order.reserve(nodes_.size());
  while (!ready.empty()) {
    NodeId n = ready.top();
    ready.pop();
    order.push_back(n);
    for (NodeId s : succs[n]) {
      if (--indegree[s] == 0) ready.push(s);
    }
  }
  if (order.size() != nodes_.size()) {
    for (NodeId n = 0; n < num_nodes(); ++n) {
      if (indegree[n] > 0) {
        return absl::InvalidArgumentError(StrCat(
            "graph '", name_, "' has a cycle through node '", nodes_[n].name,
            "' (", OpTypeName(nodes_[n].type), ")"));
      }
    }
  }
  return order;
}

}  // namespace iosfarm::graph
