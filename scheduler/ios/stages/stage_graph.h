// A stage as a standalone graph, for building and timing it away from the
// model (a worker's build phase).
#ifndef IOSFARM_SCHEDULER_IOS_STAGES_STAGE_GRAPH_H_
#define IOSFARM_SCHEDULER_IOS_STAGES_STAGE_GRAPH_H_

#include "common/status.h"
#include "graph/graph.h"
#include "scheduler/ios/stages/stage.h"

namespace iosfarm::scheduler::ios {

// The ops of `stage` (groups in order, ops in group order, with their
// attributes and weights) as a graph named "<graph name>/stage": every tensor
// they read from outside the stage becomes a graph input with the same name
// and shape (read once even when several ops share it), Constant nodes they
// read are copied, and every output of a stage op that no other stage op reads
// becomes a graph output. Node and value names are kept. InvalidArgument
// (naming the node) for a malformed stage (see CanonicalizeStage's rules: ids
// in range, no Constants, no op twice).
StatusOr<graph::Graph> ExtractStageGraph(const graph::Graph& graph, const Stage& stage);

}  // namespace iosfarm::scheduler::ios

#endif  // IOSFARM_SCHEDULER_IOS_STAGES_STAGE_GRAPH_H_
