// Softmax and the reductions (ReduceMean, ReduceSum, ReduceMax, ReduceMin)
// on oneDNN.
#include <variant>

#include "worker/backends/cpu/layout.h"
#include "worker/backends/cpu/op_compilers_internal.h"

namespace iosfarm::worker::cpu::internal {

OpOrNull CompileSoftmax(CompileContext& ctx, const graph::Node& node) {
  const int64_t axis = std::get<graph::SoftmaxAttrs>(node.attrs).axis;
  const graph::Shape& shape = ctx.Shape(node.inputs[0]);
  ASSIGN_OR_RETURN(dnnl::memory src, ctx.Value(node.inputs[0]));
  ASSIGN_OR_RETURN(dnnl::memory dst, ctx.Value(node.outputs[0]));
  auto op = std::make_unique<CpuOp>(node.name);
  // oneDNN's fast softmax wants a plain layout.
  const dnnl::memory plain_src = AddPlainInput(*op, src, shape);
  const dnnl::memory plain_dst = PlainOutputBuffer(dst, shape);
  dnnl::softmax_forward::desc desc(dnnl::prop_kind::forward_inference, PlainDesc(shape),
                                   static_cast<int>(axis));
  dnnl::softmax_forward::primitive_desc pd(desc, ScratchpadAttr(), ctx.engine());
  op->set_implementation(pd.impl_info_str());
  AddWithScratchpad(*op, dnnl::softmax_forward(pd), pd,
                    {{DNNL_ARG_SRC, plain_src}, {DNNL_ARG_DST, plain_dst}});
  FinishPlainOutput(*op, plain_dst, dst);
  return op;
}

namespace {

// ReduceMean over H and W of a 4-D tensor is a global average pool, which
// oneDNN runs fast in every layout (its reduction is a reference loop for
// blocked and channels-last sources).
OpOrNull SpatialMean(CompileContext& ctx, const graph::Node& node, const dnnl::memory& src,
                     const dnnl::memory& dst, const graph::Shape& kept) {
  const graph::Shape& in = ctx.Shape(node.inputs[0]);
  auto op = std::make_unique<CpuOp>(node.name);
  // keepdims: straight into the output; otherwise into the kept shape, then
  // a reorder into the (plain, lower-rank) output.
  const bool keepdims = ctx.Shape(node.outputs[0]) == kept;
  if (!keepdims && !IsPlain(dst.get_desc())) return std::unique_ptr<CpuOp>();
  dnnl::memory pool_dst =
      keepdims ? dst : dnnl::memory(StorageDesc(kept, ctx.values().layout()), ctx.engine());
  dnnl::pooling_v2_forward::desc desc(
      dnnl::prop_kind::forward_inference, dnnl::algorithm::pooling_avg_exclude_padding,
      src.get_desc(), pool_dst.get_desc(), {1, 1}, {in[2], in[3]}, {0, 0}, {0, 0}, {0, 0});
  dnnl::pooling_v2_forward::primitive_desc pd(desc, ScratchpadAttr(), ctx.engine());
  op->set_implementation(pd.impl_info_str());
  AddWithScratchpad(*op, dnnl::pooling_v2_forward(pd), pd,
                    {{DNNL_ARG_SRC, src}, {DNNL_ARG_DST, pool_dst}});
  if (!keepdims) {
    op->AddReorder(pool_dst, dnnl::memory(PlainDesc(kept), ctx.engine(), dst.get_data_handle()));
  }
  return op;
}

}  // namespace

OpOrNull CompileReduce(CompileContext& ctx, const graph::Node& node) {
  const auto& a = std::get<graph::ReduceAttrs>(node.attrs);
  const graph::Shape& in = ctx.Shape(node.inputs[0]);
  graph::Shape kept = in;
  for (size_t d = 0; d < kept.size(); ++d) {
    bool reduced = a.axes.empty();
    for (int64_t axis : a.axes) reduced = reduced || axis == static_cast<int64_t>(d);
    if (reduced) kept[d] = 1;
  }
  ASSIGN_OR_RETURN(dnnl::memory src, ctx.Value(node.inputs[0]));
  ASSIGN_OR_RETURN(dnnl::memory dst, ctx.Value(node.outputs[0]));
  if (node.type == graph::OpType::kReduceMean && in.size() == 4 &&
      a.axes == std::vector<int64_t>{2, 3}) {
    return SpatialMean(ctx, node, src, dst, kept);
  }
  dnnl::memory reduce_dst = dst;
  if (ctx.Shape(node.outputs[0]) != kept) {
    // keepdims = false: the same elements, described with the kept dims.
    if (!IsPlain(dst.get_desc())) return std::unique_ptr<CpuOp>();
    reduce_dst = dnnl::memory(PlainDesc(kept), ctx.engine(), dst.get_data_handle());
  }
  const dnnl::algorithm algorithm =
      node.type == graph::OpType::kReduceSum   ? dnnl::algorithm::reduction_sum
      : node.type == graph::OpType::kReduceMax ? dnnl::algorithm::reduction_max
      : node.type == graph::OpType::kReduceMin ? dnnl::algorithm::reduction_min
                                               : dnnl::algorithm::reduction_mean;
  dnnl::reduction::desc desc(algorithm, src.get_desc(), reduce_dst.get_desc(), 0.0f, 0.0f);
  dnnl::reduction::primitive_desc pd(desc, ScratchpadAttr(), ctx.engine());
  auto op = std::make_unique<CpuOp>(node.name);
  op->set_implementation(pd.impl_info_str());
  AddWithScratchpad(*op, dnnl::reduction(pd), pd,
                    {{DNNL_ARG_SRC, src}, {DNNL_ARG_DST, reduce_dst}});
  return op;
}

}  // namespace iosfarm::worker::cpu::internal
