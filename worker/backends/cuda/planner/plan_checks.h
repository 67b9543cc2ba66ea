// Consistency checks of an ExecutionPlan that hold by construction; the
// plan builder runs them on every plan it makes, so a planning bug is an
// error at Build time instead of a data race or corrupted output on a GPU.
#ifndef IOSFARM_WORKER_BACKENDS_CUDA_PLANNER_PLAN_CHECKS_H_
#define IOSFARM_WORKER_BACKENDS_CUDA_PLANNER_PLAN_CHECKS_H_

#include "common/status.h"
#include "worker/backends/cuda/planner/execution_plan.h"

namespace iosfarm::worker::cuda {

// OK when: every TensorRef and copy lies inside its buffer and every
// WeightRef inside the weights; buffers are inside the arena and buffers with
// overlapping lifetimes do not share bytes; no step writes memory it reads
// (no kernel runs in place) or writes one byte twice; and within a stage no
// group writes memory another group reads or writes (groups run
// concurrently). Internal naming the stage, group and step otherwise.
Status CheckPlanHazards(const ExecutionPlan& plan);

}  // namespace iosfarm::worker::cuda

#endif  // IOSFARM_WORKER_BACKENDS_CUDA_PLANNER_PLAN_CHECKS_H_
