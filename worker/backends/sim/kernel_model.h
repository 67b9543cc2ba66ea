// One simulated kernel: how much work it is and how much of the device it can
// use (the per-op half of the sim model; stage_simulator.h shares the device
// between kernels).
//
// A kernel with `flops` arithmetic operations that moves `bytes` has
//   work_us = max(flops / (efficiency * peak), bytes / (efficiency * bandwidth))
// microseconds when it has the whole device. Its work items are its output
// elements, or its reads / reads_per_item when that is larger (a GEMV at batch
// 1 spreads its weight reads over many threads); it can keep
//   sm_demand = clamp(ceil(items / items_per_sm), 1, sm_count)
// SMs busy. A kernel given a SMs progresses at a / sm_count of full speed, so
// alone it takes work_us * sm_count / sm_demand.
//
// Counts come from graph::ComputeOpCost (fp32). View ops (Reshape, Flatten,
// Identity, Dropout) and Constant launch nothing. Pure functions, thread-safe.
#ifndef IOSFARM_WORKER_BACKENDS_SIM_KERNEL_MODEL_H_
#define IOSFARM_WORKER_BACKENDS_SIM_KERNEL_MODEL_H_

#include <optional>

#include "graph/graph.h"
#include "scheduler/ios/bounded/device_floor.h"
#include "scheduler/ios/stages/stage.h"
#include "worker/backends/sim/device_model.h"

namespace iosfarm::worker::sim {

struct SimKernel {
  double work_us = 0;  // time with the whole device, excluding launch
  int sm_demand = 1;   // SMs it can keep busy, in [1, sm_count]
  // Alone on the device: work_us * sm_count / sm_demand.
  double AloneUs(const SimDeviceModel& model) const;
};

// The kernel of an op with the given counts (bytes read + written, elements
// read, output elements).
SimKernel KernelFromCounts(double flops, double bytes, double elements_read,
                           double output_elements, const SimDeviceModel& model);

// The kernel of `node` (shapes inferred), nullopt when it launches none
// (graph::LaunchesNoKernel).
std::optional<SimKernel> OpKernel(const graph::Graph& graph, const graph::Node& node,
                                  const SimDeviceModel& model);

// The single convolution of a merge stage, with the merged shape: input read
// once, merged weights (zero-padded kernels included), all branches' outputs.
// `merged` must describe convs of `graph` (checked by the caller).
SimKernel MergedConvKernel(const graph::Graph& graph, const scheduler::ios::MergedConv& merged,
                           const SimDeviceModel& model);

// The model's floor (scheduler/ios/device_floor.h): stage_sync_us per
// stage, kernel_launch_us per kernel (issued one after another), and the
// efficiency times the peak and bandwidth for the work (the SMs share the
// device, so a stage never does its kernels' work_us faster than their
// sum); timed back to back (SimDeviceModel::back_to_back), without the
// issue order. Exact lower bounds of SimulateStageUs; scaled by `scale` (< 1 where
// noise may take a measurement below the model).
scheduler::ios::DeviceFloor SimDeviceFloor(const SimDeviceModel& model, double scale = 1.0);

}  // namespace iosfarm::worker::sim

#endif  // IOSFARM_WORKER_BACKENDS_SIM_KERNEL_MODEL_H_
