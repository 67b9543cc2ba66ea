#include "graph/onnx/onnx_importer.h"

#include <fcntl.h>
#include <google/protobuf/io/zero_copy_stream_impl.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstring>
#include <exception>
#include <filesystem>
#include <functional>
#include <set>
#include <unordered_map>
#include <utility>
#include <vector>

#include "common/strings.h"
#include "graph/onnx/constant_folding.h"
#include "graph/onnx/graph_order.h"
#include "graph/onnx/import_context.h"
#include "graph/onnx/onnx_node.h"
#include "graph/onnx/op_converters.h"
#include "graph/shape_inference.h"
#include "graph/simplify.h"
#include "graph/validate.h"
#include "onnx/onnx_pb.h"

namespace iosfarm::graph::onnx_import {
namespace {

constexpr int64_t kMinOpset = 11;
constexpr int64_t kMaxOpset = 17;

Status Invalid(std::string_view message) {
  return absl::InvalidArgumentError(std::string(message));
}

Status CheckOptions(const OnnxImportOptions& options) {
  if (options.batch.has_value() && *options.batch < 1) {
    return Invalid(StrCat("batch override must be >= 1, got ", *options.batch));
  }
  if (options.max_model_bytes < 1 || options.max_nodes < 1 || options.max_tensor_elements < 1) {
    return Invalid("import limits must be positive");
  }
  return absl::OkStatus();
}

StatusOr<int64_t> DefaultOpset(const onnx::ModelProto& model) {
  int64_t opset = -1;
  for (const onnx::OperatorSetIdProto& entry : model.opset_import()) {
    if (entry.domain().empty() || entry.domain() == "ai.onnx") opset = entry.version();
  }
  if (opset < 0) return Invalid("declares no opset for the default ONNX domain");
  if (opset < kMinOpset || opset > kMaxOpset) {
    return Invalid(StrCat("opset ", opset, " is not supported (supported: ", kMinOpset, " to ",
                          kMaxOpset, ")"));
  }
  return opset;
}

struct GraphInput {
  std::string name;
  Shape shape;
};

// The graph inputs that are not initializers, with static shapes.
// `original_batch` receives the file's batch when it is static.
StatusOr<std::vector<GraphInput>> ReadGraphInputs(const onnx::GraphProto& graph,
                                                  const std::set<std::string>& initializers,
                                                  const OnnxImportOptions& options,
                                                  std::optional<int64_t>& original_batch) {
  std::vector<GraphInput> inputs;
  std::set<std::string> seen;
  for (const onnx::ValueInfoProto& info : graph.input()) {
    const std::string& name = info.name();
    if (name.empty()) return Invalid("a graph input has no name");
    if (initializers.count(name) > 0) continue;  // a constant, not an input
    if (!seen.insert(name).second) {
      return Invalid(StrCat("graph input '", name, "' is declared twice"));
    }
    if (!info.has_type() || !info.type().has_tensor_type()) {
      return Invalid(StrCat("graph input '", name, "' is not a tensor"));
    }
    const onnx::TypeProto::Tensor& type = info.type().tensor_type();
    if (type.elem_type() != onnx::TensorProto::FLOAT) {
      return Invalid(StrCat("graph input '", name, "' has element type ",
                            OnnxDataTypeName(type.elem_type()),
                            "; only FLOAT inputs are supported"));
    }
    if (!type.has_shape()) {
      return Invalid(StrCat("graph input '", name, "' has no shape (dynamic rank)"));
    }
    if (type.shape().dim_size() == 0) {
      return Invalid(StrCat("graph input '", name, "' is a scalar; inputs must have rank >= 1"));
    }
    GraphInput input{name, {}};
    for (int i = 0; i < type.shape().dim_size(); ++i) {
      const onnx::TensorShapeProto::Dimension& dim = type.shape().dim(i);
      const bool is_static = dim.has_dim_value();
      if (i == 0 && options.batch.has_value()) {
        if (is_static && dim.dim_value() > 0 && !original_batch.has_value()) {
          original_batch = dim.dim_value();
        }
        input.shape.push_back(*options.batch);
        continue;
      }
      if (!is_static) {
        const std::string label =
            dim.has_dim_param() ? StrCat(" ('", dim.dim_param(), "')") : std::string();
        return Invalid(
            StrCat("graph input '", name, "' dimension ", i, label, " is dynamic; ",
                   i == 0 ? "set a batch override (--batch) to fix it"
                          : "only the batch dimension (0) can be fixed with a batch override"));
      }
      if (dim.dim_value() < 1) {
        return Invalid(StrCat("graph input '", name, "' dimension ", i, " is ", dim.dim_value(),
                              "; dimensions must be positive"));
      }
      input.shape.push_back(dim.dim_value());
    }
    RETURN_IF_ERROR(CheckedElementCount(input.shape, options.max_tensor_elements,
                                        StrCat("graph input '", name, "'"))
                        .status());
    inputs.push_back(std::move(input));
  }
  if (inputs.empty()) return Invalid("the graph has no inputs (other than initializers)");
  return inputs;
}

// Compares a shape the file declares with the imported one.
Status CheckDeclaredShape(const onnx::ValueInfoProto& info, const Shape& actual, bool skip_batch,
                          std::string_view kind) {
  if (!info.has_type() || !info.type().has_tensor_type()) return absl::OkStatus();
  const onnx::TypeProto::Tensor& type = info.type().tensor_type();
  if (!type.has_shape()) return absl::OkStatus();
  const onnx::TensorShapeProto& shape = type.shape();
  std::string declared = "[";
  for (int i = 0; i < shape.dim_size(); ++i) {
    if (i > 0) declared += ",";
    declared += shape.dim(i).has_dim_value() ? StrCat(shape.dim(i).dim_value()) : std::string("?");
  }
  declared += "]";
  bool match = shape.dim_size() == static_cast<int>(actual.size());
  for (int i = 0; match && i < shape.dim_size(); ++i) {
    if (i == 0 && skip_batch) continue;
    if (shape.dim(i).has_dim_value() && shape.dim(i).dim_value() != actual[i]) match = false;
  }
  if (!match) {
    return Invalid(StrCat(kind, " '", info.name(), "' has shape ", ShapeToString(actual),
                          " but the model declares ", declared, " (shape mismatch)"));
  }
  return absl::OkStatus();
}

Status CheckDeclaredShapes(const onnx::GraphProto& proto, const Graph& graph,
                           bool batch_overridden) {
  for (int i = 0; i < proto.output_size(); ++i) {
    const onnx::ValueInfoProto& info = proto.output(i);
    if (info.has_type() && info.type().has_tensor_type()) {
      const int32_t elem = info.type().tensor_type().elem_type();
      if (elem != onnx::TensorProto::UNDEFINED && elem != onnx::TensorProto::FLOAT) {
        return Invalid(StrCat("graph output '", info.name(), "' has element type ",
                              OnnxDataTypeName(elem), "; only FLOAT outputs are supported"));
      }
    }
    RETURN_IF_ERROR(CheckDeclaredShape(info, graph.value(graph.outputs()[i]).shape,
                                       batch_overridden, "graph output"));
  }
  if (batch_overridden) return absl::OkStatus();
  std::unordered_map<std::string, ValueId> by_name;
  for (ValueId v = 0; v < graph.num_values(); ++v) {
    const NodeId producer = graph.value(v).producer;
    // Constants (scalars become [1]) are not activations the file describes.
    if (producer != kNoNode && graph.node(producer).type == OpType::kConstant) continue;
    by_name.emplace(graph.value(v).name, v);
  }
  for (const onnx::ValueInfoProto& info : proto.value_info()) {
    auto it = by_name.find(info.name());
    if (it == by_name.end()) continue;  // a constant or folded away
    RETURN_IF_ERROR(CheckDeclaredShape(info, graph.value(it->second).shape, false, "value"));
  }
  return absl::OkStatus();
}

// Folds or converts one live node.
Status ImportNode(const NodeView& node, ImportContext& ctx) {
  const std::string& domain = node.proto().domain();
  if (!domain.empty() && domain != "ai.onnx") {
    return node.Errorf("unsupported op type '", node.op_type(), "' in domain '", domain, "'");
  }
  RETURN_IF_ERROR(node.CheckAttributesUnique());
  bool all_constant = true;
  for (int i = 0; i < node.num_inputs(); ++i) {
    if (node.has_input(i) && !ctx.IsConstant(node.input(i))) all_constant = false;
  }
  const std::string& op = node.op_type();
  if (IsFoldableOp(op) && all_constant) {
    std::vector<ConstPtr> inputs(static_cast<size_t>(node.num_inputs()));
    for (int i = 0; i < node.num_inputs(); ++i) {
      if (!node.has_input(i)) continue;
      auto constant = ctx.Constant(node.input(i));
      if (!constant.ok()) return node.Error(ToStd(constant.status().message()));
      inputs[i] = *std::move(constant);
    }
    ASSIGN_OR_RETURN(std::vector<ConstPtr> outputs, FoldNode(node, inputs, ctx.budget()));
    for (int i = 0; i < node.num_outputs() && i < static_cast<int>(outputs.size()); ++i) {
      if (!node.output(i).empty() && outputs[i] != nullptr) {
        ctx.SetConstant(node.output(i), outputs[i]);
      }
    }
    return absl::OkStatus();
  }
  if ((op == "Shape" || op == "Size") && node.num_inputs() == 1 && node.num_outputs() == 1) {
    ASSIGN_OR_RETURN(ValueId x, ctx.ActivationInput(node, 0));
    ASSIGN_OR_RETURN(ConstPtr shape, FoldShapeOf(node, ctx.ShapeOf(x), ctx.budget()));
    ctx.SetConstant(node.output(0), std::move(shape));
    return absl::OkStatus();
  }
  if (IsFoldableOp(op) && !HasConverter(op)) {
    return node.Errorf("op type '", op,
                       "' is only supported on constant inputs (it is folded at import)");
  }
  return ConvertNode(node, ctx);
}

// `model`'s initializer data is freed as it is decoded (ImportContext).
StatusOr<Graph> ImportModel(onnx::ModelProto& model, std::string_view graph_name,
                            const OnnxImportOptions& options) {
  if (!model.has_graph()) return Invalid("is not a valid ONNX model: it has no graph");
  ASSIGN_OR_RETURN(int64_t opset, DefaultOpset(model));
  onnx::GraphProto& proto = *model.mutable_graph();
  if (proto.node_size() > options.max_nodes) {
    return Invalid(
        StrCat("has ", proto.node_size(), " nodes, over the limit of ", options.max_nodes));
  }
  std::set<std::string> initializers;
  for (const onnx::TensorProto& init : proto.initializer()) {
    if (init.name().empty()) return Invalid("an initializer has no name");
    if (!initializers.insert(init.name()).second) {
      return Invalid(StrCat("initializer '", init.name(), "' is defined twice"));
    }
  }
  if (proto.sparse_initializer_size() > 0) return Invalid("sparse initializers are not supported");
  std::optional<int64_t> original_batch;
  ASSIGN_OR_RETURN(std::vector<GraphInput> inputs,
                   ReadGraphInputs(proto, initializers, options, original_batch));
  std::set<std::string> defined = initializers;
  for (const GraphInput& input : inputs) defined.insert(input.name);
  ASSIGN_OR_RETURN(GraphOrder order, OrderGraph(proto, defined));
  if (proto.output_size() == 0) return Invalid("the graph has no outputs");

  std::optional<BatchRewrite> batch;
  if (options.batch.has_value() && original_batch.has_value()) {
    batch = BatchRewrite{*original_batch, *options.batch};
  }
  Graph graph{std::string(graph_name)};
  ImportContext ctx(graph, options.max_tensor_elements, batch, order.used);
  for (const std::string& name : order.names) ctx.ReserveNodeName(name);
  for (onnx::TensorProto& init : *proto.mutable_initializer()) {
    ctx.AddInitializer(init.name(), init);
  }
  for (GraphInput& input : inputs) ctx.AddGraphInput(input.name, std::move(input.shape));
  std::unordered_map<std::string, int> consumers;
  for (int index : order.order) {
    for (const std::string& input : proto.node(index).input()) ++consumers[input];
  }
  for (const onnx::ValueInfoProto& output : proto.output()) ++consumers[output.name()];
  ctx.SetConsumers(std::move(consumers));

  for (int index : order.order) {
    NodeView node(proto.node(index), order.names[index], opset);
    RETURN_IF_ERROR(ImportNode(node, ctx));
    ctx.NodeImported(node);
  }
  for (const onnx::ValueInfoProto& output : proto.output()) {
    auto value = ctx.Value(output.name());
    if (!value.ok()) {
      return Invalid(
          StrCat("graph output '", output.name(), "': ", ToStd(value.status().message())));
    }
    graph.AddOutput(*value);
  }
  RETURN_IF_ERROR(InferShapes(graph));
  RETURN_IF_ERROR(Validate(graph));
  RETURN_IF_ERROR(CheckDeclaredShapes(proto, graph, options.batch.has_value()));
  return Simplify(std::move(graph));  // moves the weights, no second copy
}

// Checks the size, parses with `parse` (from memory or a file: the caller's
// bytes are not copied again), then ImportModel.
StatusOr<Graph> ParseAndImport(uint64_t size, const std::function<bool(onnx::ModelProto&)>& parse,
                               std::string_view graph_name, const OnnxImportOptions& options) {
  RETURN_IF_ERROR(CheckOptions(options));
  if (size == 0) return Invalid("is empty (0 bytes); not an ONNX model");
  if (size > static_cast<uint64_t>(options.max_model_bytes) || size > INT_MAX) {
    return Invalid(
        StrCat("is ", size, " bytes, over the limit of ", options.max_model_bytes, " bytes"));
  }
  onnx::ModelProto model;
  if (!parse(model)) {
    return Invalid("is not a valid ONNX model (protobuf parse failed: truncated or not ONNX)");
  }
  if (!model.has_ir_version()) {
    return Invalid("is not a valid ONNX model (no ir_version)");
  }
  return ImportModel(model, graph_name, options);
}

Status Annotate(const Status& status, std::string_view model_name) {
  return Status(status.code(), StrCat("ONNX model '", model_name, "': ", ToStd(status.message())));
}

// `import()` with every error, thrown or returned, naming the model.
StatusOr<Graph> ImportGuarded(std::string_view model_name,
                              const std::function<StatusOr<Graph>()>& import) {
  try {
    StatusOr<Graph> graph = import();
    if (!graph.ok()) return Annotate(graph.status(), model_name);
    return graph;
  } catch (const std::bad_alloc&) {
    return Annotate(absl::ResourceExhaustedError("out of memory while importing"), model_name);
  } catch (const std::exception& e) {
    return Annotate(absl::InternalError(StrCat("import failed: ", e.what())), model_name);
  } catch (...) {
    return Annotate(absl::InternalError("import failed with an unknown exception"), model_name);
  }
}

}  // namespace

StatusOr<Graph> ImportOnnxBytes(std::string_view bytes, std::string_view model_name,
                                const OnnxImportOptions& options) {
  return ImportGuarded(model_name, [&] {
    return ParseAndImport(
        bytes.size(),
        [&](onnx::ModelProto& model) {
          return model.ParseFromArray(bytes.data(), static_cast<int>(bytes.size()));
        },
        std::filesystem::path(std::string(model_name)).stem().string(), options);
  });
}

StatusOr<Graph> ImportOnnxFile(const std::string& path, const OnnxImportOptions& options) {
  std::error_code error;
  const std::filesystem::path fs_path(path);
  if (std::filesystem::is_directory(fs_path, error)) {
    return absl::InvalidArgumentError(StrCat("ONNX model '", path, "': is a directory"));
  }
  const std::uintmax_t size = std::filesystem::file_size(fs_path, error);
  if (error) {
    return absl::NotFoundError(
        StrCat("ONNX model '", path, "': cannot read the file: ", error.message()));
  }
  if (options.max_model_bytes > 0 && size > static_cast<std::uintmax_t>(options.max_model_bytes)) {
    return absl::InvalidArgumentError(StrCat("ONNX model '", path, "': is ", size,
                                             " bytes, over the limit of ", options.max_model_bytes,
                                             " bytes"));
  }
  // Parsed straight from the file (1 MiB reads): the file's bytes are never
  // held in memory beside the parsed model.
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    return absl::NotFoundError(
        StrCat("ONNX model '", path, "': cannot open the file: ", std::strerror(errno)));
  }
  StatusOr<Graph> graph = ImportGuarded(path, [&] {
    return ParseAndImport(
        size,
        [&](onnx::ModelProto& model) {
          google::protobuf::io::FileInputStream input(fd, 1 << 20);
          return model.ParseFromZeroCopyStream(&input) && input.GetErrno() == 0;
        },
        fs_path.stem().string(), options);
  });
  close(fd);
  return graph;
}

}  // namespace iosfarm::graph::onnx_import
