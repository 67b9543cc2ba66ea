// ValueStore: the memory of every value a cpu stage or schedule touches.
//
// Each value gets one oneDNN memory in its storage layout (layout.h),
// allocated on first use and zero-filled (blocked layouts need zero channel
// padding). Memories live as long as the store; compiled ops hold handles to
// them. Not thread-safe: filled while compiling, then only read (the data
// itself is written by executing ops).
#ifndef IOSFARM_WORKER_BACKENDS_CPU_VALUE_STORE_H_
#define IOSFARM_WORKER_BACKENDS_CPU_VALUE_STORE_H_

#include <unordered_map>

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

  // Writes the plain tensor `tensor` into `value`'s memory (allocating it).
  // InvalidArgument when the data size does not match the shape.
  Status Write(graph::ValueId value, const graph::Tensor& tensor, dnnl::stream& stream);

  // Reads `value` back as a plain tensor of `shape`. FailedPrecondition when
  // the value has no memory.
  StatusOr<graph::Tensor> Read(graph::ValueId value, const graph::Shape& shape,
                               dnnl::stream& stream) const;

  // Total bytes allocated.
  size_t bytes() const { return bytes_; }

 private:
  dnnl::engine engine_;
  ActivationLayout layout_;
  std::unordered_map<graph::ValueId, dnnl::memory> memories_;
  size_t bytes_ = 0;
};

}  // namespace iosfarm::worker::cpu

#endif  // IOSFARM_WORKER_BACKENDS_CPU_VALUE_STORE_H_
