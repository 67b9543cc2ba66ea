// Schedule: the ordered list of stages covering a whole graph.
#ifndef IOSFARM_SCHEDULER_IOS_SCHEDULE_H_
#define IOSFARM_SCHEDULER_IOS_SCHEDULE_H_

#include <vector>

#include "common/status.h"
#include "graph/graph.h"
#include "scheduler/ios/stages/signature.h"
#include "scheduler/ios/stages/stage.h"

namespace iosfarm::scheduler::ios {

struct ScheduledStage {
  Stage stage;
  int block = 0;               // index in the block partition (0 for baselines)
  Signature signature = 0;     // 0 until costed
  double latency_ms = 0;       // predicted latency of the stage
};

struct Schedule {
  std::vector<ScheduledStage> stages;  // in execution order
  double latency_ms = 0;               // sum of the stages' latencies

  int num_ops() const {
    int n = 0;
    for (const auto& s : stages) n += s.stage.num_ops();
    return n;
  }
};

// Checks that `schedule` is executable on `graph`: every stage passes
// ValidateStage (stage_validation.h: groups, order within a group, merged
// descriptions, shapes); every operator (node other than Constant) appears
// exactly once and nothing else does; every operator's producers run in an
// earlier stage or earlier in its group; block indices never decrease.
// InvalidArgument naming the first offending node or stage.
Status ValidateSchedule(const graph::Graph& graph, const Schedule& schedule);

}  // namespace iosfarm::scheduler::ios

#endif  // IOSFARM_SCHEDULER_IOS_SCHEDULE_H_
