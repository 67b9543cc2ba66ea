#include "worker/backends/cuda/plan_state.h"

#include "common/strings.h"
#include "scheduler/ios/schedule.h"
#include "worker/backends/weights.h"

namespace iosfarm::worker::cuda::planning {

bool IsViewOp(OpType type) {
  return type == OpType::kReshape || type == OpType::kFlatten || type == OpType::kIdentity ||
         type == OpType::kDropout;
}

int64_t Product(const Shape& shape, size_t begin, size_t end) {
  int64_t p = 1;
  for (size_t d = begin; d < end && d < shape.size(); ++d) p *= shape[d];
  return p;
}

int64_t NormalizeAxis(int64_t axis, size_t rank) {
  return axis < 0 ? axis + static_cast<int64_t>(rank) : axis;
}

bool SymmetricPads(const std::array<int64_t, 4>& pads) {
  return pads[0] == pads[2] && pads[1] == pads[3];
}

int64_t PaddedInputElements(const Shape& x, const graph::ConvAttrs& a) {
  return x[0] * x[1] * (x[2] + a.pads[0] + a.pads[2]) * (x[3] + a.pads[1] + a.pads[3]);
}

Status PlanState::StageError(int s, std::string_view what) const {
  return absl::InvalidArgumentError(
      StrCat("stage ", s, " (", scheduler::ios::StageToString(graph, *stages[s]), "): ", what));
}

Status PlanState::BareStageError(int s, std::string_view what) {
  return absl::InvalidArgumentError(StrCat("stage ", s, ": ", what));
}

int PlanState::AddSynthetic(int64_t elements, int stage, std::string label) {
  synthetics.push_back({elements, stage, std::move(label)});
  return static_cast<int>(synthetics.size()) - 1;
}

TensorRef PlanState::Ref(ValueId v) const {
  const Location& loc = location.at(v);
  return {loc.buffer, loc.offset, graph.value(v).shape};
}

WeightRef PlanState::AddWeight(const Shape& shape, const std::vector<float>& data) {
  constexpr int64_t kAlign = kArenaAlignment / static_cast<int64_t>(sizeof(float));
  const int64_t offset = (static_cast<int64_t>(plan.weights.size()) + kAlign - 1) / kAlign * kAlign;
  plan.weights.resize(static_cast<size_t>(offset), 0.0f);
  plan.weights.insert(plan.weights.end(), data.begin(), data.end());
  return {offset, shape};
}

StatusOr<graph::Tensor> PlanState::NodeWeight(const graph::Node& node,
                                              const std::string& role) const {
  auto it = node.weights.find(role);
  if (it == node.weights.end()) {
    return absl::InvalidArgumentError(StrCat("node '", node.name, "' (",
                                             graph::OpTypeName(node.type), "): missing weight '",
                                             role, "'"));
  }
  graph::Tensor t = MaterializeWeight(node, role, it->second);
  if (static_cast<int64_t>(t.data.size()) != t.num_elements()) {
    return absl::InvalidArgumentError(StrCat("node '", node.name, "': weight '", role, "' has ",
                                             t.data.size(), " values for shape ",
                                             graph::ShapeToString(t.shape)));
  }
  return t;
}

}  // namespace iosfarm::worker::cuda::planning
