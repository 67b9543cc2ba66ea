#include "worker/backends/cpu/cpu_device.h"

#include <thread>

#include <oneapi/dnnl/dnnl.hpp>

#include "common/strings.h"

namespace iosfarm::worker::cpu {
namespace {

std::string IsaName(dnnl::cpu_isa isa) {
  switch (isa) {
    case dnnl::cpu_isa::sse41:
      return "sse41";
    case dnnl::cpu_isa::avx:
      return "avx";
    case dnnl::cpu_isa::avx2:
      return "avx2";
    case dnnl::cpu_isa::avx2_vnni:
      return "avx2_vnni";
    case dnnl::cpu_isa::avx512_core:
      return "avx512_core";
    case dnnl::cpu_isa::avx512_core_vnni:
      return "avx512_core_vnni";
    case dnnl::cpu_isa::avx512_core_bf16:
      return "avx512_core_bf16";
    case dnnl::cpu_isa::avx512_core_amx:
      return "avx512_core_amx";
    default:
      return "other";
  }
}

}  // namespace

StatusOr<CpuDeviceInfo> DescribeCpuDevice() {
  try {
    dnnl::engine engine(dnnl::engine::kind::cpu, 0);
    (void)engine;
  } catch (const dnnl::error& e) {
    return absl::InternalError(StrCat("oneDNN cannot create a CPU engine: ", e.what()));
  }
  const dnnl_version_t* version = dnnl_version();
  CpuDeviceInfo info;
  info.onednn_version = StrCat(version->major, ".", version->minor, ".", version->patch);
  info.isa = IsaName(dnnl::get_effective_cpu_isa());
  info.hardware_threads = static_cast<int>(std::thread::hardware_concurrency());
  return info;
}

}  // namespace iosfarm::worker::cpu
