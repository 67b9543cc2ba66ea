#include "worker/backends/cuda/plan_builder.h"

#include <algorithm>
#include <climits>
#include <cmath>
#include <map>
#include <optional>
#include <set>
#include <variant>

#include "common/strings.h"
#include "worker/backends/cuda/memory_plan.h"
#include "worker/backends/cuda/op_support.h"
#include "worker/backends/cuda/plan_checks.h"
#include "worker/backends/merged_conv_weights.h"
#include "worker/backends/residual_fusion.h"
#include "worker/backends/weights.h"

namespace iosfarm::worker::cuda {
namespace {

using graph::NodeId;
using graph::OpType;
using graph::Shape;
using graph::ValueId;
using scheduler::ios::Stage;
using scheduler::ios::Strategy;

constexpr int kNotDefined = INT_MIN;

// Where a value is stored relative to something else.
struct Alias {
  enum Kind { kNone, kValue, kSynthetic };
  Kind kind = kNone;
  int target = -1;      // a value id (kValue) or a synthetic buffer (kSynthetic)
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

enum class Source { kNone, kProduced, kConstant, kRuntimeInput, kRandom };

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

class PlanBuilder {
 public:
  PlanBuilder(const graph::Graph& graph, const std::vector<const Stage*>& stages,
              const PlanOptions& options)
      : graph_(graph), stages_(stages), options_(options) {}

  StatusOr<ExecutionPlan> Build() {
    RETURN_IF_ERROR(IndexStages());
    RETURN_IF_ERROR(CollectUses());
    DecideAliases();
    RETURN_IF_ERROR(LayOutBuffers());
    RETURN_IF_ERROR(EmitStages());
    RETURN_IF_ERROR(EmitPresetsAndOutputs());
    return std::move(plan_);
  }

 private:
  int num_stages() const { return static_cast<int>(stages_.size()); }

  Status StageError(int s, std::string_view what) const {
    return absl::InvalidArgumentError(
        StrCat("stage ", s, " (", scheduler::ios::StageToString(graph_, *stages_[s]),
               "): ", what));
  }

  // For stages whose node ids are not checked yet (StageToString needs them).
  static Status BareStageError(int s, std::string_view what) {
    return absl::InvalidArgumentError(StrCat("stage ", s, ": ", what));
  }

  // ---- Pass 1: which node runs where; structural checks.
  Status IndexStages() {
    node_stage_.assign(static_cast<size_t>(graph_.num_nodes()), -1);
    node_group_.assign(static_cast<size_t>(graph_.num_nodes()), -1);
    node_index_.assign(static_cast<size_t>(graph_.num_nodes()), -1);
    merged_buffer_.assign(stages_.size(), -1);
    merged_pad_buffer_.assign(stages_.size(), -1);
    for (int s = 0; s < num_stages(); ++s) {
      const Stage& stage = *stages_[s];
      for (size_t g = 0; g < stage.groups.size(); ++g) {
        for (size_t i = 0; i < stage.groups[g].size(); ++i) {
          const NodeId id = stage.groups[g][i];
          if (id < 0 || id >= graph_.num_nodes()) {
            return BareStageError(s, StrCat("node id ", id, " out of range"));
          }
          const graph::Node& node = graph_.node(id);
          // A Constant listed in a stage computes nothing: its value is
          // written before the first run like every constant.
          if (node.type == OpType::kConstant) continue;
          if (node_stage_[id] != -1) {
            return StageError(s, StrCat("node '", node.name, "' is listed twice"));
          }
          RETURN_IF_ERROR(CheckNodeSupported(graph_, node));
          node_stage_[id] = s;
          node_group_[id] = static_cast<int>(g);
          node_index_[id] = static_cast<int>(i);
        }
      }
      if (stage.strategy == Strategy::kMerge) RETURN_IF_ERROR(CheckMergeStage(s));
    }
    FindResidualFusions();
    return absl::OkStatus();
  }

  // Conv + Add (+ Relu) chains run as one conv step with a residual input,
  // at the Add's position (residual_fusion.h says where the graph allows it).
  // The conv's output, and the Add's when the Relu is fused, are never
  // stored: they get no buffer.
  void FindResidualFusions() {
    const std::vector<std::vector<NodeId>> consumers = graph_.Consumers();
    elided_.assign(static_cast<size_t>(graph_.num_values()), false);
    for (int s = 0; s < num_stages(); ++s) {
      fusions_.push_back(ResidualFusions::Find(graph_, *stages_[s], consumers));
      for (const ResidualFusion& f : fusions_.back().all()) {
        elided_[graph_.node(f.conv).outputs[0]] = true;
        if (f.relu != graph::kNoNode) elided_[graph_.node(f.add).outputs[0]] = true;
      }
    }
  }

  Status CheckMergeStage(int s) {
    const Stage& stage = *stages_[s];
    if (!stage.merged.has_value() || stage.merged->branches.empty()) {
      return StageError(s, "merge stage without a merged convolution");
    }
    const scheduler::ios::MergedConv& merged = *stage.merged;
    std::multiset<NodeId> in_groups, in_branches;
    for (const auto& group : stage.groups) {
      if (group.size() != 1) return StageError(s, "a merge stage group must hold one conv");
      in_groups.insert(group[0]);
    }
    for (const auto& branch : merged.branches) in_branches.insert(branch.op);
    if (in_groups != in_branches) {
      return StageError(s, "the merged conv's branches are not the stage's ops");
    }
    if (merged.input < 0 || merged.input >= graph_.num_values() ||
        graph_.value(merged.input).shape.size() != 4) {
      return StageError(s, "the merged conv's input is not a known 4-D tensor");
    }
    const Shape& x = graph_.value(merged.input).shape;
    int64_t channels = 0;
    Shape first_out;
    for (const auto& branch : merged.branches) {
      const graph::Node& node = graph_.node(branch.op);
      if (node.type != OpType::kConv || node.inputs.size() != 1 || node.outputs.size() != 1 ||
          node.inputs[0] != merged.input) {
        return StageError(s, StrCat("branch '", node.name,
                                    "' is not a Conv reading the merged input"));
      }
      const Shape& out = graph_.value(node.outputs[0]).shape;
      if (out.size() != 4 || out[0] != x[0] ||
          out[1] != branch.channel_end - branch.channel_begin ||
          branch.channel_begin != channels ||
          (!first_out.empty() && (out[2] != first_out[2] || out[3] != first_out[3]))) {
        return StageError(s, StrCat("branch '", node.name, "' output ",
                                    graph::ShapeToString(out),
                                    " does not fit the merged conv's channel layout"));
      }
      if (first_out.empty()) first_out = out;
      channels = branch.channel_end;
    }
    if (channels != merged.attrs.out_channels) {
      return StageError(s, StrCat("branches cover ", channels, " channels, the merged conv has ",
                                  merged.attrs.out_channels));
    }
    merged_shape_[s] = {x[0], channels, first_out[2], first_out[3]};
    return absl::OkStatus();
  }

  bool Produced(ValueId v) const { return source_[v] == Source::kProduced; }

  // ---- Pass 2: definitions, reads, external values.
  Status CollectUses() {
    const size_t n = static_cast<size_t>(graph_.num_values());
    def_stage_.assign(n, kNotDefined);
    last_use_.assign(n, kNotDefined);
    source_.assign(n, Source::kNone);
    for (NodeId id = 0; id < graph_.num_nodes(); ++id) {
      if (node_stage_[id] < 0) continue;
      for (ValueId v : graph_.node(id).outputs) {
        if (graph_.value(v).shape.empty()) {
          return StageError(node_stage_[id], StrCat("value '", graph_.value(v).name,
                                                    "' has no inferred shape"));
        }
        def_stage_[v] = node_stage_[id];
        source_[v] = Source::kProduced;
      }
    }
    for (int s = 0; s < num_stages(); ++s) {
      for (const auto& group : stages_[s]->groups) {
        for (NodeId id : group) {
          for (ValueId v : graph_.node(id).inputs) RETURN_IF_ERROR(NoteRead(v, id, s));
        }
      }
    }
    if (options_.keep_graph_outputs) {
      for (ValueId v : graph_.outputs()) {
        if (source_[v] == Source::kNone) RETURN_IF_ERROR(ClassifyExternal(v, nullptr));
        last_use_[v] = num_stages();
      }
    }
    return absl::OkStatus();
  }

  Status NoteRead(ValueId v, NodeId reader, int s) {
    const graph::Node& node = graph_.node(reader);
    if (Produced(v)) {
      const NodeId producer = graph_.value(v).producer;
      const bool earlier_stage = node_stage_[producer] < s;
      const bool earlier_in_group = node_stage_[producer] == s &&
                                    node_group_[producer] == node_group_[reader] &&
                                    node_index_[producer] < node_index_[reader];
      if (!earlier_stage && !earlier_in_group) {
        return StageError(s, StrCat("node '", node.name, "' reads '", graph_.value(v).name,
                                    "', which is produced later or in another group"));
      }
    } else if (source_[v] == Source::kNone) {
      RETURN_IF_ERROR(ClassifyExternal(v, &node));
    }
    last_use_[v] = std::max(last_use_[v], s);
    return absl::OkStatus();
  }

  Status ClassifyExternal(ValueId v, const graph::Node* reader) {
    const graph::Value& value = graph_.value(v);
    if (value.shape.empty()) {
      return absl::InvalidArgumentError(StrCat("value '", value.name, "' has no inferred shape"));
    }
    const bool constant = value.producer != graph::kNoNode &&
                          graph_.node(value.producer).type == OpType::kConstant;
    const bool graph_input =
        std::find(graph_.inputs().begin(), graph_.inputs().end(), v) != graph_.inputs().end();
    if (constant) {
      source_[v] = Source::kConstant;
    } else if (options_.external == ExternalValues::kRandomData) {
      source_[v] = Source::kRandom;
    } else if (graph_input) {
      source_[v] = Source::kRuntimeInput;
    } else if (reader != nullptr) {
      return absl::FailedPreconditionError(StrCat(
          "node '", reader->name, "' reads '", value.name, "', which no earlier stage computes"));
    } else {
      return absl::FailedPreconditionError(
          StrCat("graph output '", value.name, "' is not computed by the schedule"));
    }
    // Presets are written once and read by every run: they live from before
    // the first stage to after the last.
    def_stage_[v] = -1;
    last_use_[v] = num_stages();
    return absl::OkStatus();
  }

  bool Kept(ValueId v) const { return last_use_[v] == num_stages(); }

  // ---- Pass 3: views, merged outputs, in-place concats, pad temporaries.
  void DecideAliases() {
    alias_.assign(static_cast<size_t>(graph_.num_values()), Alias{});
    const std::vector<std::vector<NodeId>> consumers = graph_.Consumers();
    for (int s = 0; s < num_stages(); ++s) {
      const Stage& stage = *stages_[s];
      if (stage.strategy == Strategy::kMerge) {
        DecideMergeAliases(s);
        continue;
      }
      for (const auto& group : stage.groups) {
        for (NodeId id : group) DecideNodeAliases(id, s, consumers);
      }
    }
  }

  int AddSynthetic(int64_t elements, int stage, std::string label) {
    synthetics_.push_back({elements, stage, std::move(label)});
    return static_cast<int>(synthetics_.size()) - 1;
  }

  void DecideMergeAliases(int s) {
    const Stage& stage = *stages_[s];
    const Shape& y = merged_shape_.at(s);
    merged_buffer_[s] = AddSynthetic(graph::NumElements(y), s,
                                     StrCat("merged output of stage ", s));
    if (!SymmetricPads(stage.merged->attrs.pads)) {
      merged_pad_buffer_[s] = AddSynthetic(
          PaddedInputElements(graph_.value(stage.merged->input).shape, stage.merged->attrs), s,
          StrCat("padded input of stage ", s));
    }
    if (y[0] != 1) return;  // branches are strided slices: copied out
    const int64_t plane = y[2] * y[3];
    for (const auto& branch : stage.merged->branches) {
      const ValueId out = graph_.node(branch.op).outputs[0];
      alias_[out] = {Alias::kSynthetic, merged_buffer_[s], branch.channel_begin * plane};
    }
  }

  static int64_t PaddedInputElements(const Shape& x, const graph::ConvAttrs& a) {
    return x[0] * x[1] * (x[2] + a.pads[0] + a.pads[2]) * (x[3] + a.pads[1] + a.pads[3]);
  }

  void DecideNodeAliases(NodeId id, int s, const std::vector<std::vector<NodeId>>& consumers) {
    const graph::Node& node = graph_.node(id);
    if (IsViewOp(node.type)) {
      alias_[node.outputs[0]] = {Alias::kValue, node.inputs[0], 0};
      return;
    }
    if (node.type == OpType::kConv) {
      const auto& a = std::get<graph::ConvAttrs>(node.attrs);
      if (!SymmetricPads(a.pads)) {
        pad_buffer_[id] = AddSynthetic(PaddedInputElements(graph_.value(node.inputs[0]).shape, a),
                                       s, StrCat("padded input of '", node.name, "'"));
      }
      return;
    }
    if (node.type == OpType::kSplit) {
      const Shape& x = graph_.value(node.inputs[0]).shape;
      const auto& a = std::get<graph::SplitAttrs>(node.attrs);
      const size_t axis = static_cast<size_t>(NormalizeAxis(a.axis, x.size()));
      if (Product(x, 0, axis) != 1) return;
      const int64_t inner = Product(x, axis + 1, x.size());
      int64_t offset = 0;
      for (size_t i = 0; i < node.outputs.size(); ++i) {
        alias_[node.outputs[i]] = {Alias::kValue, node.inputs[0], offset * inner};
        offset += a.sizes[i];
      }
      return;
    }
    if (node.type == OpType::kConcat) {
      const Shape& y = graph_.value(node.outputs[0]).shape;
      const auto& a = std::get<graph::ConcatAttrs>(node.attrs);
      const size_t axis = static_cast<size_t>(NormalizeAxis(a.axis, y.size()));
      if (Product(y, 0, axis) != 1) return;
      int64_t offset = 0;
      for (ValueId v : node.inputs) {
        if (Placeable(v, id, consumers)) alias_[v] = {Alias::kValue, node.outputs[0], offset};
        offset += graph::NumElements(graph_.value(v).shape);
      }
    }
  }

  // Whether `v` can be written by its producer straight into Concat `concat`.
  bool Placeable(ValueId v, NodeId concat,
                 const std::vector<std::vector<NodeId>>& consumers) const {
    if (!Produced(v) || Kept(v) || alias_[v].kind != Alias::kNone) return false;
    const graph::Node& node = graph_.node(concat);
    if (std::count(node.inputs.begin(), node.inputs.end(), v) != 1) return false;
    if (consumers[v].size() != 1 || consumers[v][0] != concat) return false;
    const NodeId producer = graph_.value(v).producer;
    if (IsViewOp(graph_.node(producer).type)) return false;
    // Merge branches at batch > 1 are copied out of the merged output: that
    // copy may land in place too; at batch 1 they are views (alias set).
    return true;
  }

  // ---- Pass 4: buffers, lifetimes, arena.
  Location Resolve(ValueId v) {
    int64_t offset = 0;
    ValueId root = v;
    while (alias_[root].kind == Alias::kValue) {
      offset += alias_[root].offset;
      root = alias_[root].target;
    }
    if (alias_[root].kind == Alias::kSynthetic) {
      return {synthetic_buffer_[alias_[root].target], offset + alias_[root].offset};
    }
    auto it = value_buffer_.find(root);
    if (it == value_buffer_.end()) {
      BufferSpec spec;
      spec.elements = graph::NumElements(graph_.value(root).shape);
      spec.first_stage = INT_MAX;
      spec.last_stage = INT_MIN;
      spec.label = graph_.value(root).name;
      plan_.buffers.push_back(spec);
      it = value_buffer_.emplace(root, static_cast<int>(plan_.buffers.size()) - 1).first;
    }
    return {it->second, offset};
  }

  Status LayOutBuffers() {
    for (const Synthetic& synthetic : synthetics_) {
      BufferSpec spec;
      spec.elements = synthetic.elements;
      spec.first_stage = synthetic.stage;
      spec.last_stage = synthetic.stage;
      spec.label = synthetic.label;
      plan_.buffers.push_back(spec);
      synthetic_buffer_.push_back(static_cast<int>(plan_.buffers.size()) - 1);
    }
    for (ValueId v = 0; v < graph_.num_values(); ++v) {
      if (source_[v] == Source::kNone || elided_[v]) continue;
      const Location loc = Resolve(v);
      BufferSpec& spec = plan_.buffers[loc.buffer];
      const int last = std::max(last_use_[v], def_stage_[v]);
      spec.first_stage = std::min(spec.first_stage, def_stage_[v]);
      spec.last_stage = std::max(spec.last_stage, last);
      const int64_t end = loc.offset + graph::NumElements(graph_.value(v).shape);
      if (loc.offset < 0 || end > spec.elements) {
        return absl::InternalError(StrCat("cuda plan: value '", graph_.value(v).name,
                                          "' does not fit its buffer '", spec.label, "'"));
      }
      location_[v] = loc;
    }
    plan_.arena_bytes = AssignArenaOffsets(plan_.buffers);
    return absl::OkStatus();
  }

  TensorRef Ref(ValueId v) const {
    const Location& loc = location_.at(v);
    return {loc.buffer, loc.offset, graph_.value(v).shape};
  }

  WeightRef AddWeight(const Shape& shape, const std::vector<float>& data) {
    constexpr int64_t kAlign = kArenaAlignment / static_cast<int64_t>(sizeof(float));
    const int64_t offset =
        (static_cast<int64_t>(plan_.weights.size()) + kAlign - 1) / kAlign * kAlign;
    plan_.weights.resize(static_cast<size_t>(offset), 0.0f);
    plan_.weights.insert(plan_.weights.end(), data.begin(), data.end());
    return {offset, shape};
  }

  StatusOr<graph::Tensor> NodeWeight(const graph::Node& node, const std::string& role) const {
    auto it = node.weights.find(role);
    if (it == node.weights.end()) {
      return absl::InvalidArgumentError(StrCat("node '", node.name, "' (",
                                               graph::OpTypeName(node.type),
                                               "): missing weight '", role, "'"));
    }
    graph::Tensor t = MaterializeWeight(node, role, it->second);
    if (static_cast<int64_t>(t.data.size()) != t.num_elements()) {
      return absl::InvalidArgumentError(StrCat("node '", node.name, "': weight '", role,
                                               "' has ", t.data.size(), " values for shape ",
                                               graph::ShapeToString(t.shape)));
    }
    return t;
  }

  // ---- Pass 5: steps.
  Status EmitStages() {
    for (int s = 0; s < num_stages(); ++s) {
      const Stage& stage = *stages_[s];
      StageProgram program;
      program.label = scheduler::ios::StageToString(graph_, stage);
      if (stage.strategy == Strategy::kMerge) {
        program.groups.emplace_back();
        RETURN_IF_ERROR(EmitMerge(s, program.groups.back().steps));
      } else {
        for (const auto& group : stage.groups) {
          program.groups.emplace_back();
          for (NodeId id : group) RETURN_IF_ERROR(EmitNode(id, program.groups.back().steps));
        }
      }
      plan_.stages.push_back(std::move(program));
    }
    return absl::OkStatus();
  }

  // Appends a conv step reading x (through an explicit pad when needed) and,
  // when given, the residual z.
  void EmitConv(graph::ConvAttrs attrs, const TensorRef& x, const TensorRef& y,
                WeightRef w, std::optional<WeightRef> bias, int pad_synthetic,
                const std::string& label, std::vector<Step>& steps,
                const std::optional<TensorRef>& residual = std::nullopt) {
    TensorRef input = x;
    if (!SymmetricPads(attrs.pads)) {
      Step pad;
      pad.kind = StepKind::kPad;
      pad.op = OpType::kPad;
      graph::PadAttrs pa;
      pa.pads = {0, 0, attrs.pads[0], attrs.pads[1], 0, 0, attrs.pads[2], attrs.pads[3]};
      pa.mode = graph::PadMode::kConstant;
      pa.value = 0.0f;
      pad.attrs = pa;
      pad.inputs = {x};
      input = {synthetic_buffer_[pad_synthetic], 0,
               {x.shape[0], x.shape[1], x.shape[2] + attrs.pads[0] + attrs.pads[2],
                x.shape[3] + attrs.pads[1] + attrs.pads[3]}};
      pad.outputs = {input};
      pad.label = StrCat(label, " (explicit padding)");
      steps.push_back(std::move(pad));
      attrs.pads = {0, 0, 0, 0};
    }
    Step conv;
    conv.kind = StepKind::kConv;
    conv.op = OpType::kConv;
    conv.inputs = {input};
    if (residual.has_value()) conv.inputs.push_back(*residual);
    conv.outputs = {y};
    conv.weights = {std::move(w)};
    // cudnnConvolutionBiasActivationForward always adds a bias.
    if (!bias.has_value() &&
        (attrs.activation == graph::Activation::kRelu || residual.has_value())) {
      bias = AddWeight({attrs.out_channels},
                       std::vector<float>(static_cast<size_t>(attrs.out_channels), 0.0f));
    }
    if (bias.has_value()) conv.weights.push_back(*bias);
    conv.attrs = attrs;
    conv.label = label;
    steps.push_back(std::move(conv));
  }

  Status EmitMerge(int s, std::vector<Step>& steps) {
    const scheduler::ios::MergedConv& merged = *stages_[s]->merged;
    auto weights = AssembleMergedConvWeights(graph_, merged);
    if (!weights.ok()) return StageError(s, ToStd(weights.status().message()));
    const WeightRef w = AddWeight(weights->weight.shape, weights->weight.data);
    std::optional<WeightRef> bias;
    if (merged.attrs.has_bias) bias = AddWeight(weights->bias.shape, weights->bias.data);
    const Shape& y_shape = merged_shape_.at(s);
    const TensorRef y{synthetic_buffer_[merged_buffer_[s]], 0, y_shape};
    const std::string label = scheduler::ios::StageToString(graph_, *stages_[s]);
    EmitConv(merged.attrs, Ref(merged.input), y, w, bias,
             merged_pad_buffer_[s], label, steps);
    const int64_t plane = y_shape[2] * y_shape[3];
    for (const auto& branch : merged.branches) {
      const ValueId out = graph_.node(branch.op).outputs[0];
      const Location& loc = location_.at(out);
      if (loc.buffer == y.buffer) continue;  // a view of the merged output
      Step copy;
      copy.kind = StepKind::kCopyRows;
      copy.inputs = {y};
      copy.outputs = {Ref(out)};
      const int64_t channels = branch.channel_end - branch.channel_begin;
      copy.copy = {y_shape[0], channels * plane, branch.channel_begin * plane,
                   y_shape[1] * plane, 0, channels * plane};
      copy.label = StrCat(graph_.node(branch.op).name, " (merged branch)");
      steps.push_back(std::move(copy));
    }
    return absl::OkStatus();
  }

  // The fused Conv + Add (+ Relu) of `f`, at the Add's position: y = act(
  // conv(x) + B + z) with act the Relu's when fused, else none (the conv
  // itself has no activation: residual_fusion.h).
  Status EmitResidualConv(const ResidualFusion& f, std::vector<Step>& steps) {
    const graph::Node& conv = graph_.node(f.conv);
    graph::ConvAttrs a = std::get<graph::ConvAttrs>(conv.attrs);
    a.activation = f.relu != graph::kNoNode ? graph::Activation::kRelu : graph::Activation::kNone;
    ASSIGN_OR_RETURN(graph::Tensor w, NodeWeight(conv, "W"));
    std::optional<WeightRef> bias;
    if (a.has_bias) {
      ASSIGN_OR_RETURN(graph::Tensor b, NodeWeight(conv, "B"));
      bias = AddWeight(b.shape, b.data);
    }
    std::string label = StrCat(conv.name, " + ", graph_.node(f.add).name);
    if (f.relu != graph::kNoNode) label = StrCat(label, " + ", graph_.node(f.relu).name);
    auto pad = pad_buffer_.find(f.conv);
    EmitConv(a, Ref(conv.inputs[0]), Ref(f.output), AddWeight(w.shape, w.data), bias,
             pad == pad_buffer_.end() ? -1 : pad->second, label, steps, Ref(f.residual));
    return absl::OkStatus();
  }

  Status EmitNode(NodeId id, std::vector<Step>& steps) {
    const graph::Node& node = graph_.node(id);
    if (node.type == OpType::kConstant || IsViewOp(node.type)) return absl::OkStatus();
    const ResidualFusions& fusions = fusions_[node_stage_[id]];
    if (fusions.Absorbed(id)) return absl::OkStatus();  // runs at its Add
    if (const ResidualFusion* f = fusions.AtAdd(id)) return EmitResidualConv(*f, steps);
    Step step;
    step.op = node.type;
    step.attrs = node.attrs;
    step.label = node.name;
    for (ValueId v : node.inputs) step.inputs.push_back(Ref(v));
    for (ValueId v : node.outputs) step.outputs.push_back(Ref(v));
    switch (node.type) {
      case OpType::kConv: {
        const auto& a = std::get<graph::ConvAttrs>(node.attrs);
        ASSIGN_OR_RETURN(graph::Tensor w, NodeWeight(node, "W"));
        std::optional<WeightRef> bias;
        if (a.has_bias) {
          ASSIGN_OR_RETURN(graph::Tensor b, NodeWeight(node, "B"));
          bias = AddWeight(b.shape, b.data);
        }
        auto pad = pad_buffer_.find(id);
        EmitConv(a, step.inputs[0], step.outputs[0], AddWeight(w.shape, w.data), bias,
                 pad == pad_buffer_.end() ? -1 : pad->second, node.name, steps);
        return absl::OkStatus();
      }
      case OpType::kMaxPool:
      case OpType::kAveragePool:
        step.kind = StepKind::kPool;
        break;
      case OpType::kGlobalAveragePool:
      case OpType::kGlobalMaxPool:
        step.kind = StepKind::kGlobalPool;
        break;
      case OpType::kRelu:
      case OpType::kClip:
      case OpType::kSigmoid:
      case OpType::kHardSigmoid:
      case OpType::kHardSwish:
      case OpType::kTanh:
        step.kind = StepKind::kUnary;
        break;
      case OpType::kAdd:
      case OpType::kSub:
      case OpType::kMul:
      case OpType::kDiv:
        step.kind = StepKind::kBinary;
        break;
      case OpType::kConcat:
        EmitConcat(node, steps);
        return absl::OkStatus();
      case OpType::kSplit:
        EmitSplit(node, steps);
        return absl::OkStatus();
      case OpType::kSlice: {
        step.kind = StepKind::kSlice;
        auto a = std::get<graph::SliceAttrs>(node.attrs);
        for (int64_t& axis : a.axes) axis = NormalizeAxis(axis, step.inputs[0].shape.size());
        step.attrs = a;
        break;
      }
      case OpType::kPad:
        step.kind = StepKind::kPad;
        break;
      case OpType::kTranspose:
        step.kind = StepKind::kTranspose;
        break;
      case OpType::kReduceMean: {
        step.kind = StepKind::kReduceMean;
        auto a = std::get<graph::ReduceMeanAttrs>(node.attrs);
        for (int64_t& axis : a.axes) axis = NormalizeAxis(axis, step.inputs[0].shape.size());
        std::sort(a.axes.begin(), a.axes.end());
        a.axes.erase(std::unique(a.axes.begin(), a.axes.end()), a.axes.end());
        step.attrs = a;
        break;
      }
      case OpType::kSoftmax: {
        step.kind = StepKind::kSoftmax;
        auto a = std::get<graph::SoftmaxAttrs>(node.attrs);
        a.axis = NormalizeAxis(a.axis, step.inputs[0].shape.size());
        step.attrs = a;
        break;
      }
      case OpType::kBatchNormalization: {
        step.kind = StepKind::kBatchNorm;
        const auto& a = std::get<graph::BatchNormAttrs>(node.attrs);
        ASSIGN_OR_RETURN(graph::Tensor scale, NodeWeight(node, "scale"));
        ASSIGN_OR_RETURN(graph::Tensor bias, NodeWeight(node, "bias"));
        ASSIGN_OR_RETURN(graph::Tensor mean, NodeWeight(node, "mean"));
        ASSIGN_OR_RETURN(graph::Tensor var, NodeWeight(node, "var"));
        const size_t c = scale.data.size();
        std::vector<float> mul(c), add(c);
        for (size_t i = 0; i < c; ++i) {
          const double inv_std = 1.0 / std::sqrt(static_cast<double>(var.data[i]) + a.epsilon);
          const double m = inv_std * scale.data[i];
          mul[i] = static_cast<float>(m);
          add[i] = static_cast<float>(bias.data[i] - mean.data[i] * m);
        }
        step.weights = {AddWeight(scale.shape, mul), AddWeight(scale.shape, add)};
        break;
      }
      case OpType::kGemm: {
        step.kind = StepKind::kGemm;
        const auto& a = std::get<graph::GemmAttrs>(node.attrs);
        ASSIGN_OR_RETURN(graph::Tensor b, NodeWeight(node, "B"));
        step.weights = {AddWeight(b.shape, b.data)};
        if (node.weights.count("C") != 0) {
          ASSIGN_OR_RETURN(graph::Tensor c, NodeWeight(node, "C"));
          step.weights.push_back(AddWeight(step.outputs[0].shape,
                                           BroadcastBias(c, a.beta, step.outputs[0].shape)));
        }
        break;
      }
      case OpType::kMatMul:
        step.kind = StepKind::kMatMul;
        if (node.inputs.size() == 1) {
          ASSIGN_OR_RETURN(graph::Tensor b, NodeWeight(node, "B"));
          step.weights = {AddWeight(b.shape, b.data)};
        }
        break;
      case OpType::kConstant:
      case OpType::kReshape:
      case OpType::kFlatten:
      case OpType::kIdentity:
      case OpType::kDropout:
        return absl::OkStatus();
    }
    steps.push_back(std::move(step));
    return absl::OkStatus();
  }

  // beta * C broadcast to [m, n] (C has rank <= 2, numpy broadcasting).
  static std::vector<float> BroadcastBias(const graph::Tensor& c, float beta, const Shape& y) {
    const int64_t m = y[0], n = y[1];
    const Shape& cs = c.shape;
    const int64_t c0 = cs.size() >= 2 ? cs[cs.size() - 2] : 1;
    const int64_t c1 = cs.empty() ? 1 : cs.back();
    const int64_t stride0 = c0 == 1 ? 0 : c1;
    const int64_t stride1 = c1 == 1 ? 0 : 1;
    std::vector<float> out(static_cast<size_t>(m * n));
    for (int64_t i = 0; i < m; ++i) {
      for (int64_t j = 0; j < n; ++j) {
        out[static_cast<size_t>(i * n + j)] = static_cast<float>(
            static_cast<double>(beta) * c.data[static_cast<size_t>(i * stride0 + j * stride1)]);
      }
    }
    return out;
  }

  void EmitConcat(const graph::Node& node, std::vector<Step>& steps) {
    const ValueId out = node.outputs[0];
    const Shape& y = graph_.value(out).shape;
    const auto& a = std::get<graph::ConcatAttrs>(node.attrs);
    const size_t axis = static_cast<size_t>(NormalizeAxis(a.axis, y.size()));
    const int64_t outer = Product(y, 0, axis);
    const int64_t out_row = Product(y, axis, y.size());
    int64_t offset = 0;  // within one row of the output
    for (ValueId v : node.inputs) {
      const Shape& x = graph_.value(v).shape;
      const int64_t row = Product(x, axis, x.size());
      const bool in_place = alias_[v].kind == Alias::kValue && alias_[v].target == out &&
                            alias_[v].offset == offset;
      if (!in_place) {
        Step copy;
        copy.kind = StepKind::kCopyRows;
        copy.inputs = {Ref(v)};
        copy.outputs = {Ref(out)};
        copy.copy = {outer, row, 0, row, offset, out_row};
        copy.label = StrCat(node.name, " (input '", graph_.value(v).name, "')");
        steps.push_back(std::move(copy));
      }
      offset += row;
    }
  }

  void EmitSplit(const graph::Node& node, std::vector<Step>& steps) {
    const ValueId in = node.inputs[0];
    const Shape& x = graph_.value(in).shape;
    const auto& a = std::get<graph::SplitAttrs>(node.attrs);
    const size_t axis = static_cast<size_t>(NormalizeAxis(a.axis, x.size()));
    const int64_t outer = Product(x, 0, axis);
    const int64_t in_row = Product(x, axis, x.size());
    const int64_t inner = Product(x, axis + 1, x.size());
    int64_t offset = 0;
    for (size_t i = 0; i < node.outputs.size(); ++i) {
      const ValueId out = node.outputs[i];
      const int64_t row = a.sizes[i] * inner;
      if (alias_[out].kind != Alias::kValue || alias_[out].target != in) {
        Step copy;
        copy.kind = StepKind::kCopyRows;
        copy.inputs = {Ref(in)};
        copy.outputs = {Ref(out)};
        copy.copy = {outer, row, offset, in_row, 0, row};
        copy.label = StrCat(node.name, " (output ", i, ")");
        steps.push_back(std::move(copy));
      }
      offset += row;
    }
  }

  // ---- Pass 6: data written before the first run; kept results.
  Status EmitPresetsAndOutputs() {
    for (ValueId v = 0; v < graph_.num_values(); ++v) {
      const graph::Value& value = graph_.value(v);
      switch (source_[v]) {
        case Source::kConstant: {
          const graph::Node& node = graph_.node(value.producer);
          ASSIGN_OR_RETURN(graph::Tensor t, NodeWeight(node, "value"));
          if (t.num_elements() != graph::NumElements(value.shape)) {
            return absl::InvalidArgumentError(
                StrCat("constant '", node.name, "' has ", t.num_elements(),
                       " values for output shape ", graph::ShapeToString(value.shape)));
          }
          plan_.presets.push_back({Ref(v), std::move(t.data), value.name});
          break;
        }
        case Source::kRandom:
          plan_.presets.push_back(
              {Ref(v), RandomTensor(value.shape, WeightSeed(value.name, "stage input")).data,
               value.name});
          break;
        case Source::kRuntimeInput: {
          const auto& inputs = graph_.inputs();
          const int index = static_cast<int>(std::find(inputs.begin(), inputs.end(), v) -
                                             inputs.begin());
          plan_.runtime_inputs.push_back({Ref(v), index});
          break;
        }
        case Source::kNone:
        case Source::kProduced:
          break;
      }
    }
    if (options_.keep_graph_outputs) {
      for (ValueId v : graph_.outputs()) plan_.outputs.push_back(Ref(v));
    }
    return absl::OkStatus();
  }

  const graph::Graph& graph_;
  const std::vector<const Stage*>& stages_;
  const PlanOptions options_;

  std::vector<int> node_stage_, node_group_, node_index_;
  std::vector<ResidualFusions> fusions_;       // by stage
  std::vector<bool> elided_;                   // values a fusion never stores
  std::vector<int> def_stage_, last_use_;
  std::vector<Source> source_;
  std::vector<Alias> alias_;
  std::map<int, Shape> merged_shape_;          // by stage
  std::vector<int> merged_buffer_;             // synthetic index by stage, -1
  std::vector<int> merged_pad_buffer_;         // synthetic index by stage, -1
  std::map<NodeId, int> pad_buffer_;           // synthetic index by conv node
  std::vector<Synthetic> synthetics_;
  std::vector<int> synthetic_buffer_;          // plan buffer of each synthetic
  std::map<ValueId, int> value_buffer_;        // plan buffer of each root value
  std::map<ValueId, Location> location_;
  ExecutionPlan plan_;
};

}  // namespace

StatusOr<ExecutionPlan> BuildExecutionPlan(const graph::Graph& graph,
                                           const std::vector<const Stage*>& stages,
                                           const PlanOptions& options) {
  ASSIGN_OR_RETURN(ExecutionPlan plan, PlanBuilder(graph, stages, options).Build());
  RETURN_IF_ERROR(CheckPlanHazards(plan));
  return plan;
}

}  // namespace iosfarm::worker::cuda
