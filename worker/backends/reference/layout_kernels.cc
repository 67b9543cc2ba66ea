// Reference data-movement kernels: concat, split, slice, pad, transpose, copy.
#include <algorithm>
#include <cstring>

#include "worker/backends/reference/kernels.h"
#include "worker/backends/reference/shape_util.h"

namespace iosfarm::worker::reference {
namespace {

// Source index of output position `i` along a padded dimension of size `n`,
// or -1 for the constant value.
int64_t PadSource(graph::PadMode mode, int64_t i, int64_t n) {
  if (i >= 0 && i < n) return i;
  switch (mode) {
    case graph::PadMode::kConstant:
      return -1;
    case graph::PadMode::kEdge:
      return std::clamp<int64_t>(i, 0, n - 1);
    case graph::PadMode::kReflect:
      // Mirror without repeating the edge; pads are < n (shape inference).
      return i < 0 ? -i : 2 * (n - 1) - i;
  }
  return -1;
}

}  // namespace

void Concat(int64_t axis, const std::vector<ConstView>& xs, const MutableView& y) {
  const size_t a = static_cast<size_t>(axis);
  const int64_t outer = Product(y.shape, 0, a);
  const int64_t out_row = Product(y.shape, a, y.shape.size());
  int64_t offset = 0;
  for (const ConstView& x : xs) {
    const int64_t row = Product(x.shape, a, x.shape.size());
    for (int64_t o = 0; o < outer; ++o) {
      std::copy(x.data + o * row, x.data + (o + 1) * row, y.data + o * out_row + offset);
    }
    offset += row;
  }
}

void Split(int64_t axis, const ConstView& x, const std::vector<MutableView>& ys) {
  const size_t a = static_cast<size_t>(axis);
  const int64_t outer = Product(x.shape, 0, a);
  const int64_t in_row = Product(x.shape, a, x.shape.size());
  int64_t offset = 0;
  for (const MutableView& y : ys) {
    const int64_t row = Product(y.shape, a, y.shape.size());
    for (int64_t o = 0; o < outer; ++o) {
      const float* src = x.data + o * in_row + offset;
      std::copy(src, src + row, y.data + o * row);
    }
    offset += row;
  }
}

void Slice(const graph::SliceAttrs& attrs, const ConstView& x, const MutableView& y) {
  const size_t rank = x.shape.size();
  std::vector<int64_t> start(rank, 0), step(rank, 1);
  for (size_t i = 0; i < attrs.axes.size(); ++i) {
    const size_t axis = static_cast<size_t>(attrs.axes[i]);
    start[axis] = attrs.starts[i];
    step[axis] = attrs.steps[i];
  }
  const std::vector<int64_t> strides = Strides(x.shape);
  std::vector<int64_t> index(rank, 0);
  int64_t out = 0;
  do {
    int64_t in = 0;
    for (size_t d = 0; d < rank; ++d) in += (start[d] + index[d] * step[d]) * strides[d];
    y.data[out++] = x.data[in];
  } while (NextIndex(y.shape, index));
}

void Pad(const graph::PadAttrs& attrs, const ConstView& x, const MutableView& y) {
  const size_t rank = x.shape.size();
  const std::vector<int64_t> strides = Strides(x.shape);
  std::vector<int64_t> index(rank, 0);
  int64_t out = 0;
  do {
    int64_t in = 0;
    bool constant = false;
    for (size_t d = 0; d < rank; ++d) {
      const int64_t source = PadSource(attrs.mode, index[d] - attrs.pads[d], x.shape[d]);
      if (source < 0) {
        constant = true;
        break;
      }
      in += source * strides[d];
    }
    y.data[out++] = constant ? attrs.value : x.data[in];
  } while (NextIndex(y.shape, index));
}

void Transpose(const std::vector<int64_t>& perm, const ConstView& x, const MutableView& y) {
  const size_t rank = x.shape.size();
  const std::vector<int64_t> strides = Strides(x.shape);
  std::vector<int64_t> index(rank, 0);
  int64_t out = 0;
  do {
    // Output dimension d is input dimension perm[d].
    int64_t in = 0;
    for (size_t d = 0; d < rank; ++d) in += index[d] * strides[static_cast<size_t>(perm[d])];
    y.data[out++] = x.data[in];
  } while (NextIndex(y.shape, index));
}

void Copy(const ConstView& x, const MutableView& y) {
  std::memcpy(y.data, x.data, static_cast<size_t>(graph::NumElements(x.shape)) * sizeof(float));
}

}  // namespace iosfarm::worker::reference
