#include "worker/backends/reference/shape_util.h"

namespace iosfarm::worker::reference {

std::vector<int64_t> Strides(const graph::Shape& shape) {
  std::vector<int64_t> strides(shape.size(), 1);
  for (size_t d = shape.size(); d-- > 1;) strides[d - 1] = strides[d] * shape[d];
  return strides;
}

std::vector<int64_t> BroadcastStrides(const graph::Shape& shape, size_t rank) {
  const std::vector<int64_t> own = Strides(shape);
  std::vector<int64_t> strides(rank, 0);
  const size_t lead = rank - shape.size();
  for (size_t d = 0; d < shape.size(); ++d) {
    strides[lead + d] = shape[d] == 1 ? 0 : own[d];
  }
  return strides;
}

int64_t Product(const graph::Shape& shape, size_t begin, size_t end) {
  int64_t p = 1;
  for (size_t d = begin; d < end && d < shape.size(); ++d) p *= shape[d];
  return p;
}

bool NextIndex(const graph::Shape& shape, std::vector<int64_t>& index) {
  for (size_t d = shape.size(); d-- > 0;) {
    if (++index[d] < shape[d]) return true;
    index[d] = 0;
  }
  return false;
}

}  // namespace iosfarm::worker::reference
