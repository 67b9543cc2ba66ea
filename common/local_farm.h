// What a farm on one machine calls its latency database and its device.
//
// `iosfarm tune` (client/embedded_farm.h) and the runtime's tune on first
// use (include/iosfarm/runtime.h) share these, so that each reuses the
// latencies the other measured on this machine: the same file, the same
// device key.
#ifndef IOSFARM_COMMON_LOCAL_FARM_H_
#define IOSFARM_COMMON_LOCAL_FARM_H_

#include <functional>
#include <optional>
#include <string>

#include "common/status.h"

namespace iosfarm {

// Looks up an environment variable; nullopt when unset.
using EnvLookup = std::function<std::optional<std::string>(const char* name)>;

// The process environment (std::getenv).
std::optional<std::string> ProcessEnv(const char* name);

// $XDG_CACHE_HOME/iosfarm/latency.db, else $HOME/.cache/iosfarm/latency.db;
// FailedPrecondition when neither variable is set.
StatusOr<std::string> DefaultDatabasePath(const EnvLookup& env = ProcessEnv);

// "local-cpu", "local-sim" (and "local-sim-<preset>" for "sim:<preset>"); for
// cuda the GPU's name from the backend's description, sanitized ("NVIDIA H100
// 80GB HBM3 (sm_90, ...)" -> "nvidia-h100-80gb-hbm3"), or "local-cuda"; with
// `cuda_graph_stages` (stages timed as CUDA graphs, whose latencies are not
// eager ones) the cuda key ends in "-graph-stages".
std::string DefaultDeviceKey(const std::string& backend, const std::string& description,
                             bool cuda_graph_stages = false);

// Creates the directory of the database file `db_path` (and its parents);
// Unavailable naming it when that fails.
Status CreateDatabaseDirectory(const std::string& db_path);

}  // namespace iosfarm

#endif  // IOSFARM_COMMON_LOCAL_FARM_H_
