// Pass 4 of BuildExecutionPlan (plan_passes.h): buffers, lifetimes, arena.
#include "worker/backends/cuda/planner/plan_passes.h"

#include <algorithm>

#include "common/strings.h"
#include "worker/backends/cuda/planner/memory_plan.h"

namespace iosfarm::worker::cuda::planning {
namespace {

Location Resolve(PlanState& st, ValueId v) {
  int64_t offset = 0;
  ValueId root = v;
  while (st.alias[root].kind == Alias::kValue) {
    offset += st.alias[root].offset;
    root = st.alias[root].target;
  }
  if (st.alias[root].kind == Alias::kSynthetic) {
    return {st.synthetic_buffer[st.alias[root].target], offset + st.alias[root].offset};
  }
  auto it = st.value_buffer.find(root);
  if (it == st.value_buffer.end()) {
    BufferSpec spec;
    spec.elements = graph::NumElements(st.graph.value(root).shape);
    spec.first_stage = INT_MAX;
    spec.last_stage = INT_MIN;
    spec.label = st.graph.value(root).name;
    st.plan.buffers.push_back(spec);
    it = st.value_buffer.emplace(root, static_cast<int>(st.plan.buffers.size()) - 1).first;
  }
  return {it->second, offset};
}

}  // namespace

Status LayOutBuffers(PlanState& st) {
  for (const Synthetic& synthetic : st.synthetics) {
    BufferSpec spec;
    spec.elements = synthetic.elements;
    spec.first_stage = synthetic.stage;
    spec.last_stage = synthetic.stage;
    spec.label = synthetic.label;
    st.plan.buffers.push_back(spec);
    st.synthetic_buffer.push_back(static_cast<int>(st.plan.buffers.size()) - 1);
  }
  for (ValueId v = 0; v < st.graph.num_values(); ++v) {
    if (st.source[v] == Source::kNone || st.elided[v]) continue;
    const Location loc = Resolve(st, v);
    BufferSpec& spec = st.plan.buffers[loc.buffer];
    const int last = std::max(st.last_use[v], st.def_stage[v]);
    spec.first_stage = std::min(spec.first_stage, st.def_stage[v]);
    spec.last_stage = std::max(spec.last_stage, last);
    const int64_t end = loc.offset + graph::NumElements(st.graph.value(v).shape);
    if (loc.offset < 0 || end > spec.elements) {
      return absl::InternalError(StrCat("cuda plan: value '", st.graph.value(v).name,
                                        "' does not fit its buffer '", spec.label, "'"));
    }
    st.location[v] = loc;
  }
  st.plan.arena_bytes = AssignArenaOffsets(st.plan.buffers);
  return absl::OkStatus();
}

}  // namespace iosfarm::worker::cuda::planning
