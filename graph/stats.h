// Summary statistics of a Graph, as shown by `iosfarm inspect`.
#ifndef IOSFARM_GRAPH_STATS_H_
#define IOSFARM_GRAPH_STATS_H_

#include <map>
#include <string>
#include <utility>
#include <vector>

#include "common/status.h"
#include "graph/cost.h"
#include "graph/graph.h"
#include "graph/width.h"

namespace iosfarm::graph {

struct NamedShape {
  std::string name;
  Shape shape;
};

struct GraphStats {
  std::string name;
  int64_t num_ops = 0;  // nodes other than Constant
  std::map<std::string, int64_t> op_counts;  // by op type name, Constant included
  OpCost cost;
  GraphWidth width;
  std::vector<NamedShape> inputs;
  std::vector<NamedShape> outputs;
};

// Requires inferred shapes; fails only on a cyclic graph.
StatusOr<GraphStats> ComputeStats(const Graph& graph);

}  // namespace iosfarm::graph

#endif  // IOSFARM_GRAPH_STATS_H_
