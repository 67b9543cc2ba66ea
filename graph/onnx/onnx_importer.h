// ONNX import: an .onnx model (opset 11 to 17, default domain) → graph IR.
//
// The importer
//  - parses the ModelProto (libonnx's protobuf types) within size limits;
//  - takes the graph inputs that are not initializers as graph inputs (float,
//    static shapes; `batch` overrides their first dimension);
//  - folds constant subgraphs and shape arithmetic on static shapes (Shape,
//    Gather, Unsqueeze, Concat, Slice, Cast, Range, Identity over
//    initializers, ...; see constant_folding.h) after the batch override;
//  - converts the remaining nodes to IR nodes (see op_converters.h), with
//    initializers as node weights (fp32; fp16/bf16/double converted);
//  - runs InferShapes and Validate, checks the output shapes the file
//    declares (and value_info shapes when the batch is not overridden), and
//    returns Simplify's result (Identity/Dropout removed, BatchNormalization
//    folded into Conv, activations fused).
// Nodes that no graph output depends on are ignored.
//
// With a batch override, Reshape targets whose first entry is the file's
// batch (exporters bake the traced batch into constants) follow the new
// batch; see ResolveReshapeTarget.
//
// Errors (never crashes or aborts; sizes are checked before allocating) are
// InvalidArgument with a message that starts with "ONNX model '<name>': " and
// names the node, value, field or input at fault: unsupported ops or
// attribute values, dynamic dimensions without a batch override, training
// mode, malformed or truncated protobuf, limits exceeded, dangling inputs,
// cycles, bad tensor data. ImportOnnxFile returns NotFound when the file
// cannot be read. Thread-safe: calls share no state.
#ifndef IOSFARM_GRAPH_ONNX_ONNX_IMPORTER_H_
#define IOSFARM_GRAPH_ONNX_ONNX_IMPORTER_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "common/status.h"
#include "graph/graph.h"

namespace iosfarm::graph::onnx_import {

struct OnnxImportOptions {
  // Batch (first) dimension for every graph input; required when the file's
  // batch dimension is dynamic. Must be >= 1.
  std::optional<int64_t> batch;
  // Largest accepted model, in bytes.
  int64_t max_model_bytes = 512LL << 20;
  // Most nodes in the ONNX graph.
  int64_t max_nodes = 20000;
  // Most elements of any tensor (initializer, folded constant or
  // activation); folded constants together may not exceed it either.
  int64_t max_tensor_elements = 1LL << 28;
};

// Reads and imports `path`. The graph is named after the file's stem.
StatusOr<Graph> ImportOnnxFile(const std::string& path, const OnnxImportOptions& options = {});

// Imports a serialized ModelProto. `model_name` appears in error messages;
// the graph is named after its stem, as ImportOnnxFile names it, so that the
// bytes of a file import as the file does (same graph, same ModelDigest).
StatusOr<Graph> ImportOnnxBytes(std::string_view bytes, std::string_view model_name,
                                const OnnxImportOptions& options = {});

}  // namespace iosfarm::graph::onnx_import

#endif  // IOSFARM_GRAPH_ONNX_ONNX_IMPORTER_H_
