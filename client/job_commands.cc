// The job and farm inspection commands of a remote server:
//   iosfarm status JOB            one job's state and progress
//   iosfarm list [--state S] [--device KEY] [--retune-batch ID] [--limit N]
//   iosfarm cancel JOB
//   iosfarm result JOB [-o FILE]  latencies, speedups, search statistics
//   iosfarm workers               connected worker daemons
//   iosfarm timeline [JOB]        the phases the scheduler ran (all jobs by default)
// All take --format text|json and --server/--token/--tls-ca.
#include <memory>
#include <vector>

#include <nlohmann/json.hpp>

#include "client/cli_usage.h"
#include "client/command.h"
#include "client/job_format.h"
#include "client/job_submission.h"

namespace iosfarm::client {
namespace {

// What every command here has: the remote flags and --format.
struct RemoteCommandOptions {
  RemoteFlags remote;
  std::string format = "text";
  bool json() const { return format == "json"; }
};

void AddCommonFlags(CLI::App& cmd, RemoteCommandOptions& o) {
  cmd.add_option("--format", o.format, "Output format")->check(CLI::IsMember({"text", "json"}));
  AddRemoteFlags(cmd, o.remote);
}

void PrintDocument(CommandContext& context, const char* key, nlohmann::json value) {
  context.out << nlohmann::json{{"format_version", kRemoteFormatVersion}, {key, std::move(value)}}
                     .dump(2)
              << "\n";
}

template <typename T>
std::vector<T> ToVector(const google::protobuf::RepeatedPtrField<T>& field) {
  return std::vector<T>(field.begin(), field.end());
}

// --------------------------------------------------------------- status

struct JobIdOptions : RemoteCommandOptions {
  int64_t job_id = 0;
};

Status RunStatus(const JobIdOptions& o, CommandContext& context) {
  ASSIGN_OR_RETURN(std::unique_ptr<FarmClient> client, ConnectWithFlags(o.remote));
  ASSIGN_OR_RETURN(v1::Job job, client->GetJob(o.job_id));
  if (o.json()) {
    PrintDocument(context, "job", JobJson(job));
  } else {
    context.out << JobText(job);
  }
  return absl::OkStatus();
}

// --------------------------------------------------------------- list

struct ListOptions : RemoteCommandOptions {
  std::string state;
  std::string device_key;
  std::string retune_batch;
  int limit = 0;
};

Status RunList(const ListOptions& o, CommandContext& context) {
  ASSIGN_OR_RETURN(std::unique_ptr<FarmClient> client, ConnectWithFlags(o.remote));
  v1::ListJobsRequest request;
  request.set_state(o.state);
  request.set_device_key(o.device_key);
  request.set_retune_batch(o.retune_batch);
  request.set_limit(o.limit);
  ASSIGN_OR_RETURN(v1::ListJobsResponse response, client->ListJobs(request));
  if (o.json()) {
    nlohmann::json jobs = nlohmann::json::array();
    for (const v1::Job& job : response.jobs()) jobs.push_back(JobJson(job));
    PrintDocument(context, "jobs", std::move(jobs));
  } else if (response.jobs().empty()) {
    context.out << "no jobs\n";
  } else {
    context.out << JobsTable(ToVector(response.jobs()));
  }
  return absl::OkStatus();
}

// --------------------------------------------------------------- cancel

Status RunCancel(const JobIdOptions& o, CommandContext& context) {
  ASSIGN_OR_RETURN(std::unique_ptr<FarmClient> client, ConnectWithFlags(o.remote));
  ASSIGN_OR_RETURN(v1::Job job, client->CancelJob(o.job_id));
  if (o.json()) {
    PrintDocument(context, "job", JobJson(job));
  } else {
    context.out << "job " << job.id() << ": " << JobStateName(job.state()) << "\n";
  }
  return absl::OkStatus();
}

// --------------------------------------------------------------- result

struct ResultOptions : JobIdOptions {
  std::string schedule_output;
};

Status RunResult(const ResultOptions& o, CommandContext& context) {
  ASSIGN_OR_RETURN(std::unique_ptr<FarmClient> client, ConnectWithFlags(o.remote));
  ASSIGN_OR_RETURN(v1::JobResult result, client->GetResult(o.job_id));
  if (!o.schedule_output.empty()) {
    RETURN_IF_ERROR(WriteScheduleFile(o.schedule_output, result.schedule_json()));
  }
  if (o.json()) {
    PrintDocument(context, "result", JobResultJson(result));
  } else {
    context.out << JobResultText(result);
    if (!o.schedule_output.empty()) {
      context.out << "schedule written to " << o.schedule_output << "\n";
    }
  }
  return absl::OkStatus();
}

// --------------------------------------------------------------- workers

Status RunWorkers(const RemoteCommandOptions& o, CommandContext& context) {
  ASSIGN_OR_RETURN(std::unique_ptr<FarmClient> client, ConnectWithFlags(o.remote));
  ASSIGN_OR_RETURN(v1::ListWorkersResponse response, client->ListWorkers());
  if (o.json()) {
    nlohmann::json workers = nlohmann::json::array();
    for (const v1::WorkerInfo& worker : response.workers()) workers.push_back(WorkerJson(worker));
    PrintDocument(context, "workers", std::move(workers));
  } else if (response.workers().empty()) {
    context.out << "no workers connected\n";
  } else {
    context.out << WorkersTable(ToVector(response.workers()));
  }
  return absl::OkStatus();
}

// --------------------------------------------------------------- timeline

Status RunTimeline(const JobIdOptions& o, CommandContext& context) {
  ASSIGN_OR_RETURN(std::unique_ptr<FarmClient> client, ConnectWithFlags(o.remote));
  ASSIGN_OR_RETURN(v1::TimelineResponse response, client->GetTimeline(o.job_id));
  if (o.json()) {
    nlohmann::json phases = nlohmann::json::array();
    for (const v1::PhaseEntry& phase : response.phases()) phases.push_back(PhaseJson(phase));
    PrintDocument(context, "phases", std::move(phases));
  } else if (response.phases().empty()) {
    context.out << "no phases\n";
  } else {
    context.out << TimelineTable(ToVector(response.phases()));
  }
  return absl::OkStatus();
}

}  // namespace

void AddStatusCommand(CLI::App& app, CommandContext& context) {
  auto* cmd = app.add_subcommand("status", "Show a job's state and progress");
  auto o = std::make_shared<JobIdOptions>();
  cmd->add_option("JOB", o->job_id, "Job id")->required()->check(JobIdValidator());
  AddCommonFlags(*cmd, *o);
  cmd->callback([&context, o] { context.result = RunStatus(*o, context); });
}

void AddListCommand(CLI::App& app, CommandContext& context) {
  auto* cmd = app.add_subcommand("list", "List jobs, newest first");
  auto o = std::make_shared<ListOptions>();
  cmd->add_option("--state", o->state, "Only jobs in this state")
      ->check(CLI::IsMember({"queued", "running", "succeeded", "failed", "cancelled"}));
  cmd->add_option("--device", o->device_key, "Only jobs for this device key");
  cmd->add_option("--retune-batch", o->retune_batch, "Only the jobs of this retune batch");
  cmd->add_option("--limit", o->limit, "At most N jobs (0: server default)")
      ->check(CLI::Range(0, 100000));
  AddCommonFlags(*cmd, *o);
  cmd->callback([&context, o] { context.result = RunList(*o, context); });
}

void AddCancelCommand(CLI::App& app, CommandContext& context) {
  auto* cmd = app.add_subcommand("cancel", "Cancel a queued or running job");
  auto o = std::make_shared<JobIdOptions>();
  cmd->add_option("JOB", o->job_id, "Job id")->required()->check(JobIdValidator());
  AddCommonFlags(*cmd, *o);
  cmd->callback([&context, o] { context.result = RunCancel(*o, context); });
}

void AddResultCommand(CLI::App& app, CommandContext& context) {
  auto* cmd = app.add_subcommand("result", "Show the result of a succeeded job");
  auto o = std::make_shared<ResultOptions>();
  cmd->add_option("JOB", o->job_id, "Job id")->required()->check(JobIdValidator());
  cmd->add_option("-o,--output", o->schedule_output, "Write the schedule JSON to FILE");
  AddCommonFlags(*cmd, *o);
  cmd->callback([&context, o] { context.result = RunResult(*o, context); });
}

void AddWorkersCommand(CLI::App& app, CommandContext& context) {
  auto* cmd = app.add_subcommand("workers", "List the worker daemons connected to the server");
  auto o = std::make_shared<RemoteCommandOptions>();
  AddCommonFlags(*cmd, *o);
  cmd->callback([&context, o] { context.result = RunWorkers(*o, context); });
}

void AddTimelineCommand(CLI::App& app, CommandContext& context) {
  auto* cmd = app.add_subcommand(
      "timeline", "Show the phases the scheduler ran: resource, wait, run time, outcome");
  auto o = std::make_shared<JobIdOptions>();
  cmd->add_option("JOB", o->job_id, "Job id (default: all jobs)")->check(JobIdValidator());
  AddCommonFlags(*cmd, *o);
  cmd->callback([&context, o] { context.result = RunTimeline(*o, context); });
}

}  // namespace iosfarm::client
