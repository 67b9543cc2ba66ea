#include "graph/stats.h"

namespace iosfarm::graph {

StatusOr<GraphStats> ComputeStats(const Graph& graph) {
  GraphStats stats;
  stats.name = graph.name();
  for (const Node& node : graph.nodes()) {
    ++stats.op_counts[std::string(OpTypeName(node.type))];
    if (node.type != OpType::kConstant) ++stats.num_ops;
  }
  stats.cost = ComputeGraphCost(graph);
  ASSIGN_OR_RETURN(stats.width, ComputeWidth(graph));
  for (ValueId v : graph.inputs()) stats.inputs.push_back({graph.value(v).name, graph.value(v).shape});
  for (ValueId v : graph.outputs()) {
    stats.outputs.push_back({graph.value(v).name, graph.value(v).shape});
  }
  return stats;
}

}  // namespace iosfarm::graph
