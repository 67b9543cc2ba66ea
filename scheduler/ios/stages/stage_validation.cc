#include "scheduler/ios/stages/stage_validation.h"

#include <vector>

#include "absl/container/flat_hash_map.h"
#include "common/strings.h"
#include "scheduler/ios/stages/merge.h"

namespace iosfarm::scheduler::ios {

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

namespace {

Status CheckShapes(const graph::Graph& graph, const graph::Node& node) {
  for (const auto* values : {&node.inputs, &node.outputs}) {
    for (graph::ValueId v : *values) {
      if (v < 0 || v >= graph.num_values()) {
        return absl::InvalidArgumentError(
            StrCat("stage op '", node.name, "' refers to value id ", v, " out of range"));
      }
      if (graph.value(v).shape.empty()) {
        return absl::InvalidArgumentError(StrCat("stage op '", node.name, "': tensor '",
                                                 graph.value(v).name, "' has no shape"));
      }
    }
  }
  return absl::OkStatus();
}

Status CheckMerge(const graph::Graph& graph, const Stage& stage) {
  std::vector<graph::NodeId> convs;
  for (size_t g = 0; g < stage.groups.size(); ++g) {
    if (stage.groups[g].size() != 1) {
      return absl::InvalidArgumentError(
          StrCat("merge stage: group ", g, " has ", stage.groups[g].size(), " ops, not 1"));
    }
    convs.push_back(stage.groups[g][0]);
  }
  StatusOr<MergedConv> merged = MergeConvs(graph, convs);
  if (!merged.ok()) {
    return absl::InvalidArgumentError(
        StrCat("merge stage: illegal merge: ", ToStd(merged.status().message())));
  }
  if (!stage.merged || !SameMerged(*stage.merged, *merged)) {
    return absl::InvalidArgumentError(
        StrCat("merge stage of '", graph.node(convs[0]).name,
               "': merged description does not match its convolutions"));
  }
  return absl::OkStatus();
}

}  // namespace

Status ValidateStage(const graph::Graph& graph, const Stage& stage) {
  if (stage.groups.empty()) return absl::InvalidArgumentError("stage has no group");
  const int n = graph.num_nodes();
  // Group and position of each op of the stage (a stage is small next to its
  // graph: a table of the graph's nodes per stage cost a search more than
  // the rest of a measurement).
  struct Place {
    int group, index;
  };
  size_t ops = 0;
  for (const auto& group : stage.groups) ops += group.size();
  absl::flat_hash_map<graph::NodeId, Place> place;
  place.reserve(ops);
  for (size_t g = 0; g < stage.groups.size(); ++g) {
    if (stage.groups[g].empty()) {
      return absl::InvalidArgumentError(StrCat("stage group ", g, " is empty"));
    }
    for (size_t i = 0; i < stage.groups[g].size(); ++i) {
      const graph::NodeId id = stage.groups[g][i];
      if (id < 0 || id >= n) {
        return absl::InvalidArgumentError(StrCat("stage node id ", id, " out of range"));
      }
      const graph::Node& node = graph.node(id);
      if (node.type == graph::OpType::kConstant) {
        return absl::InvalidArgumentError(
            StrCat("stage op '", node.name, "' is a Constant, not an operator"));
      }
      if (place.contains(id)) {
        return absl::InvalidArgumentError(
            StrCat("stage op '", node.name, "' is listed twice"));
      }
      RETURN_IF_ERROR(CheckShapes(graph, node));
      place.emplace(id, Place{static_cast<int>(g), static_cast<int>(i)});
    }
  }
  for (const auto& group : stage.groups) {
    for (graph::NodeId id : group) {
      const graph::Node& node = graph.node(id);
      for (graph::ValueId v : node.inputs) {
        const graph::NodeId p = graph.value(v).producer;
        const auto producer = p == graph::kNoNode ? place.end() : place.find(p);
        if (producer == place.end()) continue;  // from an earlier stage
        const Place& consumer = place.at(id);
        if (producer->second.group != consumer.group) {
          return absl::InvalidArgumentError(StrCat("stage: '", graph.node(p).name, "' feeds '",
                                                   node.name, "' from another group"));
        }
        if (producer->second.index >= consumer.index) {
          return absl::InvalidArgumentError(StrCat("stage: '", node.name,
                                                   "' is listed before its producer '",
                                                   graph.node(p).name, "' in its group"));
        }
      }
    }
  }
  if (stage.strategy == Strategy::kMerge) {
    if (stage.single_core) {
      return absl::InvalidArgumentError("a single-core stage must be concurrent, not a merge");
    }
    return CheckMerge(graph, stage);
  }
  if (stage.merged) {
    return absl::InvalidArgumentError("concurrent stage with a merged description");
  }
  return absl::OkStatus();
}

Status ValidateStages(const graph::Graph& graph, const std::vector<Stage>& stages) {
  for (size_t s = 0; s < stages.size(); ++s) {
    if (Status valid = ValidateStage(graph, stages[s]); !valid.ok()) {
      return absl::InvalidArgumentError(StrCat("stage ", s, ": ", valid.message()));
    }
  }
  return absl::OkStatus();
}

}  // namespace iosfarm::scheduler::ios
