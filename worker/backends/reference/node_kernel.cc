#include "worker/backends/reference/node_kernel.h"

#include <variant>

#include "common/strings.h"
#include "graph/op_type.h"

namespace iosfarm::worker::reference {
namespace {

Status NodeError(const graph::Node& node, std::string_view what) {
  return absl::InvalidArgumentError(
      StrCat("node '", node.name, "' (", graph::OpTypeName(node.type), "): ", what));
}

StatusOr<const graph::Tensor*> GetWeight(const graph::Node& node,
                                         const std::map<std::string, graph::Tensor>& weights,
                                         const std::string& role) {
  auto it = weights.find(role);
  if (it == weights.end()) return NodeError(node, StrCat("missing weight '", role, "'"));
  if (static_cast<int64_t>(it->second.data.size()) != it->second.num_elements()) {
    return NodeError(node, StrCat("weight '", role, "' has ", it->second.data.size(),
                                  " values for shape ", graph::ShapeToString(it->second.shape)));
  }
  return &it->second;
}

ConstView View(const graph::Tensor& tensor) { return {tensor.data.data(), tensor.shape}; }

// Number of inputs each op type takes: {min, max}.
std::pair<size_t, size_t> InputArity(graph::OpType type) {
  switch (type) {
    case graph::OpType::kConstant:
      return {0, 0};
    case graph::OpType::kAdd:
    case graph::OpType::kSub:
    case graph::OpType::kMul:
    case graph::OpType::kDiv:
      return {2, 2};
    case graph::OpType::kMatMul:
      return {1, 2};
    case graph::OpType::kConcat:
      return {1, SIZE_MAX};
    default:
      return {1, 1};
  }
}

}  // namespace

Status RunNode(const graph::Node& node, const std::map<std::string, graph::Tensor>& weights,
               const std::vector<ConstView>& inputs, const std::vector<MutableView>& outputs) {
  using graph::OpType;
  const auto [min_inputs, max_inputs] = InputArity(node.type);
  if (inputs.size() < min_inputs || inputs.size() > max_inputs) {
    return NodeError(node, StrCat("got ", inputs.size(), " inputs"));
  }
  const size_t expected_outputs =
      node.type == OpType::kSplit ? std::get<graph::SplitAttrs>(node.attrs).sizes.size() : 1;
  if (outputs.size() != expected_outputs) {
    return NodeError(node, StrCat("got ", outputs.size(), " outputs, expected ",
                                  expected_outputs));
  }
  const MutableView& y = outputs[0];
  switch (node.type) {
    case OpType::kConstant: {
      ASSIGN_OR_RETURN(const graph::Tensor* value, GetWeight(node, weights, "value"));
      Copy(View(*value), y);
      return absl::OkStatus();
    }
    case OpType::kConv: {
      const auto& attrs = std::get<graph::ConvAttrs>(node.attrs);
      ASSIGN_OR_RETURN(const graph::Tensor* w, GetWeight(node, weights, "W"));
      const float* bias = nullptr;
      if (attrs.has_bias) {
        ASSIGN_OR_RETURN(const graph::Tensor* b, GetWeight(node, weights, "B"));
        bias = b->data.data();
      }
      Conv2D(attrs, inputs[0], w->data.data(), bias, y);
      return absl::OkStatus();
    }
    case OpType::kConvTranspose: {
      const auto& attrs = std::get<graph::ConvTransposeAttrs>(node.attrs);
      ASSIGN_OR_RETURN(const graph::Tensor* w, GetWeight(node, weights, "W"));
      const float* bias = nullptr;
      if (attrs.has_bias) {
        ASSIGN_OR_RETURN(const graph::Tensor* b, GetWeight(node, weights, "B"));
        bias = b->data.data();
      }
      ConvTranspose2D(attrs, inputs[0], w->data.data(), bias, y);
      return absl::OkStatus();
    }
    case OpType::kMaxPool:
    case OpType::kAveragePool:
      Pool2D(node.type, std::get<graph::PoolAttrs>(node.attrs), inputs[0], y);
      return absl::OkStatus();
    case OpType::kGlobalAveragePool:
    case OpType::kGlobalMaxPool:
      GlobalPool(node.type, inputs[0], y);
      return absl::OkStatus();
    IOSFARM_ACTIVATION_OP_CASES:
      Unary(node.type, node.attrs, inputs[0], y);
      return absl::OkStatus();
    case OpType::kAdd:
    case OpType::kSub:
    case OpType::kMul:
    case OpType::kDiv:
      Binary(node.type, inputs[0], inputs[1], y);
      return absl::OkStatus();
    case OpType::kConcat:
      Concat(std::get<graph::ConcatAttrs>(node.attrs).axis, inputs, y);
      return absl::OkStatus();
    case OpType::kSplit:
      Split(std::get<graph::SplitAttrs>(node.attrs).axis, inputs[0], outputs);
      return absl::OkStatus();
    case OpType::kSlice:
      Slice(std::get<graph::SliceAttrs>(node.attrs), inputs[0], y);
      return absl::OkStatus();
    case OpType::kPad:
      Pad(std::get<graph::PadAttrs>(node.attrs), inputs[0], y);
      return absl::OkStatus();
    case OpType::kTranspose:
      Transpose(std::get<graph::TransposeAttrs>(node.attrs).perm, inputs[0], y);
      return absl::OkStatus();
    case OpType::kResize:
      Resize(std::get<graph::ResizeAttrs>(node.attrs), inputs[0], y);
      return absl::OkStatus();
    case OpType::kReshape:
    case OpType::kFlatten:
    case OpType::kIdentity:
    case OpType::kDropout:
      Copy(inputs[0], y);
      return absl::OkStatus();
    IOSFARM_REDUCE_OP_CASES:
      Reduce(node.type, std::get<graph::ReduceAttrs>(node.attrs), inputs[0], y);
      return absl::OkStatus();
    case OpType::kSoftmax:
      Softmax(std::get<graph::SoftmaxAttrs>(node.attrs).axis, inputs[0], y);
      return absl::OkStatus();
    case OpType::kBatchNormalization: {
      const graph::Tensor* p[4];
      const char* roles[4] = {"scale", "bias", "mean", "var"};
      for (int i = 0; i < 4; ++i) {
        ASSIGN_OR_RETURN(p[i], GetWeight(node, weights, roles[i]));
      }
      BatchNorm(std::get<graph::BatchNormAttrs>(node.attrs).epsilon, inputs[0],
                p[0]->data.data(), p[1]->data.data(), p[2]->data.data(), p[3]->data.data(), y);
      return absl::OkStatus();
    }
    case OpType::kGemm: {
      ASSIGN_OR_RETURN(const graph::Tensor* b, GetWeight(node, weights, "B"));
      ConstView c_view;
      const ConstView* c = nullptr;
      if (weights.count("C") > 0) {
        ASSIGN_OR_RETURN(const graph::Tensor* c_tensor, GetWeight(node, weights, "C"));
        c_view = View(*c_tensor);
        c = &c_view;
      }
      Gemm(std::get<graph::GemmAttrs>(node.attrs), inputs[0], View(*b), c, y);
      return absl::OkStatus();
    }
    case OpType::kMatMul: {
      if (inputs.size() == 2) {
        MatMul(inputs[0], inputs[1], y);
        return absl::OkStatus();
      }
      ASSIGN_OR_RETURN(const graph::Tensor* b, GetWeight(node, weights, "B"));
      MatMul(inputs[0], View(*b), y);
      return absl::OkStatus();
    }
  }
  return NodeError(node, "unknown op type");
}

}  // namespace iosfarm::worker::reference
