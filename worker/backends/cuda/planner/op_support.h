// Which graph operators the cuda backend executes, checked before anything
// runs (Backend::CheckSupported, Build, RunSchedule).
#ifndef IOSFARM_WORKER_BACKENDS_CUDA_PLANNER_OP_SUPPORT_H_
#define IOSFARM_WORKER_BACKENDS_CUDA_PLANNER_OP_SUPPORT_H_

#include "common/status.h"
#include "graph/graph.h"
#include "worker/backends/op_support.h"

namespace iosfarm::worker::cuda {

// The op types the cuda backend implements at all (every op of the IR).
OpTypeSet CudaSupportedOps();

// OK when `node` of `graph` can run: its op type is implemented, its
// attributes match, and its shapes (which must be inferred) stay within the
// limits of the kernels and libraries used (rank <= kMaxKernelRank for the
// N-d kernels, int-sized dimensions for cuDNN and cuBLAS). Unimplemented
// naming the node and op type otherwise (InvalidArgument for mismatched
// attributes or missing shapes).
Status CheckNodeSupported(const graph::Graph& graph, const graph::Node& node);

// CheckNodeSupported for every node, the first failure.
Status CheckGraphSupported(const graph::Graph& graph);

}  // namespace iosfarm::worker::cuda

#endif  // IOSFARM_WORKER_BACKENDS_CUDA_PLANNER_OP_SUPPORT_H_
