// The worker's domain types for one phase: what the server asks for
// (PhaseOrder) and what the worker answers (PhaseReport). The executor and the
// daemon's lanes work on these; worker/wire_convert.h converts them from and
// to the wire (iosfarm.v1.PhaseAssignment, PhaseResult).
//
// Plain values, no locking: share them as const.
#ifndef IOSFARM_WORKER_PHASE_ORDER_H_
#define IOSFARM_WORKER_PHASE_ORDER_H_

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "common/status.h"
#include "graph/graph.h"
#include "scheduler/ios/stages/signature.h"
#include "scheduler/ios/stages/stage.h"
#include "worker/backends/backend.h"

namespace iosfarm::worker {

// Build plans for `stages` of `graph` (worker CPU) and keep them under the
// order's batch_id for the profile with the same batch_id.
struct BuildOrder {
  std::shared_ptr<const graph::Graph> graph;  // weights without values
  // Checked against the server's signatures and canonical (stage_codec.h):
  // signatures[i] is the signature of stages[i].
  std::vector<scheduler::ios::Stage> stages;
  std::vector<scheduler::ios::Signature> signatures;
};

// Time the plans built for the order's batch_id on the device.
struct ProfileOrder {
  ProfileOptions options;
};

struct NamedSchedule {
  std::string name;           // ios, sequential, greedy
  std::string schedule_json;  // docs/schedule-format.md
};

// Run whole schedules of `graph` end to end on the device.
struct MeasureOrder {
  std::shared_ptr<const graph::Graph> graph;
  std::vector<NamedSchedule> schedules;
  ProfileOptions options;
};

struct PhaseOrder {
  int64_t phase_id = 0;
  int64_t job_id = 0;
  std::string batch_id;  // build and profile
  std::variant<BuildOrder, ProfileOrder, MeasureOrder> work;
};

// "build", "profile" or "measure".
std::string_view PhaseName(const PhaseOrder& order);
// Whether the order runs on the device (profile, measure) rather than the CPU.
bool NeedsDevice(const PhaseOrder& order);

struct MeasuredStage {
  scheduler::ios::Signature signature = 0;
  LatencyStats latency;
};

struct MeasuredSchedule {
  std::string name;
  LatencyStats latency;
};

struct PhaseReport {
  int64_t phase_id = 0;
  bool ok = false;
  std::string error;                         // when !ok: what went wrong, one line
  int plans_built = 0;                       // build
  std::vector<MeasuredStage> stages;         // profile, in the build's stage order
  std::vector<MeasuredSchedule> schedules;   // measure, in the order's order
};

// A failed report: ok = false, error "<phase>: <CODE>: <message>" on one line
// (newlines become "; ").
PhaseReport FailedReport(int64_t phase_id, std::string_view phase, const Status& status);

}  // namespace iosfarm::worker

#endif  // IOSFARM_WORKER_PHASE_ORDER_H_
