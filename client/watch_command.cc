// `iosfarm watch JOB [--format text|json]`: follows a job until it ends.
// Text: a progress line (phase, blocks done/total, stages profiled, cache
// hits, elapsed time, ETA), redrawn in place on a terminal and printed as
// plain lines otherwise. JSON: one document per event, one per line
// ({"format_version", "message", "job"}). Exit 1 when the job failed or was
// cancelled.
#include <memory>

#include <nlohmann/json.hpp>

#include "client/cli_usage.h"
#include "client/command.h"
#include "client/job_format.h"
#include "client/job_submission.h"
#include "client/job_watch.h"

namespace iosfarm::client {
namespace {

struct WatchCommandOptions {
  int64_t job_id = 0;
  std::string format = "text";
  RemoteFlags remote;
};

Status RunWatchCommand(const WatchCommandOptions& o, CommandContext& context) {
  ASSIGN_OR_RETURN(std::unique_ptr<FarmClient> client, ConnectWithFlags(o.remote));
  if (o.format == "json") {
    ASSIGN_OR_RETURN(v1::Job job, client->WatchJob(o.job_id, [&](const v1::JobEvent& event) {
      context.out << nlohmann::json{{"format_version", kRemoteFormatVersion},
                                    {"message", event.message()},
                                    {"job", JobJson(event.job())}}
                         .dump()
                  << "\n"
                  << std::flush;
    }));
    return JobOutcome(job);
  }
  ProgressDisplay display(context.err, ProgressOptionsFor(context));
  StatusOr<v1::Job> job = WatchJobUntilDone(*client, o.job_id, &display);
  display.Finish();
  if (!job.ok()) return job.status();
  return JobOutcome(*job);
}

}  // namespace

void AddWatchCommand(CLI::App& app, CommandContext& context) {
  auto* cmd = app.add_subcommand("watch", "Follow a job's progress until it ends");
  auto o = std::make_shared<WatchCommandOptions>();
  cmd->add_option("JOB", o->job_id, "Job id")->required()->check(JobIdValidator());
  cmd->add_option("--format", o->format, "Output format")->check(CLI::IsMember({"text", "json"}));
  AddRemoteFlags(*cmd, o->remote);
  cmd->callback([&context, o] { context.result = RunWatchCommand(*o, context); });
}

}  // namespace iosfarm::client
