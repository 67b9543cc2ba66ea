#include "graph/onnx/import_context.h"

#include <utility>

#include "graph/shape_inference.h"

namespace iosfarm::graph::onnx_import {

ImportContext::ImportContext(Graph& graph, int64_t max_tensor_elements,
                             std::optional<BatchRewrite> batch, std::set<std::string> used)
    : graph_(graph),
      max_tensor_elements_(max_tensor_elements),
      batch_(batch),
      used_(std::move(used)),
      // Folded constants may allocate as many elements in total as one
      // tensor may hold; real models fold only small shape arithmetic.
      budget_(max_tensor_elements, max_tensor_elements),
      weight_elements_left_(max_tensor_elements) {}

void ImportContext::AddInitializer(const std::string& name, onnx::TensorProto& proto) {
  entries_[name].initializer = &proto;
}

void ImportContext::NodeImported(const NodeView& node) {
  for (int i = 0; i < node.num_inputs(); ++i) {
    if (!node.has_input(i)) continue;
    auto count = consumers_.find(node.input(i));
    if (count == consumers_.end() || --count->second > 0) continue;
    auto it = entries_.find(node.input(i));
    if (it != entries_.end() && it->second.constant != nullptr) {
      it->second.constant.reset();
      it->second.dropped = true;
    }
  }
}

void ImportContext::AddGraphInput(const std::string& name, Shape shape) {
  entries_[name].value = graph_.AddInput(name, std::move(shape));
}

void ImportContext::SetConstant(const std::string& name, ConstPtr value) {
  Entry& entry = entries_[name];
  entry.constant = std::move(value);
  entry.initializer = nullptr;
  entry.value = -1;
}

bool ImportContext::IsConstant(const std::string& name) const {
  auto it = entries_.find(name);
  return it != entries_.end() &&
         (it->second.constant != nullptr || it->second.initializer != nullptr);
}

StatusOr<ConstPtr> ImportContext::Constant(const std::string& name) {
  auto it = entries_.find(name);
  if (it == entries_.end()) {
    return absl::InvalidArgumentError(
        StrCat("value '", name, "' is not available (its producer has no such output)"));
  }
  Entry& entry = it->second;
  if (entry.dropped) {
    return absl::InternalError(
        StrCat("constant '", name, "' was read after its last counted use (importer bug)"));
  }
  if (entry.constant == nullptr && entry.initializer != nullptr) {
    ASSIGN_OR_RETURN(ConstTensor tensor,
                     ConstTensorFromProto(*entry.initializer, max_tensor_elements_,
                                          StrCat("initializer '", name, "'")));
    entry.constant = std::make_shared<const ConstTensor>(std::move(tensor));
    // Decoded once and cached: free the proto's copy of the data now.
    onnx::TensorProto().Swap(entry.initializer);
    entry.initializer = nullptr;
  }
  if (entry.constant == nullptr) {
    return absl::InvalidArgumentError(StrCat("value '", name, "' is not a constant"));
  }
  return entry.constant;
}

StatusOr<ConstPtr> ImportContext::OptionalConstantInput(const NodeView& node, int i,
                                                        std::string_view role) {
  if (!node.has_input(i)) return ConstPtr();
  const std::string& name = node.input(i);
  if (!IsConstant(name)) {
    return node.Errorf("input ", i, " ('", role, "', value '", name,
                       "') must be a constant (initializer or foldable subgraph)");
  }
  auto constant = Constant(name);
  if (!constant.ok()) return node.Error(ToStd(constant.status().message()));
  return constant;
}

StatusOr<ConstPtr> ImportContext::ConstantInput(const NodeView& node, int i,
                                                std::string_view role) {
  if (!node.has_input(i)) return node.Errorf("missing input ", i, " ('", role, "')");
  return OptionalConstantInput(node, i, role);
}

Status ImportContext::ReserveWeightElements(int64_t count, std::string_view what) {
  if (count > weight_elements_left_) {
    return absl::InvalidArgumentError(StrCat(what, " of ", count,
                                             " elements exceeds what remains of the limit of ",
                                             max_tensor_elements_, " weight elements per model"));
  }
  weight_elements_left_ -= count;
  return absl::OkStatus();
}

StatusOr<Tensor> ImportContext::WeightTensor(const NodeView& node, const ConstTensor& constant,
                                             std::string_view role) {
  const std::string what = StrCat(node.Label(), ": weight '", role, "'");
  RETURN_IF_ERROR(ReserveWeightElements(constant.num_elements(), what));
  return ToIrTensor(constant, what);
}

std::string ImportContext::UniqueNodeName(const std::string& base) {
  std::string name = base;
  for (int k = 1; node_names_.count(name) > 0; ++k) name = StrCat(base, "_", k);
  node_names_.insert(name);
  return name;
}

StatusOr<ValueId> ImportContext::MaterializeConstant(const std::string& name, Entry& entry) {
  const std::string what = StrCat("constant '", name, "'");
  RETURN_IF_ERROR(ReserveWeightElements(entry.constant->num_elements(), what));
  ASSIGN_OR_RETURN(Tensor tensor, ToIrTensor(*entry.constant, what));
  entry.value = AddConstantNode(UniqueNodeName(StrCat(name, "_const")), name, std::move(tensor));
  return entry.value;
}

ValueId ImportContext::AddConstantNode(std::string node_name, const std::string& value_name,
                                       Tensor tensor) {
  Node node;
  node.name = std::move(node_name);
  node.type = OpType::kConstant;
  node.attrs = NoAttrs{};
  const Shape shape = tensor.shape;
  node.weights.emplace("value", std::move(tensor));
  node.outputs.push_back(graph_.AddValue(value_name));
  const ValueId value = node.outputs[0];
  graph_.AddNode(std::move(node));
  graph_.mutable_value(value).shape = shape;
  return value;
}

StatusOr<ValueId> ImportContext::Value(const std::string& name) {
  auto it = entries_.find(name);
  if (it == entries_.end()) {
    return absl::InvalidArgumentError(
        StrCat("value '", name, "' is not available (its producer has no such output)"));
  }
  if (it->second.value >= 0) return it->second.value;
  RETURN_IF_ERROR(Constant(name).status());
  return MaterializeConstant(name, it->second);
}

StatusOr<ValueId> ImportContext::ActivationInput(const NodeView& node, int i) {
  if (!node.has_input(i)) return node.Errorf("missing input ", i);
  auto value = Value(node.input(i));
  if (!value.ok()) return node.Error(ToStd(value.status().message()));
  return value;
}

StatusOr<std::vector<ValueId>> ImportContext::AddInferredNode(
    const NodeView& node, Node ir, const std::vector<std::string>& output_names) {
  std::vector<Shape> input_shapes;
  for (ValueId v : ir.inputs) input_shapes.push_back(graph_.value(v).shape);
  ASSIGN_OR_RETURN(std::vector<Shape> shapes, InferNodeShapes(ir, input_shapes));
  if (shapes.size() != output_names.size()) {
    return node.Errorf("produces ", shapes.size(), " outputs, expected ", output_names.size());
  }
  for (size_t i = 0; i < shapes.size(); ++i) {
    RETURN_IF_ERROR(CheckedElementCount(shapes[i], max_tensor_elements_,
                                        StrCat(node.Label(), " output '", output_names[i], "'"))
                        .status());
    const ValueId value = graph_.AddValue(output_names[i]);
    graph_.mutable_value(value).shape = shapes[i];
    ir.outputs.push_back(value);
  }
  std::vector<ValueId> outputs = ir.outputs;
  graph_.AddNode(std::move(ir));
  return outputs;
}

StatusOr<std::vector<ValueId>> ImportContext::AddNode(const NodeView& node, OpType type,
                                                      Attributes attrs, std::vector<ValueId> inputs,
                                                      std::map<std::string, Tensor> weights,
                                                      int num_outputs) {
  Node ir;
  ir.name = node.name();
  node_names_.insert(ir.name);
  ir.type = type;
  ir.attrs = std::move(attrs);
  ir.inputs = std::move(inputs);
  ir.weights = std::move(weights);
  std::vector<std::string> names;
  for (int i = 0; i < num_outputs; ++i) {
    names.push_back(i < node.num_outputs() && !node.output(i).empty()
                        ? node.output(i)
                        : StrCat(node.name(), ":", i));
  }
  ASSIGN_OR_RETURN(std::vector<ValueId> outputs, AddInferredNode(node, std::move(ir), names));
  // Unnamed ONNX outputs get a display name only: nothing can read them.
  for (int i = 0; i < num_outputs; ++i) {
    if (i < node.num_outputs() && !node.output(i).empty()) entries_[names[i]].value = outputs[i];
  }
  return outputs;
}

StatusOr<ValueId> ImportContext::AddPartNode(const NodeView& node, std::string_view part,
                                             OpType type, Attributes attrs,
                                             std::vector<ValueId> inputs) {
  Node ir;
  ir.name = UniqueNodeName(StrCat(node.name(), "/", part));
  ir.type = type;
  ir.attrs = std::move(attrs);
  ir.inputs = std::move(inputs);
  const std::string output = ir.name;
  ASSIGN_OR_RETURN(std::vector<ValueId> outputs, AddInferredNode(node, std::move(ir), {output}));
  return outputs[0];
}

StatusOr<ValueId> ImportContext::AddPartConstant(const NodeView& node, std::string_view part,
                                                 Tensor tensor) {
  RETURN_IF_ERROR(ReserveWeightElements(tensor.num_elements(), StrCat(node.Label(), ": ", part)));
  const std::string name = UniqueNodeName(StrCat(node.name(), "/", part));
  return AddConstantNode(name, name, std::move(tensor));
}

}  // namespace iosfarm::graph::onnx_import
