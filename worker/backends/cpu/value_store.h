// ValueStore: the memory of every value a cpu stage or schedule touches.
//
// Each value gets one oneDNN memory in its storage layout (layout.h),
// allocated on first use. Buffers are owned by the store and live as long as
// it; compiled ops hold handles to them.
//
// Memory planning: Release(value) declares a value dead for everything
// compiled afterwards, and its buffer may then back a value allocated later
// (best fit by size). RunSchedule releases a value after compiling the last
// stage that reads it, so a schedule needs about its peak live memory rather
// than the sum of all its tensors. New buffers are zero-filled; a reused one
// holds stale data until its new value is written (every op writes its
// outputs in full, zero channel padding included).
//
// Not thread-safe: filled while compiling, then only read (the data itself is
// written by executing ops).
#ifndef IOSFARM_WORKER_BACKENDS_CPU_VALUE_STORE_H_
#define IOSFARM_WORKER_BACKENDS_CPU_VALUE_STORE_H_

#include <cstddef>
#include <memory>
#include <span>
#include <unordered_map>
#include <vector>

#include <oneapi/dnnl/dnnl.hpp>

#include "common/status.h"
#include "graph/graph.h"
#include "graph/tensor.h"
#include "worker/backends/cpu/layout.h"

namespace iosfarm::worker::cpu {

class ValueStore {
 public:
  ValueStore(dnnl::engine engine, ActivationLayout layout)
      : engine_(std::move(engine)), layout_(layout) {}

  const dnnl::engine& engine() const { return engine_; }
  ActivationLayout layout() const { return layout_; }

  bool Has(graph::ValueId value) const { return memories_.count(value) > 0; }

  // The memory of `value` (of `shape`), allocated on first call.
  dnnl::memory Get(graph::ValueId value, const graph::Shape& shape);

  // Hands `value`'s buffer back for reuse by values allocated later (no-op
  // for unknown or already released values). Its memory handle stays valid
  // for ops compiled earlier; the caller guarantees that none of them runs
  // after the ops that reuse the buffer within one execution, and that values
  // whose data is written before execution (Write: inputs, constants) were
  // allocated before the first Release.
  void Release(graph::ValueId value);

  // Writes the plain tensor `tensor` into `value`'s memory (allocating it).
  // InvalidArgument when the data size does not match the shape.
  Status Write(graph::ValueId value, const graph::Tensor& tensor, dnnl::stream& stream);
  // The same from plain row-major memory holding `value`'s `shape`.
  Status Write(graph::ValueId value, const graph::Shape& shape, std::span<const float> data,
               dnnl::stream& stream);

  // Reads `value` back as a plain tensor of `shape`. FailedPrecondition when
  // the value has no memory.
  StatusOr<graph::Tensor> Read(graph::ValueId value, const graph::Shape& shape,
                               dnnl::stream& stream) const;
  // The same into plain row-major memory of NumElements(shape) values.
  Status ReadInto(graph::ValueId value, const graph::Shape& shape, std::span<float> out,
                  dnnl::stream& stream) const;

  // Bytes of all buffers allocated (what planning saves shows here).
  size_t bytes() const { return bytes_; }

 private:
  struct Buffer {
    std::unique_ptr<float[]> data;
    size_t size = 0;  // bytes
    bool in_use = false;
  };

  Buffer* Acquire(size_t size);

  dnnl::engine engine_;
  ActivationLayout layout_;
  std::unordered_map<graph::ValueId, dnnl::memory> memories_;
  std::unordered_map<graph::ValueId, Buffer*> owners_;  // values not released
  std::vector<std::unique_ptr<Buffer>> buffers_;
  size_t bytes_ = 0;
};

}  // namespace iosfarm::worker::cpu

#endif  // IOSFARM_WORKER_BACKENDS_CPU_VALUE_STORE_H_
