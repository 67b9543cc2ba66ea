// Add/Sub/Mul/Div with numpy broadcasting on oneDNN's binary primitive.
#include "worker/backends/cpu/layout.h"
#include "worker/backends/cpu/op_compilers_internal.h"

namespace iosfarm::worker::cpu::internal {
namespace {

dnnl::algorithm BinaryAlgorithm(graph::OpType type) {
  switch (type) {
    case graph::OpType::kSub:
      return dnnl::algorithm::binary_sub;
    case graph::OpType::kMul:
      return dnnl::algorithm::binary_mul;
    case graph::OpType::kDiv:
      return dnnl::algorithm::binary_div;
    default:
      return dnnl::algorithm::binary_add;
  }
}

}  // namespace

OpOrNull CompileBinary(CompileContext& ctx, const graph::Node& node) {
  graph::ValueId first = node.inputs[0], second = node.inputs[1];
  const graph::ValueId out = node.outputs[0];
  // oneDNN broadcasts only its second source: the first must have the output
  // shape. Add and Mul commute; Sub and Div with a broadcast first operand
  // use the reference loop.
  if (ctx.Shape(first) != ctx.Shape(out)) {
    const bool commutative = node.type == graph::OpType::kAdd || node.type == graph::OpType::kMul;
    if (!commutative || ctx.Shape(second) != ctx.Shape(out)) return std::unique_ptr<CpuOp>();
    std::swap(first, second);
  }
  ASSIGN_OR_RETURN(dnnl::memory src0, ctx.Value(first));
  ASSIGN_OR_RETURN(dnnl::memory src1, ctx.Value(second));
  ASSIGN_OR_RETURN(dnnl::memory dst, ctx.Value(out));
  const graph::Shape& out_shape = ctx.Shape(out);
  graph::Shape src1_shape = ctx.Shape(second);
  if (src1_shape.size() < out_shape.size()) {
    // Lower rank: right-align with leading ones (only a plain layout can be
    // re-described that way).
    if (!IsPlain(src1.get_desc())) return std::unique_ptr<CpuOp>();
    src1_shape.insert(src1_shape.begin(), out_shape.size() - src1_shape.size(), 1);
    src1 = dnnl::memory(PlainDesc(src1_shape), ctx.engine(), src1.get_data_handle());
  }
  dnnl::binary::desc desc(BinaryAlgorithm(node.type), src0.get_desc(), src1.get_desc(),
                          dst.get_desc());
  dnnl::binary::primitive_desc pd(desc, ScratchpadAttr(), ctx.engine());
  auto op = std::make_unique<CpuOp>(node.name);
  op->set_implementation(pd.impl_info_str());
  AddWithScratchpad(*op, dnnl::binary(pd), pd,
                    {{DNNL_ARG_SRC_0, src0}, {DNNL_ARG_SRC_1, src1}, {DNNL_ARG_DST, dst}});
  return op;
}

}  // namespace iosfarm::worker::cpu::internal
