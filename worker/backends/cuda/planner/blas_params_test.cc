// The cuBLAS arguments of Gemm and MatMul, fed to a literal column-major
// SGEMM (cuBLAS's documented semantics) on the CPU and compared with the
// reference kernels. No GPU needed.
#include "worker/backends/cuda/planner/blas_params.h"

#include <gtest/gtest.h>

#include "common/strings.h"
#include "worker/backends/reference/compare.h"
#include "worker/backends/reference/kernels.h"
#include "worker/backends/weights.h"

namespace iosfarm::worker::cuda {
namespace {

using graph::Shape;
using graph::Tensor;

// cublasSgemm's contract, column-major: C = alpha op(A) op(B) + beta C with
// op(A) m x k, op(B) k x n; ld* are the stored matrices' leading dimensions.
void ColumnMajorSgemm(bool trans_a, bool trans_b, int m, int n, int k, float alpha,
                      const float* a, int lda, const float* b, int ldb, float beta, float* c,
                      int ldc) {
  ASSERT_GE(lda, std::max(1, trans_a ? k : m));
  ASSERT_GE(ldb, std::max(1, trans_b ? n : k));
  ASSERT_GE(ldc, std::max(1, m));
  for (int j = 0; j < n; ++j) {
    for (int i = 0; i < m; ++i) {
      double sum = 0;
      for (int p = 0; p < k; ++p) {
        const double av = trans_a ? a[p + static_cast<int64_t>(i) * lda]
                                  : a[i + static_cast<int64_t>(p) * lda];
        const double bv = trans_b ? b[j + static_cast<int64_t>(p) * ldb]
                                  : b[p + static_cast<int64_t>(j) * ldb];
        sum += av * bv;
      }
      float& out = c[i + static_cast<int64_t>(j) * ldc];
      out = static_cast<float>(alpha * sum + (beta == 0.0f ? 0.0 : beta * out));
    }
  }
}

Tensor Random(const Shape& shape, uint64_t seed) { return RandomTensor(shape, seed); }

Tensor Empty(const Shape& shape) {
  Tensor t;
  t.shape = shape;
  t.data.assign(static_cast<size_t>(graph::NumElements(shape)), 0.0f);
  return t;
}

TEST(BlasParamsTest, GemmArgumentsComputeRowMajorProducts) {
  for (bool trans_a : {false, true}) {
    for (bool trans_b : {false, true}) {
      const int64_t m = 4, n = 10, k = 7;
      const Tensor a = Random(trans_a ? Shape{k, m} : Shape{m, k}, 1);
      const Tensor b = Random(trans_b ? Shape{n, k} : Shape{k, n}, 2);
      auto args = RowMajorSgemm(trans_a, trans_b, m, n, k);
      ASSERT_TRUE(args.ok()) << args.status();
      Tensor actual = Empty({m, n}), expected = Empty({m, n});
      // As GemmOp issues it: first operand B, second A.
      ColumnMajorSgemm(args->trans_first, args->trans_second, args->m, args->n, args->k, 0.5f,
                       b.data.data(), args->ld_first, a.data.data(), args->ld_second, 0.0f,
                       actual.data.data(), args->ldc);
      graph::GemmAttrs attrs{0.5f, 1.0f, trans_a, trans_b};
      reference::Gemm(attrs, {a.data.data(), a.shape}, {b.data.data(), b.shape}, nullptr,
                      {expected.data.data(), expected.shape});
      Status status = reference::CompareTensors(actual, expected, 1e-6,
                                                StrCat("gemm ", trans_a, trans_b));
      EXPECT_TRUE(status.ok()) << status;
    }
  }
}

TEST(BlasParamsTest, MatMulLayoutsComputeNumpyProducts) {
  const std::vector<std::pair<Shape, Shape>> cases = {
      {{4, 64}, {64, 12}}, {{2, 4, 8}, {2, 8, 6}}, {{2, 1, 4, 5}, {3, 5, 6}},
      {{8}, {8, 5}},       {{3, 4, 8}, {8}},       {{3, 4, 8}, {8, 2}}};
  for (const auto& [as, bs] : cases) {
    const Tensor a = Random(as, 3), b = Random(bs, 4);
    auto layout = PlanMatMul(as, bs);
    ASSERT_TRUE(layout.ok()) << layout.status();
    auto args = RowMajorSgemm(false, false, layout->m, layout->n, layout->k);
    ASSERT_TRUE(args.ok());
    const int64_t out_elements = layout->batch * layout->m * layout->n;
    std::vector<float> actual(static_cast<size_t>(out_elements), 0.0f);
    for (int64_t i = 0; i < layout->batch; ++i) {
      // Strided calls use i * step; the loop uses the offsets: both agree
      // when `strided`.
      const int64_t a_off = layout->strided ? i * layout->a_step : layout->a_offsets[i];
      const int64_t b_off = layout->strided ? i * layout->b_step : layout->b_offsets[i];
      ColumnMajorSgemm(args->trans_first, args->trans_second, args->m, args->n, args->k, 1.0f,
                       b.data.data() + b_off, args->ld_first, a.data.data() + a_off,
                       args->ld_second, 0.0f, actual.data() + i * layout->m * layout->n,
                       args->ldc);
    }
    // The reference's output shape; its element count must agree.
    Shape y_shape = {out_elements};
    Tensor expected = Empty(y_shape);
    reference::MatMul({a.data.data(), as}, {b.data.data(), bs}, {expected.data.data(), y_shape});
    Tensor got;
    got.shape = y_shape;
    got.data = actual;
    Status status = reference::CompareTensors(got, expected, 1e-6,
                                              "matmul " + graph::ShapeToString(as) + " x " +
                                                  graph::ShapeToString(bs));
    EXPECT_TRUE(status.ok()) << status;
  }
  EXPECT_FALSE(PlanMatMul({2, 3}, {4, 5}).ok());
  auto broadcast = PlanMatMul({2, 1, 4, 5}, {3, 5, 6});
  ASSERT_TRUE(broadcast.ok());
  EXPECT_FALSE(broadcast->strided);  // a repeats along the inner batch dimension
  auto batched = PlanMatMul({2, 4, 8}, {2, 8, 6});
  ASSERT_TRUE(batched.ok());
  EXPECT_TRUE(batched->strided);
  EXPECT_EQ(batched->a_step, 32);
  EXPECT_EQ(batched->b_step, 48);
}

}  // namespace
}  // namespace iosfarm::worker::cuda
