// Per-family op compilers of the cpu backend (internal to op_compiler.cc).
//
// Each Compile* returns the compiled op, or nullptr when oneDNN cannot run
// this instance (CompileNode then uses the reference kernels). They may
// throw dnnl::error, which CompileNode also treats as "use the fallback".
#ifndef IOSFARM_WORKER_BACKENDS_CPU_OP_COMPILERS_INTERNAL_H_
#define IOSFARM_WORKER_BACKENDS_CPU_OP_COMPILERS_INTERNAL_H_

#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include <oneapi/dnnl/dnnl.hpp>

#include "common/status.h"
#include "graph/graph.h"
#include "worker/backends/cpu/cpu_op.h"
#include "worker/backends/cpu/op_compiler.h"
#include "worker/backends/residual_fusion.h"

namespace iosfarm::worker::cpu::internal {

using OpOrNull = StatusOr<std::unique_ptr<CpuOp>>;

OpOrNull CompileConv(CompileContext& ctx, const graph::Node& node);
// Null where the output padding exceeds the end pads (the reference loop).
OpOrNull CompileConvTranspose(CompileContext& ctx, const graph::Node& node);
// The Conv + Add (+ Relu) of `fusion` as one convolution (sum post-op).
OpOrNull CompileResidualConv(CompileContext& ctx, const ResidualFusion& fusion);
OpOrNull CompilePool(CompileContext& ctx, const graph::Node& node);
// Relu, Clip, Sigmoid, HardSigmoid, HardSwish, Tanh, UnaryMath (but Erf:
// null, the reference loop), Identity, Dropout.
OpOrNull CompileEltwise(CompileContext& ctx, const graph::Node& node);
OpOrNull CompileBatchNorm(CompileContext& ctx, const graph::Node& node);
OpOrNull CompileBinary(CompileContext& ctx, const graph::Node& node);
// Concat / Split along the channels of 4-D tensors.
OpOrNull CompileChannelConcatSplit(CompileContext& ctx, const graph::Node& node);
// Reshape, Flatten.
OpOrNull CompileReshape(CompileContext& ctx, const graph::Node& node);
OpOrNull CompileGemm(CompileContext& ctx, const graph::Node& node);
OpOrNull CompileMatMul(CompileContext& ctx, const graph::Node& node);
OpOrNull CompileSoftmax(CompileContext& ctx, const graph::Node& node);
// ReduceMean, ReduceSum, ReduceMax, ReduceMin.
OpOrNull CompileReduce(CompileContext& ctx, const graph::Node& node);

struct Convolution {
  std::unique_ptr<CpuOp> op;
  dnnl::memory dst;
};

// A convolution of `src` with the plain [OC, C/groups, KH, KW] `weight` and
// optional `bias`, activation fused. Writes `dst` when given (non-empty
// handle), else a memory in the layout the implementation prefers, which is
// returned. Prefers an implementation that reads and writes the storage
// layouts directly; otherwise reorders around the one oneDNN picks. With
// `residual` (z, of dst's shape, never dst's memory) it computes
// act(conv + bias + z): z is copied into the conv's dst first and added by a
// sum post-op before the activation post-op; the implementation string then
// ends in kResidualFusedSuffix.
StatusOr<Convolution> BuildConvolution(CompileContext& ctx, const std::string& name,
                                       const graph::ConvAttrs& attrs, const dnnl::memory& src,
                                       const graph::Shape& src_shape,
                                       const graph::Tensor& weight, const graph::Tensor* bias,
                                       const dnnl::memory& dst, const graph::Shape& dst_shape,
                                       const dnnl::memory* residual = nullptr);

// Primitive attributes with a user-managed scratchpad (so that primitives of
// concurrent groups never share one).
dnnl::primitive_attr ScratchpadAttr();

// Appends `primitive` with `args` plus its own scratchpad memory.
void AddWithScratchpad(CpuOp& op, const dnnl::primitive& primitive,
                       const dnnl::primitive_desc_base& pd,
                       std::unordered_map<int, dnnl::memory> args);

// True for oneDNN's slow reference implementations ("ref:...").
bool IsReferenceImpl(const dnnl::primitive_desc_base& pd);

// A memory of layout `target` holding `data` (laid out as `plain`); the
// reorder runs now, on the context's stream.
dnnl::memory ConstantMemory(CompileContext& ctx, const std::vector<float>& data,
                            const dnnl::memory::desc& plain, const dnnl::memory::desc& target);

// Weight `role` of `node` with data (materialised when it has none).
// InvalidArgument naming the node when it is missing.
StatusOr<graph::Tensor> NodeWeight(const graph::Node& node, const std::string& role);

}  // namespace iosfarm::worker::cpu::internal

#endif  // IOSFARM_WORKER_BACKENDS_CPU_OP_COMPILERS_INTERNAL_H_
