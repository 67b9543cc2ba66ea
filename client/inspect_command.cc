// `iosfarm inspect MODEL [--batch N] [--format text|json] [--dot FILE]`.
#include <fstream>
#include <optional>

#include "client/command.h"
#include "client/inspect_report.h"
#include "client/model_source.h"
#include "common/strings.h"
#include "graph/dot_export.h"
#include "graph/stats.h"

namespace iosfarm::client {
namespace {

struct InspectOptions {
  std::string model;
  std::optional<int64_t> batch;
  std::string format = "text";
  std::string dot_path;
};

Status RunInspect(const InspectOptions& options, CommandContext& context) {
  ASSIGN_OR_RETURN(LoadedModel model, LoadModel(options.model, options.batch));
  ASSIGN_OR_RETURN(graph::GraphStats stats, graph::ComputeStats(model.graph));
  if (!options.dot_path.empty()) {
    std::ofstream dot(options.dot_path);
    dot << graph::ExportDot(model.graph);
    if (!dot.good()) {
      return absl::UnavailableError(StrCat("cannot write DOT file '", options.dot_path, "'"));
    }
  }
  if (options.format == "json") {
    context.out << InspectJson(model, stats).dump(2) << "\n";
  } else {
    context.out << InspectText(model, stats);
  }
  return absl::OkStatus();
}

}  // namespace

void AddInspectCommand(CLI::App& app, CommandContext& context) {
  auto* cmd = app.add_subcommand(
      "inspect", "Show a model's operators, parameters, FLOPs, width and shapes");
  auto options = std::make_shared<InspectOptions>();
  cmd->add_option("MODEL", options->model, "Zoo model name or path to an .onnx file")
      ->required();
  cmd->add_option("--batch", options->batch, "Batch size (overrides the model's)")
      ->check(CLI::Range(int64_t{1}, int64_t{4096}));
  cmd->add_option("--format", options->format, "Output format")
      ->check(CLI::IsMember({"text", "json"}));
  cmd->add_option("--dot", options->dot_path, "Also write the graph as Graphviz DOT to FILE");
  cmd->callback([&context, options] { context.result = RunInspect(*options, context); });
}

}  // namespace iosfarm::client
