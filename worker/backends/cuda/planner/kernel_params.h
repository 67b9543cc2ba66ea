// Host-side construction of the parameters of the backend's own kernels
// (elementwise_kernels.h, data_movement_kernels.h, reduce_kernels.h) from
// op attributes and shapes. Pure functions; tested with kernel_math.h on the
// CPU. InvalidArgument for shapes or attributes a kernel cannot take (rank
// above kMaxKernelRank, axes out of range, mismatched ranks).
#ifndef IOSFARM_WORKER_BACKENDS_CUDA_PLANNER_KERNEL_PARAMS_H_
#define IOSFARM_WORKER_BACKENDS_CUDA_PLANNER_KERNEL_PARAMS_H_

#include <vector>

#include "common/status.h"
#include "graph/attributes.h"
#include "graph/op_type.h"
#include "graph/tensor.h"
#include "worker/backends/cuda/planner/kernel_types.h"

namespace iosfarm::worker::cuda {

// Relu, Clip, Sigmoid, HardSigmoid, HardSwish, Tanh with their attributes.
StatusOr<UnaryParams> MakeUnaryParams(graph::OpType type, const graph::Attributes& attrs);

// The element-wise function of a Conv's fused activation.
UnaryParams ConvActivationParams(const graph::ConvAttrs& attrs);

// Add, Sub, Mul, Div.
StatusOr<BinaryKind> MakeBinaryKind(graph::OpType type);

// Numpy broadcasting of a and b to y (rank 0 = no broadcasting needed).
StatusOr<BroadcastParams> MakeBroadcastParams(const graph::Shape& a, const graph::Shape& b,
                                              const graph::Shape& y);

StatusOr<GatherParams> MakeSliceParams(const graph::SliceAttrs& attrs, const graph::Shape& x,
                                       const graph::Shape& y);
StatusOr<GatherParams> MakeTransposeParams(const std::vector<int64_t>& perm,
                                           const graph::Shape& x, const graph::Shape& y);
StatusOr<PadParams> MakePadParams(const graph::PadAttrs& attrs, const graph::Shape& x,
                                  const graph::Shape& y);
// The reduction `type` (kReduceMean, kReduceSum, kReduceMax, kReduceMin).
StatusOr<ReduceParams> MakeReduceParams(graph::OpType type, const graph::ReduceAttrs& attrs,
                                        const graph::Shape& x);
// ConvTranspose of 4-D x to y (shapes as shape inference gives them).
StatusOr<ConvTransposeParams> MakeConvTransposeParams(const graph::ConvTransposeAttrs& attrs,
                                                      const graph::Shape& x, const graph::Shape& y);

// Resize of 4-D x to y.
StatusOr<ResizeParams> MakeResizeParams(const graph::ResizeAttrs& attrs, const graph::Shape& x,
                                        const graph::Shape& y);
// MaxPool or AveragePool on 4-D x and y.
StatusOr<Pool2dParams> MakePool2dParams(graph::OpType type, const graph::PoolAttrs& attrs,
                                        const graph::Shape& x, const graph::Shape& y);

}  // namespace iosfarm::worker::cuda

#endif  // IOSFARM_WORKER_BACKENDS_CUDA_PLANNER_KERNEL_PARAMS_H_
