// The simulated device of the `sim` backend: a handful of numbers that an
// analytic model (stage_simulator.h, docs/profiling.md) turns into latencies.
//
// Presets describe real devices by their nominal fp32 figures (non-tensor-core
// peak, memory bandwidth, SM count) plus launch and synchronisation costs of
// the right order; they are models, not measurements. Plain values: copy them
// freely; every function here is pure and thread-safe.
#ifndef IOSFARM_WORKER_BACKENDS_SIM_DEVICE_MODEL_H_
#define IOSFARM_WORKER_BACKENDS_SIM_DEVICE_MODEL_H_

#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"

namespace iosfarm::worker::sim {

struct SimDeviceModel {
  std::string name = "v100";     // preset name, or "custom"
  int sm_count = 80;             // streaming multiprocessors (cores for cpu presets)
  double peak_gflops = 15700.0;  // fp32 GFLOP/s of the whole device
  double bandwidth_gbps = 900.0;  // memory bandwidth of the whole device, GB/s
  // Fraction of peak FLOP/s and bandwidth a kernel that fills the device
  // actually reaches (cuDNN-class kernels at batch 1 stay well below peak).
  double efficiency = 0.4;
  // Work items (output elements, see kernel_model.h) one SM needs to be busy
  // (one per resident thread: 2048 on Volta to Hopper); a kernel with fewer
  // items than sm_count * items_per_sm leaves SMs idle.
  double items_per_sm = 2048.0;
  // Elements a work item reads at most: a kernel that reads many elements per
  // output (a GEMV at batch 1) spreads its reads over more items.
  double reads_per_item = 32.0;
  double kernel_launch_us = 4.0;  // host issue cost per kernel, serial within a stage
  double stage_sync_us = 3.0;     // per stage: waiting for all groups to finish
  // How a stage is timed (stage_simulator.h). False: each run issued from
  // an idle device. True: runs back to back, as the cuda backend's
  // StreamTimer times them (`sim:<preset>:back-to-back`): the host issues a
  // run while the one before executes, so a run lasts the longer of its
  // issue and its device time with every kernel already issued.
  bool back_to_back = false;
};

// The preset names, in a fixed order: "v100", "a100", "h100", "h200", "t4",
// "cpu-small".
std::vector<std::string_view> SimDevicePresetNames();

// The named preset. NotFound listing the valid names for any other name.
StatusOr<SimDeviceModel> SimDevicePreset(std::string_view name);

// InvalidArgument naming the field when a value is out of range (counts and
// rates must be positive, efficiency in (0, 1], costs >= 0 and finite).
Status ValidateSimDeviceModel(const SimDeviceModel& model);

// "sim v100 (80 SMs, 15.7 TFLOP/s fp32, 900 GB/s, simulated)".
std::string DescribeSimDevice(const SimDeviceModel& model);

}  // namespace iosfarm::worker::sim

#endif  // IOSFARM_WORKER_BACKENDS_SIM_DEVICE_MODEL_H_
