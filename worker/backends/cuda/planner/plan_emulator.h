// Runs an ExecutionPlan on the host with the reference kernels
// (worker/backends/reference/kernels.h), addressing one host arena exactly
// as the device would. It exercises everything the plan decides (memory
// reuse, views, in-place concats, merged outputs, copies) without a GPU;
// tests compare its results with the reference executor.
//
// To expose reads of memory nothing wrote yet or any more, every buffer is
// filled with NaN when its lifetime starts and after it ends, before presets
// and runtime inputs are written. Groups of a stage run one after another.
// Thread-safe (no shared state).
#ifndef IOSFARM_WORKER_BACKENDS_CUDA_PLANNER_PLAN_EMULATOR_H_
#define IOSFARM_WORKER_BACKENDS_CUDA_PLANNER_PLAN_EMULATOR_H_

#include <vector>

#include "common/status.h"
#include "graph/tensor.h"
#include "worker/backends/cuda/planner/execution_plan.h"

namespace iosfarm::worker::cuda {

// Writes presets and `graph_inputs` (graph.inputs() order; those the plan
// reads per run are taken by RuntimeInput::input_index) once, runs all stages
// `runs` times (as the device does when timing; a later run sees what earlier
// runs left in the arena) and returns the kept outputs of the last run.
// InvalidArgument when an input is missing or has the wrong size.
StatusOr<std::vector<graph::Tensor>> EmulatePlan(const ExecutionPlan& plan,
                                                 const std::vector<graph::Tensor>& graph_inputs,
                                                 int runs = 2);

}  // namespace iosfarm::worker::cuda

#endif  // IOSFARM_WORKER_BACKENDS_CUDA_PLANNER_PLAN_EMULATOR_H_
