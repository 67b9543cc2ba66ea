#include "server/tuning_service.h"

#include <algorithm>
#include <optional>

#include "common/strings.h"
#include "graph/model_loader.h"
#include "proto/rpc_util.h"
#include "scheduler/ios/schedule_json.h"
#include "server/proto_convert.h"
#include "spdlog/spdlog.h"

namespace iosfarm::server {

namespace {

// The job as its row says, plus what only a running job has: its batches
// out, their cap and the workers running its phases.
v1::Job JobSnapshotToProto(const JobSnapshot& snapshot, double now_s) {
  v1::Job job = JobToProto(snapshot.job, now_s);
  v1::JobProgress* progress = job.mutable_progress();
  progress->set_batches_out(snapshot.batches_out);
  progress->set_max_parallel_batches(snapshot.max_parallel_batches);
  for (const std::string& worker : snapshot.workers) progress->add_workers(worker);
  return job;
}

// Runs `body` after authentication and maps its Status to gRPC once.
template <typename Body>
grpc::Status Serve(const StatusOr<std::string>& owner, Body body) {
  if (!owner.ok()) return rpc::ToGrpcStatus(owner.status());
  return rpc::ToGrpcStatus(body(*owner));
}

}  // namespace

StatusOr<std::string> TuningServiceImpl::Authenticate(const grpc::ServerContext& context) const {
  return tokens_->Authenticate(rpc::BearerToken(context), "client");
}

Status TuningServiceImpl::Submit(const std::string& owner, const v1::SubmitJobRequest& request,
                                 v1::Job& response) {
  if (request.device_key().empty()) {
    return absl::InvalidArgumentError("device_key is required (e.g. --device h100-sxm)");
  }
  if (request.batch() < 0 || request.batch() > 4096) {
    return absl::InvalidArgumentError(StrCat("batch must be in [1, 4096], got ", request.batch()));
  }
  ASSIGN_OR_RETURN(JobOptions options, OptionsFromProto(request.options(), request.priority()));
  ModelRow model;
  graph::Graph graph;
  // An import costs several times the model's bytes until the model is
  // stored: the gate bounds how many run at once (import_gate.h).
  std::optional<ImportGate::Lease> import_lease;
  // The batch for both sources; the limits apply to ONNX.
  graph::onnx_import::OnnxImportOptions import;
  if (request.batch() > 0) import.batch = request.batch();
  import.max_model_bytes = limits_.max_model_bytes;
  import.max_nodes = limits_.max_ops;
  switch (request.model_case()) {
    case v1::SubmitJobRequest::kZooName: {
      ASSIGN_OR_RETURN(graph,
                       graph::LoadModelData(graph::kZooSource, request.zoo_name(), "", import));
      model.source = "zoo";
      model.name = request.zoo_name();
      break;
    }
    case v1::SubmitJobRequest::kOnnx: {
      const int64_t size = static_cast<int64_t>(request.onnx().size());
      if (size > limits_.max_model_bytes) {
        return absl::ResourceExhaustedError(StrCat("model is ", size, " bytes; this server accepts at most ",
                                                   limits_.max_model_bytes));
      }
      const std::string name = request.model_name().empty() ? "model.onnx" : request.model_name();
      import_lease.emplace(coordinator_->import_gate().Acquire(size));
      ASSIGN_OR_RETURN(graph,
                       graph::LoadModelData(graph::kOnnxSource, name, request.onnx(), import));
      model.source = "onnx";
      model.name = name;
      break;
    }
    default:
      return absl::InvalidArgumentError("a model is required: onnx bytes or zoo_name");
  }
  const int64_t ops = static_cast<int64_t>(graph.nodes().size());
  if (ops > limits_.max_ops) {
    return absl::ResourceExhaustedError(
        StrCat("model '", model.name, "' has ", ops, " ops; this server accepts at most ",
               limits_.max_ops));
  }
  model.digest = scheduler::ios::ModelDigest(graph);
  model.batch = scheduler::ios::GraphBatch(graph);
  model.ops = ops;
  model.created_unix_ms = NowUnixMs();
  graph = graph::Graph();  // the first enumerate loads it from the store
  if (model.source == "onnx") model.bytes = request.onnx();
  JobRow job;
  job.model_digest = model.digest;
  job.model_name = model.name;
  job.device_key = request.device_key();
  job.owner = owner;
  job.batch = model.batch;
  job.options = options;
  ASSIGN_OR_RETURN(JobRow admitted, coordinator_->Submit(std::move(job), model));
  response = JobToProto(admitted, NowSeconds());
  return absl::OkStatus();
}

grpc::Status TuningServiceImpl::SubmitJob(grpc::ServerContext* context,
                                          const v1::SubmitJobRequest* request, v1::Job* response) {
  return Serve(Authenticate(*context),
               [&](const std::string& owner) { return Submit(owner, *request, *response); });
}

grpc::Status TuningServiceImpl::GetJob(grpc::ServerContext* context, const v1::JobRequest* request,
                                       v1::Job* response) {
  return Serve(Authenticate(*context), [&](const std::string&) -> Status {
    ASSIGN_OR_RETURN(JobSnapshot snapshot, coordinator_->Snapshot(request->job_id()));
    *response = JobSnapshotToProto(snapshot, NowSeconds());
    return absl::OkStatus();
  });
}

grpc::Status TuningServiceImpl::WatchJob(grpc::ServerContext* context,
                                         const v1::JobRequest* request,
                                         grpc::ServerWriter<v1::JobEvent>* writer) {
  return Serve(Authenticate(*context), [&](const std::string&) -> Status {
    ASSIGN_OR_RETURN(JobSnapshot snapshot, coordinator_->Snapshot(request->job_id()));
    int64_t seen = -1;
    while (true) {
      if (snapshot.version > seen) {
        v1::JobEvent event;
        *event.mutable_job() = JobSnapshotToProto(snapshot, NowSeconds());
        event.set_message(snapshot.message);
        if (!writer->Write(event)) return absl::CancelledError("the client went away");
        seen = snapshot.version;
      }
      if (snapshot.final || IsFinal(snapshot.job.state)) return absl::OkStatus();
      if (context->IsCancelled()) return absl::CancelledError("the client went away");
      if (coordinator_->shutting_down()) {
        return absl::UnavailableError("the server is shutting down; watch again after restart");
      }
      ASSIGN_OR_RETURN(snapshot, coordinator_->WaitForChange(request->job_id(), seen, 1.0));
    }
  });
}

grpc::Status TuningServiceImpl::ListJobs(grpc::ServerContext* context,
                                         const v1::ListJobsRequest* request,
                                         v1::ListJobsResponse* response) {
  return Serve(Authenticate(*context), [&](const std::string&) -> Status {
    JobFilter filter;
    ASSIGN_OR_RETURN(filter.state, JobStateFromText(request->state()));
    filter.device_key = request->device_key();
    filter.retune_batch = request->retune_batch();
    // Newest first, and a limit keeps the newest jobs.
    filter.newest_first = true;
    if (request->limit() > 0) filter.limit = request->limit();
    ASSIGN_OR_RETURN(std::vector<JobRow> jobs, job_store_->ListJobs(filter));
    const double now = NowSeconds();
    for (const JobRow& job : jobs) *response->add_jobs() = JobToProto(job, now);
    return absl::OkStatus();
  });
}

bool TuningServiceImpl::IsAdmin(const std::string& caller) const {
  // Without client tokens (a loopback server) every caller is the one local
  // "anonymous" user, who owns every job: the operator.
  if (tokens_->empty()) return true;
  return std::find(limits_.admin_clients.begin(), limits_.admin_clients.end(), caller) !=
         limits_.admin_clients.end();
}

grpc::Status TuningServiceImpl::ForgetLatencies(grpc::ServerContext* context,
                                                const v1::ForgetLatenciesRequest* request,
                                                v1::ForgetLatenciesResponse* response) {
  return Serve(Authenticate(*context), [&](const std::string& caller) -> Status {
    if (!IsAdmin(caller)) {
      return absl::PermissionDeniedError(
          StrCat("client '", caller,
                 "' may not forget measurements: admins only (iosfarm-server --admin-clients)"));
    }
    if (request->device_key().empty()) {
      return absl::InvalidArgumentError("forget: a device key is required");
    }
    ASSIGN_OR_RETURN(const int64_t deleted,
                     latency_db_->DeleteLatencies(request->device_key(), request->worker()));
    ASSIGN_OR_RETURN(const int64_t remaining, latency_db_->CountLatencies(request->device_key()));
    spdlog::warn("client {} forgot {} measurements of device key {}{} ({} remain)", caller,
                 deleted, request->device_key(),
                 request->worker().empty() ? "" : StrCat(" by worker ", request->worker()),
                 remaining);
    response->set_deleted(deleted);
    response->set_remaining(remaining);
    return absl::OkStatus();
  });
}

grpc::Status TuningServiceImpl::CancelJob(grpc::ServerContext* context,
                                          const v1::JobRequest* request, v1::Job* response) {
  return Serve(Authenticate(*context), [&](const std::string& caller) -> Status {
    ASSIGN_OR_RETURN(std::optional<JobRow> row, job_store_->GetJob(request->job_id()));
    if (!row) return absl::NotFoundError(StrCat("job ", request->job_id(), " not found"));
    if (row->owner != caller && !IsAdmin(caller)) {
      return absl::PermissionDeniedError(
          StrCat("job ", row->id, " belongs to client '", row->owner, "'; client '", caller,
                 "' may cancel only its own jobs (admins: iosfarm-server --admin-clients)"));
    }
    ASSIGN_OR_RETURN(JobRow job, coordinator_->Cancel(request->job_id()));
    *response = JobToProto(job, NowSeconds());
    return absl::OkStatus();
  });
}

grpc::Status TuningServiceImpl::GetResult(grpc::ServerContext* context,
                                          const v1::JobRequest* request,
                                          v1::JobResult* response) {
  return Serve(Authenticate(*context), [&](const std::string&) -> Status {
    ASSIGN_OR_RETURN(std::optional<JobRow> job, job_store_->GetJob(request->job_id()));
    if (!job) return absl::NotFoundError(StrCat("job ", request->job_id(), " not found"));
    if (job->state != JobState::kSucceeded) {
      return absl::FailedPreconditionError(
          StrCat("job ", job->id, " has no result: it is ", JobStateName(job->state),
                 job->error.empty() ? "" : StrCat(" (", job->error, ")")));
    }
    ASSIGN_OR_RETURN(std::optional<ResultRow> result, job_store_->GetResult(job->id));
    if (!result) return absl::DataLossError(StrCat("job ", job->id, " succeeded but has no stored result"));
    ASSIGN_OR_RETURN(*response, ResultToProto(*result));
    return absl::OkStatus();
  });
}

grpc::Status TuningServiceImpl::ListWorkers(grpc::ServerContext* context,
                                            const v1::ListWorkersRequest*,
                                            v1::ListWorkersResponse* response) {
  return Serve(Authenticate(*context), [&](const std::string&) -> Status {
    for (const WorkerSnapshot& worker : coordinator_->Workers()) {
      *response->add_workers() = WorkerToProto(worker);
    }
    return absl::OkStatus();
  });
}

grpc::Status TuningServiceImpl::Retune(grpc::ServerContext* context,
                                       const v1::RetuneRequest* request,
                                       v1::RetuneResponse* response) {
  return Serve(Authenticate(*context), [&](const std::string& owner) -> Status {
    if (request->device_key().empty()) {
      return absl::InvalidArgumentError("retune: device_key (the new GPU type) is required");
    }
    RetuneFilter filter;
    filter.model_names.assign(request->model_names().begin(), request->model_names().end());
    filter.from_device_key = request->from_device_key();
    if (request->batch() > 0) filter.batch = request->batch();
    std::optional<JobOptions> options;
    const auto& o = request->options();
    if (o.r() || o.s() || o.block_size() || o.batch_size() || o.max_parallel_batches()) {
      ASSIGN_OR_RETURN(JobOptions parsed, OptionsFromProto(o, 0));
      options = parsed;
    }
    ASSIGN_OR_RETURN(auto batch, coordinator_->Retune(request->device_key(), filter, options, owner));
    response->set_retune_batch(batch.first);
    const double now = NowSeconds();
    for (const JobRow& job : batch.second) *response->add_jobs() = JobToProto(job, now);
    return absl::OkStatus();
  });
}

grpc::Status TuningServiceImpl::GetTimeline(grpc::ServerContext* context,
                                            const v1::TimelineRequest* request,
                                            v1::TimelineResponse* response) {
  return Serve(Authenticate(*context), [&](const std::string&) -> Status {
    std::optional<int64_t> job;
    if (request->job_id() != 0) {
      job = request->job_id();
      ASSIGN_OR_RETURN(std::optional<JobRow> row, job_store_->GetJob(*job));
      if (!row) return absl::NotFoundError(StrCat("job ", *job, " not found"));
    }
    ASSIGN_OR_RETURN(std::vector<PhaseLogRow> phases, job_store_->ListPhases(job));
    for (const PhaseLogRow& row : phases) *response->add_phases() = PhaseToProto(row);
    return absl::OkStatus();
  });
}

}  // namespace iosfarm::server
