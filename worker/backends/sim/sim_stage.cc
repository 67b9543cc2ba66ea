#include "worker/backends/sim/sim_stage.h"

#include "scheduler/ios/stages/op_content.h"
#include "scheduler/ios/stages/stable_hash.h"
#include "scheduler/ios/stages/stage_validation.h"
#include "worker/backends/sim/kernel_model.h"

namespace iosfarm::worker::sim {

using scheduler::ios::HashCombine;
using scheduler::ios::Strategy;

StatusOr<SimStage> BuildSimStage(const graph::Graph& graph, const scheduler::ios::Stage& stage,
                                 const SimDeviceModel& model, SimStageKey key) {
  RETURN_IF_ERROR(scheduler::ios::ValidateStage(graph, stage));
  return CostSimStage(graph, stage, model, key);
}

SimStage CostSimStage(const graph::Graph& graph, const scheduler::ios::Stage& stage,
                      const SimDeviceModel& model, SimStageKey key) {
  SimStage sim;
  if (key == SimStageKey::kContent) {
    sim.key = HashCombine(0x51u, static_cast<uint64_t>(stage.strategy));
    for (const auto& group : stage.groups) {
      sim.key = HashCombine(sim.key, group.size());
      for (graph::NodeId id : group) {
        sim.key = HashCombine(sim.key, scheduler::ios::OpContentHash(graph, graph.node(id)));
      }
    }
  }
  if (stage.strategy == Strategy::kMerge) {
    sim.groups = {{MergedConvKernel(graph, *stage.merged, model)}};
  } else {
    for (const auto& group : stage.groups) {
      std::vector<SimKernel>& kernels = sim.groups.emplace_back();
      for (graph::NodeId id : group) {
        if (auto kernel = OpKernel(graph, graph.node(id), model)) kernels.push_back(*kernel);
      }
    }
  }
  sim.time_us = SimulateStageUs(sim.groups, model);
  return sim;
}

}  // namespace iosfarm::worker::sim
