// Compiles graph operators into CpuOps for the cpu backend.
//
// oneDNN runs what it has: convolution (bias and activation fused as a
// post-op, a residual Add as a sum post-op; weights reordered once at compile
// time into the layout the chosen implementation wants), pooling, eltwise, binary with broadcasting, batch
// norm, matmul (Gemm/MatMul), softmax, reduction and reorders. Channel
// concat/split and merged-conv slices are direct copies between layouts.
// Everything else (Slice, Pad, Transpose, general Concat/Split, broadcasts
// oneDNN cannot express, an AveragePool that counts padding in ceil mode)
// runs the reference kernels (worker/backends/reference) on plain copies:
// correct for every op of the IR, single-threaded.
//
// Compiling allocates the memories of every value the op touches in the
// context's ValueStore; it never runs an op (only weight reorders). Weights
// without data are materialised (weights.h). Not thread-safe per context.
#ifndef IOSFARM_WORKER_BACKENDS_CPU_OP_COMPILER_H_
#define IOSFARM_WORKER_BACKENDS_CPU_OP_COMPILER_H_

#include <memory>

#include <oneapi/dnnl/dnnl.hpp>

#include "common/status.h"
#include "graph/graph.h"
#include "scheduler/ios/stages/stage.h"
#include "worker/backends/cpu/cpu_op.h"
#include "worker/backends/cpu/value_store.h"
#include "worker/backends/residual_fusion.h"

namespace iosfarm::worker::cpu {

class CompileContext {
 public:
  // `stream` runs compile-time reorders (weights, constants).
  CompileContext(const graph::Graph& graph, ValueStore& values, dnnl::stream& stream)
      : graph_(graph), values_(values), stream_(stream) {}

  const graph::Graph& graph() const { return graph_; }
  const dnnl::engine& engine() const { return values_.engine(); }
  dnnl::stream& stream() { return stream_; }
  ValueStore& values() { return values_; }

  const graph::Shape& Shape(graph::ValueId value) const { return graph_.value(value).shape; }

  // The memory of `value`. A Constant's output is filled with its value on
  // first use (Constants are never scheduled).
  StatusOr<dnnl::memory> Value(graph::ValueId value);

 private:
  const graph::Graph& graph_;
  ValueStore& values_;
  dnnl::stream& stream_;
};

// Compiles node `id`. InvalidArgument for a node the IR does not allow
// (missing weight, bad shapes); Internal when oneDNN fails unexpectedly.
StatusOr<std::unique_ptr<CpuOp>> CompileNode(CompileContext& ctx, graph::NodeId id);

// Compiles the merged convolution of a merge stage, writing each branch's
// output value.
StatusOr<std::unique_ptr<CpuOp>> CompileMergedConv(CompileContext& ctx,
                                                   const scheduler::ios::MergedConv& merged);

// How the implementation string of a fused residual conv ends.
inline constexpr char kResidualFusedSuffix[] = " (residual add fused)";

// Compiles the Conv + Add (+ Relu) of `fusion` (residual_fusion.h) as one
// oneDNN convolution, y = act(conv(x) + B + z): the residual z is copied into
// the output and added by a sum post-op, then the Relu post-op. Writes
// fusion.output; the conv's and the Add's outputs get no memory. nullptr when
// oneDNN cannot run it (the caller then compiles the three nodes); errors as
// CompileNode.
StatusOr<std::unique_ptr<CpuOp>> CompileResidualConv(CompileContext& ctx,
                                                     const ResidualFusion& fusion);

// Compiles node `id` with the reference kernels only (the fallback above).
StatusOr<std::unique_ptr<CpuOp>> CompileReferenceNode(CompileContext& ctx, graph::NodeId id);

}  // namespace iosfarm::worker::cpu

#endif  // IOSFARM_WORKER_BACKENDS_CPU_OP_COMPILER_H_
