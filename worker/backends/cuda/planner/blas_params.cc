#include "worker/backends/cuda/planner/blas_params.h"

#include <algorithm>
#include <limits>

#include "common/strings.h"

namespace iosfarm::worker::cuda {
namespace {

StatusOr<int> Int(int64_t v, const char* what) {
  if (v < 1 || v > std::numeric_limits<int>::max()) {
    return absl::InvalidArgumentError(StrCat(what, " = ", v, " is not a positive int"));
  }
  return static_cast<int>(v);
}

}  // namespace

StatusOr<SgemmArgs> RowMajorSgemm(bool trans_a, bool trans_b, int64_t rows_y, int64_t cols_y,
                                  int64_t k) {
  SgemmArgs args;
  ASSIGN_OR_RETURN(args.m, Int(cols_y, "N"));
  ASSIGN_OR_RETURN(args.n, Int(rows_y, "M"));
  ASSIGN_OR_RETURN(args.k, Int(k, "K"));
  // B stored [K, N] row-major is column-major N x K = op(B)^T as needed;
  // stored [N, K] (trans_b) it is K x N and must be transposed.
  args.trans_first = trans_b;
  args.ld_first = trans_b ? args.k : args.m;
  // A stored [M, K] row-major is column-major K x M = op(A)^T as needed;
  // stored [K, M] (trans_a) it is M x K and must be transposed.
  args.trans_second = trans_a;
  args.ld_second = trans_a ? args.n : args.k;
  args.ldc = args.m;
  return args;
}

StatusOr<MatMulLayout> PlanMatMul(const graph::Shape& a_shape, const graph::Shape& b_shape) {
  graph::Shape as = a_shape, bs = b_shape;
  if (as.empty() || bs.empty()) return absl::InvalidArgumentError("matmul operand of rank 0");
  if (as.size() == 1) as.insert(as.begin(), 1);
  if (bs.size() == 1) bs.push_back(1);
  MatMulLayout layout;
  layout.m = as[as.size() - 2];
  layout.k = as.back();
  layout.n = bs.back();
  if (bs[bs.size() - 2] != layout.k) {
    return absl::InvalidArgumentError("matmul inner dimensions differ");
  }
  const graph::Shape a_batch(as.begin(), as.end() - 2), b_batch(bs.begin(), bs.end() - 2);
  const size_t rank = std::max(a_batch.size(), b_batch.size());
  graph::Shape batch(rank, 1), a_dims(rank, 1), b_dims(rank, 1);
  for (size_t d = 0; d < rank; ++d) {
    if (d + a_batch.size() >= rank) a_dims[d] = a_batch[d + a_batch.size() - rank];
    if (d + b_batch.size() >= rank) b_dims[d] = b_batch[d + b_batch.size() - rank];
    if (a_dims[d] != b_dims[d] && a_dims[d] != 1 && b_dims[d] != 1) {
      return absl::InvalidArgumentError("matmul batch dimensions do not broadcast");
    }
    batch[d] = a_dims[d] == 1 ? b_dims[d] : a_dims[d];
  }
  layout.batch = graph::NumElements(batch);
  // Offsets (in matrices) by numpy broadcasting, output matrices in
  // row-major order of the batch index (last dimension fastest).
  std::vector<int64_t> index(rank, 0);
  for (int64_t i = 0; i < layout.batch; ++i) {
    int64_t a_off = 0, b_off = 0, a_stride = 1, b_stride = 1;
    for (size_t d = rank; d-- > 0;) {
      if (a_dims[d] != 1) a_off += index[d] * a_stride;
      if (b_dims[d] != 1) b_off += index[d] * b_stride;
      a_stride *= a_dims[d];
      b_stride *= b_dims[d];
    }
    layout.a_offsets.push_back(a_off * layout.m * layout.k);
    layout.b_offsets.push_back(b_off * layout.k * layout.n);
    for (size_t d = rank; d-- > 0;) {
      if (++index[d] < batch[d]) break;
      index[d] = 0;
    }
  }
  layout.a_step = layout.batch > 1 ? layout.a_offsets[1] : 0;
  layout.b_step = layout.batch > 1 ? layout.b_offsets[1] : 0;
  for (int64_t i = 0; i < layout.batch; ++i) {
    if (layout.a_offsets[i] != i * layout.a_step || layout.b_offsets[i] != i * layout.b_step) {
      layout.strided = false;
    }
  }
  return layout;
}

}  // namespace iosfarm::worker::cuda
