// Graphviz DOT export of a Graph.
#ifndef IOSFARM_GRAPH_DOT_EXPORT_H_
#define IOSFARM_GRAPH_DOT_EXPORT_H_

#include <string>

#include "graph/graph.h"

namespace iosfarm::graph {

// A `digraph` with one box per node (name, op type, key attributes, output
// shape), one ellipse per graph input and output, and one edge per tensor
// use labelled with its shape. Names are escaped, so any node name is safe.
std::string ExportDot(const Graph& graph);

}  // namespace iosfarm::graph

#endif  // IOSFARM_GRAPH_DOT_EXPORT_H_
