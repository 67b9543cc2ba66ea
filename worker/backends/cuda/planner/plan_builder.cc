#include "worker/backends/cuda/planner/plan_builder.h"

#include "worker/backends/cuda/planner/plan_checks.h"
#include "worker/backends/cuda/planner/plan_passes.h"
#include "worker/backends/cuda/planner/plan_state.h"

namespace iosfarm::worker::cuda {

// The passes of plan_passes.h, in order, then the hazard check of the result.
StatusOr<ExecutionPlan> BuildExecutionPlan(const graph::Graph& graph,
                                           const std::vector<const scheduler::ios::Stage*>& stages,
                                           const PlanOptions& options) {
  planning::PlanState st(graph, stages, options);
  RETURN_IF_ERROR(planning::IndexStages(st));
  RETURN_IF_ERROR(planning::CollectUses(st));
  planning::DecideAliases(st);
  RETURN_IF_ERROR(planning::LayOutBuffers(st));
  RETURN_IF_ERROR(planning::EmitStages(st));
  RETURN_IF_ERROR(planning::EmitPresetsAndOutputs(st));
  RETURN_IF_ERROR(CheckPlanHazards(st.plan));
  return std::move(st.plan);
}

}  // namespace iosfarm::worker::cuda
