#include "scheduler/ios/schedule.h"

#include "common/strings.h"
#include "scheduler/ios/merge.h"
#include "scheduler/ios/op_dag.h"

namespace iosfarm::scheduler::ios {
namespace {

bool SameMerged(const MergedConv& a, const MergedConv& b) {
  if (a.input != b.input || !(a.attrs == b.attrs) || a.branches.size() != b.branches.size()) {
    return false;
  }
  for (size_t i = 0; i < a.branches.size(); ++i) {
    const MergedBranch& x = a.branches[i];
    const MergedBranch& y = b.branches[i];
    if (x.op != y.op || x.channel_begin != y.channel_begin || x.channel_end != y.channel_end ||
        x.kernel_offset != y.kernel_offset) {
      return false;
    }
  }
  return true;
}

}  // namespace

Status ValidateSchedule(const graph::Graph& graph, const Schedule& schedule) {
  const int n = graph.num_nodes();
  // Where each node runs: stage, group, position in the group.
  std::vector<int> stage_of(n, -1), group_of(n, -1), index_of(n, -1);
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
    for (size_t g = 0; g < stage.groups.size(); ++g) {
      if (stage.groups[g].empty()) {
        return absl::InvalidArgumentError(StrCat("stage ", s, ": group ", g, " is empty"));
      }
      for (size_t i = 0; i < stage.groups[g].size(); ++i) {
        const graph::NodeId id = stage.groups[g][i];
        if (id < 0 || id >= n) {
          return absl::InvalidArgumentError(
              StrCat("stage ", s, ": node id ", id, " out of range"));
        }
        if (IsFreeNode(graph.node(id))) {
          return absl::InvalidArgumentError(StrCat("stage ", s, ": '", graph.node(id).name,
                                                   "' is a Constant, not an operator"));
        }
        if (stage_of[id] >= 0) {
          return absl::InvalidArgumentError(StrCat("'", graph.node(id).name,
                                                   "' is scheduled twice (stages ",
                                                   stage_of[id], " and ", s, ")"));
        }
        stage_of[id] = static_cast<int>(s);
        group_of[id] = static_cast<int>(g);
        index_of[id] = static_cast<int>(i);
      }
    }
  }
  for (graph::NodeId id = 0; id < n; ++id) {
    const graph::Node& node = graph.node(id);
    if (IsFreeNode(node)) continue;
    if (stage_of[id] < 0) {
      return absl::InvalidArgumentError(StrCat("'", node.name, "' is not scheduled"));
    }
    for (graph::ValueId v : node.inputs) {
      const graph::NodeId p = graph.value(v).producer;
      if (p == graph::kNoNode || IsFreeNode(graph.node(p))) continue;
      if (stage_of[p] < stage_of[id]) continue;
      if (stage_of[p] > stage_of[id]) {
        return absl::InvalidArgumentError(StrCat("'", node.name, "' (stage ", stage_of[id],
                                                 ") runs before its input producer '",
                                                 graph.node(p).name, "' (stage ",
                                                 stage_of[p], ")"));
      }
      if (group_of[p] != group_of[id]) {
        return absl::InvalidArgumentError(StrCat("stage ", stage_of[id], ": '",
                                                 graph.node(p).name, "' feeds '", node.name,
                                                 "' from another group"));
      }
      if (index_of[p] >= index_of[id]) {
        return absl::InvalidArgumentError(StrCat("stage ", stage_of[id], ": '", node.name,
                                                 "' is listed before its producer '",
                                                 graph.node(p).name, "' in its group"));
      }
    }
  }
  for (size_t s = 0; s < schedule.stages.size(); ++s) {
    const Stage& stage = schedule.stages[s].stage;
    if (stage.strategy != Strategy::kMerge) {
      if (stage.merged) {
        return absl::InvalidArgumentError(
            StrCat("stage ", s, ": concurrent stage with a merged description"));
      }
      continue;
    }
    std::vector<graph::NodeId> convs;
    for (const auto& group : stage.groups) {
      if (group.size() != 1) {
        return absl::InvalidArgumentError(
            StrCat("stage ", s, ": merge stage group with ", group.size(), " ops"));
      }
      convs.push_back(group[0]);
    }
    StatusOr<MergedConv> merged = MergeConvs(graph, convs);
    if (!merged.ok()) {
      return absl::InvalidArgumentError(
          StrCat("stage ", s, ": illegal merge: ", ToStd(merged.status().message())));
    }
    if (!stage.merged || !SameMerged(*stage.merged, *merged)) {
      return absl::InvalidArgumentError(
          StrCat("stage ", s, ": merged description does not match its convolutions"));
    }
  }
  return absl::OkStatus();
}

}  // namespace iosfarm::scheduler::ios
