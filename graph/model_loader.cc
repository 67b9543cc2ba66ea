#include "graph/model_loader.h"

#include <filesystem>
#include <utility>

#include "common/strings.h"
#include "graph/models/zoo.h"

namespace iosfarm::graph {

namespace {

bool IsZooModel(std::string_view name) {
  for (const models::ZooModel& zoo : models::ZooModels()) {
    if (zoo.name == name) return true;
  }
  return false;
}

}  // namespace

StatusOr<ModelRef> ResolveModel(const std::string& name_or_path) {
  if (IsZooModel(name_or_path)) return ModelRef{std::string(kZooSource), name_or_path, ""};
  std::error_code error;
  if (!std::filesystem::exists(name_or_path, error)) {
    return absl::NotFoundError(StrCat("model '", name_or_path,
                                      "' is neither a zoo model (see `iosfarm models`) "
                                      "nor an existing file"));
  }
  if (std::filesystem::is_directory(name_or_path, error)) {
    return absl::InvalidArgumentError(StrCat("ONNX model '", name_or_path, "': is a directory"));
  }
  return ModelRef{std::string(kOnnxSource),
                  std::filesystem::path(name_or_path).filename().string(), name_or_path};
}

StatusOr<LoadedModel> LoadModel(const std::string& name_or_path, std::optional<int64_t> batch) {
  ASSIGN_OR_RETURN(ModelRef ref, ResolveModel(name_or_path));
  if (ref.source == kZooSource) {
    ASSIGN_OR_RETURN(Graph graph, models::BuildZooModel(ref.name, batch.value_or(1)));
    return LoadedModel{std::move(graph), std::move(ref.source), ""};
  }
  onnx_import::OnnxImportOptions options;
  options.batch = batch;
  ASSIGN_OR_RETURN(Graph graph, onnx_import::ImportOnnxFile(ref.path, options));
  return LoadedModel{std::move(graph), std::move(ref.source), std::move(ref.path)};
}

StatusOr<Graph> LoadModelData(std::string_view source, std::string_view name,
                              std::string_view bytes,
                              const onnx_import::OnnxImportOptions& options) {
  if (source == kZooSource) return models::BuildZooModel(name, options.batch.value_or(1));
  if (source == kOnnxSource) return onnx_import::ImportOnnxBytes(bytes, name, options);
  return absl::InvalidArgumentError(
      StrCat("model '", name, "' has unknown source '", source, "' (want zoo or onnx)"));
}

}  // namespace iosfarm::graph
