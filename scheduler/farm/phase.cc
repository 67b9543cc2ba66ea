#include "scheduler/farm/phase.h"

#include <algorithm>
#include <array>
#include <utility>

#include "common/strings.h"

namespace iosfarm::scheduler::farm {
namespace {

constexpr std::array<std::pair<PhaseKind, std::string_view>, 5> kPhaseKindNames = {{
    {PhaseKind::kEnumerate, "enumerate"},
    {PhaseKind::kBuild, "build"},
    {PhaseKind::kProfile, "profile"},
    {PhaseKind::kUpdate, "update"},
    {PhaseKind::kMeasure, "measure"},
}};

constexpr std::array<std::pair<Policy, std::string_view>, 4> kPolicyNames = {{
    {Policy::kInterleaved, "interleaved"},
    {Policy::kSequential, "sequential"},
    {Policy::kSynchronous, "synchronous"},
    {Policy::kCriticalPath, "critical-path"},
}};

constexpr std::array<std::pair<PhaseOutcome, std::string_view>, 4> kOutcomeNames = {{
    {PhaseOutcome::kOk, "ok"},
    {PhaseOutcome::kFailed, "failed"},
    {PhaseOutcome::kWorkerLost, "worker_lost"},
    {PhaseOutcome::kCancelled, "cancelled"},
}};

template <typename E, size_t N>
std::string_view NameOf(const std::array<std::pair<E, std::string_view>, N>& table, E value) {
  for (const auto& [v, name] : table) {
    if (v == value) return name;
  }
  return "unknown";
}

template <typename E, size_t N>
std::optional<E> FromName(const std::array<std::pair<E, std::string_view>, N>& table,
                          std::string_view name) {
  for (const auto& [v, n] : table) {
    if (n == name) return v;
  }
  return std::nullopt;
}

}  // namespace

std::string_view PhaseKindName(PhaseKind kind) { return NameOf(kPhaseKindNames, kind); }
std::optional<PhaseKind> PhaseKindFromName(std::string_view name) {
  return FromName(kPhaseKindNames, name);
}

ResourceClass ResourceClassOf(PhaseKind kind) {
  switch (kind) {
    case PhaseKind::kEnumerate:
    case PhaseKind::kUpdate:
      return ResourceClass::kServerCpu;
    case PhaseKind::kBuild:
      return ResourceClass::kWorkerCpu;
    case PhaseKind::kProfile:
    case PhaseKind::kMeasure:
      return ResourceClass::kWorkerGpu;
  }
  return ResourceClass::kServerCpu;
}

std::string_view ResourceClassName(ResourceClass resource_class) {
  switch (resource_class) {
    case ResourceClass::kServerCpu:
      return "server-cpu";
    case ResourceClass::kWorkerCpu:
      return "worker-cpu";
    case ResourceClass::kWorkerGpu:
      return "worker-gpu";
  }
  return "unknown";
}

std::string_view PolicyName(Policy policy) { return NameOf(kPolicyNames, policy); }
std::optional<Policy> PolicyFromName(std::string_view name) {
  return FromName(kPolicyNames, name);
}

std::string_view PhaseOutcomeName(PhaseOutcome outcome) {
  return NameOf(kOutcomeNames, outcome);
}
std::optional<PhaseOutcome> PhaseOutcomeFromName(std::string_view name) {
  return FromName(kOutcomeNames, name);
}

std::string ServerSlotResource(int slot) { return StrCat("server-cpu/", slot); }
std::string WorkerCpuResource(std::string_view worker) { return StrCat(worker, "/cpu"); }
std::string WorkerDeviceResource(std::string_view worker, MeasuringDevice device) {
  return StrCat(worker, device == MeasuringDevice::kGpu ? "/gpu" : "/device");
}
std::string WorkerGpuResource(std::string_view worker) {
  return WorkerDeviceResource(worker, MeasuringDevice::kGpu);
}

double EstimateUrgencySeconds(double busy_s, int blocks_done, int blocks_total, int priority) {
  double remaining = 0;
  if (blocks_done > 0 && blocks_total > blocks_done && busy_s > 0) {
    remaining = busy_s * (blocks_total - blocks_done) / blocks_done;
  }
  return std::max(0.0, remaining + priority * kPriorityUrgencySeconds);
}

}  // namespace iosfarm::scheduler::farm
