// `iosfarm tune MODEL [--batch N] [--r R] [--s S] [--block-size B]
//  [--backend cuda|cpu|sim[:preset]] [--device KEY] [--db FILE] [-o FILE]
//  [--format text|json]`: tunes a model on this machine. Without --server it
// starts an embedded farm (client/embedded_farm.h: an in-process server on a
// free loopback port and a local worker on the best backend present, with the
// latency database in the user's cache directory), submits the job to it,
// shows its progress and prints the result. With --server it submits to that
// server instead (like `submit --wait`; --device is then required).
#include <memory>

#include <spdlog/spdlog.h>

#include "client/cli_usage.h"
#include "client/command.h"
#include "client/embedded_farm.h"
#include "client/interrupt_notice.h"
#include "client/job_submission.h"
#include "client/unfinished_jobs.h"
#include "common/logging.h"
#include "common/strings.h"

namespace iosfarm::client {
namespace {

struct TuneCommandOptions {
  SubmitSpec spec;
  std::string backend;
  std::string db_path;
  int threads = 0;
  bool cuda_graph_stages = false;
  std::string log_level = "warn";
  bool fresh = false;
  ReportOptions report;
  RemoteFlags remote;
};

// Server and worker logs go to stderr at `level`. InitLogging registers the
// "iosfarm" logger and may run once per process; later commands in the same
// process (tests) only change the level.
Status SetUpLogging(const std::string& level) {
  if (spdlog::get("iosfarm") == nullptr) return InitLogging(level);
  spdlog::set_level(spdlog::level::from_str(level));
  return absl::OkStatus();
}

// Ctrl-C while waiting: what becomes of the job.
std::string InterruptMessage(const v1::Job& job, const TuneCommandOptions& o,
                             const std::string& db_path) {
  if (db_path.empty()) {  // a remote server
    return StrCat("\niosfarm: interrupted; job ", job.id(),
                  " keeps running on the server: `iosfarm watch ", job.id(),
                  "` follows it, `iosfarm cancel ", job.id(), "` cancels it\n");
  }
  return StrCat("\niosfarm: interrupted; job ", job.id(), " (", job.model_name(),
                ") stays unfinished in the latency database ", db_path,
                ": the next `iosfarm tune ", o.spec.model,
                "` with the same options resumes it, keeping what it measured; add --fresh to "
                "cancel it and start anew\n");
}

// Submits `request` (text: "job N submitted: ..." on stdout) and waits for
// the job under a Ctrl-C notice.
Status SubmitAndWait(FarmClient& client, const v1::SubmitJobRequest& request,
                     const TuneCommandOptions& o, const std::string& db_path,
                     CommandContext& context) {
  ASSIGN_OR_RETURN(v1::Job job, client.SubmitJob(request));
  if (o.report.format != "json") PrintSubmitted(job, context);
  ScopedInterruptNotice notice(InterruptMessage(job, o, db_path));
  return WaitAndReport(client, job.id(), o.report, context);
}

// The embedded farm resumed what an earlier, interrupted `tune` left
// unfinished: follow the job of the same model rather than submit it again
// (with --fresh, `cancelled` holds it, cancelled before the worker started),
// and say so.
Status TuneOnEmbeddedFarm(FarmClient& client, const v1::SubmitJobRequest& request,
                          const std::vector<v1::Job>& resumed,
                          const std::optional<v1::Job>& cancelled, const TuneCommandOptions& o,
                          const std::string& db_path, CommandContext& context) {
  const UnfinishedJobs unfinished = SplitBySameTuning(resumed, request);
  for (const v1::Job& other : unfinished.others) {
    context.err << "iosfarm: note: " << DescribeJob(other)
                << ", left unfinished by an earlier `iosfarm tune`, resumes too and shares the "
                   "local worker\n";
  }
  if (cancelled) {
    context.err << "iosfarm: cancelled " << DescribeJob(*cancelled)
                << ", left unfinished by an earlier `iosfarm tune`; starting anew\n";
  }
  if (!unfinished.same || cancelled) return SubmitAndWait(client, request, o, db_path, context);
  const v1::Job& earlier = *unfinished.same;
  context.err << "iosfarm: resuming " << DescribeJob(earlier)
              << ", left unfinished by an earlier `iosfarm tune`; its measurements are kept "
                 "(--fresh cancels it and starts anew)\n";
  ScopedInterruptNotice notice(InterruptMessage(earlier, o, db_path));
  return WaitAndReport(client, earlier.id(), o.report, context);
}

Status RunTuneCommand(TuneCommandOptions o, CommandContext& context) {
  o.report.wait = true;
  RETURN_IF_ERROR(SetUpLogging(o.log_level));
  if (o.cuda_graph_stages && !o.backend.empty() && o.backend != "cuda") {
    return UsageError("--cuda-graph-stages needs --backend cuda");
  }
  if (o.remote.server) {
    if (o.spec.device_key.empty()) {
      return UsageError("tune --server needs --device KEY (the GPU type to tune for)");
    }
    ASSIGN_OR_RETURN(v1::SubmitJobRequest request, MakeSubmitRequest(o.spec));
    ASSIGN_OR_RETURN(std::unique_ptr<FarmClient> client, ConnectWithFlags(o.remote));
    return SubmitAndWait(*client, request, o, /*db_path=*/"", context);
  }
  ASSIGN_OR_RETURN(v1::SubmitJobRequest request, MakeSubmitRequest(o.spec));
  EmbeddedFarmOptions farm_options;
  farm_options.backend = o.backend;
  farm_options.device_key = o.spec.device_key;
  farm_options.db_path = o.db_path;
  farm_options.cpu_threads = o.threads;
  farm_options.cuda_graph_stages = o.cuda_graph_stages;
  std::optional<v1::Job> cancelled;
  farm_options.before_worker = [&](FarmClient& client, const std::vector<v1::Job>& resumed,
                                   const std::string& device_key) -> Status {
    if (!o.fresh) return absl::OkStatus();
    v1::SubmitJobRequest same = request;
    same.set_device_key(device_key);
    for (const v1::Job& job : resumed) {
      if (!SameTuning(job, same)) continue;
      ASSIGN_OR_RETURN(cancelled, client.CancelJob(job.id()));
      break;
    }
    return absl::OkStatus();
  };
  ASSIGN_OR_RETURN(std::unique_ptr<EmbeddedFarm> farm, EmbeddedFarm::Start(farm_options));
  request.set_device_key(farm->device_key());
  if (o.report.format != "json") {
    context.out << "embedded farm: backend " << farm->backend_name() << " ("
                << farm->device_description() << "), device key " << farm->device_key()
                << ", latency database " << farm->db_path() << "\n";
  }
  RemoteOptions remote;
  remote.server = farm->address();
  ASSIGN_OR_RETURN(std::unique_ptr<FarmClient> client, FarmClient::Connect(remote));
  Status status =
      TuneOnEmbeddedFarm(*client, request, farm->resumed_jobs(), cancelled, o, farm->db_path(),
                         context);
  client.reset();
  farm->Shutdown();
  return status;
}

}  // namespace

void AddTuneCommand(CLI::App& app, CommandContext& context) {
  auto* cmd = app.add_subcommand(
      "tune", "Tune a model on this machine (embedded server and worker) or on --server");
  auto o = std::make_shared<TuneCommandOptions>();
  cmd->add_option("MODEL", o->spec.model, "Zoo model name or path to an .onnx file")->required();
  AddSearchFlags(*cmd, o->spec.search);
  auto* backend = cmd->add_option("--backend", o->backend,
                                  "cuda, cpu, sim or sim:<preset> (default: cuda if a GPU "
                                  "answers, else cpu)");
  cmd->add_option("--device", o->spec.device_key,
                  "Device key the latencies are stored under (default: the GPU's name, or "
                  "local-<backend>)");
  auto* db = cmd->add_option("--db", o->db_path,
                             "Latency database (default: $XDG_CACHE_HOME/iosfarm/latency.db or "
                             "~/.cache/iosfarm/latency.db)");
  auto* threads = cmd->add_option("--threads", o->threads, "cpu backend: threads (0 = all)")
                      ->check(CLI::Range(0, 1024));
  auto* graph_stages = cmd->add_flag(
      "--cuda-graph-stages", o->cuda_graph_stages,
      "cuda: time each stage as a CUDA graph, for a schedule run as one graph (the runtime, "
      "`iosfarm run --cuda-graph`); default device key <gpu>-graph-stages");
  auto* fresh = cmd->add_flag("--fresh", o->fresh,
                              "Cancel the unfinished job an interrupted `tune` of the same model "
                              "left, and start anew (default: resume it)");
  cmd->add_option("-o,--output", o->report.schedule_output, "Write the schedule JSON to FILE");
  cmd->add_option("--format", o->report.format, "Output format")
      ->check(CLI::IsMember({"text", "json"}));
  cmd->add_option("--log-level", o->log_level,
                  "Embedded server and worker logs on stderr: trace, debug, info, warn, error, "
                  "off")
      ->check(CLI::IsMember({"trace", "debug", "info", "warn", "error", "off"}))
      ->capture_default_str();
  AddRemoteFlags(*cmd, o->remote);
  // The embedded farm's settings mean nothing to a remote server.
  for (CLI::Option* local : {backend, db, threads, graph_stages, fresh}) {
    local->excludes("--server");
  }
  cmd->callback([&context, o] { context.result = RunTuneCommand(*o, context); });
}

}  // namespace iosfarm::client
