// Checks that one stage can execute on a graph, on its own (producers outside
// the stage are taken to have run in earlier stages): the one stage check of
// the project. ValidateSchedule runs it on every stage before its
// cross-stage checks, and every backend's Build runs it on every stage, so
// no backend trusts a stage (or a merged description) it did not check.
#ifndef IOSFARM_SCHEDULER_IOS_STAGES_STAGE_VALIDATION_H_
#define IOSFARM_SCHEDULER_IOS_STAGES_STAGE_VALIDATION_H_

#include <vector>

#include "common/status.h"
#include "graph/graph.h"
#include "scheduler/ios/stages/merge.h"
#include "scheduler/ios/stages/stage.h"

namespace iosfarm::scheduler::ios {

// OK when: the stage has at least one group and no empty group; every op id
// is in range, not a Constant, listed once, and has inferred input and output
// shapes; an op fed by another op of the stage is in the same group and
// listed after it; a concurrent stage has no merged description; a merge
// stage has one op per group, a merged description equal to
// scheduler::ios::MergeConvs of its groups in order, and is not single-core.
// Otherwise InvalidArgument naming the node (or group) and the rule.
Status ValidateStage(const graph::Graph& graph, const Stage& stage);

// ValidateStage on each stage; the error names the stage ("stage 3: ...").
Status ValidateStages(const graph::Graph& graph, const std::vector<Stage>& stages);

// Whether two merged descriptions are the same merge: input, attributes and
// branches (op, channel range, kernel offset) in order.
bool SameMerged(const MergedConv& a, const MergedConv& b);

}  // namespace iosfarm::scheduler::ios

#endif  // IOSFARM_SCHEDULER_IOS_STAGES_STAGE_VALIDATION_H_
