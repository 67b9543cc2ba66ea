// Watts-Strogatz random graphs turned into DAGs, as RandWire builds them.
//
// WattsStrogatzDag(n, k, p, seed) follows the generator of the RandWire paper
// (Xie et al., 2019, sec. 3.2) and networkx's watts_strogatz_graph: start from
// a ring lattice where node i links to its k/2 nearest neighbours on each
// side; then, for j = 1..k/2 and for every node i in order, with probability p
// rewire the edge (i, i+j mod n) to (i, w) with w drawn uniformly among the
// nodes that are neither i nor already linked to i. The undirected graph is
// made a DAG by pointing every edge from the lower to the higher node index.
//
// Randomness comes from a SplitMix64 stream seeded with `seed` (draws in
// [0,1) use the top 53 bits; integer draws use modulo), so the same arguments
// give the same graph on every platform and compiler. Pure function,
// thread-safe.
#ifndef IOSFARM_GRAPH_MODELS_WATTS_STROGATZ_H_
#define IOSFARM_GRAPH_MODELS_WATTS_STROGATZ_H_

#include <cstdint>
#include <utility>
#include <vector>

#include "common/status.h"

namespace iosfarm::graph::models {

struct RandomDag {
  int num_nodes = 0;
  // Edges (u, v) with u < v, sorted, no duplicates.
  std::vector<std::pair<int, int>> edges;

  // For each node, its predecessors in increasing order.
  std::vector<std::vector<int>> Predecessors() const;
  // Nodes with no predecessor (they read the stage input), increasing.
  std::vector<int> InputNodes() const;
  // Nodes with no successor (they feed the stage output), increasing.
  std::vector<int> OutputNodes() const;
};

// InvalidArgument unless k is even, 0 < k < n, n <= 100000 and 0 <= p <= 1.
StatusOr<RandomDag> WattsStrogatzDag(int n, int k, double p, uint64_t seed);

}  // namespace iosfarm::graph::models

#endif  // IOSFARM_GRAPH_MODELS_WATTS_STROGATZ_H_
