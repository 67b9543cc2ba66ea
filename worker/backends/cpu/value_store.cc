#include "worker/backends/cpu/value_store.h"

#include <cstdint>
#include <cstring>

#include "common/strings.h"
#include "worker/backends/cpu/layout.h"

namespace iosfarm::worker::cpu {

ValueStore::Buffer* ValueStore::Acquire(size_t size) {
  Buffer* best = nullptr;
  for (const auto& buffer : buffers_) {
    if (!buffer->in_use && buffer->size >= size && (best == nullptr || buffer->size < best->size)) {
      best = buffer.get();
    }
  }
  if (best == nullptr) {
    auto buffer = std::make_unique<Buffer>();
    // new float[] is aligned for float only; oneDNN prefers 64 bytes, so
    // over-allocate and let the memory start at an aligned element.
    const size_t floats = (size + sizeof(float) - 1) / sizeof(float) + 16;
    buffer->data.reset(new float[floats]());
    buffer->size = size;
    bytes_ += floats * sizeof(float);
    best = buffer.get();
    buffers_.push_back(std::move(buffer));
  }
  best->in_use = true;
  return best;
}

dnnl::memory ValueStore::Get(graph::ValueId value, const graph::Shape& shape) {
  auto it = memories_.find(value);
  if (it != memories_.end()) return it->second;
  const dnnl::memory::desc md = StorageDesc(shape, layout_);
  Buffer* buffer = Acquire(md.get_size());
  auto address = reinterpret_cast<uintptr_t>(buffer->data.get());
  address = (address + 63) & ~uintptr_t{63};
  dnnl::memory memory(md, engine_, reinterpret_cast<void*>(address));
  memories_.emplace(value, memory);
  owners_[value] = buffer;
  return memory;
}

void ValueStore::Release(graph::ValueId value) {
  auto it = owners_.find(value);
  if (it == owners_.end()) return;
  it->second->in_use = false;
  owners_.erase(it);
}

Status ValueStore::Write(graph::ValueId value, const graph::Tensor& tensor,
                         dnnl::stream& stream) {
  return Write(value, tensor.shape, tensor.data, stream);
}

Status ValueStore::Write(graph::ValueId value, const graph::Shape& shape,
                         std::span<const float> data, dnnl::stream& stream) {
  if (static_cast<int64_t>(data.size()) != graph::NumElements(shape)) {
    return absl::InvalidArgumentError(StrCat("tensor of shape ", graph::ShapeToString(shape),
                                             " has ", data.size(), " values"));
  }
  dnnl::memory target = Get(value, shape);
  dnnl::memory source(PlainDesc(shape), engine_, const_cast<float*>(data.data()));
  dnnl::reorder(source, target).execute(stream, source, target);
  stream.wait();
  return absl::OkStatus();
}

StatusOr<graph::Tensor> ValueStore::Read(graph::ValueId value, const graph::Shape& shape,
                                         dnnl::stream& stream) const {
  graph::Tensor tensor;
  tensor.shape = shape;
  tensor.data.resize(static_cast<size_t>(graph::NumElements(shape)));
  RETURN_IF_ERROR(ReadInto(value, shape, tensor.data, stream));
  return tensor;
}

Status ValueStore::ReadInto(graph::ValueId value, const graph::Shape& shape,
                            std::span<float> out, dnnl::stream& stream) const {
  auto it = memories_.find(value);
  if (it == memories_.end()) {
    return absl::FailedPreconditionError(StrCat("value ", value, " has no memory"));
  }
  if (static_cast<int64_t>(out.size()) != graph::NumElements(shape)) {
    return absl::InvalidArgumentError(StrCat("buffer of ", out.size(), " values for shape ",
                                             graph::ShapeToString(shape)));
  }
  dnnl::memory target(PlainDesc(shape), engine_, out.data());
  dnnl::memory source = it->second;
  dnnl::reorder(source, target).execute(stream, source, target);
  stream.wait();
  return absl::OkStatus();
}

}  // namespace iosfarm::worker::cpu
