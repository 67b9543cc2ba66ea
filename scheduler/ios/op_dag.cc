#include "scheduler/ios/op_dag.h"

#include <algorithm>

#include "common/strings.h"

namespace iosfarm::scheduler::ios {

bool IsFreeNode(const graph::Node& node) { return node.type == graph::OpType::kConstant; }

StatusOr<OpDag> BuildOpDag(const graph::Graph& graph) {
  for (const graph::Node& node : graph.nodes()) {
    for (graph::ValueId v : node.inputs) {
      if (v < 0 || v >= graph.num_values()) {
        return absl::InvalidArgumentError(
            StrCat("node '", node.name, "' reads value id ", v, " out of range"));
      }
    }
  }
  ASSIGN_OR_RETURN(std::vector<graph::NodeId> topo, graph.TopologicalOrder());
  OpDag dag;
  dag.position.assign(graph.num_nodes(), -1);
  for (graph::NodeId id : topo) {
    if (IsFreeNode(graph.node(id))) continue;
    dag.position[id] = static_cast<int>(dag.order.size());
    dag.order.push_back(id);
  }
  const int n = dag.size();
  dag.preds.resize(n);
  dag.succs.resize(n);
  for (int p = 0; p < n; ++p) {
    for (graph::ValueId v : graph.node(dag.order[p]).inputs) {
      const graph::NodeId producer = graph.value(v).producer;
      if (producer == graph::kNoNode || dag.position[producer] < 0) continue;
      dag.preds[p].push_back(dag.position[producer]);
    }
    std::sort(dag.preds[p].begin(), dag.preds[p].end());
    dag.preds[p].erase(std::unique(dag.preds[p].begin(), dag.preds[p].end()),
                       dag.preds[p].end());
    for (int q : dag.preds[p]) dag.succs[q].push_back(p);
  }
  return dag;
}

}  // namespace iosfarm::scheduler::ios
