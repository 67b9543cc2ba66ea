// The worker's one edge to the wire (iosfarm/v1/farm.proto): every conversion
// between v1 messages and the worker's domain types (phase_order.h). Only the
// daemon's stream code (worker_daemon.cc) calls it.
//
// Decoding an assignment does the work that needs the wire form: it parses
// the graph (serialized iosfarm.v1.Graph, weights without values) and rebuilds
// and checks every stage against the server's signature (proto/stage_codec.h).
//
// Every function is pure and thread-safe.
#ifndef IOSFARM_WORKER_WIRE_CONVERT_H_
#define IOSFARM_WORKER_WIRE_CONVERT_H_

#include <cstdint>
#include <string>

#include "common/status.h"
#include "iosfarm/v1/farm.pb.h"
#include "worker/backends/backend.h"
#include "worker/phase_order.h"

namespace iosfarm::worker {

// Wire profiling options to the backend's; a zero field means the default
// of ProfileOptions (proto3 cannot tell unset from 0).
ProfileOptions ProfileOptionsFromProto(const v1::ProfileOptions& options);

// The order `assignment` describes. InvalidArgument when it has no kind
// ("no build, profile or measure in the assignment"), when a build has no
// batch_id ("no batch_id"), or a build or measure no graph ("the assignment
// carries no graph") or one that does not parse ("graph: ..."); a build's
// stages fail as StagesFromSpecs does ("stage <index>: ...").
StatusOr<PhaseOrder> PhaseOrderFromProto(const v1::PhaseAssignment& assignment);

// The answer to an assignment PhaseOrderFromProto refused with `status`: a
// failed report as the executor words it, named after the assignment's kind
// ("build: INVALID_ARGUMENT: stage 2: ..."; "assignment: ..." without a kind).
PhaseReport RefusedAssignment(const v1::PhaseAssignment& assignment, const Status& status);

// The wire form of `report`: latencies and schedules in the report's order.
v1::PhaseResult PhaseResultToProto(const PhaseReport& report);

// What the worker tells the server when it registers.
struct WorkerRegistration {
  std::string worker_id;
  std::string device_key;
  std::string backend;             // cuda, cpu, sim
  std::string device_description;
  std::string version;
  int max_built_batches = 0;       // PhaseExecutor::kMaxBatches
  int cores = 0;                   // Backend::cores()
  scheduler::ios::DeviceFloor device_floor;  // Backend::device_floor()
};

// The stream's messages from the worker: RegisterWorker (first, once), a
// heartbeat at `unix_ms`, a phase's result.
v1::WorkerMessage RegisterMessage(const WorkerRegistration& registration);
v1::WorkerMessage HeartbeatMessage(int64_t unix_ms);
v1::WorkerMessage ResultMessage(const PhaseReport& report);

}  // namespace iosfarm::worker

#endif  // IOSFARM_WORKER_WIRE_CONVERT_H_
