// Gemm and MatMul steps on cuBLAS.
//
// cuBLAS is column-major; a row-major matrix R [rows, cols] is the
// column-major matrix R^T [cols, rows] with leading dimension cols. So the
// row-major product Y = op(A) op(B) is computed as the column-major product
// Y^T = op(B)^T op(A)^T, i.e. with the operands swapped.
#include <variant>
#include <vector>

#include "common/strings.h"
#include "worker/backends/cuda/cuda_status.h"
#include "worker/backends/cuda/op_factories.h"

namespace iosfarm::worker::cuda {
namespace {

// Y [M, N] = alpha * op(A) op(B) (+ C', the precomputed beta * C).
class GemmOp final : public DeviceOp {
 public:
  static StatusOr<std::unique_ptr<DeviceOp>> Create(const Step& step, const DeviceOpContext& ctx) {
    if (step.inputs.size() != 1 || step.outputs.size() != 1 || step.weights.empty() ||
        step.inputs[0].shape.size() != 2 || step.outputs[0].shape.size() != 2 ||
        step.weights[0].shape.size() != 2) {
      return absl::InternalError("malformed gemm step");
    }
    const auto& a = std::get<graph::GemmAttrs>(step.attrs);
    std::unique_ptr<GemmOp> op(new GemmOp());
    const graph::Shape& as = step.inputs[0].shape;
    const graph::Shape& y = step.outputs[0].shape;
    ASSIGN_OR_RETURN(op->m_, ToInt(y[0], "M"));
    ASSIGN_OR_RETURN(op->n_, ToInt(y[1], "N"));
    ASSIGN_OR_RETURN(op->k_, ToInt(a.trans_a ? as[0] : as[1], "K"));
    op->op_a_ = a.trans_a ? CUBLAS_OP_T : CUBLAS_OP_N;
    op->lda_ = a.trans_a ? op->m_ : op->k_;
    op->op_b_ = a.trans_b ? CUBLAS_OP_T : CUBLAS_OP_N;
    op->ldb_ = a.trans_b ? op->k_ : op->n_;
    op->alpha_ = a.alpha;
    op->a_ = ctx.Ptr(step.inputs[0]);
    op->b_ = ctx.Weight(step.weights[0]);
    op->y_ = ctx.Ptr(step.outputs[0]);
    if (step.weights.size() > 1) {
      if (step.weights[1].num_elements() != step.outputs[0].num_elements()) {
        return absl::InternalError("gemm bias is not [M, N]");
      }
      op->c_ = ctx.Weight(step.weights[1]);
    }
    return std::unique_ptr<DeviceOp>(std::move(op));
  }

  Status Enqueue(const Lane& lane) const override {
    float beta = 0.0f;
    if (c_ != nullptr) {
      RETURN_IF_ERROR(CudaCall(cudaMemcpyAsync(y_, c_,
                                               static_cast<size_t>(m_) * n_ * sizeof(float),
                                               cudaMemcpyDeviceToDevice, lane.stream),
                               "cudaMemcpyAsync (gemm bias)"));
      beta = 1.0f;
    }
    return CublasCall(cublasSgemm(lane.cublas, op_b_, op_a_, n_, m_, k_, &alpha_, b_, ldb_, a_,
                                  lda_, &beta, y_, n_),
                      "cublasSgemm");
  }

 private:
  GemmOp() = default;
  int m_ = 0, n_ = 0, k_ = 0, lda_ = 0, ldb_ = 0;
  cublasOperation_t op_a_ = CUBLAS_OP_N, op_b_ = CUBLAS_OP_N;
  float alpha_ = 1.0f;
  const float* a_ = nullptr;
  const float* b_ = nullptr;
  const float* c_ = nullptr;
  float* y_ = nullptr;
};

// numpy matmul: Y[..., m, n] = A[..., m, k] B[..., k, n] with broadcast
// batch dimensions; 1-D operands promoted (their memory is unchanged).
class MatMulOp final : public DeviceOp {
 public:
  static StatusOr<std::unique_ptr<DeviceOp>> Create(const Step& step, const DeviceOpContext& ctx) {
    if (step.inputs.empty() || step.inputs.size() > 2 || step.outputs.size() != 1 ||
        (step.inputs.size() == 1 && step.weights.empty())) {
      return absl::InternalError("malformed matmul step");
    }
    graph::Shape as = step.inputs[0].shape;
    graph::Shape bs = step.inputs.size() == 2 ? step.inputs[1].shape : step.weights[0].shape;
    if (as.empty() || bs.empty()) return absl::InternalError("matmul operand without shape");
    if (as.size() == 1) as.insert(as.begin(), 1);
    if (bs.size() == 1) bs.push_back(1);
    std::unique_ptr<MatMulOp> op(new MatMulOp());
    const int64_t m = as[as.size() - 2], k = as.back(), n = bs.back();
    if (bs[bs.size() - 2] != k) return absl::InternalError("matmul inner dimensions differ");
    ASSIGN_OR_RETURN(op->m_, ToInt(m, "M"));
    ASSIGN_OR_RETURN(op->n_, ToInt(n, "N"));
    ASSIGN_OR_RETURN(op->k_, ToInt(k, "K"));
    op->a_ = ctx.Ptr(step.inputs[0]);
    op->b_ = step.inputs.size() == 2 ? ctx.Ptr(step.inputs[1]) : ctx.Weight(step.weights[0]);
    op->y_ = ctx.Ptr(step.outputs[0]);
    // Batch offsets (in matrices) of every output matrix, numpy broadcasting.
    const graph::Shape a_batch(as.begin(), as.end() - 2), b_batch(bs.begin(), bs.end() - 2);
    const size_t rank = std::max(a_batch.size(), b_batch.size());
    graph::Shape batch(rank, 1), a_dims(rank, 1), b_dims(rank, 1);
    for (size_t d = 0; d < rank; ++d) {
      if (d + a_batch.size() >= rank) a_dims[d] = a_batch[d + a_batch.size() - rank];
      if (d + b_batch.size() >= rank) b_dims[d] = b_batch[d + b_batch.size() - rank];
      batch[d] = a_dims[d] == 1 ? b_dims[d] : a_dims[d];
    }
    int64_t count = 1;
    for (int64_t d : batch) count *= d;
    if (count * m * n != step.outputs[0].num_elements()) {
      return absl::InternalError("matmul output size disagrees with its operands");
    }
    std::vector<int64_t> index(rank, 0);
    for (int64_t i = 0; i < count; ++i) {
      int64_t a_off = 0, b_off = 0, a_stride = 1, b_stride = 1;
      for (size_t d = rank; d-- > 0;) {
        if (a_dims[d] != 1) a_off += index[d] * a_stride;
        if (b_dims[d] != 1) b_off += index[d] * b_stride;
        a_stride *= a_dims[d];
        b_stride *= b_dims[d];
      }
      op->a_offsets_.push_back(a_off * m * k);
      op->b_offsets_.push_back(b_off * k * n);
      for (size_t d = rank; d-- > 0;) {  // next multi-index, last fastest
        if (++index[d] < batch[d]) break;
        index[d] = 0;
      }
    }
    ASSIGN_OR_RETURN(op->count_, ToInt(count, "batch count"));
    // One strided-batched call when both operands step by a constant.
    op->strided_ = true;
    op->a_step_ = count > 1 ? op->a_offsets_[1] : 0;
    op->b_step_ = count > 1 ? op->b_offsets_[1] : 0;
    for (int64_t i = 0; i < count; ++i) {
      if (op->a_offsets_[i] != i * op->a_step_ || op->b_offsets_[i] != i * op->b_step_) {
        op->strided_ = false;
      }
    }
    return std::unique_ptr<DeviceOp>(std::move(op));
  }

  Status Enqueue(const Lane& lane) const override {
    const float one = 1.0f, zero = 0.0f;
    if (strided_) {
      return CublasCall(
          cublasSgemmStridedBatched(lane.cublas, CUBLAS_OP_N, CUBLAS_OP_N, n_, m_, k_, &one, b_,
                                    n_, b_step_, a_, k_, a_step_, &zero, y_, n_,
                                    static_cast<long long>(m_) * n_, count_),
          "cublasSgemmStridedBatched");
    }
    for (int i = 0; i < count_; ++i) {
      RETURN_IF_ERROR(CublasCall(
          cublasSgemm(lane.cublas, CUBLAS_OP_N, CUBLAS_OP_N, n_, m_, k_, &one,
                      b_ + b_offsets_[i], n_, a_ + a_offsets_[i], k_, &zero,
                      y_ + static_cast<int64_t>(i) * m_ * n_, n_),
          "cublasSgemm (batched matmul)"));
    }
    return absl::OkStatus();
  }

 private:
  MatMulOp() = default;
  int m_ = 0, n_ = 0, k_ = 0, count_ = 1;
  bool strided_ = true;
  long long a_step_ = 0, b_step_ = 0;
  std::vector<int64_t> a_offsets_, b_offsets_;
  const float* a_ = nullptr;
  const float* b_ = nullptr;
  float* y_ = nullptr;
};

}  // namespace

StatusOr<std::unique_ptr<DeviceOp>> MakeGemmOp(const Step& step, const DeviceOpContext& ctx) {
  return GemmOp::Create(step, ctx);
}

StatusOr<std::unique_ptr<DeviceOp>> MakeMatMulOp(const Step& step, const DeviceOpContext& ctx) {
  return MatMulOp::Create(step, ctx);
}

}  // namespace iosfarm::worker::cuda
