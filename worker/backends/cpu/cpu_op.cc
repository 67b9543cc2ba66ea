#include "worker/backends/cpu/cpu_op.h"

#include <cstring>

#include "worker/backends/cpu/layout.h"

namespace iosfarm::worker::cpu {
namespace {

dnnl::memory ZeroedMemory(const dnnl::memory::desc& md, const dnnl::engine& engine) {
  dnnl::memory memory(md, engine);
  std::memset(memory.get_data_handle(), 0, md.get_size());
  return memory;
}

}  // namespace

void CpuOp::AddReorder(const dnnl::memory& from, const dnnl::memory& to) {
  AddPrimitive(dnnl::reorder(from, to), {{DNNL_ARG_FROM, from}, {DNNL_ARG_TO, to}});
}

void CpuOp::Run(dnnl::stream& stream) const {
  for (const Step& step : steps_) {
    if (step.function) {
      step.function();
    } else {
      step.primitive.execute(stream, step.args);
    }
  }
}

dnnl::memory AddPlainInput(CpuOp& op, const dnnl::memory& stored, const graph::Shape& shape) {
  if (IsPlain(stored.get_desc())) return stored;
  dnnl::memory plain = ZeroedMemory(PlainDesc(shape), stored.get_engine());
  op.AddReorder(stored, plain);
  return plain;
}

dnnl::memory PlainOutputBuffer(const dnnl::memory& stored, const graph::Shape& shape) {
  if (IsPlain(stored.get_desc())) return stored;
  return ZeroedMemory(PlainDesc(shape), stored.get_engine());
}

void FinishPlainOutput(CpuOp& op, const dnnl::memory& plain, const dnnl::memory& stored) {
  if (plain.get_data_handle() == stored.get_data_handle()) return;
  op.AddReorder(plain, stored);
}

}  // namespace iosfarm::worker::cpu
