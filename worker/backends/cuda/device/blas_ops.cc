// Gemm and MatMul steps on cuBLAS, with the arguments of blas_params.h.
#include <variant>
#include <vector>

#include "common/strings.h"
#include "worker/backends/cuda/device/cuda_status.h"
#include "worker/backends/cuda/device/op_factories.h"
#include "worker/backends/cuda/planner/blas_params.h"

namespace iosfarm::worker::cuda {
namespace {

cublasOperation_t Op(bool transpose) { return transpose ? CUBLAS_OP_T : CUBLAS_OP_N; }

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
    const graph::Shape& as = step.inputs[0].shape;
    const graph::Shape& y = step.outputs[0].shape;
    std::unique_ptr<GemmOp> op(new GemmOp());
    ASSIGN_OR_RETURN(op->args_, RowMajorSgemm(a.trans_a, a.trans_b, y[0], y[1],
                                              a.trans_a ? as[0] : as[1]));
    op->alpha_ = a.alpha;
    op->a_ = ctx.Ptr(step.inputs[0]);
    op->b_ = ctx.Weight(step.weights[0]);
    op->y_ = ctx.Ptr(step.outputs[0]);
    op->y_bytes_ = static_cast<size_t>(step.outputs[0].num_elements()) * sizeof(float);
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
      RETURN_IF_ERROR(CudaCall(
          cudaMemcpyAsync(y_, c_, y_bytes_, cudaMemcpyDeviceToDevice, lane.stream),
          "cudaMemcpyAsync (gemm bias)"));
      beta = 1.0f;
    }
    const SgemmArgs& g = args_;
    return CublasCall(cublasSgemm(lane.cublas, Op(g.trans_first), Op(g.trans_second), g.m, g.n,
                                  g.k, &alpha_, b_, g.ld_first, a_, g.ld_second, &beta, y_, g.ldc),
                      "cublasSgemm");
  }

 private:
  GemmOp() = default;
  SgemmArgs args_;
  float alpha_ = 1.0f;
  const float* a_ = nullptr;
  const float* b_ = nullptr;
  const float* c_ = nullptr;
  float* y_ = nullptr;
  size_t y_bytes_ = 0;
};

// numpy matmul with broadcast batch dimensions (blas_params.h).
class MatMulOp final : public DeviceOp {
 public:
  static StatusOr<std::unique_ptr<DeviceOp>> Create(const Step& step, const DeviceOpContext& ctx) {
    if (step.inputs.empty() || step.inputs.size() > 2 || step.outputs.size() != 1 ||
        (step.inputs.size() == 1 && step.weights.empty())) {
      return absl::InternalError("malformed matmul step");
    }
    const bool b_is_input = step.inputs.size() == 2;
    std::unique_ptr<MatMulOp> op(new MatMulOp());
    ASSIGN_OR_RETURN(op->layout_,
                     PlanMatMul(step.inputs[0].shape,
                                b_is_input ? step.inputs[1].shape : step.weights[0].shape));
    const MatMulLayout& l = op->layout_;
    if (l.batch * l.m * l.n != step.outputs[0].num_elements()) {
      return absl::InternalError("matmul output size disagrees with its operands");
    }
    ASSIGN_OR_RETURN(op->args_, RowMajorSgemm(false, false, l.m, l.n, l.k));
    ASSIGN_OR_RETURN(op->batch_, ToInt(l.batch, "batch count"));
    op->a_ = ctx.Ptr(step.inputs[0]);
    op->b_ = b_is_input ? ctx.Ptr(step.inputs[1]) : ctx.Weight(step.weights[0]);
    op->y_ = ctx.Ptr(step.outputs[0]);
    return std::unique_ptr<DeviceOp>(std::move(op));
  }

  Status Enqueue(const Lane& lane) const override {
    const float one = 1.0f, zero = 0.0f;
    const SgemmArgs& g = args_;
    const MatMulLayout& l = layout_;
    if (l.strided) {
      return CublasCall(cublasSgemmStridedBatched(
                            lane.cublas, Op(g.trans_first), Op(g.trans_second), g.m, g.n, g.k,
                            &one, b_, g.ld_first, l.b_step, a_, g.ld_second, l.a_step, &zero, y_,
                            g.ldc, l.m * l.n, batch_),
                        "cublasSgemmStridedBatched");
    }
    for (int i = 0; i < batch_; ++i) {
      RETURN_IF_ERROR(CublasCall(
          cublasSgemm(lane.cublas, Op(g.trans_first), Op(g.trans_second), g.m, g.n, g.k, &one,
                      b_ + l.b_offsets[i], g.ld_first, a_ + l.a_offsets[i], g.ld_second, &zero,
                      y_ + static_cast<int64_t>(i) * l.m * l.n, g.ldc),
          "cublasSgemm (batched matmul)"));
    }
    return absl::OkStatus();
  }

 private:
  MatMulOp() = default;
  MatMulLayout layout_;
  SgemmArgs args_;
  int batch_ = 1;
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
