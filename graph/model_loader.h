// The one model loader of the CLI, the server and the benchmarks: a MODEL
// argument (a zoo model name or the path of an .onnx file) or a stored or
// submitted model (source, name, ONNX bytes) becomes a graph.
//
// Resolution order for a MODEL argument: a zoo model name first
// (graph/models/zoo.h), else an existing path. Errors name the model or the
// file:
//  - neither a zoo name nor an existing path: NotFound "model 'X' is neither
//    a zoo model (see `iosfarm models`) nor an existing file";
//  - a directory: InvalidArgument "ONNX model 'X': is a directory";
//  - a bad batch or a file the importer refuses: the zoo's and the ONNX
//    importer's own errors, unchanged (graph/onnx/onnx_importer.h: they start
//    with "ONNX model '<name>': ").
// All functions are pure (the file system aside) and thread-safe.
#ifndef IOSFARM_GRAPH_MODEL_LOADER_H_
#define IOSFARM_GRAPH_MODEL_LOADER_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "common/status.h"
#include "graph/graph.h"
#include "graph/onnx/onnx_importer.h"

namespace iosfarm::graph {

// Model sources, as stored (server ModelRow::source) and reported.
inline constexpr std::string_view kZooSource = "zoo";
inline constexpr std::string_view kOnnxSource = "onnx";

// Where a MODEL argument points, before anything is loaded.
struct ModelRef {
  std::string source;  // kZooSource or kOnnxSource
  std::string name;    // the zoo name, or the file name ("dir/m.onnx" -> "m.onnx")
  std::string path;    // the file; empty for zoo models
};

// Resolves `name_or_path` (see the top of the file) without reading the file.
StatusOr<ModelRef> ResolveModel(const std::string& name_or_path);

struct LoadedModel {
  Graph graph;
  std::string source;  // kZooSource or kOnnxSource
  std::string path;    // the .onnx path; empty for zoo models
};

// Resolves and loads `name_or_path`. `batch` overrides the batch dimension
// (zoo models default to 1, ONNX files keep their own). ONNX graphs are
// named after the file's stem.
StatusOr<LoadedModel> LoadModel(const std::string& name_or_path, std::optional<int64_t> batch);

// A model held as data (stored by the server, or just submitted): source
// kZooSource builds the zoo model `name` (`bytes` is ignored); kOnnxSource
// imports `bytes` as the graph `name` (the name appears in import errors).
// `options.batch` overrides the batch (zoo default 1); the other options are
// the importer's limits. InvalidArgument naming the model for another source.
StatusOr<Graph> LoadModelData(std::string_view source, std::string_view name,
                              std::string_view bytes,
                              const onnx_import::OnnxImportOptions& options = {});

}  // namespace iosfarm::graph

#endif  // IOSFARM_GRAPH_MODEL_LOADER_H_
