#include "worker/backends/cuda/planner/plan_state.h"

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

WeightRef PlanState::AddWeight(const Shape& shape, std::span<const float> data) {
  constexpr int64_t kAlign = kArenaAlignment / static_cast<int64_t>(sizeof(float));
  const int64_t offset = (static_cast<int64_t>(plan.weights.size()) + kAlign - 1) / kAlign * kAlign;
  plan.weights.resize(static_cast<size_t>(offset), 0.0f);
  plan.weights.insert(plan.weights.end(), data.begin(), data.end());
  return {offset, shape};
}

namespace {

// Weight `role` of `node`; InvalidArgument when it is missing or holds data
// of the wrong size.
StatusOr<const graph::Tensor*> FindWeight(const graph::Node& node, const std::string& role) {
  auto it = node.weights.find(role);
  if (it == node.weights.end()) {
    return absl::InvalidArgumentError(StrCat("node '", node.name, "' (",
                                             graph::OpTypeName(node.type), "): missing weight '",
                                             role, "'"));
  }
  const graph::Tensor& t = it->second;
  if (t.has_data() && static_cast<int64_t>(t.data.size()) != t.num_elements()) {
    return absl::InvalidArgumentError(StrCat("node '", node.name, "': weight '", role, "' has ",
                                             t.data.size(), " values for shape ",
                                             graph::ShapeToString(t.shape)));
  }
  return &t;
}

}  // namespace

StatusOr<graph::Tensor> PlanState::NodeWeight(const graph::Node& node,
                                              const std::string& role) const {
  ASSIGN_OR_RETURN(const graph::Tensor* t, FindWeight(node, role));
  if (t->has_data() || options.weight_cache == nullptr) return MaterializeWeight(node, role, *t);
  graph::Tensor drawn;
  drawn.shape = t->shape;
  drawn.data = *options.weight_cache->Draw(node, role, t->shape);
  return drawn;
}

StatusOr<WeightRef> PlanState::AddNodeWeight(const graph::Node& node, const std::string& role) {
  ASSIGN_OR_RETURN(const graph::Tensor* t, FindWeight(node, role));
  if (t->has_data()) return AddWeight(t->shape, t->data);
  if (options.weight_cache != nullptr) {
    return AddWeight(t->shape, *options.weight_cache->Draw(node, role, t->shape));
  }
  const graph::Tensor drawn = MaterializeWeight(node, role, *t);
  return AddWeight(drawn.shape, drawn.data);
}

}  // namespace iosfarm::worker::cuda::planning
