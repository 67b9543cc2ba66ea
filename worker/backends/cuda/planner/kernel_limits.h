// Limits shared by the backend's own CUDA kernels and the host code that
// checks, before anything runs, that a graph stays within them. Plain C++
// (included by .cu files).
#ifndef IOSFARM_WORKER_BACKENDS_CUDA_PLANNER_KERNEL_LIMITS_H_
#define IOSFARM_WORKER_BACKENDS_CUDA_PLANNER_KERNEL_LIMITS_H_

namespace iosfarm::worker::cuda {

// Largest tensor rank the N-d kernels (broadcast, slice, pad, transpose,
// reduce) accept; their parameters are fixed-size arrays passed by value.
inline constexpr int kMaxKernelRank = 8;

}  // namespace iosfarm::worker::cuda

#endif  // IOSFARM_WORKER_BACKENDS_CUDA_PLANNER_KERNEL_LIMITS_H_
