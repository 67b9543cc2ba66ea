// The cuBLAS arguments of the backend's row-major Gemm and MatMul, computed
// on the host (blas_ops.cc issues them) and tested against a column-major
// SGEMM emulation without a GPU.
//
// cuBLAS is column-major: a row-major matrix R [rows, cols] is the
// column-major matrix R^T with leading dimension cols. The row-major product
// Y = op(A) op(B) is computed as the column-major Y^T = op(B)^T op(A)^T: the
// call's first operand is B, its second A.
#ifndef IOSFARM_WORKER_BACKENDS_CUDA_PLANNER_BLAS_PARAMS_H_
#define IOSFARM_WORKER_BACKENDS_CUDA_PLANNER_BLAS_PARAMS_H_

#include <cstdint>
#include <vector>

#include "common/status.h"
#include "graph/tensor.h"

namespace iosfarm::worker::cuda {

// cublasSgemm(handle, trans_first, trans_second, m, n, k, alpha, B, ld_first,
// A, ld_second, beta, Y, ldc) for row-major Y [M, N] = op(A) op(B).
struct SgemmArgs {
  bool trans_first = false;   // CUBLAS_OP_T on B
  bool trans_second = false;  // CUBLAS_OP_T on A
  int m = 0, n = 0, k = 0;    // cuBLAS's: m = N, n = M, k = K
  int ld_first = 0, ld_second = 0, ldc = 0;
};

// Row-major Y [rows_y, cols_y] = op(A) op(B); A is [rows_y, k] ([k, rows_y]
// when trans_a), B is [k, cols_y] ([cols_y, k] when trans_b).
StatusOr<SgemmArgs> RowMajorSgemm(bool trans_a, bool trans_b, int64_t rows_y, int64_t cols_y,
                                  int64_t k);

// numpy matmul of a and b (1-D operands promoted) as `batch` products
// [m, k] x [k, n]; product i reads matrix a_offsets[i] / b_offsets[i]
// (element offsets) and writes y + i * m * n. When every offset steps by a
// constant (a_step, b_step) one strided-batched call does it all.
struct MatMulLayout {
  int64_t m = 0, n = 0, k = 0, batch = 1;
  std::vector<int64_t> a_offsets, b_offsets;
  bool strided = true;
  int64_t a_step = 0, b_step = 0;
};

// InvalidArgument when the shapes do not multiply.
StatusOr<MatMulLayout> PlanMatMul(const graph::Shape& a, const graph::Shape& b);

}  // namespace iosfarm::worker::cuda

#endif  // IOSFARM_WORKER_BACKENDS_CUDA_PLANNER_BLAS_PARAMS_H_
