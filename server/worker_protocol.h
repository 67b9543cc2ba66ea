// The server core's words for what it tells workers and what it hears from
// them: the domain side of farm.proto's WorkerService. The core (coordinator,
// JobRunner, registry) uses only these types; proto_convert.h is the one
// place that converts them to and from the wire (v1) messages, at the gRPC
// edge (worker_service.cc).
#ifndef IOSFARM_SERVER_WORKER_PROTOCOL_H_
#define IOSFARM_SERVER_WORKER_PROTOCOL_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "scheduler/farm/phase.h"
#include "scheduler/ios/bounded/device_floor.h"
#include "scheduler/ios/search_session.h"

namespace iosfarm::server {

// A worker's registration (the first message on its stream).
struct WorkerRegistration {
  std::string worker_id, device_key, backend, device_description, version;
  int max_built_batches = 0;  // 0: a worker from before the field (the server assumes 8)
  // Cores its stages' groups share (the cpu backend); 0: none (GPUs, sim,
  // workers from before the field).
  int cores = 0;
  // What its device never beats (Backend::device_floor()); all zeros: none.
  scheduler::ios::DeviceFloor device_floor;
};

// Robust statistics of one timed stage or schedule, as a worker reports them.
struct ReportedFigures {
  double median_ms = 0, p10_ms = 0, p90_ms = 0, cv = 0;
  int64_t repeats = 0;
};

struct StageLatencyReport {
  uint64_t signature = 0;
  ReportedFigures figures;
};

struct ScheduleLatencyReport {
  std::string name;  // ios, sequential, greedy
  ReportedFigures figures;
};

// A worker's answer to one phase.
struct PhaseReport {
  int64_t phase_id = 0;
  bool ok = false;
  std::string error;  // when !ok
  int64_t plans_built = 0;                        // build
  std::vector<StageLatencyReport> latencies;      // profile, in the order asked
  std::vector<ScheduleLatencyReport> schedules;   // measure, in the order asked
};

// How a worker times stages or schedules (worker/backends ProfileOptions);
// 0 fields: the backend's defaults.
struct ProfileSettings {
  int warmup = 0, min_repeats = 0, max_repeats = 0;
  double stable_fraction = 0, max_seconds = 0;
};

// The batch of stages a build phase turns into plans. The graph's encoding
// (SerializeGraph, without weight values) is shared, not copied, between the
// job's orders.
struct BuildRequest {
  std::shared_ptr<const std::string> graph;
  std::vector<scheduler::ios::StageRequest> stages;  // each with the server's signature
};

struct NamedScheduleJson {
  std::string name;  // ios, sequential, greedy
  std::string json;  // docs/schedule-format.md
};

// The schedules a measure phase runs end to end.
struct MeasureRequest {
  std::shared_ptr<const std::string> graph;
  std::vector<NamedScheduleJson> schedules;
  ProfileSettings options;
};

// One worker phase: kind says which of build, profile or measure is set.
struct PhaseOrder {
  int64_t phase_id = 0, job_id = 0;
  std::string batch_id;  // the build's plans, kept by the worker for the profile
  scheduler::farm::PhaseKind kind = scheduler::farm::PhaseKind::kBuild;
  BuildRequest build;
  ProfileSettings profile;
  MeasureRequest measure;
};

// What the server sends on a worker's stream after its registration.
struct WorkerCommand {
  enum class Kind { kAssign, kCancel };
  Kind kind = Kind::kAssign;
  PhaseOrder assign;         // kAssign
  int64_t cancel_phase = 0;  // kCancel: the phase whose result the worker drops

  static WorkerCommand Assign(PhaseOrder order) {
    WorkerCommand command;
    command.assign = std::move(order);
    return command;
  }
  static WorkerCommand Cancel(int64_t phase) {
    WorkerCommand command;
    command.kind = Kind::kCancel;
    command.cancel_phase = phase;
    return command;
  }
};

}  // namespace iosfarm::server

#endif  // IOSFARM_SERVER_WORKER_PROTOCOL_H_
