// Pooling (windowed and global) on oneDNN.
#include <algorithm>
#include <variant>

#include "worker/backends/cpu/layout.h"
#include "worker/backends/cpu/op_compilers_internal.h"

namespace iosfarm::worker::cpu::internal {

OpOrNull CompilePool(CompileContext& ctx, const graph::Node& node) {
  using dnnl::algorithm;
  const graph::Shape& in = ctx.Shape(node.inputs[0]);
  const graph::Shape& out = ctx.Shape(node.outputs[0]);
  graph::PoolAttrs a;
  bool is_max = node.type == graph::OpType::kMaxPool;
  if (node.type == graph::OpType::kGlobalAveragePool ||
      node.type == graph::OpType::kGlobalMaxPool) {
    a.kernel = {in[2], in[3]};
    is_max = node.type == graph::OpType::kGlobalMaxPool;
  } else {
    a = std::get<graph::PoolAttrs>(node.attrs);
  }
  // oneDNN derives the output size with floor; ceil_mode becomes extra right
  // padding that no window crosses beyond the last one.
  dnnl::memory::dims pad_r(2);
  bool overhang = false;
  for (int i = 0; i < 2; ++i) {
    pad_r[i] = (out[2 + i] - 1) * a.stride[i] + a.kernel[i] - in[2 + i] - a.pads[i];
    overhang = overhang || pad_r[i] > a.pads[2 + i];
    pad_r[i] = std::max<int64_t>(pad_r[i], 0);
  }
  // oneDNN would count the ceil-mode overhang as padding.
  if (!is_max && a.count_include_pad && overhang) return std::unique_ptr<CpuOp>();
  const algorithm alg = is_max                ? algorithm::pooling_max
                        : a.count_include_pad ? algorithm::pooling_avg_include_padding
                                              : algorithm::pooling_avg_exclude_padding;
  ASSIGN_OR_RETURN(dnnl::memory src, ctx.Value(node.inputs[0]));
  ASSIGN_OR_RETURN(dnnl::memory dst, ctx.Value(node.outputs[0]));
  dnnl::pooling_v2_forward::desc desc(
      dnnl::prop_kind::forward_inference, alg, src.get_desc(), dst.get_desc(),
      {a.stride[0], a.stride[1]}, {a.kernel[0], a.kernel[1]}, {0, 0}, {a.pads[0], a.pads[1]},
      pad_r);
  dnnl::pooling_v2_forward::primitive_desc pd(desc, ScratchpadAttr(), ctx.engine());
  auto op = std::make_unique<CpuOp>(node.name);
  op->set_implementation(pd.impl_info_str());
  AddWithScratchpad(*op, dnnl::pooling_v2_forward(pd), pd,
                    {{DNNL_ARG_SRC, src}, {DNNL_ARG_DST, dst}});
  return op;
}

}  // namespace iosfarm::worker::cpu::internal
