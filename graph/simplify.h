// Inference simplification passes over a shape-inferred Graph.
//
// Simplify returns a new graph in which:
//  - Identity and Dropout nodes are removed (their consumers read the input);
//  - a BatchNormalization whose input is a Conv output read by nothing else
//    is folded into that Conv (weights and bias rescaled when the weights
//    hold data; the Conv gains a bias either way);
//  - a Relu, Clip, Sigmoid or Tanh whose input is a Conv output read by
//    nothing else (and not a graph output) is fused into the Conv;
//  - a constant zero Pad of only H and W whose output is read by one Conv, or
//    by one AveragePool without padding, is folded into that node's pads
//    (the AveragePool then counts padding, as the Pad made it do);
//  - nodes whose outputs reach no graph output are dropped.
// Graph outputs keep their names. The input must validate.
#ifndef IOSFARM_GRAPH_SIMPLIFY_H_
#define IOSFARM_GRAPH_SIMPLIFY_H_

#include "common/status.h"
#include "graph/graph.h"

namespace iosfarm::graph {

struct SimplifyOptions {
  bool fold_batch_norm = true;
  bool fuse_activations = true;
  bool fold_pads = true;
};

StatusOr<Graph> Simplify(const Graph& graph, const SimplifyOptions& options = {});
// The same, moving the nodes (and their weights) out of `graph` instead of
// copying them (for importers: no second copy of the weights). `graph` is
// left valid but unspecified.
StatusOr<Graph> Simplify(Graph&& graph, const SimplifyOptions& options = {});

}  // namespace iosfarm::graph

#endif  // IOSFARM_GRAPH_SIMPLIFY_H_
