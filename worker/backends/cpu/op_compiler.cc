#include "worker/backends/cpu/op_compiler.h"

#include <memory>
#include <stdexcept>
#include <variant>

#include "common/strings.h"
#include "graph/op_type.h"
#include "graph/shape_inference.h"
#include "worker/backends/cpu/layout.h"
#include "worker/backends/cpu/op_compilers_internal.h"
#include "worker/backends/merged_conv_weights.h"
#include "worker/backends/reference/node_kernel.h"
#include "worker/backends/weights.h"

namespace iosfarm::worker::cpu {
namespace {

using graph::OpType;

// Checks that `node`'s inputs and outputs have the shapes shape inference
// gives, so that kernels can trust them.
Status CheckNodeShapes(const graph::Graph& graph, const graph::Node& node) {
  std::vector<graph::Shape> input_shapes;
  for (graph::ValueId v : node.inputs) input_shapes.push_back(graph.value(v).shape);
  ASSIGN_OR_RETURN(std::vector<graph::Shape> outputs, graph::InferNodeShapes(node, input_shapes));
  for (size_t i = 0; i < outputs.size(); ++i) {
    if (graph.value(node.outputs[i]).shape != outputs[i]) {
      return absl::InvalidArgumentError(StrCat(
          "node '", node.name, "': output '", graph.value(node.outputs[i]).name, "' has shape ",
          graph::ShapeToString(graph.value(node.outputs[i]).shape), ", inferred ",
          graph::ShapeToString(outputs[i])));
    }
  }
  return absl::OkStatus();
}

internal::OpOrNull CompileWithOneDnn(CompileContext& ctx, const graph::Node& node) {
  switch (node.type) {
    case OpType::kConv:
      return internal::CompileConv(ctx, node);
    case OpType::kConvTranspose:
      return internal::CompileConvTranspose(ctx, node);
    case OpType::kMaxPool:
    case OpType::kAveragePool:
    case OpType::kGlobalAveragePool:
    case OpType::kGlobalMaxPool:
      return internal::CompilePool(ctx, node);
    IOSFARM_ACTIVATION_OP_CASES:
    case OpType::kIdentity:
    case OpType::kDropout:
      return internal::CompileEltwise(ctx, node);
    case OpType::kBatchNormalization:
      return internal::CompileBatchNorm(ctx, node);
    case OpType::kAdd:
    case OpType::kSub:
    case OpType::kMul:
    case OpType::kDiv:
      return internal::CompileBinary(ctx, node);
    case OpType::kConcat:
    case OpType::kSplit:
      return internal::CompileChannelConcatSplit(ctx, node);
    case OpType::kReshape:
    case OpType::kFlatten:
      return internal::CompileReshape(ctx, node);
    case OpType::kGemm:
      return internal::CompileGemm(ctx, node);
    case OpType::kMatMul:
      return internal::CompileMatMul(ctx, node);
    case OpType::kSoftmax:
      return internal::CompileSoftmax(ctx, node);
    IOSFARM_REDUCE_OP_CASES:
      return internal::CompileReduce(ctx, node);
    case OpType::kConstant:
    case OpType::kSlice:
    case OpType::kPad:
    case OpType::kTranspose:
    case OpType::kResize:
      return std::unique_ptr<CpuOp>();
  }
  return std::unique_ptr<CpuOp>();
}

}  // namespace

StatusOr<dnnl::memory> CompileContext::Value(graph::ValueId value) {
  const graph::Value& v = graph_.value(value);
  if (v.shape.empty()) {
    return absl::InvalidArgumentError(StrCat("value '", v.name, "' has no inferred shape"));
  }
  if (!values_.Has(value) && v.producer != graph::kNoNode &&
      graph_.node(v.producer).type == OpType::kConstant) {
    const graph::Node& constant = graph_.node(v.producer);
    ASSIGN_OR_RETURN(graph::Tensor data, internal::NodeWeight(constant, "value"));
    data.shape = v.shape;  // a scalar value is stored as [1]
    RETURN_IF_ERROR(values_.Write(value, data, stream_));
  }
  return values_.Get(value, v.shape);
}

StatusOr<std::unique_ptr<CpuOp>> CompileReferenceNode(CompileContext& ctx, graph::NodeId id) {
  const graph::Node& node = ctx.graph().node(id);
  RETURN_IF_ERROR(CheckNodeShapes(ctx.graph(), node));
  auto op = std::make_unique<CpuOp>(node.name);
  op->set_implementation("reference loop");
  std::vector<reference::ConstView> inputs;
  for (graph::ValueId v : node.inputs) {
    ASSIGN_OR_RETURN(dnnl::memory stored, ctx.Value(v));
    dnnl::memory plain = AddPlainInput(*op, stored, ctx.Shape(v));
    inputs.push_back({static_cast<const float*>(plain.get_data_handle()), ctx.Shape(v)});
  }
  std::vector<reference::MutableView> outputs;
  std::vector<std::pair<dnnl::memory, dnnl::memory>> finish;  // plain, stored
  for (graph::ValueId v : node.outputs) {
    ASSIGN_OR_RETURN(dnnl::memory stored, ctx.Value(v));
    dnnl::memory plain = PlainOutputBuffer(stored, ctx.Shape(v));
    outputs.push_back({static_cast<float*>(plain.get_data_handle()), ctx.Shape(v)});
    finish.emplace_back(plain, stored);
  }
  auto weights = std::make_shared<const std::map<std::string, graph::Tensor>>(
      MaterializeNodeWeights(node));
  graph::Node bare = node;
  bare.weights.clear();
  auto shared_node = std::make_shared<const graph::Node>(std::move(bare));
  op->AddFunction([shared_node, weights, inputs, outputs] {
    Status status = reference::RunNode(*shared_node, *weights, inputs, outputs);
    if (!status.ok()) throw std::runtime_error(std::string(ToStd(status.message())));
  });
  for (const auto& [plain, stored] : finish) FinishPlainOutput(*op, plain, stored);
  return op;
}

StatusOr<std::unique_ptr<CpuOp>> CompileNode(CompileContext& ctx, graph::NodeId id) {
  if (id < 0 || id >= ctx.graph().num_nodes()) {
    return absl::InvalidArgumentError(StrCat("node id ", id, " out of range"));
  }
  const graph::Node& node = ctx.graph().node(id);
  RETURN_IF_ERROR(CheckNodeShapes(ctx.graph(), node));
  if (node.type == OpType::kConstant) {
    // Its value is written when first read; nothing runs.
    RETURN_IF_ERROR(ctx.Value(node.outputs[0]).status());
    auto op = std::make_unique<CpuOp>(node.name);
    op->set_implementation("constant");
    return op;
  }
  internal::OpOrNull compiled = std::unique_ptr<CpuOp>();
  try {
    compiled = CompileWithOneDnn(ctx, node);
  } catch (const dnnl::error&) {
    compiled = std::unique_ptr<CpuOp>();  // oneDNN has no implementation: fall back
  }
  if (!compiled.ok()) return compiled.status();
  if (*compiled != nullptr) return std::move(*compiled);
  try {
    return CompileReferenceNode(ctx, id);
  } catch (const dnnl::error& e) {
    return absl::InternalError(StrCat("node '", node.name, "': oneDNN: ", e.what()));
  }
}

StatusOr<std::unique_ptr<CpuOp>> CompileResidualConv(CompileContext& ctx,
                                                     const ResidualFusion& fusion) {
  const graph::Graph& g = ctx.graph();
  for (graph::NodeId id : {fusion.conv, fusion.add, fusion.relu}) {
    if (id != graph::kNoNode) RETURN_IF_ERROR(CheckNodeShapes(g, g.node(id)));
  }
  try {
    return internal::CompileResidualConv(ctx, fusion);
  } catch (const dnnl::error&) {
    return std::unique_ptr<CpuOp>();  // no implementation: the caller un-fuses
  }
}

StatusOr<std::unique_ptr<CpuOp>> CompileMergedConv(CompileContext& ctx,
                                                   const scheduler::ios::MergedConv& merged) {
  if (merged.branches.empty()) return absl::InvalidArgumentError("merged conv has no branches");
  ASSIGN_OR_RETURN(MergedConvWeights weights, AssembleMergedConvWeights(ctx.graph(), merged));
  const graph::Node& first = ctx.graph().node(merged.branches[0].op);
  std::string name = "merge[";
  for (size_t i = 0; i < merged.branches.size(); ++i) {
    name += StrCat(i > 0 ? "+" : "", ctx.graph().node(merged.branches[i].op).name);
  }
  name += "]";
  const graph::Shape& src_shape = ctx.Shape(merged.input);
  const graph::Shape& branch_shape = ctx.Shape(first.outputs[0]);
  if (src_shape.size() != 4 || branch_shape.size() != 4) {
    return absl::InvalidArgumentError(StrCat(name, ": input and outputs must be 4-D"));
  }
  const graph::Shape dst_shape = {src_shape[0], merged.attrs.out_channels, branch_shape[2],
                                  branch_shape[3]};
  try {
    ASSIGN_OR_RETURN(dnnl::memory src, ctx.Value(merged.input));
    ASSIGN_OR_RETURN(internal::Convolution conv,
                     internal::BuildConvolution(ctx, name, merged.attrs, src, src_shape,
                                                weights.weight,
                                                merged.attrs.has_bias ? &weights.bias : nullptr,
                                                dnnl::memory(), dst_shape));
    dnnl::memory merged_out = conv.dst;
    if (!IsChannelCopyable(merged_out.get_desc())) {
      merged_out = dnnl::memory(PlainDesc(dst_shape), ctx.engine());
      conv.op->AddReorder(conv.dst, merged_out);
    }
    for (const scheduler::ios::MergedBranch& branch : merged.branches) {
      const graph::ValueId out = ctx.graph().node(branch.op).outputs[0];
      if (ctx.Shape(out) != graph::Shape{dst_shape[0], branch.channel_end - branch.channel_begin,
                                         dst_shape[2], dst_shape[3]}) {
        return absl::InvalidArgumentError(StrCat(name, ": output of '",
                                                 ctx.graph().node(branch.op).name,
                                                 "' does not match its channel range"));
      }
      ASSIGN_OR_RETURN(dnnl::memory out_memory, ctx.Value(out));
      const int64_t begin = branch.channel_begin, count = branch.channel_end - begin;
      conv.op->AddFunction([merged_out, out_memory, begin, count] {
        CopyChannels(merged_out, begin, out_memory, 0, count);
        ZeroChannelPadding(out_memory);
      });
    }
    return std::move(conv.op);
  } catch (const dnnl::error& e) {
    return absl::InternalError(StrCat(name, ": oneDNN: ", e.what()));
  }
}

}  // namespace iosfarm::worker::cpu
