// Checks that one stage can execute on a graph, on its own: the stage-local
// half of scheduler::ios::ValidateSchedule (producers outside the stage are
// taken to have run in earlier stages). Backend-neutral; the sim backend's
// Build uses it before costing a stage.
#ifndef IOSFARM_WORKER_BACKENDS_SIM_STAGE_VALIDATION_H_
#define IOSFARM_WORKER_BACKENDS_SIM_STAGE_VALIDATION_H_

#include "common/status.h"
#include "graph/graph.h"
#include "scheduler/ios/stage.h"

namespace iosfarm::worker::sim {

// OK when: the stage has at least one group and no empty group; every op id
// is in range, not a Constant, listed once, and has inferred input and output
// shapes; an op fed by another op of the stage is in the same group and
// listed after it; a concurrent stage has no merged description; a merge
// stage has one op per group and a merged description equal to
// scheduler::ios::MergeConvs of its groups in order. Otherwise
// InvalidArgument naming the node (or group) and the rule.
Status ValidateStage(const graph::Graph& graph, const scheduler::ios::Stage& stage);

}  // namespace iosfarm::worker::sim

#endif  // IOSFARM_WORKER_BACKENDS_SIM_STAGE_VALIDATION_H_
