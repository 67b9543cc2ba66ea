// OpDag: the operators of a graph (every node except Constant) as a DAG over
// dense positions in a fixed topological order.
//
// Constant nodes are not operators to schedule: they are free inputs, so they
// have no position and create no edges. Everything in scheduler/ios works on
// this view. Immutable after BuildOpDag; safe to share between threads.
#ifndef IOSFARM_SCHEDULER_IOS_OP_DAG_H_
#define IOSFARM_SCHEDULER_IOS_OP_DAG_H_

#include <vector>

#include "common/status.h"
#include "graph/graph.h"

namespace iosfarm::scheduler::ios {

struct OpDag {
  // Operators in topological order (graph.TopologicalOrder(), Constants
  // dropped). order[p] is the node at position p.
  std::vector<graph::NodeId> order;
  // position[node] = p, or -1 for Constant nodes.
  std::vector<int> position;
  // Distinct operator predecessors / successors of each position, ascending.
  std::vector<std::vector<int>> preds;
  std::vector<std::vector<int>> succs;

  int size() const { return static_cast<int>(order.size()); }
};

// True for nodes the scheduler does not schedule (Constant).
bool IsFreeNode(const graph::Node& node);

// Builds the operator DAG. Fails (InvalidArgument, naming a node) only when
// the graph has a cycle or an input id out of range.
StatusOr<OpDag> BuildOpDag(const graph::Graph& graph);

}  // namespace iosfarm::scheduler::ios

#endif  // IOSFARM_SCHEDULER_IOS_OP_DAG_H_
