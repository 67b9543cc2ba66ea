// Small graphs shared by the graph/ tests.
#ifndef IOSFARM_GRAPH_TEST_GRAPHS_H_
#define IOSFARM_GRAPH_TEST_GRAPHS_H_

#include "graph/graph.h"

namespace iosfarm::graph::testing {

// input [1,8,16,16] -> conv3x3(16)+BN+Relu -> {conv1x1(8), maxpool} -> concat
// -> Identity -> GAP -> flatten -> fc(10). 9 nodes. Weights have data when
// `with_data` (deterministic values).
Graph SmallBranchyGraph(bool with_data);

}  // namespace iosfarm::graph::testing

#endif  // IOSFARM_GRAPH_TEST_GRAPHS_H_
