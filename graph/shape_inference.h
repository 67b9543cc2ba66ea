// Static shape inference for the graph IR.
//
// InferNodeShapes computes a node's output shapes from its input shapes,
// attributes and weights, checking that they agree (channel counts, broadcast
// rules, axes in range, ...). Errors are InvalidArgument and name the node.
#ifndef IOSFARM_GRAPH_SHAPE_INFERENCE_H_
#define IOSFARM_GRAPH_SHAPE_INFERENCE_H_

#include <vector>

#include "common/status.h"
#include "graph/graph.h"

namespace iosfarm::graph {

// Output shapes of `node` given the shapes of its inputs (in node.inputs
// order). Does not read the graph.
StatusOr<std::vector<Shape>> InferNodeShapes(const Node& node,
                                             const std::vector<Shape>& input_shapes);

// Multidirectional (numpy) broadcast of two shapes; error if incompatible.
StatusOr<Shape> BroadcastShapes(const Shape& a, const Shape& b);

// Fills the shape of every value in topological order. Graph inputs must have
// shapes. Fails on cycles, dangling values and any node-level error.
Status InferShapes(Graph& graph);

}  // namespace iosfarm::graph

#endif  // IOSFARM_GRAPH_SHAPE_INFERENCE_H_
