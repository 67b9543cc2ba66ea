// The device-sharing half of the sim model: the time of one stage whose
// groups run in parallel on one device.
//
// Timeline of a stage (all in microseconds):
//  - Host issue. One host thread issues every kernel of the stage, each issue
//    taking kernel_launch_us, round-robin over the groups (first kernel of
//    each group, then second kernels, ...). A kernel cannot start before it
//    has been issued; issue is asynchronous, so it overlaps earlier kernels.
//  - Streams. The kernels of a group run in order, one at a time.
//  - SM sharing. A running kernel asks for its sm_demand SMs. While the
//    demands of the running kernels sum to at most sm_count, each gets its
//    demand (groups overlap fully); otherwise each gets demand * sm_count /
//    sum, so everything stretches proportionally. A kernel holding a SMs
//    progresses at a / sm_count of full speed (work_us is its time with the
//    whole device). The simulation advances from event to event (an issue
//    completes or a kernel finishes), so it is exact for this model.
//  - The stage ends when the last kernel finishes, plus stage_sync_us.
//  - Timed back to back (SimDeviceModel::back_to_back, as the cuda backend
//    times stages: several runs, the host issuing one while the one before
//    executes), a run lasts the longer of its issue (every kernel's
//    kernel_launch_us) and the device's time with every kernel issued at
//    once, plus stage_sync_us.
// Consequences: independent small kernels in separate groups overlap almost
// for free; kernels that each fill the device take the sum of their times
// whether concurrent or not (plus the launches a single stream would hide).
// Pure function, thread-safe.
#ifndef IOSFARM_WORKER_BACKENDS_SIM_STAGE_SIMULATOR_H_
#define IOSFARM_WORKER_BACKENDS_SIM_STAGE_SIMULATOR_H_

#include <vector>

#include "worker/backends/sim/device_model.h"
#include "worker/backends/sim/kernel_model.h"

namespace iosfarm::worker::sim {

// Kernels of each group in execution order (a group may be empty).
using GroupKernels = std::vector<std::vector<SimKernel>>;

// Simulated time of one stage in microseconds, stage_sync_us included.
// `model` must be valid (ValidateSimDeviceModel); every sm_demand in
// [1, model.sm_count].
double SimulateStageUs(const GroupKernels& groups, const SimDeviceModel& model);

}  // namespace iosfarm::worker::sim

#endif  // IOSFARM_WORKER_BACKENDS_SIM_STAGE_SIMULATOR_H_
