#include "scheduler/ios/schedule.h"

#include "common/strings.h"
#include "scheduler/ios/op_dag.h"
#include "scheduler/ios/stages/merge.h"
#include "scheduler/ios/stages/stage_validation.h"

namespace iosfarm::scheduler::ios {
Status ValidateSchedule(const graph::Graph& graph, const Schedule& schedule) {
  const int n = graph.num_nodes();
  std::vector<int> stage_of(n, -1);  // where each node runs
  int previous_block = 0;
  for (size_t s = 0; s < schedule.stages.size(); ++s) {
    const ScheduledStage& scheduled = schedule.stages[s];
    const Stage& stage = scheduled.stage;
    if (scheduled.block < previous_block) {
      return absl::InvalidArgumentError(
          StrCat("stage ", s, ": block ", scheduled.block, " after block ", previous_block));
    }
    previous_block = scheduled.block;
    if (stage.num_ops() == 0) return absl::InvalidArgumentError(StrCat("stage ", s, " is empty"));
    if (stage.single_core) {
      return absl::InvalidArgumentError(
          StrCat("stage ", s, " is a single-core measurement, not a stage of a schedule"));
    }
    if (Status valid = ValidateStage(graph, stage); !valid.ok()) {
      return absl::InvalidArgumentError(StrCat("stage ", s, ": ", valid.message()));
    }
    for (const auto& group : stage.groups) {
      for (graph::NodeId id : group) {
        if (stage_of[id] >= 0) {
          return absl::InvalidArgumentError(StrCat("'", graph.node(id).name,
                                                   "' is scheduled twice (stages ",
                                                   stage_of[id], " and ", s, ")"));
        }
        stage_of[id] = static_cast<int>(s);
      }
    }
  }
  // Within a stage ValidateStage checked the order; across stages a producer
  // runs in an earlier stage.
  for (graph::NodeId id = 0; id < n; ++id) {
    const graph::Node& node = graph.node(id);
    if (IsFreeNode(node)) continue;
    if (stage_of[id] < 0) {
      return absl::InvalidArgumentError(StrCat("'", node.name, "' is not scheduled"));
    }
    for (graph::ValueId v : node.inputs) {
      const graph::NodeId p = graph.value(v).producer;
      if (p == graph::kNoNode || IsFreeNode(graph.node(p))) continue;
      if (stage_of[p] > stage_of[id]) {
        return absl::InvalidArgumentError(StrCat("'", node.name, "' (stage ", stage_of[id],
                                                 ") runs before its input producer '",
                                                 graph.node(p).name, "' (stage ",
                                                 stage_of[p], ")"));
      }
    }
  }
  return absl::OkStatus();
}

}  // namespace iosfarm::scheduler::ios
