// Pass 3 of BuildExecutionPlan (plan_passes.h): views, merged outputs,
// in-place concats, pad temporaries.
#include "worker/backends/cuda/planner/plan_passes.h"

#include <algorithm>
#include <variant>

#include "common/strings.h"

namespace iosfarm::worker::cuda::planning {
namespace {

// Whether `v` can be written by its producer straight into Concat `concat`.
bool Placeable(const PlanState& st, ValueId v, NodeId concat,
               const std::vector<std::vector<NodeId>>& consumers) {
  if (!st.Produced(v) || st.Kept(v) || st.alias[v].kind != Alias::kNone) return false;
  const graph::Node& node = st.graph.node(concat);
  if (std::count(node.inputs.begin(), node.inputs.end(), v) != 1) return false;
  if (consumers[v].size() != 1 || consumers[v][0] != concat) return false;
  const NodeId producer = st.graph.value(v).producer;
  if (IsViewOp(st.graph.node(producer).type)) return false;
  // Merge branches at batch > 1 are copied out of the merged output: that
  // copy may land in place too; at batch 1 they are views (alias set).
  return true;
}

void DecideMergeAliases(PlanState& st, int s) {
  const Stage& stage = *st.stages[s];
  const Shape& y = st.merged_shape.at(s);
  st.merged_buffer[s] =
      st.AddSynthetic(graph::NumElements(y), s, StrCat("merged output of stage ", s));
  if (!SymmetricPads(stage.merged->attrs.pads)) {
    st.merged_pad_buffer[s] = st.AddSynthetic(
        PaddedInputElements(st.graph.value(stage.merged->input).shape, stage.merged->attrs), s,
        StrCat("padded input of stage ", s));
  }
  if (y[0] != 1) return;  // branches are strided slices: copied out
  const int64_t plane = y[2] * y[3];
  for (const auto& branch : stage.merged->branches) {
    const ValueId out = st.graph.node(branch.op).outputs[0];
    st.alias[out] = {Alias::kSynthetic, st.merged_buffer[s], branch.channel_begin * plane};
  }
}

void DecideNodeAliases(PlanState& st, NodeId id, int s,
                       const std::vector<std::vector<NodeId>>& consumers) {
  const graph::Node& node = st.graph.node(id);
  if (IsViewOp(node.type)) {
    st.alias[node.outputs[0]] = {Alias::kValue, node.inputs[0], 0};
    return;
  }
  if (node.type == OpType::kConv) {
    const auto& a = std::get<graph::ConvAttrs>(node.attrs);
    if (!SymmetricPads(a.pads)) {
      st.pad_buffer[id] =
          st.AddSynthetic(PaddedInputElements(st.graph.value(node.inputs[0]).shape, a), s,
                          StrCat("padded input of '", node.name, "'"));
    }
    return;
  }
  if (node.type == OpType::kSplit) {
    const Shape& x = st.graph.value(node.inputs[0]).shape;
    const auto& a = std::get<graph::SplitAttrs>(node.attrs);
    const size_t axis = static_cast<size_t>(NormalizeAxis(a.axis, x.size()));
    if (Product(x, 0, axis) != 1) return;
    const int64_t inner = Product(x, axis + 1, x.size());
    int64_t offset = 0;
    for (size_t i = 0; i < node.outputs.size(); ++i) {
      st.alias[node.outputs[i]] = {Alias::kValue, node.inputs[0], offset * inner};
      offset += a.sizes[i];
    }
    return;
  }
  if (node.type == OpType::kConcat) {
    const Shape& y = st.graph.value(node.outputs[0]).shape;
    const auto& a = std::get<graph::ConcatAttrs>(node.attrs);
    const size_t axis = static_cast<size_t>(NormalizeAxis(a.axis, y.size()));
    if (Product(y, 0, axis) != 1) return;
    int64_t offset = 0;
    for (ValueId v : node.inputs) {
      if (Placeable(st, v, id, consumers)) st.alias[v] = {Alias::kValue, node.outputs[0], offset};
      offset += graph::NumElements(st.graph.value(v).shape);
    }
  }
}

}  // namespace

void DecideAliases(PlanState& st) {
  st.alias.assign(static_cast<size_t>(st.graph.num_values()), Alias{});
  const std::vector<std::vector<NodeId>> consumers = st.graph.Consumers();
  for (int s = 0; s < st.num_stages(); ++s) {
    const Stage& stage = *st.stages[s];
    if (stage.strategy == Strategy::kMerge) {
      DecideMergeAliases(st, s);
      continue;
    }
    for (const auto& group : stage.groups) {
      for (NodeId id : group) DecideNodeAliases(st, id, s, consumers);
    }
  }
}

}  // namespace iosfarm::worker::cuda::planning
