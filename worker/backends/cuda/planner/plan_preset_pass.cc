// Pass 6 of BuildExecutionPlan (plan_passes.h): data written before the
// first run; kept results.
#include "worker/backends/cuda/planner/plan_passes.h"

#include <algorithm>

#include "common/strings.h"
#include "worker/backends/weights.h"

namespace iosfarm::worker::cuda::planning {

Status EmitPresetsAndOutputs(PlanState& st) {
  for (ValueId v = 0; v < st.graph.num_values(); ++v) {
    const graph::Value& value = st.graph.value(v);
    switch (st.source[v]) {
      case Source::kConstant: {
        const graph::Node& node = st.graph.node(value.producer);
        ASSIGN_OR_RETURN(graph::Tensor t, st.NodeWeight(node, "value"));
        if (t.num_elements() != graph::NumElements(value.shape)) {
          return absl::InvalidArgumentError(StrCat("constant '", node.name, "' has ",
                                                   t.num_elements(), " values for output shape ",
                                                   graph::ShapeToString(value.shape)));
        }
        st.plan.presets.push_back({st.Ref(v), std::move(t.data), value.name});
        break;
      }
      case Source::kRandom: {
        // RandomTensor's values, drawn once per search through the cache.
        const uint64_t seed = WeightSeed(value.name, "stage input");
        st.plan.presets.push_back({st.Ref(v),
                                   st.options.weight_cache != nullptr
                                       ? *st.options.weight_cache->DrawRandom(value.shape, seed)
                                       : RandomTensor(value.shape, seed).data,
                                   value.name});
        break;
      }
      case Source::kRuntimeInput: {
        const auto& inputs = st.graph.inputs();
        const int index =
            static_cast<int>(std::find(inputs.begin(), inputs.end(), v) - inputs.begin());
        st.plan.runtime_inputs.push_back({st.Ref(v), index});
        break;
      }
      case Source::kNone:
      case Source::kProduced:
        break;
    }
  }
  if (st.options.keep_graph_outputs) {
    for (ValueId v : st.graph.outputs()) st.plan.outputs.push_back(st.Ref(v));
  }
  return absl::OkStatus();
}

}  // namespace iosfarm::worker::cuda::planning
