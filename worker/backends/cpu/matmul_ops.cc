// Gemm and MatMul on oneDNN's matmul primitive.
#include <variant>

#include "worker/backends/cpu/layout.h"
#include "worker/backends/cpu/op_compilers_internal.h"

namespace iosfarm::worker::cpu::internal {
namespace {

using dnnl::memory;

memory::desc Any(const graph::Shape& shape) {
  return memory::desc(ToDims(shape), memory::data_type::f32, memory::format_tag::any);
}

graph::Shape LeadingOnes(graph::Shape shape, size_t rank) {
  shape.insert(shape.begin(), rank - shape.size(), 1);
  return shape;
}

}  // namespace

OpOrNull CompileGemm(CompileContext& ctx, const graph::Node& node) {
  const auto& a = std::get<graph::GemmAttrs>(node.attrs);
  const graph::Shape& a_shape = ctx.Shape(node.inputs[0]);
  const graph::Shape& y_shape = ctx.Shape(node.outputs[0]);
  const int64_t m = y_shape[0], n = y_shape[1];
  const int64_t k = a.trans_a ? a_shape[0] : a_shape[1];
  ASSIGN_OR_RETURN(memory a_memory, ctx.Value(node.inputs[0]));
  ASSIGN_OR_RETURN(memory y, ctx.Value(node.outputs[0]));
  auto op = std::make_unique<CpuOp>(node.name);
  // A' as [M, K]; when transposed, a reorder from the strided view of [K, M]
  // (oneDNN's fast matmul wants a plain source).
  memory src(PlainDesc({m, k}), ctx.engine(), a_memory.get_data_handle());
  if (a.trans_a) {
    src = memory(PlainDesc({m, k}), ctx.engine());
    op->AddReorder(memory(memory::desc({m, k}, memory::data_type::f32, {1, m}), ctx.engine(),
                          a_memory.get_data_handle()),
                   src);
  }
  // Constants folded once: B' = alpha * op(B) as [K, N], bias = beta * C.
  ASSIGN_OR_RETURN(graph::Tensor b, NodeWeight(node, "B"));
  std::vector<float> weights(static_cast<size_t>(k * n));
  for (int64_t p = 0; p < k; ++p) {
    for (int64_t j = 0; j < n; ++j) {
      weights[p * n + j] = a.alpha * (a.trans_b ? b.data[j * k + p] : b.data[p * n + j]);
    }
  }
  // beta * C: the matmul's bias when it is a row vector [1, N] (a Linear
  // layer; oneDNN's fast matmul takes no other bias shape), else added by a
  // binary step in place.
  graph::Tensor c;
  graph::Shape c_shape;
  const bool has_c = node.weights.count("C") > 0;
  if (has_c) {
    ASSIGN_OR_RETURN(c, NodeWeight(node, "C"));
    for (float& v : c.data) v *= a.beta;
    c_shape = LeadingOnes(c.shape, 2);
  }
  const bool bias_row = has_c && c_shape == graph::Shape{1, n};
  dnnl::matmul::desc desc =
      bias_row ? dnnl::matmul::desc(src.get_desc(), Any({k, n}), PlainDesc(c_shape), y.get_desc())
               : dnnl::matmul::desc(src.get_desc(), Any({k, n}), y.get_desc());
  dnnl::matmul::primitive_desc pd(desc, ScratchpadAttr(), ctx.engine());
  std::unordered_map<int, memory> args = {
      {DNNL_ARG_SRC, src},
      {DNNL_ARG_WEIGHTS, ConstantMemory(ctx, weights, PlainDesc({k, n}), pd.weights_desc())},
      {DNNL_ARG_DST, y}};
  if (bias_row) {
    args[DNNL_ARG_BIAS] = ConstantMemory(ctx, c.data, PlainDesc(c_shape), pd.bias_desc());
  }
  op->set_implementation(pd.impl_info_str());
  AddWithScratchpad(*op, dnnl::matmul(pd), pd, std::move(args));
  if (has_c && !bias_row) {
    const memory::desc c_md = PlainDesc(c_shape);
    dnnl::binary::primitive_desc add(
        dnnl::binary::desc(dnnl::algorithm::binary_add, y.get_desc(), c_md, y.get_desc()),
        ScratchpadAttr(), ctx.engine());
    AddWithScratchpad(*op, dnnl::binary(add), add,
                      {{DNNL_ARG_SRC_0, y},
                       {DNNL_ARG_SRC_1, ConstantMemory(ctx, c.data, c_md, c_md)},
                       {DNNL_ARG_DST, y}});
  }
  return op;
}

OpOrNull CompileMatMul(CompileContext& ctx, const graph::Node& node) {
  const bool constant_b = node.inputs.size() == 1;
  graph::Shape as = ctx.Shape(node.inputs[0]);
  graph::Tensor b_weight;
  graph::Shape bs;
  if (constant_b) {
    ASSIGN_OR_RETURN(b_weight, NodeWeight(node, "B"));
    bs = b_weight.shape;
  } else {
    bs = ctx.Shape(node.inputs[1]);
  }
  const graph::Shape& y_shape = ctx.Shape(node.outputs[0]);
  if (as.size() == 1) as.insert(as.begin(), 1);
  if (bs.size() == 1) bs.push_back(1);
  const size_t rank = std::max(as.size(), bs.size());
  if (rank > 12) return std::unique_ptr<CpuOp>();
  as = LeadingOnes(as, rank);
  bs = LeadingOnes(bs, rank);
  graph::Shape ys(rank);
  for (size_t d = 0; d + 2 < rank; ++d) ys[d] = std::max(as[d], bs[d]);
  ys[rank - 2] = as[rank - 2];
  ys[rank - 1] = bs[rank - 1];
  if (graph::NumElements(ys) != graph::NumElements(y_shape)) return std::unique_ptr<CpuOp>();

  auto op = std::make_unique<CpuOp>(node.name);
  ASSIGN_OR_RETURN(memory a_stored, ctx.Value(node.inputs[0]));
  const memory a_plain = AddPlainInput(*op, a_stored, ctx.Shape(node.inputs[0]));
  ASSIGN_OR_RETURN(memory y_stored, ctx.Value(node.outputs[0]));
  const memory y_plain = PlainOutputBuffer(y_stored, y_shape);
  const memory::desc src_md = PlainDesc(as), dst_md = PlainDesc(ys);
  const memory::desc weights_md = constant_b ? Any(bs) : PlainDesc(bs);
  dnnl::matmul::primitive_desc pd(dnnl::matmul::desc(src_md, weights_md, dst_md),
                                  ScratchpadAttr(), ctx.engine());
  memory weights;
  if (constant_b) {
    weights = ConstantMemory(ctx, b_weight.data, PlainDesc(bs), pd.weights_desc());
  } else {
    ASSIGN_OR_RETURN(memory b_stored, ctx.Value(node.inputs[1]));
    const memory b_plain = AddPlainInput(*op, b_stored, ctx.Shape(node.inputs[1]));
    weights = memory(weights_md, ctx.engine(), b_plain.get_data_handle());
  }
  op->set_implementation(pd.impl_info_str());
  AddWithScratchpad(*op, dnnl::matmul(pd), pd,
                    {{DNNL_ARG_SRC, memory(src_md, ctx.engine(), a_plain.get_data_handle())},
                     {DNNL_ARG_WEIGHTS, weights},
                     {DNNL_ARG_DST, memory(dst_md, ctx.engine(), y_plain.get_data_handle())}});
  FinishPlainOutput(*op, y_plain, y_stored);
  return op;
}

}  // namespace iosfarm::worker::cpu::internal
