// Builds ExecutionPlans (execution_plan.h) from IOS stages, on the CPU.
//
// What it decides:
//  - steps: each operator becomes the steps that compute it (a Conv with
//    asymmetric pads gets an explicit Pad first, a merge stage one merged
//    convolution, a Concat one copy per input that is not already in place);
//  - views without copies: Reshape/Flatten/Identity/Dropout outputs are their
//    input; Split outputs and merged-conv branch outputs are slices of the
//    input / merged output when the slice is contiguous (everything before the
//    split axis has size 1, e.g. channel slices at batch 1);
//  - in-place concat: a Concat input that only that Concat reads, produced by
//    a step of the plan (not a view, not kept as a result), is written by its
//    producer straight into its slice of the Concat output when the slice is
//    contiguous; the Concat then copies nothing for it;
//  - residual fusion: a Conv + Add (+ Relu) chain in one group, where
//    worker/backends/residual_fusion.h allows it, is one kConv step with the
//    Add's other operand as residual input z, at the Add's position; the
//    conv's (and the Add's) output gets no buffer;
//  - memory: one buffer per stored value (views share their source's), live
//    from its first write to its last read, placed in one arena
//    (memory_plan.h); presets (constants, stage inputs, graph inputs) live for
//    the whole run and are never overwritten, so a plan runs any number of
//    times after one upload; kept outputs live from their write to the end;
//  - weights: materialised (worker/backends/weights.h), merged conv weights
//    assembled (merged_conv_weights.h), BatchNorm folded into scale/shift,
//    Gemm's beta * C broadcast to the output; all packed in one array.
//
// Host-only (no CUDA header; library iosfarm_cuda_planner). Each decision is
// one pass over a shared state, in its own file (plan_passes.h).
//
// Thread-safe (pure function of its arguments).
#ifndef IOSFARM_WORKER_BACKENDS_CUDA_PLANNER_PLAN_BUILDER_H_
#define IOSFARM_WORKER_BACKENDS_CUDA_PLANNER_PLAN_BUILDER_H_

#include <vector>

#include "common/status.h"
#include "graph/graph.h"
#include "scheduler/ios/stages/stage.h"
#include "worker/backends/cuda/planner/execution_plan.h"
#include "worker/backends/weights.h"

namespace iosfarm::worker::cuda {

enum class ExternalValues {
  // Whole schedules: a value no stage produces must be a graph input
  // (supplied per run: ExecutionPlan::runtime_inputs) or a Constant's output.
  kGraphInputs,
  // Stage plans: any value the stages read but do not produce gets
  // deterministic random data, RandomTensor(shape, WeightSeed(value name,
  // "stage input")) as the cpu backend, or its Constant's value.
  kRandomData,
};

struct PlanOptions {
  ExternalValues external = ExternalValues::kRandomData;
  // Keep the graph outputs (ExecutionPlan::outputs, graph.outputs() order).
  bool keep_graph_outputs = false;
  // Draws weights without data through this cache (may be null; must outlive
  // the call): a backend planning many stages of one model draws each once.
  WeightCache* weight_cache = nullptr;
};

// The plan of `stages` (executed in this order) of `graph`, whose shapes must
// be inferred. InvalidArgument naming the stage and node for malformed
// stages (ids out of range, a node listed twice, a merge stage whose merged
// conv does not match its groups, a node reading a value produced later or in
// another group of its stage); FailedPrecondition for a value no stage
// produces when external == kGraphInputs, or a graph output nothing computes;
// Unimplemented for ops the backend does not support (op_support.h).
StatusOr<ExecutionPlan> BuildExecutionPlan(const graph::Graph& graph,
                                           const std::vector<const scheduler::ios::Stage*>& stages,
                                           const PlanOptions& options);

}  // namespace iosfarm::worker::cuda

#endif  // IOSFARM_WORKER_BACKENDS_CUDA_PLANNER_PLAN_BUILDER_H_
