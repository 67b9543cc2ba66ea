// Describes the CPU device that the `cpu` backend (oneDNN) runs on.
#ifndef IOSFARM_WORKER_BACKENDS_CPU_CPU_DEVICE_H_
#define IOSFARM_WORKER_BACKENDS_CPU_CPU_DEVICE_H_

#include <string>

#include "common/status.h"

namespace iosfarm::worker::cpu {

struct CpuDeviceInfo {
  std::string onednn_version;  // e.g. "2.6.3"
  std::string isa;             // oneDNN's effective CPU ISA, e.g. "avx2"
  int hardware_threads = 0;
};

// Creates a oneDNN CPU engine and reports what it runs with. Fails (Internal)
// only if oneDNN cannot create a CPU engine.
StatusOr<CpuDeviceInfo> DescribeCpuDevice();

}  // namespace iosfarm::worker::cpu

#endif  // IOSFARM_WORKER_BACKENDS_CPU_CPU_DEVICE_H_
