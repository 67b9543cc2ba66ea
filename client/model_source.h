// Resolves the MODEL argument of CLI commands: a zoo model name or a path to
// an .onnx file.
#ifndef IOSFARM_CLIENT_MODEL_SOURCE_H_
#define IOSFARM_CLIENT_MODEL_SOURCE_H_

#include <cstdint>
#include <optional>
#include <string>

#include "common/status.h"
#include "graph/graph.h"

namespace iosfarm::client {

struct LoadedModel {
  graph::Graph graph;
  std::string source;  // "zoo" or "onnx"
  std::string path;    // the .onnx path; empty for zoo models
};

// `batch` overrides the batch dimension (zoo models default to 1, ONNX files
// keep their own). A name that is neither a zoo model nor an existing file is
// NotFound and says both; import errors are passed through unchanged.
StatusOr<LoadedModel> LoadModel(const std::string& model, std::optional<int64_t> batch);

}  // namespace iosfarm::client

#endif  // IOSFARM_CLIENT_MODEL_SOURCE_H_
