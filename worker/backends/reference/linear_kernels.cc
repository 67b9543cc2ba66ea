// Reference Gemm and MatMul.
#include <algorithm>

#include "worker/backends/reference/kernels.h"
#include "worker/backends/reference/shape_util.h"

namespace iosfarm::worker::reference {

void Gemm(const graph::GemmAttrs& attrs, const ConstView& a, const ConstView& b,
          const ConstView* c, const MutableView& y) {
  const int64_t m = y.shape[0], n = y.shape[1];
  const int64_t k = attrs.trans_a ? a.shape[0] : a.shape[1];
  // C broadcast to [m, n]: strides 0 along its size-1 (or missing) dimensions.
  std::vector<int64_t> c_strides = {0, 0};
  if (c != nullptr) c_strides = BroadcastStrides(c->shape, 2);
  for (int64_t i = 0; i < m; ++i) {
    for (int64_t j = 0; j < n; ++j) {
      double sum = 0;
      for (int64_t p = 0; p < k; ++p) {
        const double av = attrs.trans_a ? a.data[p * m + i] : a.data[i * k + p];
        const double bv = attrs.trans_b ? b.data[j * k + p] : b.data[p * n + j];
        sum += av * bv;
      }
      double value = attrs.alpha * sum;
      if (c != nullptr) {
        value += static_cast<double>(attrs.beta) * c->data[i * c_strides[0] + j * c_strides[1]];
      }
      y.data[i * n + j] = static_cast<float>(value);
    }
  }
}

void MatMul(const ConstView& a, const ConstView& b, const MutableView& y) {
  graph::Shape as = a.shape, bs = b.shape;
  if (as.size() == 1) as.insert(as.begin(), 1);
  if (bs.size() == 1) bs.push_back(1);
  const int64_t m = as[as.size() - 2], k = as.back(), n = bs.back();
  const graph::Shape a_batch(as.begin(), as.end() - 2), b_batch(bs.begin(), bs.end() - 2);
  const size_t rank = std::max(a_batch.size(), b_batch.size());
  graph::Shape batch(rank, 1);
  for (size_t d = 0; d < rank; ++d) {
    const int64_t da = d + a_batch.size() < rank ? 1 : a_batch[d + a_batch.size() - rank];
    const int64_t db = d + b_batch.size() < rank ? 1 : b_batch[d + b_batch.size() - rank];
    batch[d] = da == 1 ? db : da;
  }
  // Strides in units of whole matrices.
  const std::vector<int64_t> sa = BroadcastStrides(a_batch, rank);
  const std::vector<int64_t> sb = BroadcastStrides(b_batch, rank);
  std::vector<int64_t> index(rank, 0);
  int64_t out_matrix = 0;
  do {
    int64_t ia = 0, ib = 0;
    for (size_t d = 0; d < rank; ++d) {
      ia += index[d] * sa[d];
      ib += index[d] * sb[d];
    }
    const float* am = a.data + ia * m * k;
    const float* bm = b.data + ib * k * n;
    float* ym = y.data + out_matrix * m * n;
    for (int64_t i = 0; i < m; ++i) {
      for (int64_t j = 0; j < n; ++j) {
        double sum = 0;
        for (int64_t p = 0; p < k; ++p) sum += double{am[i * k + p]} * bm[p * n + j];
        ym[i * n + j] = static_cast<float>(sum);
      }
    }
    ++out_matrix;
  } while (NextIndex(batch, index));
}

}  // namespace iosfarm::worker::reference
