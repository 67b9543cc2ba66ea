// Operator merge (IOS "operator merge", IOPS "operator replacement"):
// convolutions that read the same tensor become one convolution whose output
// channels are split back into the original outputs.
//
// Rules: at least two ops, all Conv with groups = 1, all reading the same
// input tensor, with equal stride, dilation and fused activation (and clip
// range). Smaller kernels are zero-padded to the largest kernel (per
// dimension) and centred, so every kernel's size difference to the largest
// must be even; the padding must agree after centring: for every side,
// pad + dilation * offset is the same for all ops (equivalently
// 2*pad - dilation*kernel is equal), which also makes every output spatial
// size equal. E.g. 1x3 (pads 0,1,0,1) + 3x1 (pads 1,0,1,0) + 3x3 (pads 1) on
// one tensor merge into one 3x3 conv with pads 1. The merged conv has a bias
// when any op has one (zero elsewhere).
#ifndef IOSFARM_SCHEDULER_IOS_STAGES_MERGE_H_
#define IOSFARM_SCHEDULER_IOS_STAGES_MERGE_H_

#include <cstdint>
#include <vector>

#include "common/status.h"
#include "graph/graph.h"
#include "scheduler/ios/stages/stage.h"

namespace iosfarm::scheduler::ios {

// A key such that convs with equal non-zero keys can merge (any subset of two
// or more). 0 for nodes that can never merge (not a Conv, groups != 1).
uint64_t MergeClassKey(const graph::Graph& graph, const graph::Node& node);

// The merged convolution of `ops`, branches in the given order (output
// channels laid out in that order). FailedPrecondition naming the first
// offending op and rule when the ops cannot merge.
StatusOr<MergedConv> MergeConvs(const graph::Graph& graph, const std::vector<graph::NodeId>& ops);

}  // namespace iosfarm::scheduler::ios

#endif  // IOSFARM_SCHEDULER_IOS_STAGES_MERGE_H_
