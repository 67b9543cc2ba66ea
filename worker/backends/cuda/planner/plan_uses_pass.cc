// Pass 2 of BuildExecutionPlan (plan_passes.h): definitions, reads, and
// where external values come from.
#include "worker/backends/cuda/planner/plan_passes.h"

#include <algorithm>

#include "common/strings.h"

namespace iosfarm::worker::cuda::planning {
namespace {

Status ClassifyExternal(PlanState& st, ValueId v, const graph::Node* reader) {
  const graph::Value& value = st.graph.value(v);
  if (value.shape.empty()) {
    return absl::InvalidArgumentError(StrCat("value '", value.name, "' has no inferred shape"));
  }
  const bool constant =
      value.producer != graph::kNoNode && st.graph.node(value.producer).type == OpType::kConstant;
  const bool graph_input =
      std::find(st.graph.inputs().begin(), st.graph.inputs().end(), v) != st.graph.inputs().end();
  if (constant) {
    st.source[v] = Source::kConstant;
  } else if (st.options.external == ExternalValues::kRandomData) {
    st.source[v] = Source::kRandom;
  } else if (graph_input) {
    st.source[v] = Source::kRuntimeInput;
  } else if (reader != nullptr) {
    return absl::FailedPreconditionError(StrCat("node '", reader->name, "' reads '", value.name,
                                                "', which no earlier stage computes"));
  } else {
    return absl::FailedPreconditionError(
        StrCat("graph output '", value.name, "' is not computed by the schedule"));
  }
  // Presets are written once and read by every run: they live from before
  // the first stage to after the last.
  st.def_stage[v] = -1;
  st.last_use[v] = st.num_stages();
  return absl::OkStatus();
}

Status NoteRead(PlanState& st, ValueId v, NodeId reader, int s) {
  const graph::Node& node = st.graph.node(reader);
  if (st.Produced(v)) {
    const NodeId producer = st.graph.value(v).producer;
    const bool earlier_stage = st.node_stage[producer] < s;
    const bool earlier_in_group = st.node_stage[producer] == s &&
                                  st.node_group[producer] == st.node_group[reader] &&
                                  st.node_index[producer] < st.node_index[reader];
    if (!earlier_stage && !earlier_in_group) {
      return st.StageError(s, StrCat("node '", node.name, "' reads '", st.graph.value(v).name,
                                     "', which is produced later or in another group"));
    }
  } else if (st.source[v] == Source::kNone) {
    RETURN_IF_ERROR(ClassifyExternal(st, v, &node));
  }
  st.last_use[v] = std::max(st.last_use[v], s);
  return absl::OkStatus();
}

}  // namespace

Status CollectUses(PlanState& st) {
  const size_t n = static_cast<size_t>(st.graph.num_values());
  st.def_stage.assign(n, kNotDefined);
  st.last_use.assign(n, kNotDefined);
  st.source.assign(n, Source::kNone);
  for (NodeId id = 0; id < st.graph.num_nodes(); ++id) {
    if (st.node_stage[id] < 0) continue;
    for (ValueId v : st.graph.node(id).outputs) {
      if (st.graph.value(v).shape.empty()) {
        return st.StageError(st.node_stage[id],
                             StrCat("value '", st.graph.value(v).name, "' has no inferred shape"));
      }
      st.def_stage[v] = st.node_stage[id];
      st.source[v] = Source::kProduced;
    }
  }
  for (int s = 0; s < st.num_stages(); ++s) {
    for (const auto& group : st.stages[s]->groups) {
      for (NodeId id : group) {
        for (ValueId v : st.graph.node(id).inputs) RETURN_IF_ERROR(NoteRead(st, v, id, s));
      }
    }
  }
  if (st.options.keep_graph_outputs) {
    for (ValueId v : st.graph.outputs()) {
      if (st.source[v] == Source::kNone) RETURN_IF_ERROR(ClassifyExternal(st, v, nullptr));
      st.last_use[v] = st.num_stages();
    }
  }
  return absl::OkStatus();
}

}  // namespace iosfarm::worker::cuda::planning
