// `iosfarm retune --device KEY [--from-device KEY] [--models a,b] [--batch N]
//  [--r R] [--s S] [--block-size B] [--wait] [--format text|json]`: asks the
// server to re-tune the models it has tuned before for a (new) device key.
// Prints the retune batch id and its jobs; with --wait, follows every job of
// the batch to the end (one progress line per job) and fails (exit 1) when any
// of them failed or was cancelled.
#include <memory>

#include <nlohmann/json.hpp>

#include "client/command.h"
#include "client/job_format.h"
#include "client/job_submission.h"
#include "client/job_watch.h"
#include "common/strings.h"

namespace iosfarm::client {
namespace {

struct RetuneCommandOptions {
  std::string device_key;
  std::string from_device_key;
  std::vector<std::string> models;
  SearchFlags search;
  bool wait = false;
  std::string format = "text";
  RemoteFlags remote;
};

Status RunRetuneCommand(const RetuneCommandOptions& o, CommandContext& context) {
  ASSIGN_OR_RETURN(std::unique_ptr<FarmClient> client, ConnectWithFlags(o.remote));
  v1::RetuneRequest request;
  request.set_device_key(o.device_key);
  request.set_from_device_key(o.from_device_key);
  for (const std::string& model : o.models) {
    if (!model.empty()) request.add_model_names(model);
  }
  request.set_batch(o.search.batch.value_or(0));
  *request.mutable_options() = ToSearchOptions(o.search);
  ASSIGN_OR_RETURN(v1::RetuneResponse response, client->Retune(request));
  const bool json = o.format == "json";
  std::vector<int64_t> ids;
  for (const v1::Job& job : response.jobs()) ids.push_back(job.id());

  if (!json) {
    context.out << "retune batch " << response.retune_batch() << ": " << ids.size()
                << (ids.size() == 1 ? " job" : " jobs") << " for " << o.device_key << "\n";
    if (!ids.empty()) {
      context.out << JobsTable(std::vector<v1::Job>(response.jobs().begin(),
                                                    response.jobs().end()));
    }
  }
  std::vector<v1::Job> final_jobs(response.jobs().begin(), response.jobs().end());
  if (o.wait && !ids.empty()) {
    ProgressDisplay display(context.err, ProgressOptionsFor(context));
    StatusOr<std::vector<v1::Job>> jobs =
        WatchJobsUntilDone(*client, ids, response.retune_batch(), json ? nullptr : &display);
    display.Finish();
    if (!jobs.ok()) return jobs.status();
    final_jobs = *std::move(jobs);
  }
  if (json) {
    nlohmann::json jobs = nlohmann::json::array();
    for (const v1::Job& job : final_jobs) jobs.push_back(JobJson(job));
    context.out << nlohmann::json{{"format_version", kRemoteFormatVersion},
                                  {"retune_batch", response.retune_batch()},
                                  {"jobs", jobs}}
                       .dump(2)
                << "\n";
  }
  if (!o.wait) return absl::OkStatus();
  int failed = 0;
  std::string first_failure;
  for (const v1::Job& job : final_jobs) {
    Status outcome = JobOutcome(job);
    if (outcome.ok()) continue;
    if (failed++ == 0) first_failure = std::string(ToStd(outcome.message()));
  }
  if (failed > 0) {
    return absl::AbortedError(StrCat(failed, " of ", final_jobs.size(), " jobs of retune batch ",
                                     response.retune_batch(), " did not succeed; ",
                                     first_failure));
  }
  if (!json) {
    context.out << "retune batch " << response.retune_batch() << ": all " << final_jobs.size()
                << " jobs succeeded\n";
  }
  return absl::OkStatus();
}

}  // namespace

void AddRetuneCommand(CLI::App& app, CommandContext& context) {
  auto* cmd = app.add_subcommand(
      "retune", "Re-tune the models the server has tuned before for a device key");
  auto o = std::make_shared<RetuneCommandOptions>();
  cmd->add_option("--device", o->device_key, "Device key to tune for")->required();
  cmd->add_option("--from-device", o->from_device_key,
                  "Only models tuned before for this device key (default: any)");
  cmd->add_option("--models", o->models, "Only these models (comma-separated names)")
      ->delimiter(',');
  AddSearchFlags(*cmd, o->search, "Only models tuned before with this batch size (default: any)");
  cmd->add_flag("--wait", o->wait, "Follow every job of the batch until it ends");
  cmd->add_option("--format", o->format, "Output format")->check(CLI::IsMember({"text", "json"}));
  AddRemoteFlags(*cmd, o->remote);
  cmd->callback([&context, o] { context.result = RunRetuneCommand(*o, context); });
}

}  // namespace iosfarm::client
