// The server's one place for conversions between its own types (the
// store's rows, worker_protocol.h) and the wire types (farm.proto). The gRPC
// services (tuning_service.cc, worker_service.cc) call them; the core
// (coordinator, JobRunner, registry) never sees a v1 type. Nothing here does
// I/O.
#ifndef IOSFARM_SERVER_PROTO_CONVERT_H_
#define IOSFARM_SERVER_PROTO_CONVERT_H_

#include <optional>

#include "common/status.h"
#include "iosfarm/v1/farm.pb.h"
#include "server/job_rows.h"
#include "server/worker_protocol.h"
#include "server/worker_registry.h"

namespace iosfarm::server {

v1::Job JobToProto(const JobRow& job, double now_s);
v1::JobState JobStateToProto(JobState state);
// "" -> nullopt; InvalidArgument naming the text for an unknown state.
StatusOr<std::optional<JobState>> JobStateFromText(const std::string& text);
v1::PhaseEntry PhaseToProto(const PhaseLogRow& row);
v1::WorkerInfo WorkerToProto(const WorkerSnapshot& worker);
// The result row as JobResult. InvalidArgument (CheckResult) for a row the
// job store would refuse: a non-finite figure, a bad schedule name.
StatusOr<v1::JobResult> ResultToProto(const ResultRow& result);
// Applies server defaults to 0 fields and checks ranges (InvalidArgument
// naming the field).
StatusOr<JobOptions> OptionsFromProto(const v1::SearchOptions& options, int priority);

// --- the worker stream (WorkerService.Connect)
// Field for field; the coordinator bounds what a worker may report
// (WorkerRegistry::Bounded, BoundedReport, CheckFigures).
WorkerRegistration RegistrationFromProto(const v1::RegisterWorker& registration);
PhaseReport PhaseReportFromProto(const v1::PhaseResult& result);
v1::ProfileOptions ProfileSettingsToProto(const ProfileSettings& settings);
// An assignment or a cancel as the worker reads it: stages as StageSpecs
// with the server's signatures, the graph's encoding as bytes.
v1::ServerMessage WorkerCommandToProto(const WorkerCommand& command);

}  // namespace iosfarm::server

#endif  // IOSFARM_SERVER_PROTO_CONVERT_H_
