#include "worker/backends/cuda/planner/op_support.h"

#include <limits>

#include "common/strings.h"
#include "worker/backends/cuda/planner/kernel_limits.h"

namespace iosfarm::worker::cuda {
namespace {

constexpr int64_t kIntMax = std::numeric_limits<int>::max();

Status Unsupported(const graph::Node& node, std::string_view why) {
  return absl::UnimplementedError(StrCat("cuda backend: node '", node.name, "' (",
                                         graph::OpTypeName(node.type), "): ", why));
}

bool FitsInt(const graph::Shape& shape) {
  for (int64_t d : shape) {
    if (d > kIntMax) return false;
  }
  return graph::NumElements(shape) <= kIntMax;
}

// Whether the op runs on the backend's own N-d kernels (rank-limited).
bool UsesNdKernel(graph::OpType type) {
  switch (type) {
    case graph::OpType::kAdd:
    case graph::OpType::kSub:
    case graph::OpType::kMul:
    case graph::OpType::kDiv:
    case graph::OpType::kSlice:
    case graph::OpType::kPad:
    case graph::OpType::kTranspose:
    IOSFARM_REDUCE_OP_CASES:
      return true;
    default:
      return false;
  }
}

// Whether the op's tensors are handed to cuDNN or cuBLAS (int dimensions).
bool UsesLibrary(graph::OpType type) {
  switch (type) {
    case graph::OpType::kConv:
    case graph::OpType::kMaxPool:
    case graph::OpType::kAveragePool:
    case graph::OpType::kRelu:
    case graph::OpType::kSigmoid:
    case graph::OpType::kTanh:
    case graph::OpType::kSoftmax:
    case graph::OpType::kGemm:
    case graph::OpType::kMatMul:
      return true;
    default:
      return false;
  }
}

}  // namespace

OpTypeSet CudaSupportedOps() { return AllOpTypes(); }

Status CheckNodeSupported(const graph::Graph& graph, const graph::Node& node) {
  static const OpTypeSet kSupported = CudaSupportedOps();
  RETURN_IF_ERROR(CheckOpSupported("cuda", kSupported, node));
  if (node.type == graph::OpType::kConstant) return absl::OkStatus();
  std::vector<const graph::Shape*> shapes;
  for (graph::ValueId v : node.inputs) shapes.push_back(&graph.value(v).shape);
  for (graph::ValueId v : node.outputs) shapes.push_back(&graph.value(v).shape);
  for (const graph::Shape* shape : shapes) {
    if (shape->empty()) {
      return absl::InvalidArgumentError(StrCat("node '", node.name, "' (",
                                               graph::OpTypeName(node.type),
                                               "): a tensor has no inferred shape"));
    }
    if (UsesNdKernel(node.type) && shape->size() > static_cast<size_t>(kMaxKernelRank)) {
      return Unsupported(node, StrCat("rank ", shape->size(), " exceeds the kernels' limit of ",
                                      kMaxKernelRank));
    }
    if (UsesLibrary(node.type) && !FitsInt(*shape)) {
      return Unsupported(node, StrCat("tensor ", graph::ShapeToString(*shape),
                                      " exceeds cuDNN/cuBLAS int dimensions"));
    }
  }
  for (const auto& [role, weight] : node.weights) {
    if (UsesLibrary(node.type) && !FitsInt(weight.shape)) {
      return Unsupported(node, StrCat("weight '", role, "' ", graph::ShapeToString(weight.shape),
                                      " exceeds cuDNN/cuBLAS int dimensions"));
    }
  }
  return absl::OkStatus();
}

Status CheckGraphSupported(const graph::Graph& graph) {
  for (const graph::Node& node : graph.nodes()) RETURN_IF_ERROR(CheckNodeSupported(graph, node));
  return absl::OkStatus();
}

}  // namespace iosfarm::worker::cuda
