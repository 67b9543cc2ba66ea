// Data movement: channel concat/split and reshape/flatten.
#include <cstring>
#include <variant>

#include "worker/backends/cpu/layout.h"
#include "worker/backends/cpu/op_compilers_internal.h"

namespace iosfarm::worker::cpu::internal {

OpOrNull CompileChannelConcatSplit(CompileContext& ctx, const graph::Node& node) {
  const bool is_concat = node.type == graph::OpType::kConcat;
  const int64_t axis = is_concat ? std::get<graph::ConcatAttrs>(node.attrs).axis
                                 : std::get<graph::SplitAttrs>(node.attrs).axis;
  const graph::ValueId whole = is_concat ? node.outputs[0] : node.inputs[0];
  const std::vector<graph::ValueId>& parts = is_concat ? node.inputs : node.outputs;
  if (axis != 1 || ctx.Shape(whole).size() != 4) return std::unique_ptr<CpuOp>();
  ASSIGN_OR_RETURN(dnnl::memory whole_memory, ctx.Value(whole));
  if (!IsChannelCopyable(whole_memory.get_desc())) return std::unique_ptr<CpuOp>();
  auto op = std::make_unique<CpuOp>(node.name);
  op->set_implementation("channel copy");
  int64_t offset = 0;
  for (graph::ValueId part : parts) {
    ASSIGN_OR_RETURN(dnnl::memory part_memory, ctx.Value(part));
    if (!IsChannelCopyable(part_memory.get_desc())) return std::unique_ptr<CpuOp>();
    const int64_t channels = ctx.Shape(part)[1];
    if (is_concat) {
      op->AddFunction([part_memory, whole_memory, offset, channels] {
        CopyChannels(part_memory, 0, whole_memory, offset, channels);
      });
    } else {
      op->AddFunction([part_memory, whole_memory, offset, channels] {
        CopyChannels(whole_memory, offset, part_memory, 0, channels);
      });
    }
    offset += channels;
  }
  // Copies leave a blocked output's channel padding as they found it.
  for (graph::ValueId v : node.outputs) {
    ASSIGN_OR_RETURN(dnnl::memory out, ctx.Value(v));
    if (HasChannelPadding(out.get_desc())) op->AddFunction([out] { ZeroChannelPadding(out); });
  }
  return op;
}

OpOrNull CompileReshape(CompileContext& ctx, const graph::Node& node) {
  ASSIGN_OR_RETURN(dnnl::memory src, ctx.Value(node.inputs[0]));
  ASSIGN_OR_RETURN(dnnl::memory dst, ctx.Value(node.outputs[0]));
  const graph::Shape& in = ctx.Shape(node.inputs[0]);
  const graph::Shape& out = ctx.Shape(node.outputs[0]);
  auto op = std::make_unique<CpuOp>(node.name);
  const bool src_plain = IsPlain(src.get_desc()), dst_plain = IsPlain(dst.get_desc());
  if (src_plain && dst_plain) {
    const size_t bytes = static_cast<size_t>(graph::NumElements(in)) * sizeof(float);
    op->AddFunction([src, dst, bytes] {
      std::memcpy(dst.get_data_handle(), src.get_data_handle(), bytes);
    });
    op->set_implementation("copy");
    return op;
  }
  // Element order is that of the plain layouts: view the plain side with the
  // other side's dims and reorder.
  op->set_implementation("reorder");
  if (dst_plain) {
    op->AddReorder(src, dnnl::memory(PlainDesc(in), ctx.engine(), dst.get_data_handle()));
  } else if (src_plain) {
    op->AddReorder(dnnl::memory(PlainDesc(out), ctx.engine(), src.get_data_handle()), dst);
  } else {
    dnnl::memory plain = AddPlainInput(*op, src, in);
    op->AddReorder(dnnl::memory(PlainDesc(out), ctx.engine(), plain.get_data_handle()), dst);
  }
  return op;
}

}  // namespace iosfarm::worker::cpu::internal
