// Graph width: the size of the largest set of operators with no path between
// any two of them (largest antichain), i.e. the most operators that could ever
// run concurrently. Constant nodes are not operators and are ignored.
#ifndef IOSFARM_GRAPH_WIDTH_H_
#define IOSFARM_GRAPH_WIDTH_H_

#include <cstdint>

#include "common/status.h"
#include "graph/graph.h"

namespace iosfarm::graph {

struct GraphWidth {
  int64_t width = 0;
  bool exact = true;  // false: a lower bound (largest topological level)
};

// Exact (Dilworth: operators minus a maximum matching in the transitive
// closure, Hopcroft-Karp) for graphs of up to `exact_limit` operators; above
// that, the size of the largest longest-path level, a lower bound.
// Fails only if the graph has a cycle.
StatusOr<GraphWidth> ComputeWidth(const Graph& graph, int64_t exact_limit = 4096);

}  // namespace iosfarm::graph

#endif  // IOSFARM_GRAPH_WIDTH_H_
