// Conversions between the store's rows and the wire types (farm.proto).
// Only server/ uses them; nothing here does I/O.
#ifndef IOSFARM_SERVER_PROTO_CONVERT_H_
#define IOSFARM_SERVER_PROTO_CONVERT_H_

#include <optional>

#include "common/status.h"
#include "iosfarm/v1/farm.pb.h"
#include "server/farm_coordinator.h"
#include "server/job_rows.h"

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

}  // namespace iosfarm::server

#endif  // IOSFARM_SERVER_PROTO_CONVERT_H_
