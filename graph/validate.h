// Structural and shape validation of a Graph.
#ifndef IOSFARM_GRAPH_VALIDATE_H_
#define IOSFARM_GRAPH_VALIDATE_H_

#include "common/status.h"
#include "graph/graph.h"

namespace iosfarm::graph {

// Checks that: ids are in range; every value has exactly one producer or is a
// graph input; every node's input is produced (no dangling inputs); node
// attributes match their op type; weights required by the op are present with
// consistent shapes; the graph is acyclic; the graph has inputs and outputs;
// every stored shape equals the shape inference result (shape mismatch).
// Errors are InvalidArgument naming the node or value.
Status Validate(const Graph& graph);

}  // namespace iosfarm::graph

#endif  // IOSFARM_GRAPH_VALIDATE_H_
