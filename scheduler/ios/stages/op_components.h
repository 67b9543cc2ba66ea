// ComponentOf: a connected component of an op set over per-op neighbour
// masks (a stage's groups are the components of its ops: endings.h).
#ifndef IOSFARM_SCHEDULER_IOS_STAGES_OP_COMPONENTS_H_
#define IOSFARM_SCHEDULER_IOS_STAGES_OP_COMPONENTS_H_

#include <vector>

#include "scheduler/ios/op_bits.h"

namespace iosfarm::scheduler::ios {

// The ops of `ops` connected to op `first` (one of them) through ops of
// `ops`, where adjacent[i] holds op i's predecessors and successors.
template <int W>
OpBits<W> ComponentOf(int first, const OpBits<W>& ops, const std::vector<OpBits<W>>& adjacent) {
  OpBits<W> component, frontier;
  frontier.Set(first);
  while (!frontier.Empty()) {
    component |= frontier;
    OpBits<W> reached;
    frontier.ForEach([&](int i) { reached |= adjacent[i]; });
    frontier = (reached & ops).Minus(component);
  }
  return component;
}

}  // namespace iosfarm::scheduler::ios

#endif  // IOSFARM_SCHEDULER_IOS_STAGES_OP_COMPONENTS_H_
