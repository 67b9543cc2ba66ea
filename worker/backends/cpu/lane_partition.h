// How the cpu backend runs a concurrent stage on its cores.
//
// The stage's groups are packed into lanes, one thread each (a worker
// thread, or the calling thread for lane 0); ops of a lane run in order and
// every oneDNN primitive of a lane uses `threads` OpenMP threads, so the
// lanes together use the backend's cores once, never more:
//  - one group, or one core: a single lane with every core (groups one after
//    another, which is also what a 1-core machine can do best);
//  - otherwise min(groups, cores) lanes, groups placed largest cost first on
//    the least loaded lane (LPT), groups of a lane kept in stage order, and
//    the cores split evenly, the remainder going to the most loaded lanes.
// Pure function; thread-safe.
#ifndef IOSFARM_WORKER_BACKENDS_CPU_LANE_PARTITION_H_
#define IOSFARM_WORKER_BACKENDS_CPU_LANE_PARTITION_H_

#include <vector>

namespace iosfarm::worker::cpu {

struct LanePlan {
  std::vector<int> groups;  // indices into the stage's groups, ascending
  int threads = 1;
};

// `group_costs[i]` is the estimated work of group i (any unit, >= 0);
// `cores` >= 1. Every group lands in exactly one lane.
std::vector<LanePlan> PartitionLanes(const std::vector<double>& group_costs, int cores);

}  // namespace iosfarm::worker::cpu

#endif  // IOSFARM_WORKER_BACKENDS_CPU_LANE_PARTITION_H_
