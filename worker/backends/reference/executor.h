// The reference executor: runs graphs, stages and schedules with the plain
// reference kernels (kernels.h). It is the oracle every backend is compared
// with (tests/conformance) and is meant to be obviously correct, not fast.
//
// Weights without data are materialised on the fly per executed node with
// the deterministic values of weights.h, exactly as the backends do. Values
// produced by Constant nodes (which schedules do not list) are computed on
// demand when an executed node reads them. All functions are thread-safe
// (they share no state); `values` belongs to the caller.
#ifndef IOSFARM_WORKER_BACKENDS_REFERENCE_EXECUTOR_H_
#define IOSFARM_WORKER_BACKENDS_REFERENCE_EXECUTOR_H_

#include <unordered_map>
#include <vector>

#include "common/status.h"
#include "graph/graph.h"
#include "graph/tensor.h"
#include "scheduler/ios/schedule.h"
#include "scheduler/ios/stages/stage.h"

namespace iosfarm::worker::reference {

// Tensors computed so far, by value id.
using ValueMap = std::unordered_map<graph::ValueId, graph::Tensor>;

// Executes node `id`: reads its inputs from `values` and stores its outputs
// there. FailedPrecondition naming the node and value when an input is
// missing (and not a Constant's output); InvalidArgument from the kernels.
Status ExecuteNode(const graph::Graph& graph, graph::NodeId id, ValueMap& values);

// Executes one stage. Concurrent: each group's ops in order, groups one after
// another (they share no edge, so any order gives the same result). Merge:
// the single convolution `stage.merged` (weights assembled from the branches,
// merged_conv_weights.h), whose output channels are then copied out to each
// branch's output. InvalidArgument for a merge stage without a merged conv.
Status ExecuteStage(const graph::Graph& graph, const scheduler::ios::Stage& stage,
                    ValueMap& values);

// Binds `inputs` (graph.inputs() order, shapes equal to the graph's) into a
// ValueMap. InvalidArgument on a count, shape or data size mismatch.
StatusOr<ValueMap> BindInputs(const graph::Graph& graph,
                              const std::vector<graph::Tensor>& inputs);

// The graph outputs (graph.outputs() order) taken from `values`;
// FailedPrecondition naming a missing one.
StatusOr<std::vector<graph::Tensor>> CollectOutputs(const graph::Graph& graph,
                                                    const ValueMap& values);

// Executes every node in topological order; returns the graph outputs.
StatusOr<std::vector<graph::Tensor>> ExecuteGraph(const graph::Graph& graph,
                                                  const std::vector<graph::Tensor>& inputs);

// Executes `schedule` stage by stage (not validated: a node whose inputs are
// not computed yet fails with FailedPrecondition); returns the graph outputs.
StatusOr<std::vector<graph::Tensor>> ExecuteSchedule(const graph::Graph& graph,
                                                     const scheduler::ios::Schedule& schedule,
                                                     const std::vector<graph::Tensor>& inputs);

}  // namespace iosfarm::worker::reference

#endif  // IOSFARM_WORKER_BACKENDS_REFERENCE_EXECUTOR_H_
