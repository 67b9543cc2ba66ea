// iosfarm forget --device KEY [--worker ID]: deletes stored measurements of a
// device key, all of them or only one worker's (the remedy for a worker that
// measured wrong). Admins only (iosfarm-server --admin-clients). Later jobs
// measure the forgotten stages again; stored jobs and results are kept.
#include <memory>
#include <string>

#include <nlohmann/json.hpp>

#include "client/cli_usage.h"
#include "client/command.h"
#include "client/farm_client.h"
#include "client/job_format.h"
#include "client/job_submission.h"
#include "common/text.h"

namespace iosfarm::client {
namespace {

struct ForgetOptions {
  RemoteFlags remote;
  std::string device_key, worker, format = "text";
};

Status RunForget(const ForgetOptions& o, CommandContext& context) {
  ASSIGN_OR_RETURN(std::unique_ptr<FarmClient> client, ConnectWithFlags(o.remote));
  v1::ForgetLatenciesRequest request;
  request.set_device_key(o.device_key);
  request.set_worker(o.worker);
  ASSIGN_OR_RETURN(v1::ForgetLatenciesResponse response, client->ForgetLatencies(request));
  if (o.format == "json") {
    context.out << nlohmann::json{{"format_version", kRemoteFormatVersion},
                                  {"device_key", o.device_key},
                                  {"worker", o.worker},
                                  {"deleted", response.deleted()},
                                  {"remaining", response.remaining()}}
                       .dump(2)
                << "\n";
  } else {
    context.out << "forgot " << response.deleted() << " measurements of device "
                << Printable(o.device_key)
                << (o.worker.empty() ? std::string() : " by worker " + Printable(o.worker))
                << "; " << response.remaining() << " remain\n";
  }
  return absl::OkStatus();
}

}  // namespace

void AddForgetCommand(CLI::App& app, CommandContext& context) {
  auto* cmd = app.add_subcommand(
      "forget", "Delete stored measurements of a device key (all, or one worker's); admins only");
  auto o = std::make_shared<ForgetOptions>();
  cmd->add_option("--device", o->device_key, "Device key whose measurements go")->required();
  cmd->add_option("--worker", o->worker, "Only the measurements this worker made");
  cmd->add_option("--format", o->format, "Output format")->check(CLI::IsMember({"text", "json"}));
  AddRemoteFlags(*cmd, o->remote);
  cmd->callback([&context, o] { context.result = RunForget(*o, context); });
}

}  // namespace iosfarm::client
