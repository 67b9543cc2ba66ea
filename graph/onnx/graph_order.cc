#include "graph/onnx/graph_order.h"

#include <queue>
#include <unordered_map>

#include "common/strings.h"

namespace iosfarm::graph::onnx_import {
namespace {

std::string Label(const onnx::NodeProto& node, const std::string& name) {
  return StrCat("node '", name, "' (", node.op_type(), ")");
}

std::vector<std::string> DisplayNames(const onnx::GraphProto& graph) {
  std::vector<std::string> names(graph.node_size());
  std::set<std::string> taken;
  for (int i = 0; i < graph.node_size(); ++i) {
    const onnx::NodeProto& node = graph.node(i);
    std::string name = node.name();
    if (name.empty() || taken.count(name) > 0) {
      const std::string base = StrCat(node.op_type().empty() ? "node" : node.op_type(), "_", i);
      name = base;
      for (int k = 1; taken.count(name) > 0; ++k) name = StrCat(base, "_", k);
    }
    taken.insert(name);
    names[i] = std::move(name);
  }
  return names;
}

}  // namespace

StatusOr<GraphOrder> OrderGraph(const onnx::GraphProto& graph,
                                const std::set<std::string>& defined) {
  GraphOrder result;
  result.names = DisplayNames(graph);
  const int n = graph.node_size();

  // Producer of every node output.
  std::unordered_map<std::string, int> producer;
  for (int i = 0; i < n; ++i) {
    const onnx::NodeProto& node = graph.node(i);
    if (node.op_type().empty()) {
      return absl::InvalidArgumentError(StrCat("node #", i, " has no op_type"));
    }
    for (const std::string& output : node.output()) {
      if (output.empty()) continue;
      if (defined.count(output) > 0) {
        return absl::InvalidArgumentError(
            StrCat(Label(node, result.names[i]), " writes '", output,
                   "', which is already a graph input or initializer"));
      }
      auto [it, inserted] = producer.emplace(output, i);
      if (!inserted) {
        return absl::InvalidArgumentError(
            StrCat("value '", output, "' is produced by both ",
                   Label(graph.node(it->second), result.names[it->second]), " and ",
                   Label(node, result.names[i])));
      }
    }
  }

  // Edges, with dangling inputs reported.
  std::vector<std::vector<int>> successors(n);
  std::vector<int> indegree(n, 0);
  for (int i = 0; i < n; ++i) {
    const onnx::NodeProto& node = graph.node(i);
    for (const std::string& input : node.input()) {
      if (input.empty() || defined.count(input) > 0) continue;
      auto it = producer.find(input);
      if (it == producer.end()) {
        return absl::InvalidArgumentError(
            StrCat(Label(node, result.names[i]), " reads '", input,
                   "', which no node, graph input or initializer defines (dangling input)"));
      }
      successors[it->second].push_back(i);
      ++indegree[i];
    }
  }
  for (const onnx::ValueInfoProto& output : graph.output()) {
    if (defined.count(output.name()) == 0 && producer.count(output.name()) == 0) {
      return absl::InvalidArgumentError(
          StrCat("graph output '", output.name(), "' is not produced by any node"));
    }
  }

  // Kahn's algorithm, stable in file order.
  std::vector<int> topo;
  topo.reserve(n);
  std::priority_queue<int, std::vector<int>, std::greater<>> ready;
  for (int i = 0; i < n; ++i) {
    if (indegree[i] == 0) ready.push(i);
  }
  while (!ready.empty()) {
    const int i = ready.top();
    ready.pop();
    topo.push_back(i);
    for (int s : successors[i]) {
      if (--indegree[s] == 0) ready.push(s);
    }
  }
  if (static_cast<int>(topo.size()) != n) {
    for (int i = 0; i < n; ++i) {
      if (indegree[i] > 0) {
        return absl::InvalidArgumentError(
            StrCat("the graph has a cycle through ", Label(graph.node(i), result.names[i])));
      }
    }
  }

  // Liveness: walk back from the graph outputs.
  std::vector<bool> live(n, false);
  std::vector<int> stack;
  auto mark = [&](const std::string& value) {
    result.used.insert(value);
    auto it = producer.find(value);
    if (it != producer.end() && !live[it->second]) {
      live[it->second] = true;
      stack.push_back(it->second);
    }
  };
  for (const onnx::ValueInfoProto& output : graph.output()) mark(output.name());
  while (!stack.empty()) {
    const int i = stack.back();
    stack.pop_back();
    for (const std::string& input : graph.node(i).input()) {
      if (!input.empty()) mark(input);
    }
  }
  for (int i : topo) {
    if (live[i]) result.order.push_back(i);
  }
  return result;
}

}  // namespace iosfarm::graph::onnx_import
