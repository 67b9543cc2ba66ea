#include "worker/wire_convert.h"

#include <memory>
#include <string_view>
#include <utility>

#include "common/strings.h"
#include "graph/serialize.h"
#include "proto/stage_codec.h"

namespace iosfarm::worker {
namespace {

StatusOr<std::shared_ptr<const graph::Graph>> ParseAssignedGraph(const std::string& bytes) {
  if (bytes.empty()) return absl::InvalidArgumentError("the assignment carries no graph");
  StatusOr<graph::Graph> graph = graph::ParseGraph(bytes);
  if (!graph.ok()) {
    return Status(graph.status().code(), StrCat("graph: ", ToStd(graph.status().message())));
  }
  return std::make_shared<const graph::Graph>(*std::move(graph));
}

StatusOr<BuildOrder> BuildOrderFromProto(const v1::BuildAssignment& build) {
  BuildOrder order;
  ASSIGN_OR_RETURN(order.graph, ParseAssignedGraph(build.graph()));
  ASSIGN_OR_RETURN(order.stages, proto::StagesFromSpecs(*order.graph, build.stages()));
  order.signatures.reserve(build.stages_size());
  for (const v1::StageSpec& spec : build.stages()) order.signatures.push_back(spec.signature());
  return order;
}

StatusOr<MeasureOrder> MeasureOrderFromProto(const v1::MeasureAssignment& measure) {
  MeasureOrder order;
  ASSIGN_OR_RETURN(order.graph, ParseAssignedGraph(measure.graph()));
  order.schedules.reserve(measure.schedules_size());
  for (const v1::NamedSchedule& named : measure.schedules()) {
    order.schedules.push_back(NamedSchedule{named.name(), named.schedule_json()});
  }
  order.options = ProfileOptionsFromProto(measure.options());
  return order;
}

template <typename Latency>
void FillLatency(const LatencyStats& stats, Latency& out) {
  out.set_median_ms(stats.median_ms);
  out.set_p10_ms(stats.p10_ms);
  out.set_p90_ms(stats.p90_ms);
  out.set_cv(stats.cv);
  out.set_repeats(stats.repeats);
}

}  // namespace

ProfileOptions ProfileOptionsFromProto(const v1::ProfileOptions& options) {
  ProfileOptions out;
  if (options.warmup() != 0) out.warmup = options.warmup();
  if (options.min_repeats() != 0) out.min_repeats = options.min_repeats();
  if (options.max_repeats() != 0) out.max_repeats = options.max_repeats();
  if (options.stable_fraction() != 0) out.stable_fraction = options.stable_fraction();
  if (options.max_seconds() != 0) out.max_seconds = options.max_seconds();
  return out;
}

StatusOr<PhaseOrder> PhaseOrderFromProto(const v1::PhaseAssignment& assignment) {
  PhaseOrder order;
  order.phase_id = assignment.phase_id();
  order.job_id = assignment.job_id();
  order.batch_id = assignment.batch_id();
  switch (assignment.kind_case()) {
    case v1::PhaseAssignment::kBuild: {
      if (assignment.batch_id().empty()) return absl::InvalidArgumentError("no batch_id");
      ASSIGN_OR_RETURN(order.work, BuildOrderFromProto(assignment.build()));
      return order;
    }
    case v1::PhaseAssignment::kProfile:
      order.work = ProfileOrder{ProfileOptionsFromProto(assignment.profile().options())};
      return order;
    case v1::PhaseAssignment::kMeasure: {
      ASSIGN_OR_RETURN(order.work, MeasureOrderFromProto(assignment.measure()));
      return order;
    }
    case v1::PhaseAssignment::KIND_NOT_SET:
      break;
  }
  return absl::InvalidArgumentError("no build, profile or measure in the assignment");
}

PhaseReport RefusedAssignment(const v1::PhaseAssignment& assignment, const Status& status) {
  std::string_view phase = "assignment";
  switch (assignment.kind_case()) {
    case v1::PhaseAssignment::kBuild:
      phase = "build";
      break;
    case v1::PhaseAssignment::kProfile:
      phase = "profile";
      break;
    case v1::PhaseAssignment::kMeasure:
      phase = "measure";
      break;
    case v1::PhaseAssignment::KIND_NOT_SET:
      break;
  }
  return FailedReport(assignment.phase_id(), phase, status);
}

v1::PhaseResult PhaseResultToProto(const PhaseReport& report) {
  v1::PhaseResult result;
  result.set_phase_id(report.phase_id);
  result.set_ok(report.ok);
  result.set_error(report.error);
  result.set_plans_built(report.plans_built);
  for (const MeasuredStage& stage : report.stages) {
    v1::StageLatency* latency = result.add_latencies();
    latency->set_signature(stage.signature);
    FillLatency(stage.latency, *latency);
  }
  for (const MeasuredSchedule& schedule : report.schedules) {
    v1::ScheduleLatency* latency = result.add_schedules();
    latency->set_name(schedule.name);
    FillLatency(schedule.latency, *latency);
  }
  return result;
}

v1::WorkerMessage RegisterMessage(const WorkerRegistration& registration) {
  v1::WorkerMessage message;
  v1::RegisterWorker* worker = message.mutable_register_();
  worker->set_worker_id(registration.worker_id);
  worker->set_device_key(registration.device_key);
  worker->set_backend(registration.backend);
  worker->set_device_description(registration.device_description);
  worker->set_version(registration.version);
  worker->set_max_built_batches(registration.max_built_batches);
  worker->set_cores(registration.cores);
  const scheduler::ios::DeviceFloor& floor = registration.device_floor;
  if (floor.bounds_anything()) {
    // A floor an older server would misread goes where it does not look
    // (RegisterWorker.device_floor_v10).
    const bool needs_v10 =
        floor.back_to_back || floor.free_ops != scheduler::ios::DeviceFloor::FreeOps::kViews;
    v1::DeviceFloor* out =
        needs_v10 ? worker->mutable_device_floor_v10() : worker->mutable_device_floor();
    out->set_stage_ms(floor.stage_ms);
    out->set_launch_ms(floor.launch_ms);
    out->set_peak_gflops(floor.peak_gflops);
    out->set_bandwidth_gbps(floor.bandwidth_gbps);
    out->set_issue_adds_to_work(!floor.issue_overlaps_work);
    out->set_issue_order(static_cast<v1::DeviceFloor::IssueOrder>(floor.issue_order));
    out->set_timed_back_to_back(floor.back_to_back);
    out->set_free_ops(static_cast<v1::DeviceFloor::FreeOps>(floor.free_ops));
    out->set_contention(floor.contention);
  }
  return message;
}

v1::WorkerMessage HeartbeatMessage(int64_t unix_ms) {
  v1::WorkerMessage message;
  message.mutable_heartbeat()->set_unix_ms(unix_ms);
  return message;
}

v1::WorkerMessage ResultMessage(const PhaseReport& report) {
  v1::WorkerMessage message;
  *message.mutable_result() = PhaseResultToProto(report);
  return message;
}

}  // namespace iosfarm::worker
