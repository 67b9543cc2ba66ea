// The baseline schedules IOS is compared against (IOS paper, section 7).
//
// Sequential: one op per stage, in topological order.
// Greedy: repeatedly, every ready op (all producers done) in one concurrent
// stage, one op per group, at most `max_groups` of them (the first ready ones
// in topological order).
// Both are costed with the same oracle as the search (CostSchedule), so the
// comparison is fair.
#ifndef IOSFARM_SCHEDULER_IOS_BASELINES_H_
#define IOSFARM_SCHEDULER_IOS_BASELINES_H_

#include "common/status.h"
#include "graph/graph.h"
#include "scheduler/ios/latency_oracle.h"
#include "scheduler/ios/schedule.h"

namespace iosfarm::scheduler::ios {

// Uncosted baselines (signatures and latencies 0). InvalidArgument on a
// cyclic graph or max_groups < 1.
StatusOr<Schedule> SequentialSchedule(const graph::Graph& graph);
StatusOr<Schedule> GreedySchedule(const graph::Graph& graph, int max_groups);

// Canonicalises every stage (signature.h), asks `oracle` once per distinct
// signature, and fills each stage's signature and latency and the total.
// Returns the oracle's error, or InvalidArgument for a malformed stage.
Status CostSchedule(const graph::Graph& graph, Schedule& schedule, const StageLatencyFn& oracle);
Status CostSchedule(const graph::Graph& graph, Schedule& schedule, const SignedLatencyFn& oracle);

}  // namespace iosfarm::scheduler::ios

#endif  // IOSFARM_SCHEDULER_IOS_BASELINES_H_
