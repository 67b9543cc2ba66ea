// Residual-add fusion: the Conv -> Add (-> Relu) chains of a stage that a
// backend runs as one convolution adding a residual tensor z before the
// activation, y = act(conv(x, W) + B + z) (cuDNN: the z input of
// cudnnConvolutionBiasActivationForward; oneDNN: a sum post-op before the
// eltwise Relu post-op). ResNet's "conv3 + shortcut, Relu" is the model.
//
// A chain is fused, "where the graph allows", when all of these hold:
//  - the stage is concurrent (a merge stage holds only its merged conv);
//  - conv: a Conv with one input and a 4-D output and NO activation of its
//    own: act(conv + B) + z is not conv + B + z followed by an activation,
//    so no single call computes it;
//  - add: an Add that is the only consumer of the conv's output and reads
//    it once, in the same group of the same stage; its other operand z has
//    exactly the conv output's shape (no broadcasting) and is produced before
//    the Add: by an earlier op of that group, or outside the stage (an
//    earlier stage, a graph input, a constant); z produced in another group
//    of the stage, or later in the group, is never fused (the stage would be
//    invalid anyway);
//  - the conv's output is not a graph output (nothing else needs it stored);
//  - relu (optional): when the Add's only consumer is a Relu in the same
//    group, later than the Add, and the Add's output is not a graph output,
//    the Relu is the fused activation; otherwise the activation is none.
// When both operands of an Add qualify (a ResNet projection block: conv3 and
// the projection conv), the first in the Add's inputs is the conv; the other
// conv's output is z.
//
// Where the fused op runs: at the Add's position in the group. Its inputs are
// ready there (x before the conv, z before the Add), nothing between the conv
// and the Add reads the conv's output (the Add is its only consumer), and
// nothing between the Add and the Relu reads the Add's output. The conv's
// output (and the Add's when the Relu is fused) is never stored; the fused op
// writes `output`. Backends that cannot run a fused instance fall back to the
// three ops, computing the same values.
//
// Pure functions of their arguments; thread-safe.
#ifndef IOSFARM_WORKER_BACKENDS_RESIDUAL_FUSION_H_
#define IOSFARM_WORKER_BACKENDS_RESIDUAL_FUSION_H_

#include <map>
#include <set>
#include <vector>

#include "graph/graph.h"
#include "scheduler/ios/stages/stage.h"

namespace iosfarm::worker {

struct ResidualFusion {
  graph::NodeId conv = graph::kNoNode;
  graph::NodeId add = graph::kNoNode;
  graph::NodeId relu = graph::kNoNode;  // kNoNode: no activation after the sum
  graph::ValueId residual = -1;         // z: the Add's other operand
  graph::ValueId output = -1;           // what the fused op writes
};

// The fusions of one stage.
class ResidualFusions {
 public:
  ResidualFusions() = default;

  // The fusions of `stage` of `graph` (shapes inferred). `consumers` is
  // graph.Consumers() (pass it when calling for many stages). Node ids out of
  // range are ignored here (the backends report them).
  static ResidualFusions Find(const graph::Graph& graph, const scheduler::ios::Stage& stage);
  static ResidualFusions Find(const graph::Graph& graph, const scheduler::ios::Stage& stage,
                              const std::vector<std::vector<graph::NodeId>>& consumers);

  // The fusion whose Add is `node`, or nullptr.
  const ResidualFusion* AtAdd(graph::NodeId node) const;
  // True for a Conv or Relu that runs inside a fusion (at its Add).
  bool Absorbed(graph::NodeId node) const { return absorbed_.count(node) > 0; }

  int size() const { return static_cast<int>(by_add_.size()); }
  std::vector<ResidualFusion> all() const;

 private:
  std::map<graph::NodeId, ResidualFusion> by_add_;
  std::set<graph::NodeId> absorbed_;
};

}  // namespace iosfarm::worker

#endif  // IOSFARM_WORKER_BACKENDS_RESIDUAL_FUSION_H_
