// Pass 1 of BuildExecutionPlan (plan_passes.h): which node runs where;
// structural checks of stages and merges; residual fusions.
#include "worker/backends/cuda/planner/plan_passes.h"

#include <set>

#include "common/strings.h"
#include "worker/backends/cuda/planner/op_support.h"

namespace iosfarm::worker::cuda::planning {
namespace {

// Conv + Add (+ Relu) chains run as one conv step with a residual input,
// at the Add's position (residual_fusion.h says where the graph allows it).
// The conv's output, and the Add's when the Relu is fused, are never
// stored: they get no buffer.
void FindResidualFusions(PlanState& st) {
  const std::vector<std::vector<NodeId>> consumers = st.graph.Consumers();
  st.elided.assign(static_cast<size_t>(st.graph.num_values()), false);
  for (int s = 0; s < st.num_stages(); ++s) {
    st.fusions.push_back(ResidualFusions::Find(st.graph, *st.stages[s], consumers));
    for (const ResidualFusion& f : st.fusions.back().all()) {
      st.elided[st.graph.node(f.conv).outputs[0]] = true;
      if (f.relu != graph::kNoNode) st.elided[st.graph.node(f.add).outputs[0]] = true;
    }
  }
}

Status CheckMergeStage(PlanState& st, int s) {
  const Stage& stage = *st.stages[s];
  if (!stage.merged.has_value() || stage.merged->branches.empty()) {
    return st.StageError(s, "merge stage without a merged convolution");
  }
  const scheduler::ios::MergedConv& merged = *stage.merged;
  std::multiset<NodeId> in_groups, in_branches;
  for (const auto& group : stage.groups) {
    if (group.size() != 1) return st.StageError(s, "a merge stage group must hold one conv");
    in_groups.insert(group[0]);
  }
  for (const auto& branch : merged.branches) in_branches.insert(branch.op);
  if (in_groups != in_branches) {
    return st.StageError(s, "the merged conv's branches are not the stage's ops");
  }
  if (merged.input < 0 || merged.input >= st.graph.num_values() ||
      st.graph.value(merged.input).shape.size() != 4) {
    return st.StageError(s, "the merged conv's input is not a known 4-D tensor");
  }
  const Shape& x = st.graph.value(merged.input).shape;
  int64_t channels = 0;
  Shape first_out;
  for (const auto& branch : merged.branches) {
    const graph::Node& node = st.graph.node(branch.op);
    if (node.type != OpType::kConv || node.inputs.size() != 1 || node.outputs.size() != 1 ||
        node.inputs[0] != merged.input) {
      return st.StageError(
          s, StrCat("branch '", node.name, "' is not a Conv reading the merged input"));
    }
    const Shape& out = st.graph.value(node.outputs[0]).shape;
    if (out.size() != 4 || out[0] != x[0] || out[1] != branch.channel_end - branch.channel_begin ||
        branch.channel_begin != channels ||
        (!first_out.empty() && (out[2] != first_out[2] || out[3] != first_out[3]))) {
      return st.StageError(s, StrCat("branch '", node.name, "' output ", graph::ShapeToString(out),
                                     " does not fit the merged conv's channel layout"));
    }
    if (first_out.empty()) first_out = out;
    channels = branch.channel_end;
  }
  if (channels != merged.attrs.out_channels) {
    return st.StageError(s, StrCat("branches cover ", channels, " channels, the merged conv has ",
                                   merged.attrs.out_channels));
  }
  st.merged_shape[s] = {x[0], channels, first_out[2], first_out[3]};
  return absl::OkStatus();
}

}  // namespace

Status IndexStages(PlanState& st) {
  st.node_stage.assign(static_cast<size_t>(st.graph.num_nodes()), -1);
  st.node_group.assign(static_cast<size_t>(st.graph.num_nodes()), -1);
  st.node_index.assign(static_cast<size_t>(st.graph.num_nodes()), -1);
  st.merged_buffer.assign(st.stages.size(), -1);
  st.merged_pad_buffer.assign(st.stages.size(), -1);
  for (int s = 0; s < st.num_stages(); ++s) {
    const Stage& stage = *st.stages[s];
    for (size_t g = 0; g < stage.groups.size(); ++g) {
      for (size_t i = 0; i < stage.groups[g].size(); ++i) {
        const NodeId id = stage.groups[g][i];
        if (id < 0 || id >= st.graph.num_nodes()) {
          return PlanState::BareStageError(s, StrCat("node id ", id, " out of range"));
        }
        const graph::Node& node = st.graph.node(id);
        // A Constant listed in a stage computes nothing: its value is
        // written before the first run like every constant.
        if (node.type == OpType::kConstant) continue;
        if (st.node_stage[id] != -1) {
          return st.StageError(s, StrCat("node '", node.name, "' is listed twice"));
        }
        RETURN_IF_ERROR(CheckNodeSupported(st.graph, node));
        st.node_stage[id] = s;
        st.node_group[id] = static_cast<int>(g);
        st.node_index[id] = static_cast<int>(i);
      }
    }
    if (stage.strategy == Strategy::kMerge) RETURN_IF_ERROR(CheckMergeStage(st, s));
  }
  FindResidualFusions(st);
  return absl::OkStatus();
}

}  // namespace iosfarm::worker::cuda::planning
