// Pass 5 of BuildExecutionPlan (plan_passes.h): convolution steps (plain,
// merged, with a fused residual Add) and explicit padding.
#include "worker/backends/cuda/planner/plan_passes.h"

#include <variant>

#include "common/strings.h"
#include "worker/backends/merged_conv_weights.h"

namespace iosfarm::worker::cuda::planning {

// Appends a conv step reading x (through an explicit pad when needed) and,
// when given, the residual z.
void EmitConv(PlanState& st, graph::ConvAttrs attrs, const TensorRef& x, const TensorRef& y,
              WeightRef w, std::optional<WeightRef> bias, int pad_synthetic,
              const std::string& label, std::vector<Step>& steps,
              const std::optional<TensorRef>& residual) {
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
    input = {st.synthetic_buffer[pad_synthetic],
             0,
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
  if (!bias.has_value() && (attrs.activation == graph::Activation::kRelu || residual.has_value())) {
    bias = st.AddWeight({attrs.out_channels},
                        std::vector<float>(static_cast<size_t>(attrs.out_channels), 0.0f));
  }
  if (bias.has_value()) conv.weights.push_back(*bias);
  conv.attrs = attrs;
  conv.label = label;
  steps.push_back(std::move(conv));
}

Status EmitMerge(PlanState& st, int s, std::vector<Step>& steps) {
  const scheduler::ios::MergedConv& merged = *st.stages[s]->merged;
  auto weights = AssembleMergedConvWeights(st.graph, merged);
  if (!weights.ok()) return st.StageError(s, ToStd(weights.status().message()));
  const WeightRef w = st.AddWeight(weights->weight.shape, weights->weight.data);
  std::optional<WeightRef> bias;
  if (merged.attrs.has_bias) bias = st.AddWeight(weights->bias.shape, weights->bias.data);
  const Shape& y_shape = st.merged_shape.at(s);
  const TensorRef y{st.synthetic_buffer[st.merged_buffer[s]], 0, y_shape};
  const std::string label = scheduler::ios::StageToString(st.graph, *st.stages[s]);
  EmitConv(st, merged.attrs, st.Ref(merged.input), y, w, bias, st.merged_pad_buffer[s], label,
           steps);
  const int64_t plane = y_shape[2] * y_shape[3];
  for (const auto& branch : merged.branches) {
    const ValueId out = st.graph.node(branch.op).outputs[0];
    const Location& loc = st.location.at(out);
    if (loc.buffer == y.buffer) continue;  // a view of the merged output
    Step copy;
    copy.kind = StepKind::kCopyRows;
    copy.inputs = {y};
    copy.outputs = {st.Ref(out)};
    const int64_t channels = branch.channel_end - branch.channel_begin;
    copy.copy = {y_shape[0], channels * plane, branch.channel_begin * plane, y_shape[1] * plane,
                 0,          channels * plane};
    copy.label = StrCat(st.graph.node(branch.op).name, " (merged branch)");
    steps.push_back(std::move(copy));
  }
  return absl::OkStatus();
}

namespace {

// Conv node `id` with attributes `a` (its own, or with the activation of a
// fused Relu), reading x [and the residual z], writing y.
Status EmitNodeConv(PlanState& st, NodeId id, const graph::ConvAttrs& a, const TensorRef& x,
                    const TensorRef& y, const std::string& label, std::vector<Step>& steps,
                    const std::optional<TensorRef>& residual = std::nullopt) {
  const graph::Node& node = st.graph.node(id);
  ASSIGN_OR_RETURN(const WeightRef w, st.AddNodeWeight(node, "W"));
  std::optional<WeightRef> bias;
  if (a.has_bias) {
    ASSIGN_OR_RETURN(bias, st.AddNodeWeight(node, "B"));
  }
  auto pad = st.pad_buffer.find(id);
  EmitConv(st, a, x, y, w, bias, pad == st.pad_buffer.end() ? -1 : pad->second, label, steps,
           residual);
  return absl::OkStatus();
}

}  // namespace

// The fused Conv + Add (+ Relu) of `f`, at the Add's position: y = act(
// conv(x) + B + z) with act the Relu's when fused, else none (the conv
// itself has no activation: residual_fusion.h).
Status EmitResidualConv(PlanState& st, const ResidualFusion& f, std::vector<Step>& steps) {
  const graph::Node& conv = st.graph.node(f.conv);
  graph::ConvAttrs a = std::get<graph::ConvAttrs>(conv.attrs);
  a.activation = f.relu != graph::kNoNode ? graph::Activation::kRelu : graph::Activation::kNone;
  std::string label = StrCat(conv.name, " + ", st.graph.node(f.add).name);
  if (f.relu != graph::kNoNode) label = StrCat(label, " + ", st.graph.node(f.relu).name);
  return EmitNodeConv(st, f.conv, a, st.Ref(conv.inputs[0]), st.Ref(f.output), label, steps,
                      st.Ref(f.residual));
}

Status EmitConvNode(PlanState& st, NodeId id, const TensorRef& x, const TensorRef& y,
                    std::vector<Step>& steps) {
  const graph::Node& node = st.graph.node(id);
  return EmitNodeConv(st, id, std::get<graph::ConvAttrs>(node.attrs), x, y, node.name, steps);
}

}  // namespace iosfarm::worker::cuda::planning
