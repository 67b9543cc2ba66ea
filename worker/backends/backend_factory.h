// Creates backends by name, for the worker daemon, the embedded mode and the
// `iosfarm run --backend` command.
//
// Names: "cuda", "cpu", "sim", and "sim:<preset>" (sim with a device preset
// of worker/backends/sim/device_model.h, e.g. "sim:h100").
//
// What this build provides: "sim" and "cpu" (oneDNN) always. "cuda" answers Unimplemented when the build has no CUDA/cuDNN, Unavailable
// "no CUDA device: ..." when no GPU answers, NotFound for a device index out
// of range, and Internal when the device cannot run this build's kernels.
// Callers must treat every error as "this backend is not usable here" and
// show the message as is.
//
// Thread-safe: no shared state (CUDA device queries go to the driver).
#ifndef IOSFARM_WORKER_BACKENDS_BACKEND_FACTORY_H_
#define IOSFARM_WORKER_BACKENDS_BACKEND_FACTORY_H_

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"
#include "worker/backends/backend.h"
#include "worker/backends/sim/sim_backend.h"

namespace iosfarm::worker {

struct BackendConfig {
  int cuda_device = 0;  // cuda: which GPU (index as CUDA numbers them)
  bool cuda_graph_stages = false;  // cuda: stages timed as CUDA graphs
                                   // (CudaExecutionOptions::graph_stages)
  bool cuda_flush_l2 = false;      // cuda, with cuda_graph_stages: each replay
                                   // timed after an L2 flush (an experiment;
                                   // CudaExecutionOptions::flush_l2)
  int cpu_threads = 0;  // cpu: threads to use, 0 = every hardware thread
  sim::SimOptions sim;  // sim: device model (v100 preset unless set), noise,
                        // failure injection, time scale
};

// "cuda", "cpu", "sim", in that order.
std::vector<std::string_view> BackendNames();

// Creates the named backend (see the file comment for what each answers).
// "sim:<preset>" replaces config.sim.device by the preset (NotFound listing
// the presets for an unknown one). An unknown name is InvalidArgument
// listing the valid names. Invalid sim options, and cuda_graph_stages for
// another backend than cuda, are InvalidArgument.
StatusOr<std::unique_ptr<Backend>> CreateBackend(std::string_view name,
                                                 const BackendConfig& config = {});

// "cuda" when CUDA device config.cuda_device answers (it is listed and runs
// a probe kernel), else "cpu". Never "sim": the sim backend executes nothing.
std::string BestAvailableBackendName(const BackendConfig& config = {});

// CreateBackend(BestAvailableBackendName(config), config).
StatusOr<std::unique_ptr<Backend>> BestAvailableBackend(const BackendConfig& config = {});

}  // namespace iosfarm::worker

#endif  // IOSFARM_WORKER_BACKENDS_BACKEND_FACTORY_H_
