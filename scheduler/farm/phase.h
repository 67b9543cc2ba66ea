// Phases, policies and the records the farm scheduler produces.
//
// A job (one IOS search) is a chain of phases; each phase runs on one
// resource (DESIGN.md, "The load-aware scheduler"):
//   enumerate, update -> a server CPU slot ("server-cpu/<i>", any free slot);
//   build             -> a worker's CPU ("<worker>/cpu"): any worker of the
//                        job's device key, or the pinned worker;
//   profile, measure  -> a worker's measuring device: "<worker>/gpu" on a
//                        GPU worker, "<worker>/device" on a CPU worker (whose
//                        builds run on "<worker>/cpu" beside it); the pinned
//                        worker if given, else any worker of the key.
// Every resource runs one phase at a time. Times are seconds on the caller's
// clock (doubles); the scheduler never reads a clock itself.
#ifndef IOSFARM_SCHEDULER_FARM_PHASE_H_
#define IOSFARM_SCHEDULER_FARM_PHASE_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace iosfarm::scheduler::farm {

enum class PhaseKind { kEnumerate, kBuild, kProfile, kUpdate, kMeasure };

// "enumerate", "build", "profile", "update", "measure".
std::string_view PhaseKindName(PhaseKind kind);
// Inverse of PhaseKindName; nullopt for other text.
std::optional<PhaseKind> PhaseKindFromName(std::string_view name);

// Which resource class a phase needs.
enum class ResourceClass { kServerCpu, kWorkerCpu, kWorkerGpu };
ResourceClass ResourceClassOf(PhaseKind kind);
// "server-cpu", "worker-cpu", "worker-gpu".
std::string_view ResourceClassName(ResourceClass resource_class);

// How the phases of several jobs share the resources (farm_scheduler.h
// describes each policy).
enum class Policy { kInterleaved, kSequential, kSynchronous, kCriticalPath };

// "interleaved", "sequential", "synchronous", "critical-path".
std::string_view PolicyName(Policy policy);
std::optional<Policy> PolicyFromName(std::string_view name);

enum class PhaseOutcome { kOk, kFailed, kWorkerLost, kCancelled };

// "ok", "failed", "worker_lost", "cancelled".
std::string_view PhaseOutcomeName(PhaseOutcome outcome);
std::optional<PhaseOutcome> PhaseOutcomeFromName(std::string_view name);

using JobId = int64_t;
using PhaseId = int64_t;  // > 0, unique within one FarmScheduler

// A job's next phase.
struct PhaseRequest {
  PhaseKind kind = PhaseKind::kEnumerate;
  // Empty: any worker of the job's device key. Otherwise the worker that must
  // run it (e.g. the profile of a batch runs where its build ran). Must be
  // empty for server phases (enumerate, update).
  std::string pinned_worker;
  // The caller's batch id (JobLifecycle's), carried into the phase's
  // Assignment, PhaseRecord and LostPhase; 0 for phases of no batch.
  int64_t batch = 0;
};

// A dispatch decision: start `phase` of `job` on `resource` now.
struct Assignment {
  PhaseId phase = 0;
  JobId job = 0;
  PhaseKind kind = PhaseKind::kEnumerate;
  std::string resource;  // "server-cpu/0", "<worker>/cpu", "<worker>/gpu"|"<worker>/device"
  std::string worker;    // empty for server phases
  double start_s = 0;
  int64_t batch = 0;  // PhaseRequest::batch
};

// One phase that started and ended (in any outcome).
struct PhaseRecord {
  PhaseId phase = 0;
  JobId job = 0;
  PhaseKind kind = PhaseKind::kEnumerate;
  std::string resource;
  std::string worker;
  double queued_s = 0;  // when Enqueue was called
  double start_s = 0;   // when Dispatch started it
  double end_s = 0;     // Finished / WorkerLost / RemoveJob
  PhaseOutcome outcome = PhaseOutcome::kOk;
  int64_t batch = 0;  // PhaseRequest::batch
};

// Resource names.
std::string ServerSlotResource(int slot);  // "server-cpu/<slot>"
std::string WorkerCpuResource(std::string_view worker);  // "<worker>/cpu"
// What a worker measures on: a GPU (cuda, sim:<gpu>) or the CPU (cpu backend).
enum class MeasuringDevice { kGpu, kCpu };
// The resource of a worker's profile and measure phases: "<worker>/gpu" for a
// GPU, "<worker>/device" for a CPU worker (not "/cpu": that is its build
// resource, and not "/gpu": it has none).
std::string WorkerDeviceResource(std::string_view worker, MeasuringDevice device);
std::string WorkerGpuResource(std::string_view worker);  // "<worker>/gpu"

// Policy::kCriticalPath's urgency of a real job (the simulation knows its
// jobs' phase times exactly): its remaining chain estimated by extrapolating
// the time its own phases took so far (`busy_s`) over the blocks its search
// has left (`blocks_done` of `blocks_total`); 0 before any block is done
// (nothing to extrapolate from). `priority` (submit --priority) adds
// kPriorityUrgencySeconds per step, a negative one takes it away.
inline constexpr double kPriorityUrgencySeconds = 600;
double EstimateUrgencySeconds(double busy_s, int blocks_done, int blocks_total, int priority);

}  // namespace iosfarm::scheduler::farm

#endif  // IOSFARM_SCHEDULER_FARM_PHASE_H_
