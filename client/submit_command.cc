// `iosfarm submit MODEL --device KEY [--batch N] [--r R] [--s S]
//  [--block-size B] [--priority P] [--wait [-o FILE]] [--format text|json]`:
// sends a tuning job to the server and prints its id; with --wait, follows it
// to the end and prints the result (exit 1 when it failed or was cancelled).
#include <memory>

#include "client/command.h"
#include "client/job_submission.h"

namespace iosfarm::client {
namespace {

struct SubmitCommandOptions {
  SubmitSpec spec;
  RemoteFlags remote;
  ReportOptions report;
};

Status RunSubmitCommand(const SubmitCommandOptions& o, CommandContext& context) {
  ASSIGN_OR_RETURN(v1::SubmitJobRequest request, MakeSubmitRequest(o.spec));
  ASSIGN_OR_RETURN(std::unique_ptr<FarmClient> client, ConnectWithFlags(o.remote));
  return SubmitAndReport(*client, request, o.report, context);
}

}  // namespace

void AddSubmitCommand(CLI::App& app, CommandContext& context) {
  auto* cmd = app.add_subcommand("submit", "Submit a tuning job to an iosfarm server");
  auto o = std::make_shared<SubmitCommandOptions>();
  cmd->add_option("MODEL", o->spec.model, "Zoo model name or path to an .onnx file")->required();
  cmd->add_option("--device", o->spec.device_key, "Device key (GPU type) to tune for")
      ->required();
  AddSearchFlags(*cmd, o->spec.search);
  cmd->add_option("--priority", o->spec.priority, "Job priority (higher runs first)")
      ->capture_default_str();
  auto* wait = cmd->add_flag("--wait", o->report.wait,
                             "Follow the job until it ends and print its result");
  cmd->add_option("-o,--output", o->report.schedule_output,
                  "With --wait: write the schedule JSON to FILE")
      ->needs(wait);
  cmd->add_option("--format", o->report.format, "Output format")
      ->check(CLI::IsMember({"text", "json"}));
  AddRemoteFlags(*cmd, o->remote);
  cmd->callback([&context, o] { context.result = RunSubmitCommand(*o, context); });
}

}  // namespace iosfarm::client
