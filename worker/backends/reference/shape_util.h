// Index arithmetic shared by the reference kernels (internal).
#ifndef IOSFARM_WORKER_BACKENDS_REFERENCE_SHAPE_UTIL_H_
#define IOSFARM_WORKER_BACKENDS_REFERENCE_SHAPE_UTIL_H_

#include <cstdint>
#include <vector>

#include "graph/tensor.h"

namespace iosfarm::worker::reference {

// Row-major strides of `shape` (elements).
std::vector<int64_t> Strides(const graph::Shape& shape);

// Strides of `shape` right-aligned to rank `rank` as numpy broadcasting does:
// leading missing dimensions and dimensions of size 1 get stride 0.
std::vector<int64_t> BroadcastStrides(const graph::Shape& shape, size_t rank);

// Product of shape[begin, end).
int64_t Product(const graph::Shape& shape, size_t begin, size_t end);

// Advances the multi-index `index` over `shape` (last dimension fastest).
// Returns false after the last element.
bool NextIndex(const graph::Shape& shape, std::vector<int64_t>& index);

}  // namespace iosfarm::worker::reference

#endif  // IOSFARM_WORKER_BACKENDS_REFERENCE_SHAPE_UTIL_H_
