#include "client/job_submission.h"


#include <nlohmann/json.hpp>

#include "client/job_format.h"
#include "client/job_watch.h"
#include "client/tuned_model_assembly.h"
#include "common/atomic_file.h"
#include "common/strings.h"
#include "common/text.h"
#include "graph/model_loader.h"
#include "proto/rpc_util.h"
#include "tuned_model/tuned_model_file.h"

namespace iosfarm::client {

void AddSearchFlags(CLI::App& command, SearchFlags& flags, const std::string& batch_help) {
  command.add_option("--batch", flags.batch, batch_help)
      ->check(CLI::Range(int64_t{1}, int64_t{4096}));
  AddSearchBoundFlags(command, flags);
}

void AddSearchBoundFlags(CLI::App& command, SearchFlags& flags) {
  command.add_option("--r", flags.r, "Most ops per group (server default 3)")
      ->check(CLI::Range(1, 64));
  command.add_option("--s", flags.s, "Most groups per stage (server default 8)")
      ->check(CLI::Range(1, 64));
  command.add_option("--block-size", flags.block_size, "Largest block in ops (server default 50)")
      ->check(CLI::Range(1, 1024));
  command
      .add_option("--batch-size", flags.batch_size,
                  "Most stages per build/profile batch (server default 64)")
      ->check(CLI::Range(1, 4096));
  command
      .add_option("--max-parallel-batches", flags.max_parallel_batches,
                  "Batches of one job measured at once on workers of its key (default 0: as "
                  "many as the key has idle GPUs when the job starts)")
      ->check(CLI::Range(0, 1024));
}

v1::SearchOptions ToSearchOptions(const SearchFlags& flags) {
  v1::SearchOptions options;
  options.set_r(flags.r.value_or(0));
  options.set_s(flags.s.value_or(0));
  options.set_block_size(flags.block_size.value_or(0));
  options.set_max_parallel_batches(flags.max_parallel_batches.value_or(0));
  options.set_batch_size(flags.batch_size.value_or(0));
  return options;
}

StatusOr<v1::SubmitJobRequest> MakeSubmitRequest(const SubmitSpec& spec,
                                                 std::vector<int64_t>* held_batches) {
  v1::SubmitJobRequest request;
  std::vector<int64_t> batches;
  ASSIGN_OR_RETURN(graph::ModelRef ref, graph::ResolveModel(spec.model));
  if (ref.source == graph::kZooSource) {
    request.set_zoo_name(ref.name);
    request.set_model_name(ref.name);
  } else if (tuned_model::IsTunedModelFile(ref.path)) {
    ASSIGN_OR_RETURN(request, RequestFromTunedModelFile(ref.path, &batches));
  } else {
    ASSIGN_OR_RETURN(std::string bytes, rpc::ReadFileToString(ref.path));
    request.set_onnx(std::move(bytes));
    request.set_model_name(ref.name);
  }
  request.set_batch(spec.search.batch.value_or(0));
  request.set_device_key(spec.device_key);
  *request.mutable_options() = ToSearchOptions(spec.search);
  request.set_priority(spec.priority);
  if (held_batches != nullptr) *held_batches = std::move(batches);
  return request;
}

Status WriteScheduleFile(const std::string& path, const std::string& schedule_json) {
  const bool ends_line = !schedule_json.empty() && schedule_json.back() == '\n';
  return WriteFileAtomically(path, ends_line ? schedule_json : schedule_json + "\n",
                             "schedule file");
}

Status WaitAndReport(FarmClient& client, int64_t job_id, const ReportOptions& options,
                     CommandContext& context) {
  const bool json = options.format == "json";
  ProgressDisplay display(context.err, ProgressOptionsFor(context));
  StatusOr<v1::Job> final_job = WatchJobUntilDone(client, job_id, json ? nullptr : &display);
  display.Finish();
  if (!final_job.ok()) return final_job.status();
  std::optional<v1::JobResult> result;
  if (final_job->state() == v1::SUCCEEDED) {
    ASSIGN_OR_RETURN(result, client.GetResult(job_id));
    if (!options.schedule_output.empty()) {
      RETURN_IF_ERROR(WriteScheduleFile(options.schedule_output, result->schedule_json()));
    }
  }
  if (json) {
    nlohmann::json doc = {{"format_version", kRemoteFormatVersion}, {"job", JobJson(*final_job)}};
    if (result) doc["result"] = JobResultJson(*result);
    context.out << doc.dump(2) << "\n";
  } else if (result) {
    context.out << JobResultText(*result);
  }
  return JobOutcome(*final_job);
}

void PrintSubmitted(const v1::Job& job, CommandContext& context) {
  context.out << "job " << job.id() << " submitted: " << Printable(job.model_name()) << " on "
              << Printable(job.device_key()) << ", batch "
              << (job.batch() > 0 ? std::to_string(job.batch()) : std::string("default"));
  if (job.progress().has_estimated_stages()) {
    context.out << ", about " << job.progress().estimated_stages()
                << " stages to profile (estimated from the farm's history)";
  }
  context.out << "\n";
}

Status SubmitAndReport(FarmClient& client, const v1::SubmitJobRequest& request,
                       const ReportOptions& options, CommandContext& context) {
  ASSIGN_OR_RETURN(v1::Job job, client.SubmitJob(request));
  const bool json = options.format == "json";
  if (!options.wait) {
    if (json) {
      context.out << nlohmann::json{{"format_version", kRemoteFormatVersion}, {"job", JobJson(job)}}
                         .dump(2)
                  << "\n";
    } else {
      context.out << job.id() << "\n";
    }
    return absl::OkStatus();
  }
  if (!json) PrintSubmitted(job, context);
  return WaitAndReport(client, job.id(), options, context);
}

StatusOr<std::unique_ptr<FarmClient>> ConnectWithFlags(const RemoteFlags& flags) {
  return FarmClient::Connect(ResolveRemoteOptions(flags));
}

}  // namespace iosfarm::client
