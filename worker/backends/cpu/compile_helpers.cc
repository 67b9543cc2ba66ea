// Helpers shared by the op compilers (op_compilers_internal.h).
#include <cstring>

#include "common/strings.h"
#include "worker/backends/cpu/op_compilers_internal.h"
#include "worker/backends/weights.h"

namespace iosfarm::worker::cpu::internal {

dnnl::primitive_attr ScratchpadAttr() {
  dnnl::primitive_attr attr;
  attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
  return attr;
}

void AddWithScratchpad(CpuOp& op, const dnnl::primitive& primitive,
                       const dnnl::primitive_desc_base& pd,
                       std::unordered_map<int, dnnl::memory> args) {
  const dnnl::memory::desc scratchpad = pd.scratchpad_desc();
  if (scratchpad.get_size() > 0) {
    args[DNNL_ARG_SCRATCHPAD] = dnnl::memory(scratchpad, pd.get_engine());
  }
  op.AddPrimitive(primitive, std::move(args));
}

bool IsReferenceImpl(const dnnl::primitive_desc_base& pd) {
  const std::string impl = pd.impl_info_str();
  return impl.rfind("ref", 0) == 0;
}

dnnl::memory ConstantMemory(CompileContext& ctx, const std::vector<float>& data,
                            const dnnl::memory::desc& plain, const dnnl::memory::desc& target) {
  dnnl::memory result(target, ctx.engine());
  std::memset(result.get_data_handle(), 0, target.get_size());
  dnnl::memory source(plain, ctx.engine(), const_cast<float*>(data.data()));
  dnnl::reorder(source, result).execute(ctx.stream(), source, result);
  ctx.stream().wait();
  return result;
}

StatusOr<graph::Tensor> NodeWeight(const graph::Node& node, const std::string& role) {
  auto it = node.weights.find(role);
  if (it == node.weights.end()) {
    return absl::InvalidArgumentError(
        StrCat("node '", node.name, "' (", graph::OpTypeName(node.type), "): missing weight '",
               role, "'"));
  }
  graph::Tensor tensor = MaterializeWeight(node, role, it->second);
  if (static_cast<int64_t>(tensor.data.size()) != tensor.num_elements()) {
    return absl::InvalidArgumentError(StrCat("node '", node.name, "': weight '", role, "' has ",
                                             tensor.data.size(), " values for shape ",
                                             graph::ShapeToString(tensor.shape)));
  }
  return tensor;
}

}  // namespace iosfarm::worker::cpu::internal
