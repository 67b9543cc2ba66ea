#include "worker/backends/backend_factory.h"

#include "common/strings.h"
#include "worker/backends/cpu/cpu_backend.h"
#include "worker/backends/sim/device_model.h"

#ifdef IOSFARM_HAVE_CUDA
#include "worker/backends/cuda/device/cuda_backend.h"
#include "worker/backends/cuda/device/cuda_device.h"
#endif

namespace iosfarm::worker {
namespace {

constexpr std::string_view kSimPrefix = "sim:";
constexpr std::string_view kBackToBack = ":back-to-back";

// "sim", "sim:<preset>" or "sim:<preset>:back-to-back" (stages timed back to
// back, as the cuda backend times them: device_model.h).
StatusOr<std::unique_ptr<Backend>> CreateSim(std::string_view name, const BackendConfig& config) {
  sim::SimOptions options = config.sim;
  if (name != "sim") {
    std::string_view preset = name.substr(kSimPrefix.size());
    const bool back_to_back = preset.ends_with(kBackToBack);
    if (back_to_back) preset.remove_suffix(kBackToBack.size());
    if (const size_t colon = preset.find(':'); colon != std::string_view::npos) {
      return absl::InvalidArgumentError(StrCat("unknown sim timing \"", preset.substr(colon + 1),
                                               "\" in \"", name,
                                               "\" (valid: ", kBackToBack.substr(1), ")"));
    }
    ASSIGN_OR_RETURN(options.device, sim::SimDevicePreset(preset));
    options.device.back_to_back = back_to_back;
  }
  ASSIGN_OR_RETURN(std::unique_ptr<sim::SimBackend> backend,
                   sim::SimBackend::Create(std::move(options)));
  return std::unique_ptr<Backend>(std::move(backend));
}

StatusOr<std::unique_ptr<Backend>> CreateCpu(const BackendConfig& config) {
  cpu::CpuBackendOptions options;
  options.num_threads = config.cpu_threads;
  ASSIGN_OR_RETURN(std::unique_ptr<cpu::CpuBackend> backend, cpu::CpuBackend::Create(options));
  return std::unique_ptr<Backend>(std::move(backend));
}

// OK when CUDA device `index` is listed; the errors of CreateBackend("cuda").
Status CheckCudaDevice(int index) {
#ifdef IOSFARM_HAVE_CUDA
  ASSIGN_OR_RETURN(std::vector<cuda::CudaDeviceInfo> devices, cuda::ListCudaDevices());
  if (index < 0 || index >= static_cast<int>(devices.size())) {
    return absl::NotFoundError(StrCat("CUDA device ", index, " not found (", devices.size(),
                                      " device", devices.size() == 1 ? "" : "s", ")"));
  }
  return absl::OkStatus();
#else
  (void)index;
  return absl::UnimplementedError(
      "the cuda backend is not compiled in: this build has no CUDA/cuDNN "
      "(configure with nvcc and cuDNN present, IOSFARM_CUDA=ON)");
#endif
}

StatusOr<std::unique_ptr<Backend>> CreateCuda(const BackendConfig& config) {
  if (config.cuda_flush_l2 && !config.cuda_graph_stages) {
    return absl::InvalidArgumentError(
        "flushing the L2 cache before each timed replay needs stages timed as CUDA graphs");
  }
  RETURN_IF_ERROR(CheckCudaDevice(config.cuda_device));
#ifdef IOSFARM_HAVE_CUDA
  cuda::CudaBackendOptions options;
  options.device = config.cuda_device;
  options.execution.graph_stages = config.cuda_graph_stages;
  options.execution.flush_l2 = config.cuda_flush_l2;
  ASSIGN_OR_RETURN(std::unique_ptr<cuda::CudaBackend> backend, cuda::CudaBackend::Create(options));
  return std::unique_ptr<Backend>(std::move(backend));
#else
  return absl::InternalError("unreachable: CheckCudaDevice fails without CUDA");
#endif
}

}  // namespace

std::vector<std::string_view> BackendNames() { return {"cuda", "cpu", "sim"}; }

StatusOr<std::unique_ptr<Backend>> CreateBackend(std::string_view name,
                                                 const BackendConfig& config) {
  if (name == "cuda") return CreateCuda(config);
  const bool is_sim = name == "sim" || name.substr(0, kSimPrefix.size()) == kSimPrefix;
  if (name == "cpu" || is_sim) {
    if (config.cuda_graph_stages || config.cuda_flush_l2) {
      return absl::InvalidArgumentError(
          StrCat("stages timed as CUDA graphs need the cuda backend, not ", name));
    }
    return is_sim ? CreateSim(name, config) : CreateCpu(config);
  }
  std::string presets;
  for (std::string_view preset : sim::SimDevicePresetNames()) {
    presets += presets.empty() ? std::string(preset) : StrCat("|", preset);
  }
  return absl::InvalidArgumentError(StrCat("unknown backend \"", name,
                                           "\" (valid: cuda, cpu, sim, sim:<", presets,
                                           ">, sim:<preset>:back-to-back)"));
}

std::string BestAvailableBackendName(const BackendConfig& config) {
#ifdef IOSFARM_HAVE_CUDA
  if (CheckCudaDevice(config.cuda_device).ok() && cuda::ProbeDevice(config.cuda_device).ok()) {
    return "cuda";
  }
#else
  (void)config;
#endif
  return "cpu";
}

StatusOr<std::unique_ptr<Backend>> BestAvailableBackend(const BackendConfig& config) {
  return CreateBackend(BestAvailableBackendName(config), config);
}

}  // namespace iosfarm::worker
