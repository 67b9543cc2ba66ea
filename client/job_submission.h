// Submitting one job and reporting it, shared by `iosfarm submit` (remote
// server) and `iosfarm tune` (embedded server).
//
// MODEL is resolved as everywhere in the CLI: a zoo model name first
// (sent as zoo_name), else an existing file (its bytes sent as onnx, its file
// name as model_name; a tuned model file sends the model it holds); the
// server validates and imports it. Thread-compatible.
#ifndef IOSFARM_CLIENT_JOB_SUBMISSION_H_
#define IOSFARM_CLIENT_JOB_SUBMISSION_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "client/command.h"
#include "client/farm_client.h"
#include "common/status.h"

namespace iosfarm::client {

// Search options as flags; nullopt: the server's default (or, for retune,
// each model's previous value).
struct SearchFlags {
  std::optional<int64_t> batch;
  std::optional<int> r;
  std::optional<int> s;
  std::optional<int> block_size;
  std::optional<int> max_parallel_batches;
  std::optional<int> batch_size;
};

// Adds --batch, --r, --s, --block-size, --batch-size and
// --max-parallel-batches.
void AddSearchFlags(CLI::App& command, SearchFlags& flags,
                    const std::string& batch_help =
                        "Batch size (default: the model's own; zoo: 1)");
// The same but --batch (for commands that take several batch sizes).
void AddSearchBoundFlags(CLI::App& command, SearchFlags& flags);
v1::SearchOptions ToSearchOptions(const SearchFlags& flags);

struct SubmitSpec {
  std::string model;  // zoo name or path to an .onnx file
  std::string device_key;
  SearchFlags search;
  int priority = 0;
};

// NotFound (naming MODEL) when it is neither a zoo model nor an existing file,
// InvalidArgument for a directory (graph/model_loader.h). When MODEL is a
// tuned model file and `held_batches` is given, it receives the file's
// batches (empty otherwise).
StatusOr<v1::SubmitJobRequest> MakeSubmitRequest(const SubmitSpec& spec,
                                                 std::vector<int64_t>* held_batches = nullptr);

struct ReportOptions {
  bool wait = false;            // watch until the job ends, then print its result
  std::string format = "text";  // text | json
  std::string schedule_output;  // with wait: write the schedule JSON here
};

// Submits `request` through `client` and prints the job id (text) or the job
// (JSON). With options.wait: watches the job (progress on context.err in text
// mode), then prints the result; a job that failed or was cancelled is an
// error naming it (after the JSON document, in JSON mode).
Status SubmitAndReport(FarmClient& client, const v1::SubmitJobRequest& request,
                       const ReportOptions& options, CommandContext& context);

// Text: "job N submitted: MODEL on DEVICE, batch B" on context.out.
void PrintSubmitted(const v1::Job& job, CommandContext& context);

// Waits for job `job_id` to end (progress on context.err in text mode) and
// prints its result like SubmitAndReport.
Status WaitAndReport(FarmClient& client, int64_t job_id, const ReportOptions& options,
                     CommandContext& context);

// Writes a job's schedule JSON to `path` (atomically, common/atomic_file.h);
// Unavailable naming the path on failure.
Status WriteScheduleFile(const std::string& path, const std::string& schedule_json);

// Connects using the resolved --server/--token/--tls-ca flags.
StatusOr<std::unique_ptr<FarmClient>> ConnectWithFlags(const RemoteFlags& flags);

}  // namespace iosfarm::client

#endif  // IOSFARM_CLIENT_JOB_SUBMISSION_H_
