// The cuda backend's device floor (scheduler/ios/device_floor.h): what no
// stage it times can beat, from the host's cost of launching an empty
// kernel on this machine (measured when the backend is created,
// CudaBackend::Create).
//
// The backend times a stage's runs back to back (StreamTimer::Time), so the
// host issues a run while the one before it executes and only the issue's
// throughput bounds a run: `back_to_back`, K * launch_ms. K counts the
// kernels its plan launches, which fuses residual Adds and Relus into
// convolutions, writes Concat inputs in place and reads Split outputs as
// slices (plan_builder.h): `free_ops` kViewsAndFusable counts none for
// those. launch_ms is kLaunchShare of the least host cost of an empty
// launch: a library call (cuDNN, cuBLAS) costs the host at least that, and
// the share leaves room for a sample's start event, which the GPU may
// record up to a few microseconds after the host asks (a sample of n runs
// loses that over n). No stage_ms, peak or bandwidth: cuDNN may use TF32
// tensor cores and the L2 cache serves small tensors faster than memory,
// so neither figure is a floor worth declaring. Stages timed as CUDA graphs
// pay no host launch: the backend declares no floor for them.
//
// ASSUMPTION, checked on a GPU by bench/bound_audit_bench --backend cuda
// (tools/gpu_run runs it): no stage measured back to back is faster than
// K * launch_ms.
// plan_floor_test checks on the CPU that plans never launch fewer kernels
// than the floor counts.
#ifndef IOSFARM_WORKER_BACKENDS_CUDA_PLANNER_CUDA_DEVICE_FLOOR_H_
#define IOSFARM_WORKER_BACKENDS_CUDA_PLANNER_CUDA_DEVICE_FLOOR_H_

#include "scheduler/ios/bounded/device_floor.h"

namespace iosfarm::worker::cuda {

inline constexpr double kLaunchShare = 0.75;

// The floor for an empty-kernel launch that cost the host at least
// `least_launch_us`; none (all zeros) for a figure that is not finite and
// positive.
scheduler::ios::DeviceFloor CudaDeviceFloor(double least_launch_us);

}  // namespace iosfarm::worker::cuda

#endif  // IOSFARM_WORKER_BACKENDS_CUDA_PLANNER_CUDA_DEVICE_FLOOR_H_
