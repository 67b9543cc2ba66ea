// A stage of a graph costed by the sim model: its kernels, its simulated time
// and a content key for seeded noise.
//
// Concurrent stage: each group's ops become its kernels (kernel_model.h; view
// ops launch none) and stage_simulator.h shares the device between groups.
// Merge stage: one convolution with the merged shape, in one group (the
// branches' outputs are channel slices of it, so nothing else runs).
#ifndef IOSFARM_WORKER_BACKENDS_SIM_SIM_STAGE_H_
#define IOSFARM_WORKER_BACKENDS_SIM_SIM_STAGE_H_

#include <cstdint>

#include "common/status.h"
#include "graph/graph.h"
#include "scheduler/ios/stages/stage.h"
#include "worker/backends/sim/device_model.h"
#include "worker/backends/sim/stage_simulator.h"

namespace iosfarm::worker::sim {

struct SimStage {
  GroupKernels groups;
  // Hash of the strategy and each group's ops' content
  // (scheduler::ios::OpContentHash): equal for stages that run the same
  // kernels, whatever their node names or ids. Not a signature (it ignores
  // intra-stage edges); only used to key noise.
  uint64_t key = 0;
  double time_us = 0;  // SimulateStageUs(groups)
};

// Whether BuildSimStage computes SimStage::key (hashing every op's content
// costs more than simulating the stage; noise-free simulation needs no key).
enum class SimStageKey { kContent, kNone };

// Validates `stage` against `graph` (scheduler/ios/stage_validation.h) and costs it.
// InvalidArgument from the validation; `model` must be valid. With
// SimStageKey::kNone the key is 0.
StatusOr<SimStage> BuildSimStage(const graph::Graph& graph, const scheduler::ios::Stage& stage,
                                 const SimDeviceModel& model,
                                 SimStageKey key = SimStageKey::kContent);

// BuildSimStage for a stage already validated against `graph` (a backend's
// DoBuild gets stages Backend::Build has validated), without validating it
// again.
SimStage CostSimStage(const graph::Graph& graph, const scheduler::ios::Stage& stage,
                      const SimDeviceModel& model, SimStageKey key = SimStageKey::kContent);

}  // namespace iosfarm::worker::sim

#endif  // IOSFARM_WORKER_BACKENDS_SIM_SIM_STAGE_H_
