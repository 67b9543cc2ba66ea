#include "worker/backends/cpu/value_store.h"

#include <cstring>

#include "common/strings.h"
#include "worker/backends/cpu/layout.h"

namespace iosfarm::worker::cpu {

dnnl::memory ValueStore::Get(graph::ValueId value, const graph::Shape& shape) {
  auto it = memories_.find(value);
  if (it != memories_.end()) return it->second;
  const dnnl::memory::desc md = StorageDesc(shape, layout_);
  dnnl::memory memory(md, engine_);
  std::memset(memory.get_data_handle(), 0, md.get_size());
  bytes_ += md.get_size();
  memories_.emplace(value, memory);
  return memory;
}

Status ValueStore::Write(graph::ValueId value, const graph::Tensor& tensor,
                         dnnl::stream& stream) {
  if (static_cast<int64_t>(tensor.data.size()) != tensor.num_elements()) {
    return absl::InvalidArgumentError(StrCat("tensor of shape ", graph::ShapeToString(tensor.shape),
                                             " has ", tensor.data.size(), " values"));
  }
  dnnl::memory target = Get(value, tensor.shape);
  dnnl::memory source(PlainDesc(tensor.shape), engine_,
                      const_cast<float*>(tensor.data.data()));
  dnnl::reorder(source, target).execute(stream, source, target);
  stream.wait();
  return absl::OkStatus();
}

StatusOr<graph::Tensor> ValueStore::Read(graph::ValueId value, const graph::Shape& shape,
                                         dnnl::stream& stream) const {
  auto it = memories_.find(value);
  if (it == memories_.end()) {
    return absl::FailedPreconditionError(StrCat("value ", value, " has no memory"));
  }
  graph::Tensor tensor;
  tensor.shape = shape;
  tensor.data.resize(static_cast<size_t>(graph::NumElements(shape)));
  dnnl::memory target(PlainDesc(shape), engine_, tensor.data.data());
  dnnl::memory source = it->second;
  dnnl::reorder(source, target).execute(stream, source, target);
  stream.wait();
  return tensor;
}

}  // namespace iosfarm::worker::cpu
