#include "client/model_source.h"

#include <filesystem>

#include "common/strings.h"
#include "graph/models/zoo.h"
#include "graph/onnx/onnx_importer.h"

namespace iosfarm::client {

StatusOr<LoadedModel> LoadModel(const std::string& model, std::optional<int64_t> batch) {
  for (const auto& zoo : graph::models::ZooModels()) {
    if (zoo.name == model) {
      ASSIGN_OR_RETURN(graph::Graph g, graph::models::BuildZooModel(model, batch.value_or(1)));
      return LoadedModel{std::move(g), "zoo", ""};
    }
  }
  std::error_code error;
  if (!std::filesystem::exists(model, error)) {
    return absl::NotFoundError(StrCat("model '", model,
                                      "' is neither a zoo model (see `iosfarm models`) "
                                      "nor an existing file"));
  }
  graph::onnx_import::OnnxImportOptions options;
  options.batch = batch;
  ASSIGN_OR_RETURN(graph::Graph g, graph::onnx_import::ImportOnnxFile(model, options));
  return LoadedModel{std::move(g), "onnx", model};
}

}  // namespace iosfarm::client
