// FLOP, byte and parameter counts per operator and per graph.
//
// `macs` counts multiply-accumulates of Conv/Gemm/MatMul only (the figure
// papers quote as "GFLOPs", e.g. ResNet-50 ~4.1 G). `flops` counts every
// arithmetic operation (2 per MAC plus element-wise work). Bytes assume fp32
// and count each input/weight read once and each output written once.
#ifndef IOSFARM_GRAPH_COST_H_
#define IOSFARM_GRAPH_COST_H_

#include <cstdint>

#include "graph/graph.h"

namespace iosfarm::graph {

struct OpCost {
  int64_t macs = 0;
  int64_t flops = 0;
  int64_t params = 0;  // weight elements
  int64_t bytes_read = 0;
  int64_t bytes_written = 0;

  OpCost& operator+=(const OpCost& other);
};

// Cost of one node; input/output shapes must be inferred.
OpCost ComputeOpCost(const Graph& graph, const Node& node);

// True for ops that launch no kernel on a device: Constant and the view ops
// (Reshape, Flatten, Identity, Dropout).
bool LaunchesNoKernel(OpType type);

// Sum over all nodes.
OpCost ComputeGraphCost(const Graph& graph);

}  // namespace iosfarm::graph

#endif  // IOSFARM_GRAPH_COST_H_
