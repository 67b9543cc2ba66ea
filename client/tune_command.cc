// `iosfarm tune MODEL [--batch N[,N...]] [--r R] [--s S] [--block-size B]
//  [--backend cuda|cpu|sim[:preset]] [--device KEY] [--db FILE] [-o FILE]
//  [--save FILE.iosfarm] [--format text|json]`: tunes a model on this
// machine, one job per batch size (submitted together, so the farm
// interleaves them); --save writes the model and every schedule into one
// tuned model file (client/tuned_model_assembly.h). Without --server it
// starts an embedded farm (client/embedded_farm.h: an in-process server on a
// free loopback port and a local worker on the best backend present, with the
// latency database in the user's cache directory), submits the job to it,
// shows its progress and prints the result. With --server it submits to that
// server instead (like `submit --wait`; --device is then required).
#include <algorithm>
#include <memory>
#include <optional>
#include <vector>

#include <spdlog/spdlog.h>

#include "client/cli_usage.h"
#include "client/command.h"
#include "client/embedded_farm.h"
#include "client/interrupt_notice.h"
#include "client/job_submission.h"
#include "client/tuned_model_assembly.h"
#include "client/unfinished_jobs.h"
#include "common/logging.h"
#include "common/strings.h"
#include "tuned_model/tuned_model_file.h"

namespace iosfarm::client {
namespace {

struct TuneCommandOptions {
  SubmitSpec spec;
  std::vector<int64_t> batches;  // --batch; empty: the model's own (or a tuned file's)
  std::string save;              // --save: the tuned model file
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

// "job 3" or "jobs 3, 4 and 5".
std::string JobIds(const std::vector<v1::Job>& jobs) {
  std::string text = jobs.size() == 1 ? "job " : "jobs ";
  for (size_t i = 0; i < jobs.size(); ++i) {
    if (i > 0) text += i + 1 == jobs.size() ? " and " : ", ";
    text += std::to_string(jobs[i].id());
  }
  return text;
}

// Ctrl-C while waiting: what becomes of the jobs.
std::string InterruptMessage(const std::vector<v1::Job>& jobs, const TuneCommandOptions& o,
                             const std::string& db_path) {
  const std::string ids = JobIds(jobs);
  const bool one = jobs.size() == 1;
  if (db_path.empty()) {  // a remote server
    return StrCat("\niosfarm: interrupted; ", ids, one ? " keeps" : " keep",
                  " running on the server: `iosfarm watch ", jobs.front().id(),
                  "` follows one, `iosfarm cancel ", jobs.front().id(), "` cancels it\n");
  }
  return StrCat("\niosfarm: interrupted; ", ids, " (", jobs.front().model_name(), ")",
                one ? " stays" : " stay", " unfinished in the latency database ", db_path,
                ": the next `iosfarm tune ", o.spec.model, "` with the same options resumes ",
                one ? "it" : "them", ", keeping what it measured; add --fresh to cancel ",
                one ? "it" : "them", " and start anew\n");
}

// The jobs to tune: one per --batch (one at the model's own batch without).
std::vector<v1::SubmitJobRequest> RequestsPerBatch(const v1::SubmitJobRequest& request,
                                                   const std::vector<int64_t>& batches) {
  if (batches.empty()) return {request};
  std::vector<v1::SubmitJobRequest> requests;
  for (int64_t batch : batches) {
    requests.push_back(request);
    requests.back().set_batch(batch);
  }
  return requests;
}

// Waits for every job in turn (each prints its result) under a Ctrl-C
// notice naming them all; the results of all, once all succeeded.
StatusOr<std::vector<v1::JobResult>> WaitForAll(FarmClient& client,
                                                const std::vector<v1::Job>& jobs,
                                                const TuneCommandOptions& o,
                                                const std::string& db_path,
                                                CommandContext& context) {
  ScopedInterruptNotice notice(InterruptMessage(jobs, o, db_path));
  std::vector<v1::JobResult> results;
  for (const v1::Job& job : jobs) {
    RETURN_IF_ERROR(WaitAndReport(client, job.id(), o.report, context));
    if (o.save.empty()) continue;
    ASSIGN_OR_RETURN(v1::JobResult result, client.GetResult(job.id()));
    results.push_back(std::move(result));
  }
  return results;
}

// Submits the requests that no job in `following` already tunes (text: "job
// N submitted: ..." on stdout) and waits for all.
StatusOr<std::vector<v1::JobResult>> SubmitAndWait(
    FarmClient& client, const std::vector<v1::SubmitJobRequest>& requests,
    std::vector<std::optional<v1::Job>> following, const TuneCommandOptions& o,
    const std::string& db_path, CommandContext& context) {
  following.resize(requests.size());
  std::vector<v1::Job> jobs;
  for (size_t i = 0; i < requests.size(); ++i) {
    if (following[i]) {
      jobs.push_back(*following[i]);
      continue;
    }
    ASSIGN_OR_RETURN(v1::Job job, client.SubmitJob(requests[i]));
    if (o.report.format != "json") PrintSubmitted(job, context);
    jobs.push_back(std::move(job));
  }
  return WaitForAll(client, jobs, o, db_path, context);
}

// The embedded farm resumed what an earlier, interrupted `tune` left
// unfinished: follow the jobs of the same tuning rather than submit them
// again (with --fresh, `cancelled` holds them, cancelled before the worker
// started), and say so.
StatusOr<std::vector<v1::JobResult>> TuneOnEmbeddedFarm(
    FarmClient& client, const std::vector<v1::SubmitJobRequest>& requests,
    std::vector<v1::Job> resumed, const std::vector<v1::Job>& cancelled,
    const TuneCommandOptions& o, const std::string& db_path, CommandContext& context) {
  for (const v1::Job& job : cancelled) {
    context.err << "iosfarm: cancelled " << DescribeJob(job)
                << ", left unfinished by an earlier `iosfarm tune`; starting anew\n";
  }
  std::vector<std::optional<v1::Job>> following;
  for (const v1::SubmitJobRequest& request : requests) {
    UnfinishedJobs split = SplitBySameTuning(std::move(resumed), request);
    resumed = std::move(split.others);
    if (split.same) {
      context.err << "iosfarm: resuming " << DescribeJob(*split.same)
                  << ", left unfinished by an earlier `iosfarm tune`; its measurements are kept "
                     "(--fresh cancels it and starts anew)\n";
    }
    following.push_back(std::move(split.same));
  }
  for (const v1::Job& other : resumed) {
    context.err << "iosfarm: note: " << DescribeJob(other)
                << ", left unfinished by an earlier `iosfarm tune`, resumes too and shares the "
                   "local worker\n";
  }
  return SubmitAndWait(client, requests, std::move(following), o, db_path, context);
}

// The measuring device of a remote result: its worker's description, if
// that worker is still connected.
std::string RemoteTunedOn(FarmClient& client, const v1::JobResult& result) {
  StatusOr<v1::ListWorkersResponse> workers = client.ListWorkers();
  if (!workers.ok()) return "";
  for (const v1::WorkerInfo& worker : workers->workers()) {
    if (worker.id() == result.worker()) return worker.description();
  }
  return "";
}

Status SaveTunedModel(const TuneCommandOptions& o, const v1::SubmitJobRequest& request,
                      const std::vector<v1::JobResult>& results, const std::string& tuned_on,
                      CommandContext& context) {
  ASSIGN_OR_RETURN(v1::TunedModel model,
                   AssembleTunedModel(request, results, tuned_on, IOSFARM_VERSION, o.save));
  RETURN_IF_ERROR(tuned_model::WriteTunedModelFile(o.save, model));
  if (o.report.format != "json") {
    context.out << "saved " << o.save << ": " << model.model_name() << ", batch"
                << (model.batches_size() == 1 ? " " : "es ") << tuned_model::ListBatches(model)
                << ", device key " << model.device_key() << "\n";
  }
  return absl::OkStatus();
}

Status CheckBatches(const TuneCommandOptions& o) {
  for (size_t i = 0; i < o.batches.size(); ++i) {
    for (size_t j = 0; j < i; ++j) {
      if (o.batches[i] == o.batches[j]) {
        return UsageError(StrCat("--batch ", o.batches[i], " is given twice"));
      }
    }
  }
  if (o.batches.size() > 1 && !o.report.schedule_output.empty()) {
    return UsageError(
        "-o writes one schedule; with several --batch sizes, --save FILE writes "
        "them all into one tuned model file");
  }
  if (o.batches.size() > 1 && o.report.format == "json") {
    return UsageError(
        "--format json reports one job; with several --batch sizes, tune with "
        "--format text (and --save FILE)");
  }
  return absl::OkStatus();
}

Status RunTuneCommand(TuneCommandOptions o, CommandContext& context) {
  o.report.wait = true;
  RETURN_IF_ERROR(SetUpLogging(o.log_level));
  if (o.cuda_graph_stages && !o.backend.empty() && o.backend != "cuda") {
    return UsageError("--cuda-graph-stages needs --backend cuda");
  }
  std::vector<int64_t> held_batches;  // MODEL's, when it is a tuned model file
  ASSIGN_OR_RETURN(v1::SubmitJobRequest request, MakeSubmitRequest(o.spec, &held_batches));
  if (o.batches.empty()) o.batches = std::move(held_batches);  // tune its batches again
  RETURN_IF_ERROR(CheckBatches(o));
  const std::vector<v1::SubmitJobRequest> requests = RequestsPerBatch(request, o.batches);
  if (o.remote.server) {
    if (o.spec.device_key.empty()) {
      return UsageError("tune --server needs --device KEY (the GPU type to tune for)");
    }
    ASSIGN_OR_RETURN(std::unique_ptr<FarmClient> client, ConnectWithFlags(o.remote));
    ASSIGN_OR_RETURN(std::vector<v1::JobResult> results,
                     SubmitAndWait(*client, requests, {}, o, /*db_path=*/"", context));
    if (o.save.empty()) return absl::OkStatus();
    return SaveTunedModel(o, request, results, RemoteTunedOn(*client, results.front()), context);
  }
  EmbeddedFarmOptions farm_options;
  farm_options.backend = o.backend;
  farm_options.device_key = o.spec.device_key;
  farm_options.db_path = o.db_path;
  farm_options.cpu_threads = o.threads;
  farm_options.cuda_graph_stages = o.cuda_graph_stages;
  std::vector<v1::Job> cancelled;
  farm_options.before_worker = [&](FarmClient& client, const std::vector<v1::Job>& resumed,
                                   const std::string& device_key) -> Status {
    if (!o.fresh) return absl::OkStatus();
    for (v1::SubmitJobRequest same : requests) {
      same.set_device_key(device_key);
      for (const v1::Job& job : resumed) {
        if (!SameTuning(job, same)) continue;
        ASSIGN_OR_RETURN(v1::Job stopped, client.CancelJob(job.id()));
        cancelled.push_back(std::move(stopped));
        break;
      }
    }
    return absl::OkStatus();
  };
  ASSIGN_OR_RETURN(std::unique_ptr<EmbeddedFarm> farm, EmbeddedFarm::Start(farm_options));
  std::vector<v1::SubmitJobRequest> local = requests;
  for (v1::SubmitJobRequest& r : local) r.set_device_key(farm->device_key());
  if (o.report.format != "json") {
    context.out << "embedded farm: backend " << farm->backend_name() << " ("
                << farm->device_description() << "), device key " << farm->device_key()
                << ", latency database " << farm->db_path() << "\n";
  }
  RemoteOptions remote;
  remote.server = farm->address();
  ASSIGN_OR_RETURN(std::unique_ptr<FarmClient> client, FarmClient::Connect(remote));
  std::vector<v1::Job> resumed = farm->resumed_jobs();
  std::erase_if(resumed, [&](const v1::Job& job) {
    return std::any_of(cancelled.begin(), cancelled.end(),
                       [&](const v1::Job& c) { return c.id() == job.id(); });
  });
  StatusOr<std::vector<v1::JobResult>> results = TuneOnEmbeddedFarm(
      *client, local, std::move(resumed), cancelled, o, farm->db_path(), context);
  const std::string tuned_on = farm->device_description();
  client.reset();
  farm->Shutdown();
  if (!results.ok()) return results.status();
  if (o.save.empty()) return absl::OkStatus();
  return SaveTunedModel(o, request, *results, tuned_on, context);
}

}  // namespace

void AddTuneCommand(CLI::App& app, CommandContext& context) {
  auto* cmd = app.add_subcommand(
      "tune", "Tune a model on this machine (embedded server and worker) or on --server");
  auto o = std::make_shared<TuneCommandOptions>();
  cmd->add_option("MODEL", o->spec.model,
                  "Zoo model name, path to an .onnx file, or a tuned model file (.iosfarm) to "
                  "tune again")
      ->required();
  cmd->add_option("--batch", o->batches,
                  "Batch sizes, e.g. 1,8,32: one job each, tuned side by side (default: the "
                  "model's own; zoo: 1; a tuned model file's)")
      ->delimiter(',')
      ->check(CLI::Range(int64_t{1}, int64_t{4096}));
  AddSearchBoundFlags(*cmd, o->spec.search);
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
  cmd->add_option("--save", o->save,
                  "Write one tuned model file (.iosfarm) holding the model and a schedule per "
                  "batch, for iosfarm.Session / `iosfarm run`");
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
