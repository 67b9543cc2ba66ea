// Pass 5 of BuildExecutionPlan (plan_passes.h): the steps of every stage
// (convolutions in plan_conv_steps.cc).
#include "worker/backends/cuda/planner/plan_passes.h"

#include <algorithm>
#include <cmath>
#include <variant>

#include "common/strings.h"
#include "graph/op_type.h"

namespace iosfarm::worker::cuda::planning {
namespace {

// beta * C broadcast to [m, n] (C has rank <= 2, numpy broadcasting).
std::vector<float> BroadcastBias(const graph::Tensor& c, float beta, const Shape& y) {
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

void EmitConcat(PlanState& st, const graph::Node& node, std::vector<Step>& steps) {
  const ValueId out = node.outputs[0];
  const Shape& y = st.graph.value(out).shape;
  const auto& a = std::get<graph::ConcatAttrs>(node.attrs);
  const size_t axis = static_cast<size_t>(NormalizeAxis(a.axis, y.size()));
  const int64_t outer = Product(y, 0, axis);
  const int64_t out_row = Product(y, axis, y.size());
  int64_t offset = 0;  // within one row of the output
  for (ValueId v : node.inputs) {
    const Shape& x = st.graph.value(v).shape;
    const int64_t row = Product(x, axis, x.size());
    const bool in_place = st.alias[v].kind == Alias::kValue && st.alias[v].target == out &&
                          st.alias[v].offset == offset;
    if (!in_place) {
      Step copy;
      copy.kind = StepKind::kCopyRows;
      copy.inputs = {st.Ref(v)};
      copy.outputs = {st.Ref(out)};
      copy.copy = {outer, row, 0, row, offset, out_row};
      copy.label = StrCat(node.name, " (input '", st.graph.value(v).name, "')");
      steps.push_back(std::move(copy));
    }
    offset += row;
  }
}

void EmitSplit(PlanState& st, const graph::Node& node, std::vector<Step>& steps) {
  const ValueId in = node.inputs[0];
  const Shape& x = st.graph.value(in).shape;
  const auto& a = std::get<graph::SplitAttrs>(node.attrs);
  const size_t axis = static_cast<size_t>(NormalizeAxis(a.axis, x.size()));
  const int64_t outer = Product(x, 0, axis);
  const int64_t in_row = Product(x, axis, x.size());
  const int64_t inner = Product(x, axis + 1, x.size());
  int64_t offset = 0;
  for (size_t i = 0; i < node.outputs.size(); ++i) {
    const ValueId out = node.outputs[i];
    const int64_t row = a.sizes[i] * inner;
    if (st.alias[out].kind != Alias::kValue || st.alias[out].target != in) {
      Step copy;
      copy.kind = StepKind::kCopyRows;
      copy.inputs = {st.Ref(in)};
      copy.outputs = {st.Ref(out)};
      copy.copy = {outer, row, offset, in_row, 0, row};
      copy.label = StrCat(node.name, " (output ", i, ")");
      steps.push_back(std::move(copy));
    }
    offset += row;
  }
}

Status EmitNode(PlanState& st, NodeId id, std::vector<Step>& steps) {
  const graph::Node& node = st.graph.node(id);
  if (node.type == OpType::kConstant || IsViewOp(node.type)) return absl::OkStatus();
  const ResidualFusions& fusions = st.fusions[st.node_stage[id]];
  if (fusions.Absorbed(id)) return absl::OkStatus();  // runs at its Add
  if (const ResidualFusion* f = fusions.AtAdd(id)) return EmitResidualConv(st, *f, steps);
  Step step;
  step.op = node.type;
  step.attrs = node.attrs;
  step.label = node.name;
  for (ValueId v : node.inputs) step.inputs.push_back(st.Ref(v));
  for (ValueId v : node.outputs) step.outputs.push_back(st.Ref(v));
  switch (node.type) {
    case OpType::kConv:
      return EmitConvNode(st, id, step.inputs[0], step.outputs[0], steps);
    case OpType::kMaxPool:
    case OpType::kAveragePool:
      step.kind = StepKind::kPool;
      break;
    case OpType::kGlobalAveragePool:
    case OpType::kGlobalMaxPool:
      step.kind = StepKind::kGlobalPool;
      break;
    IOSFARM_ACTIVATION_OP_CASES:
      step.kind = StepKind::kUnary;
      break;
    case OpType::kAdd:
    case OpType::kSub:
    case OpType::kMul:
    case OpType::kDiv:
      step.kind = StepKind::kBinary;
      break;
    case OpType::kConcat:
      EmitConcat(st, node, steps);
      return absl::OkStatus();
    case OpType::kSplit:
      EmitSplit(st, node, steps);
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
    case OpType::kResize:
      step.kind = StepKind::kResize;
      break;
    case OpType::kConvTranspose: {
      step.kind = StepKind::kConvTranspose;
      ASSIGN_OR_RETURN(const WeightRef w, st.AddNodeWeight(node, "W"));
      step.weights = {w};
      if (std::get<graph::ConvTransposeAttrs>(node.attrs).has_bias) {
        ASSIGN_OR_RETURN(const WeightRef b, st.AddNodeWeight(node, "B"));
        step.weights.push_back(b);
      }
      break;
    }
    case OpType::kTranspose:
      step.kind = StepKind::kTranspose;
      break;
    IOSFARM_REDUCE_OP_CASES : {
      step.kind = StepKind::kReduce;
      auto a = std::get<graph::ReduceAttrs>(node.attrs);
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
      ASSIGN_OR_RETURN(graph::Tensor scale, st.NodeWeight(node, "scale"));
      ASSIGN_OR_RETURN(graph::Tensor bias, st.NodeWeight(node, "bias"));
      ASSIGN_OR_RETURN(graph::Tensor mean, st.NodeWeight(node, "mean"));
      ASSIGN_OR_RETURN(graph::Tensor var, st.NodeWeight(node, "var"));
      const size_t c = scale.data.size();
      std::vector<float> mul(c), add(c);
      for (size_t i = 0; i < c; ++i) {
        const double inv_std = 1.0 / std::sqrt(static_cast<double>(var.data[i]) + a.epsilon);
        const double m = inv_std * scale.data[i];
        mul[i] = static_cast<float>(m);
        add[i] = static_cast<float>(bias.data[i] - mean.data[i] * m);
      }
      step.weights = {st.AddWeight(scale.shape, mul), st.AddWeight(scale.shape, add)};
      break;
    }
    case OpType::kGemm: {
      step.kind = StepKind::kGemm;
      const auto& a = std::get<graph::GemmAttrs>(node.attrs);
      ASSIGN_OR_RETURN(const WeightRef b, st.AddNodeWeight(node, "B"));
      step.weights = {b};
      if (node.weights.count("C") != 0) {
        ASSIGN_OR_RETURN(graph::Tensor c, st.NodeWeight(node, "C"));
        step.weights.push_back(
            st.AddWeight(step.outputs[0].shape, BroadcastBias(c, a.beta, step.outputs[0].shape)));
      }
      break;
    }
    case OpType::kMatMul:
      step.kind = StepKind::kMatMul;
      if (node.inputs.size() == 1) {
        ASSIGN_OR_RETURN(const WeightRef b, st.AddNodeWeight(node, "B"));
        step.weights = {b};
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

}  // namespace

Status EmitStages(PlanState& st) {
  for (int s = 0; s < st.num_stages(); ++s) {
    const Stage& stage = *st.stages[s];
    StageProgram program;
    program.label = scheduler::ios::StageToString(st.graph, stage);
    if (stage.strategy == Strategy::kMerge) {
      program.groups.emplace_back();
      RETURN_IF_ERROR(EmitMerge(st, s, program.groups.back().steps));
    } else {
      for (const auto& group : stage.groups) {
        program.groups.emplace_back();
        for (NodeId id : group) RETURN_IF_ERROR(EmitNode(st, id, program.groups.back().steps));
      }
    }
    st.plan.stages.push_back(std::move(program));
  }
  return absl::OkStatus();
}

}  // namespace iosfarm::worker::cuda::planning
