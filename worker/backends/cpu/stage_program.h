// StageProgram: one IOS stage compiled for the cpu backend.
//
// Concurrent stage: the groups are packed into lanes (lane_partition.h) and
// each lane's ops are compiled with its OpenMP thread count; Run executes the
// lanes in parallel on a LanePool. Conv + Add (+ Relu) chains within a group
// run as one convolution with a sum post-op where residual_fusion.h allows. Merge stage: the merged convolution
// (op_compiler.h) on one lane with every core. A program reads and writes
// the memories of the ValueStore it was compiled against, which must outlive
// it. Run is not reentrant (callers serialise it).
#ifndef IOSFARM_WORKER_BACKENDS_CPU_STAGE_PROGRAM_H_
#define IOSFARM_WORKER_BACKENDS_CPU_STAGE_PROGRAM_H_

#include <memory>
#include <string>
#include <vector>

#include <oneapi/dnnl/dnnl.hpp>

#include "common/status.h"
#include "scheduler/ios/stages/stage.h"
#include "worker/backends/cpu/cpu_op.h"
#include "worker/backends/cpu/lane_pool.h"
#include "worker/backends/cpu/op_compiler.h"

namespace iosfarm::worker::cpu {

class StageProgram {
 public:
  // Compiles `stage` of ctx.graph() for `cores` cores. Errors: those of the
  // op compilers, InvalidArgument for an empty stage or a merge stage
  // without its merged conv.
  static StatusOr<std::unique_ptr<StageProgram>> Compile(CompileContext& ctx,
                                                         const scheduler::ios::Stage& stage,
                                                         int cores);

  // Executes the stage; returns when all of it finished.
  Status Run(LanePool& pool, dnnl::stream& stream) const;

  int num_lanes() const { return static_cast<int>(lanes_.size()); }
  // "name: implementation" of every op, lane by lane (for logs and tests).
  std::vector<std::string> Describe() const;
  // Residual Adds (with their convs and Relus) that run fused.
  int num_fused_residual_adds() const { return fused_residual_adds_; }

 private:
  struct Lane {
    std::vector<std::unique_ptr<CpuOp>> ops;
    int threads = 1;
  };
  StageProgram() = default;

  std::vector<Lane> lanes_;
  std::vector<LanePool::Lane> runners_;  // one per lane, bound to lanes_
  std::vector<int> threads_;
  int fused_residual_adds_ = 0;
};

}  // namespace iosfarm::worker::cpu

#endif  // IOSFARM_WORKER_BACKENDS_CPU_STAGE_PROGRAM_H_
