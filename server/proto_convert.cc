#include "server/proto_convert.h"

#include "common/strings.h"
#include "proto/stage_codec.h"

namespace iosfarm::server {

v1::JobState JobStateToProto(JobState state) {
  switch (state) {
    case JobState::kQueued: return v1::QUEUED;
    case JobState::kRunning: return v1::RUNNING;
    case JobState::kSucceeded: return v1::SUCCEEDED;
    case JobState::kFailed: return v1::FAILED;
    case JobState::kCancelled: return v1::CANCELLED;
  }
  return v1::JOB_STATE_UNSPECIFIED;
}

StatusOr<std::optional<JobState>> JobStateFromText(const std::string& text) {
  if (text.empty()) return std::optional<JobState>();
  ASSIGN_OR_RETURN(JobState state, JobStateFromName(text));
  return std::optional<JobState>(state);
}

v1::Job JobToProto(const JobRow& job, double now_s) {
  v1::Job out;
  out.set_id(job.id);
  out.set_model_name(job.model_name);
  out.set_model_digest(job.model_digest);
  out.set_device_key(job.device_key);
  out.set_batch(job.batch);
  out.mutable_options()->set_r(job.options.r);
  out.mutable_options()->set_s(job.options.s);
  out.mutable_options()->set_block_size(job.options.block_size);
  out.mutable_options()->set_batch_size(job.options.batch_size_limit);
  out.mutable_options()->set_max_parallel_batches(job.options.max_parallel_batches);
  out.set_priority(job.options.priority);
  out.set_owner(job.owner);
  out.set_state(JobStateToProto(job.state));
  out.set_error(job.error);
  out.set_submitted_unix_ms(job.submitted_unix_ms);
  out.set_started_unix_ms(job.started_unix_ms);
  out.set_finished_unix_ms(job.finished_unix_ms);
  out.set_retune_batch(job.retune_batch);
  v1::JobProgress* p = out.mutable_progress();
  p->set_phase(job.phase);
  p->set_blocks_total(job.blocks_total);
  p->set_blocks_done(job.blocks_done);
  p->set_stages_profiled(job.stages_profiled);
  p->set_cache_hits(job.cache_hits);
  p->set_candidates(job.candidates);
  p->set_unique_signatures(job.unique_signatures);
  p->set_stages_measured(job.stages_measured);
  if (job.estimated_stages >= 0) p->set_estimated_stages(job.estimated_stages);
  const double end_s = job.finished_unix_ms > 0 ? job.finished_unix_ms / 1000.0 : now_s;
  const double elapsed = job.submitted_unix_ms > 0 ? end_s - job.submitted_unix_ms / 1000.0 : 0;
  p->set_elapsed_s(elapsed);
  // ETA from the stages estimated still to profile at the job's own rate so
  // far, else from the fraction of blocks solved (the last block also needs
  // the end-to-end measurement, so both are lower bounds).
  const double running_s = job.started_unix_ms > 0 ? end_s - job.started_unix_ms / 1000.0 : 0;
  if (job.finished_unix_ms > 0) {
    p->set_eta_s(0);
  } else if (job.estimated_stages > job.stages_profiled && job.stages_profiled > 0 &&
             running_s > 0) {
    p->set_eta_s(running_s * static_cast<double>(job.estimated_stages - job.stages_profiled) /
                 static_cast<double>(job.stages_profiled));
  } else if (job.blocks_total > 0 && job.blocks_done > 0) {
    p->set_eta_s(elapsed * (job.blocks_total - job.blocks_done) / job.blocks_done);
  } else {
    p->set_eta_s(-1);
  }
  return out;
}

v1::PhaseEntry PhaseToProto(const PhaseLogRow& row) {
  v1::PhaseEntry out;
  out.set_job_id(row.job_id);
  out.set_phase(row.phase);
  out.set_resource(row.resource);
  out.set_worker(row.worker);
  out.set_queued_s(row.queued_s);
  out.set_start_s(row.start_s);
  out.set_end_s(row.end_s);
  out.set_outcome(row.outcome);
  out.set_stages(row.stages);
  out.set_detail(row.detail);
  out.set_batch(row.batch);
  return out;
}

v1::WorkerInfo WorkerToProto(const WorkerSnapshot& worker) {
  v1::WorkerInfo out;
  out.set_id(worker.id);
  out.set_device_key(worker.device_key);
  out.set_backend(worker.backend);
  out.set_description(worker.description);
  out.set_state(worker.state);
  out.set_job_id(worker.job_id);
  out.set_connected_unix_ms(worker.connected_unix_ms);
  out.set_last_heartbeat_unix_ms(worker.last_heartbeat_unix_ms);
  out.set_phases_done(worker.phases_done);
  out.set_build_job_id(worker.build_job_id);
  return out;
}

StatusOr<v1::JobResult> ResultToProto(const ResultRow& result) {
  RETURN_IF_ERROR(CheckResult(result));
  v1::JobResult out;
  out.set_job_id(result.job_id);
  out.set_schedule_json(result.schedule_json);
  for (const MeasuredSchedule& m : result.measured) {
    v1::ScheduleLatency* l = out.add_measured();
    l->set_name(m.name);
    l->set_median_ms(m.median_ms);
    l->set_p10_ms(m.p10_ms);
    l->set_p90_ms(m.p90_ms);
    l->set_cv(m.cv);
    l->set_repeats(static_cast<int32_t>(m.repeats));
  }
  out.set_predicted_ms(result.predicted_ms);
  out.set_search_s(result.search_s);
  out.set_stages_profiled(result.stages_profiled);
  out.set_cache_hits(result.cache_hits);
  out.set_candidates(result.candidates);
  out.set_unique_signatures(result.unique_signatures);
  out.set_stages_measured(result.stages_measured);
  out.set_lower_bound_misses(result.lower_bound_misses);
  out.set_largest_bound_miss_ms(result.largest_bound_miss_ms);
  out.set_search_cores(static_cast<int32_t>(result.search_cores));
  out.set_stages(static_cast<int32_t>(result.stages));
  out.set_worker(result.worker);
  out.set_backend(result.backend);
  out.set_device_key(result.device_key);
  out.set_chosen(result.chosen);
  return out;
}

StatusOr<JobOptions> OptionsFromProto(const v1::SearchOptions& options, int priority) {
  JobOptions out;
  if (options.r() != 0) out.r = options.r();
  if (options.s() != 0) out.s = options.s();
  if (options.block_size() != 0) out.block_size = options.block_size();
  if (options.batch_size() != 0) out.batch_size_limit = options.batch_size();
  out.max_parallel_batches = options.max_parallel_batches();
  out.priority = priority;
  auto check = [](const char* field, int value, int low, int high) -> Status {
    if (value < low || value > high) {
      return absl::InvalidArgumentError(
          StrCat("options.", field, " must be in [", low, ", ", high, "], got ", value));
    }
    return absl::OkStatus();
  };
  RETURN_IF_ERROR(check("r", out.r, 1, 64));
  RETURN_IF_ERROR(check("s", out.s, 1, 64));
  RETURN_IF_ERROR(check("block_size", out.block_size, 1, 1024));
  RETURN_IF_ERROR(check("batch_size", out.batch_size_limit, 1, 4096));
  RETURN_IF_ERROR(check("max_parallel_batches", out.max_parallel_batches, 0, 1024));
  return out;
}

WorkerRegistration RegistrationFromProto(const v1::RegisterWorker& registration) {
  WorkerRegistration out;
  out.worker_id = registration.worker_id();
  out.device_key = registration.device_key();
  out.backend = registration.backend();
  out.device_description = registration.device_description();
  out.version = registration.version();
  out.max_built_batches = registration.max_built_batches();
  out.cores = registration.cores();
  if (registration.has_device_floor_v10() || registration.has_device_floor()) {
    const v1::DeviceFloor& floor = registration.has_device_floor_v10()
                                       ? registration.device_floor_v10()
                                       : registration.device_floor();
    out.device_floor.stage_ms = floor.stage_ms();
    out.device_floor.launch_ms = floor.launch_ms();
    out.device_floor.peak_gflops = floor.peak_gflops();
    out.device_floor.bandwidth_gbps = floor.bandwidth_gbps();
    out.device_floor.issue_overlaps_work = !floor.issue_adds_to_work();
    // An order this server does not know reads as none: its bound is left out.
    out.device_floor.issue_order = scheduler::ios::IssueOrderFromNumber(floor.issue_order());
    out.device_floor.back_to_back = floor.timed_back_to_back();
    out.device_floor.free_ops = scheduler::ios::FreeOpsFromNumber(floor.free_ops());
    out.device_floor.contention = floor.contention();
  }
  return out;
}

namespace {

template <typename Latency>
ReportedFigures FiguresFromProto(const Latency& latency) {
  return {latency.median_ms(), latency.p10_ms(), latency.p90_ms(), latency.cv(),
          latency.repeats()};
}

}  // namespace

PhaseReport PhaseReportFromProto(const v1::PhaseResult& result) {
  PhaseReport out;
  out.phase_id = result.phase_id();
  out.ok = result.ok();
  out.error = result.error();
  out.plans_built = result.plans_built();
  out.latencies.reserve(result.latencies_size());
  for (const v1::StageLatency& l : result.latencies()) {
    out.latencies.push_back({l.signature(), FiguresFromProto(l)});
  }
  out.schedules.reserve(result.schedules_size());
  for (const v1::ScheduleLatency& l : result.schedules()) {
    out.schedules.push_back({l.name(), FiguresFromProto(l)});
  }
  return out;
}

v1::ProfileOptions ProfileSettingsToProto(const ProfileSettings& settings) {
  v1::ProfileOptions out;
  out.set_warmup(settings.warmup);
  out.set_min_repeats(settings.min_repeats);
  out.set_max_repeats(settings.max_repeats);
  out.set_stable_fraction(settings.stable_fraction);
  out.set_max_seconds(settings.max_seconds);
  return out;
}

v1::ServerMessage WorkerCommandToProto(const WorkerCommand& command) {
  v1::ServerMessage message;
  if (command.kind == WorkerCommand::Kind::kCancel) {
    message.mutable_cancel()->set_phase_id(command.cancel_phase);
    return message;
  }
  const PhaseOrder& order = command.assign;
  v1::PhaseAssignment* assign = message.mutable_assign();
  assign->set_phase_id(order.phase_id);
  assign->set_job_id(order.job_id);
  assign->set_batch_id(order.batch_id);
  switch (order.kind) {
    case scheduler::farm::PhaseKind::kBuild: {
      v1::BuildAssignment* build = assign->mutable_build();
      if (order.build.graph) build->set_graph(*order.build.graph);
      for (const auto& request : order.build.stages) {
        *build->add_stages() = proto::EncodeStage(request.stage, request.signature);
      }
      break;
    }
    case scheduler::farm::PhaseKind::kProfile:
      *assign->mutable_profile()->mutable_options() = ProfileSettingsToProto(order.profile);
      break;
    case scheduler::farm::PhaseKind::kMeasure: {
      v1::MeasureAssignment* measure = assign->mutable_measure();
      if (order.measure.graph) measure->set_graph(*order.measure.graph);
      for (const NamedScheduleJson& schedule : order.measure.schedules) {
        v1::NamedSchedule* named = measure->add_schedules();
        named->set_name(schedule.name);
        named->set_schedule_json(schedule.json);
      }
      *measure->mutable_options() = ProfileSettingsToProto(order.measure.options);
      break;
    }
    default:
      break;  // server phases never reach a worker (the coordinator's check)
  }
  return message;
}

}  // namespace iosfarm::server
