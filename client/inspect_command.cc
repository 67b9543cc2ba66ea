// `iosfarm inspect MODEL [--batch N] [--format text|json] [--dot FILE] [--block-size B]`;
// for a tuned model file (.iosfarm) without --batch or --dot, what it holds
// (client/tuned_model_report.h); with them, its model's graph.
#include <fstream>
#include <optional>

#include "client/command.h"
#include "client/inspect_report.h"
#include "client/tuned_model_report.h"
#include "common/strings.h"
#include "graph/dot_export.h"
#include "graph/model_loader.h"
#include "graph/stats.h"
#include "scheduler/ios/blocks.h"
#include "tuned_model/held_model.h"
#include "tuned_model/tuned_model_file.h"

namespace iosfarm::client {
namespace {

struct InspectOptions {
  std::string model;
  std::optional<int64_t> batch;
  std::string format = "text";
  std::string dot_path;
  int block_size = 50;
};

// MODEL as inspect loads it: a tuned model file's model at --batch (default
// its smallest), else graph::LoadModel.
StatusOr<graph::LoadedModel> LoadInspected(const InspectOptions& options,
                                           const std::optional<v1::TunedModel>& tuned) {
  if (!tuned) return graph::LoadModel(options.model, options.batch);
  graph::LoadedModel model;
  ASSIGN_OR_RETURN(model.graph, tuned_model::LoadHeldModel(
                                    *tuned, options.batch.value_or(tuned->batches(0).batch())));
  model.source = tuned->has_onnx() ? graph::kOnnxSource : graph::kZooSource;
  return model;
}

Status RunInspect(const InspectOptions& options, CommandContext& context) {
  std::optional<v1::TunedModel> tuned;
  if (tuned_model::IsTunedModelFile(options.model)) {
    ASSIGN_OR_RETURN(tuned, tuned_model::ReadTunedModelFile(options.model));
    if (!options.batch && options.dot_path.empty()) {
      if (options.format == "json") {
        context.out << TunedModelJson(*tuned, options.model).dump(2) << "\n";
      } else {
        context.out << TunedModelText(*tuned, options.model);
      }
      return absl::OkStatus();
    }
  }
  ASSIGN_OR_RETURN(graph::LoadedModel model, LoadInspected(options, tuned));
  ASSIGN_OR_RETURN(graph::GraphStats stats, graph::ComputeStats(model.graph));
  scheduler::ios::BlockOptions block_options;
  block_options.max_block_ops = options.block_size;
  ASSIGN_OR_RETURN(scheduler::ios::BlockPartition blocks,
                   scheduler::ios::PartitionIntoBlocks(model.graph, block_options));
  if (!options.dot_path.empty()) {
    std::ofstream dot(options.dot_path);
    dot << graph::ExportDot(model.graph);
    if (!dot.good()) {
      return absl::UnavailableError(StrCat("cannot write DOT file '", options.dot_path, "'"));
    }
  }
  if (options.format == "json") {
    nlohmann::json json = InspectJson(model, stats);
    json["block_size"] = options.block_size;
    json["blocks"] = scheduler::ios::BlockPartitionJson(model.graph, blocks);
    context.out << json.dump(2) << "\n";
  } else {
    context.out << InspectText(model, stats)
                << scheduler::ios::BlockPartitionText(model.graph, blocks);
  }
  return absl::OkStatus();
}

}  // namespace

void AddInspectCommand(CLI::App& app, CommandContext& context) {
  auto* cmd = app.add_subcommand(
      "inspect", "Show a model's operators, parameters, FLOPs, width and shapes");
  auto options = std::make_shared<InspectOptions>();
  cmd->add_option("MODEL", options->model,
                  "Zoo model name, path to an .onnx file, or a tuned model file (.iosfarm: "
                  "what it holds; with --batch or --dot, its model)")
      ->required();
  cmd->add_option("--batch", options->batch, "Batch size (overrides the model's)")
      ->check(CLI::Range(int64_t{1}, int64_t{4096}));
  cmd->add_option("--format", options->format, "Output format")
      ->check(CLI::IsMember({"text", "json"}));
  cmd->add_option("--dot", options->dot_path, "Also write the graph as Graphviz DOT to FILE");
  cmd->add_option("--block-size", options->block_size,
                  "Largest block of the IOS block partition (ops)")
      ->check(CLI::Range(1, 1024));
  cmd->callback([&context, options] { context.result = RunInspect(*options, context); });
}

}  // namespace iosfarm::client
