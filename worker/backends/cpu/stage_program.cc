#include "worker/backends/cpu/stage_program.h"

#include <set>

#include "common/strings.h"
#include "graph/cost.h"
#include "worker/backends/cpu/lane_partition.h"
#include "worker/backends/residual_fusion.h"

namespace iosfarm::worker::cpu {

StatusOr<std::unique_ptr<StageProgram>> StageProgram::Compile(
    CompileContext& ctx, const scheduler::ios::Stage& stage, int cores) {
  if (stage.num_ops() == 0) return absl::InvalidArgumentError("cannot compile an empty stage");
  std::unique_ptr<StageProgram> program(new StageProgram());
  if (stage.strategy == scheduler::ios::Strategy::kMerge) {
    if (!stage.merged.has_value()) {
      return absl::InvalidArgumentError(
          StrCat("merge stage ", scheduler::ios::StageToString(ctx.graph(), stage),
                 " has no merged convolution"));
    }
    Lane lane;
    lane.threads = cores;
    ScopedOmpThreads scoped(cores);
    ASSIGN_OR_RETURN(std::unique_ptr<CpuOp> op, CompileMergedConv(ctx, *stage.merged));
    lane.ops.push_back(std::move(op));
    program->lanes_.push_back(std::move(lane));
  } else {
    std::vector<double> costs;
    for (const auto& group : stage.groups) {
      double cost = 0;
      for (graph::NodeId id : group) {
        if (id < 0 || id >= ctx.graph().num_nodes()) {
          return absl::InvalidArgumentError(StrCat("stage: node id ", id, " out of range"));
        }
        const graph::OpCost c = graph::ComputeOpCost(ctx.graph(), ctx.graph().node(id));
        // FLOPs plus memory traffic (a byte costs about a FLOP's time here).
        cost += static_cast<double>(c.flops + c.bytes_read + c.bytes_written);
      }
      costs.push_back(cost);
    }
    // Conv + Add (+ Relu) chains of a group run as one convolution at the
    // Add's position (residual_fusion.h); where oneDNN cannot fuse one, its
    // conv and Add compile there instead, and its Relu at its own position.
    const ResidualFusions fusions = ResidualFusions::Find(ctx.graph(), stage);
    std::set<graph::NodeId> unfused_relus;
    for (const LanePlan& plan : PartitionLanes(costs, cores)) {
      Lane lane;
      lane.threads = plan.threads;
      ScopedOmpThreads scoped(plan.threads);
      for (int g : plan.groups) {
        for (graph::NodeId id : stage.groups[g]) {
          if (fusions.Absorbed(id) && unfused_relus.count(id) == 0) continue;
          std::vector<graph::NodeId> nodes = {id};
          if (const ResidualFusion* fusion = fusions.AtAdd(id)) {
            ASSIGN_OR_RETURN(std::unique_ptr<CpuOp> fused, CompileResidualConv(ctx, *fusion));
            if (fused != nullptr) {
              lane.ops.push_back(std::move(fused));
              ++program->fused_residual_adds_;
              continue;
            }
            nodes = {fusion->conv, id};
            if (fusion->relu != graph::kNoNode) unfused_relus.insert(fusion->relu);
          }
          for (graph::NodeId node : nodes) {
            ASSIGN_OR_RETURN(std::unique_ptr<CpuOp> op, CompileNode(ctx, node));
            lane.ops.push_back(std::move(op));
          }
        }
      }
      program->lanes_.push_back(std::move(lane));
    }
  }
  for (const Lane& lane : program->lanes_) {
    const Lane* bound = &lane;
    program->runners_.push_back([bound](dnnl::stream& stream) {
      for (const auto& op : bound->ops) op->Run(stream);
    });
    program->threads_.push_back(lane.threads);
  }
  return program;
}

Status StageProgram::Run(LanePool& pool, dnnl::stream& stream) const {
  if (runners_.size() == 1) {
    ScopedOmpThreads scoped(threads_[0]);
    return RunGuarded(runners_[0], stream);
  }
  return pool.Run(runners_, threads_, stream);
}

std::vector<std::string> StageProgram::Describe() const {
  std::vector<std::string> lines;
  for (size_t l = 0; l < lanes_.size(); ++l) {
    for (const auto& op : lanes_[l].ops) {
      lines.push_back(StrCat("lane ", l, " (", lanes_[l].threads, " threads) ", op->name(), ": ",
                             op->implementation()));
    }
  }
  return lines;
}

}  // namespace iosfarm::worker::cpu
