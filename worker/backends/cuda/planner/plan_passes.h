// The six passes of BuildExecutionPlan (plan_builder.h), run in this order
// on one PlanState (plan_state.h), each in its own file:
//  1. IndexStages (plan_index_pass.cc): which node runs where; structural
//     checks of each stage and merge; residual fusions.
//  2. CollectUses (plan_uses_pass.cc): definitions, reads and where external
//     values come from.
//  3. DecideAliases (plan_alias_pass.cc): views, merged outputs, in-place
//     concats, pad temporaries.
//  4. LayOutBuffers (plan_buffer_pass.cc): buffers, lifetimes, the arena.
//  5. EmitStages (plan_step_pass.cc, plan_conv_steps.cc): the steps.
//  6. EmitPresetsAndOutputs (plan_preset_pass.cc): data written before the
//     first run; kept results.
// Errors are those BuildExecutionPlan documents.
#ifndef IOSFARM_WORKER_BACKENDS_CUDA_PLANNER_PLAN_PASSES_H_
#define IOSFARM_WORKER_BACKENDS_CUDA_PLANNER_PLAN_PASSES_H_

#include <optional>
#include <string>
#include <vector>

#include "common/status.h"
#include "worker/backends/cuda/planner/plan_state.h"

namespace iosfarm::worker::cuda::planning {

Status IndexStages(PlanState& st);
Status CollectUses(PlanState& st);
void DecideAliases(PlanState& st);
Status LayOutBuffers(PlanState& st);
Status EmitStages(PlanState& st);
Status EmitPresetsAndOutputs(PlanState& st);

// Pass 5's convolution steps (plan_conv_steps.cc).
// Appends a conv step reading x (through an explicit pad into synthetic
// `pad_synthetic` when the pads are asymmetric) and, when given, the
// residual z.
void EmitConv(PlanState& st, graph::ConvAttrs attrs, const TensorRef& x, const TensorRef& y,
              WeightRef w, std::optional<WeightRef> bias, int pad_synthetic,
              const std::string& label, std::vector<Step>& steps,
              const std::optional<TensorRef>& residual = std::nullopt);
// The merged conv of merge stage s and the copies out of its branches.
Status EmitMerge(PlanState& st, int s, std::vector<Step>& steps);
// The fused Conv + Add (+ Relu) of `f`, at the Add's position.
Status EmitResidualConv(PlanState& st, const ResidualFusion& f, std::vector<Step>& steps);
// A plain Conv node.
Status EmitConvNode(PlanState& st, graph::NodeId id, const TensorRef& x, const TensorRef& y,
                    std::vector<Step>& steps);

}  // namespace iosfarm::worker::cuda::planning

#endif  // IOSFARM_WORKER_BACKENDS_CUDA_PLANNER_PLAN_PASSES_H_
