// The working state of BuildExecutionPlan (plan_builder.h) and the helpers
// its passes share. Internal to the cuda planner: each pass (plan_passes.h)
// reads what earlier passes decided and fills in its own part.
//
// Not thread-safe; one PlanState per BuildExecutionPlan call.
#ifndef IOSFARM_WORKER_BACKENDS_CUDA_PLANNER_PLAN_STATE_H_
#define IOSFARM_WORKER_BACKENDS_CUDA_PLANNER_PLAN_STATE_H_

#include <array>
#include <climits>
#include <cstdint>
#include <map>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"
#include "graph/graph.h"
#include "graph/tensor.h"
#include "scheduler/ios/stages/stage.h"
#include "worker/backends/cuda/planner/execution_plan.h"
#include "worker/backends/cuda/planner/plan_builder.h"
#include "worker/backends/residual_fusion.h"

namespace iosfarm::worker::cuda::planning {

// The graph and stage names every pass uses (this namespace is internal to
// the planner's own files).
using graph::NodeId;
using graph::OpType;
using graph::Shape;
using graph::ValueId;
using scheduler::ios::Stage;
using scheduler::ios::Strategy;

inline constexpr int kNotDefined = INT_MIN;

// Where a value is stored relative to something else.
struct Alias {
  enum Kind { kNone, kValue, kSynthetic };
  Kind kind = kNone;
  int target = -1;     // a value id (kValue) or a synthetic buffer (kSynthetic)
  int64_t offset = 0;  // elements
};

// A buffer that holds no graph value: a merged conv's full output or the
// explicitly padded input of a conv with asymmetric pads.
struct Synthetic {
  int64_t elements = 0;
  int stage = 0;
  std::string label;
};

struct Location {
  int buffer = -1;
  int64_t offset = 0;
};

// Where a value's data comes from.
enum class Source { kNone, kProduced, kConstant, kRuntimeInput, kRandom };

// Reshape, Flatten, Identity, Dropout: outputs are views of their input.
bool IsViewOp(graph::OpType type);
// The product of shape[begin, end).
int64_t Product(const graph::Shape& shape, size_t begin, size_t end);
int64_t NormalizeAxis(int64_t axis, size_t rank);
bool SymmetricPads(const std::array<int64_t, 4>& pads);
// Elements of x padded by the pads of `a` (the explicit pad of a conv).
int64_t PaddedInputElements(const graph::Shape& x, const graph::ConvAttrs& a);

// Fields are filled by the passes in order (the comment names the pass).
struct PlanState {
  PlanState(const graph::Graph& graph, const std::vector<const scheduler::ios::Stage*>& stages,
            const PlanOptions& options)
      : graph(graph), stages(stages), options(options) {}

  int num_stages() const { return static_cast<int>(stages.size()); }
  // InvalidArgument "stage s (<stage>): what".
  Status StageError(int s, std::string_view what) const;
  // For stages whose node ids are not checked yet (StageToString needs them).
  static Status BareStageError(int s, std::string_view what);

  bool Produced(graph::ValueId v) const { return source[v] == Source::kProduced; }
  bool Kept(graph::ValueId v) const { return last_use[v] == num_stages(); }
  // Registers a synthetic buffer; returns its index in `synthetics`.
  int AddSynthetic(int64_t elements, int stage, std::string label);

  // The stored tensor of a value (after pass 4).
  TensorRef Ref(graph::ValueId v) const;
  // Appends `data` to plan.weights, aligned to kArenaAlignment.
  WeightRef AddWeight(const graph::Shape& shape, std::span<const float> data);
  // The node's weight `role`, materialised; InvalidArgument when missing or
  // of the wrong size.
  StatusOr<graph::Tensor> NodeWeight(const graph::Node& node, const std::string& role) const;
  // AddWeight(NodeWeight(node, role)) without the intermediate copy (the
  // weights of convolutions and GEMMs are most of a plan's bytes).
  StatusOr<WeightRef> AddNodeWeight(const graph::Node& node, const std::string& role);

  const graph::Graph& graph;
  const std::vector<const scheduler::ios::Stage*>& stages;
  const PlanOptions options;

  // Pass 1 (IndexStages).
  std::vector<int> node_stage, node_group, node_index;
  std::vector<ResidualFusions> fusions;      // by stage
  std::vector<bool> elided;                  // values a fusion never stores
  std::map<int, graph::Shape> merged_shape;  // by stage
  // Pass 2 (CollectUses).
  std::vector<int> def_stage, last_use;
  std::vector<Source> source;
  // Pass 3 (DecideAliases).
  std::vector<Alias> alias;
  std::vector<int> merged_buffer;           // synthetic index by stage, -1
  std::vector<int> merged_pad_buffer;       // synthetic index by stage, -1
  std::map<graph::NodeId, int> pad_buffer;  // synthetic index by conv node
  std::vector<Synthetic> synthetics;
  // Pass 4 (LayOutBuffers).
  std::vector<int> synthetic_buffer;           // plan buffer of each synthetic
  std::map<graph::ValueId, int> value_buffer;  // plan buffer of each root value
  std::map<graph::ValueId, Location> location;
  // Passes 4 to 6 (buffers, steps and weights, presets and outputs).
  ExecutionPlan plan;
};

}  // namespace iosfarm::worker::cuda::planning

#endif  // IOSFARM_WORKER_BACKENDS_CUDA_PLANNER_PLAN_STATE_H_
