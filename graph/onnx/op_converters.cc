// Layer ops: convolution, pooling, activations, element-wise arithmetic,
// Gemm/MatMul, BatchNormalization, Identity/Dropout; plus the dispatch.
#include "graph/onnx/op_converters.h"

#include <cmath>
#include <limits>
#include <map>
#include <set>
#include <string>

#include "graph/onnx/shape_helpers.h"

namespace iosfarm::graph::onnx_import {
namespace converters_internal {

Status CheckArity(const NodeView& node, const ImportContext& ctx, int min_inputs, int max_inputs,
                  int outputs) {
  if (node.num_inputs() < min_inputs || node.num_inputs() > max_inputs) {
    return node.Errorf(
        "has ", node.num_inputs(), " inputs, expected ",
        min_inputs == max_inputs ? StrCat(min_inputs) : StrCat(min_inputs, " to ", max_inputs));
  }
  if (node.num_outputs() < outputs) {
    return node.Errorf("has ", node.num_outputs(), " outputs, expected ", outputs);
  }
  for (int i = outputs; i < node.num_outputs(); ++i) {
    if (!node.output(i).empty() && ctx.IsUsed(node.output(i))) {
      return node.Errorf("output ", i, " ('", node.output(i), "') is not supported");
    }
  }
  return absl::OkStatus();
}

StatusOr<std::array<int64_t, 2>> SpatialPair(const NodeView& node, std::string_view name,
                                             int64_t default_value) {
  ASSIGN_OR_RETURN(auto values, node.GetIntsOfSize(name, 2));
  if (!values.has_value()) return std::array<int64_t, 2>{default_value, default_value};
  return std::array<int64_t, 2>{(*values)[0], (*values)[1]};
}

Status CheckKernelShape(const NodeView& node, const ConstTensor& w) {
  ASSIGN_OR_RETURN(auto kernel_shape, node.GetIntsOfSize("kernel_shape", 2));
  if (kernel_shape.has_value() &&
      ((*kernel_shape)[0] != w.dims[2] || (*kernel_shape)[1] != w.dims[3])) {
    return node.Errorf("attribute 'kernel_shape' does not match weight 'W' of shape ",
                       ShapeToString(w.dims));
  }
  return absl::OkStatus();
}

}  // namespace converters_internal

namespace {

using converters_internal::CheckArity;
using converters_internal::CheckKernelShape;
using converters_internal::SpatialPair;

StatusOr<Tensor> Weight(const NodeView& node, ImportContext& ctx, const ConstPtr& constant,
                        std::string_view role) {
  if (!constant->is_float()) {
    return node.Errorf("weight '", role, "' must be floating point, got ",
                       ConstKindName(constant->kind));
  }
  return ctx.WeightTensor(node, *constant, role);
}

StatusOr<ValueId> Rank4Input(const NodeView& node, ImportContext& ctx, std::string_view what) {
  ASSIGN_OR_RETURN(ValueId x, ctx.ActivationInput(node, 0));
  const Shape& shape = ctx.ShapeOf(x);
  if (shape.size() != 4) {
    return node.Errorf("only 2-D ", what, " on 4-D NCHW input is supported, input has shape ",
                       ShapeToString(shape));
  }
  return x;
}

Status ConvertConv(const NodeView& node, ImportContext& ctx) {
  RETURN_IF_ERROR(CheckArity(node, ctx, 2, 3, 1));
  ASSIGN_OR_RETURN(ValueId x, Rank4Input(node, ctx, "convolution"));
  ASSIGN_OR_RETURN(ConstPtr w, ctx.ConstantInput(node, 1, "W"));
  ASSIGN_OR_RETURN(ConstPtr b, ctx.OptionalConstantInput(node, 2, "B"));
  if (w->rank() != 4) {
    return node.Errorf("weight 'W' must be 4-D, got shape ", ShapeToString(w->dims));
  }
  ConvAttrs attrs;
  attrs.out_channels = w->dims[0];
  attrs.kernel = {w->dims[2], w->dims[3]};
  RETURN_IF_ERROR(CheckKernelShape(node, *w));
  ASSIGN_OR_RETURN(attrs.stride, SpatialPair(node, "strides", 1));
  ASSIGN_OR_RETURN(attrs.dilation, SpatialPair(node, "dilations", 1));
  ASSIGN_OR_RETURN(attrs.groups, node.GetInt("group", 1));
  if (attrs.groups < 1) return node.Errorf("attribute 'group' must be >= 1, got ", attrs.groups);
  ASSIGN_OR_RETURN(std::string auto_pad, node.GetString("auto_pad", "NOTSET"));
  ASSIGN_OR_RETURN(auto pads, node.GetInts("pads"));
  const Shape& in = ctx.ShapeOf(x);
  ASSIGN_OR_RETURN(attrs.pads, ResolveWindowPads(node, auto_pad, {in[2], in[3]}, attrs.kernel,
                                                 attrs.stride, attrs.dilation, pads));
  std::map<std::string, Tensor> weights;
  ASSIGN_OR_RETURN(weights["W"], Weight(node, ctx, w, "W"));
  if (b != nullptr) {
    attrs.has_bias = true;
    ASSIGN_OR_RETURN(weights["B"], Weight(node, ctx, b, "B"));
  }
  return ctx.AddNode(node, OpType::kConv, attrs, {x}, std::move(weights)).status();
}

Status ConvertPool(const NodeView& node, ImportContext& ctx, OpType type) {
  RETURN_IF_ERROR(CheckArity(node, ctx, 1, 1, 1));
  ASSIGN_OR_RETURN(ValueId x, Rank4Input(node, ctx, "pooling"));
  ASSIGN_OR_RETURN(auto kernel, node.GetIntsOfSize("kernel_shape", 2));
  if (!kernel.has_value()) return node.Error("missing attribute 'kernel_shape'");
  ASSIGN_OR_RETURN(auto dilations, node.GetInts("dilations"));
  if (dilations.has_value()) {
    for (int64_t d : *dilations) {
      if (d != 1) return node.Errorf("dilations other than 1 are not supported (got ", d, ")");
    }
  }
  PoolAttrs attrs;
  attrs.kernel = {(*kernel)[0], (*kernel)[1]};
  ASSIGN_OR_RETURN(attrs.stride, SpatialPair(node, "strides", 1));
  ASSIGN_OR_RETURN(int64_t ceil_mode, node.GetInt("ceil_mode", 0));
  attrs.ceil_mode = ceil_mode != 0;
  if (type == OpType::kAveragePool) {
    ASSIGN_OR_RETURN(int64_t include, node.GetInt("count_include_pad", 0));
    attrs.count_include_pad = include != 0;
  }
  ASSIGN_OR_RETURN(std::string auto_pad, node.GetString("auto_pad", "NOTSET"));
  ASSIGN_OR_RETURN(auto pads, node.GetInts("pads"));
  const Shape& in = ctx.ShapeOf(x);
  ASSIGN_OR_RETURN(attrs.pads, ResolveWindowPads(node, auto_pad, {in[2], in[3]}, attrs.kernel,
                                                 attrs.stride, {1, 1}, pads));
  return ctx.AddNode(node, type, attrs, {x}).status();
}

// Ops with one activation input, one output and no attributes we keep.
Status ConvertUnary(const NodeView& node, ImportContext& ctx, OpType type) {
  RETURN_IF_ERROR(CheckArity(node, ctx, 1, 1, 1));
  ASSIGN_OR_RETURN(ValueId x, ctx.ActivationInput(node, 0));
  return ctx.AddNode(node, type, DefaultAttributes(type), {x}).status();
}

Status ConvertHardSigmoid(const NodeView& node, ImportContext& ctx) {
  RETURN_IF_ERROR(CheckArity(node, ctx, 1, 1, 1));
  ASSIGN_OR_RETURN(ValueId x, ctx.ActivationInput(node, 0));
  HardSigmoidAttrs attrs;
  ASSIGN_OR_RETURN(attrs.alpha, node.GetFloat("alpha", 0.2f));
  ASSIGN_OR_RETURN(attrs.beta, node.GetFloat("beta", 0.5f));
  return ctx.AddNode(node, OpType::kHardSigmoid, attrs, {x}).status();
}

Status ConvertClip(const NodeView& node, ImportContext& ctx) {
  RETURN_IF_ERROR(CheckArity(node, ctx, 1, 3, 1));
  ASSIGN_OR_RETURN(ValueId x, ctx.ActivationInput(node, 0));
  ClipAttrs attrs;
  ASSIGN_OR_RETURN(ConstPtr min, ctx.OptionalConstantInput(node, 1, "min"));
  ASSIGN_OR_RETURN(ConstPtr max, ctx.OptionalConstantInput(node, 2, "max"));
  if (min != nullptr) {
    ASSIGN_OR_RETURN(double v, ToScalar(*min, node.Label() + " input 'min'"));
    attrs.min = static_cast<float>(v);
  }
  if (max != nullptr) {
    ASSIGN_OR_RETURN(double v, ToScalar(*max, node.Label() + " input 'max'"));
    attrs.max = static_cast<float>(v);
  }
  if (std::isnan(attrs.min) || std::isnan(attrs.max) || attrs.min > attrs.max) {
    return node.Errorf("min ", attrs.min, " and max ", attrs.max, " do not form a range");
  }
  return ctx.AddNode(node, OpType::kClip, attrs, {x}).status();
}

Status ConvertBinary(const NodeView& node, ImportContext& ctx, OpType type) {
  RETURN_IF_ERROR(CheckArity(node, ctx, 2, 2, 1));
  ASSIGN_OR_RETURN(ValueId a, ctx.ActivationInput(node, 0));
  ASSIGN_OR_RETURN(ValueId b, ctx.ActivationInput(node, 1));
  return ctx.AddNode(node, type, NoAttrs{}, {a, b}).status();
}

Status ConvertGemm(const NodeView& node, ImportContext& ctx) {
  RETURN_IF_ERROR(CheckArity(node, ctx, 2, 3, 1));
  ASSIGN_OR_RETURN(ValueId a, ctx.ActivationInput(node, 0));
  ASSIGN_OR_RETURN(ConstPtr b, ctx.ConstantInput(node, 1, "B"));
  ASSIGN_OR_RETURN(ConstPtr c, ctx.OptionalConstantInput(node, 2, "C"));
  GemmAttrs attrs;
  ASSIGN_OR_RETURN(attrs.alpha, node.GetFloat("alpha", 1.0f));
  ASSIGN_OR_RETURN(attrs.beta, node.GetFloat("beta", 1.0f));
  ASSIGN_OR_RETURN(int64_t trans_a, node.GetInt("transA", 0));
  ASSIGN_OR_RETURN(int64_t trans_b, node.GetInt("transB", 0));
  attrs.trans_a = trans_a != 0;
  attrs.trans_b = trans_b != 0;
  std::map<std::string, Tensor> weights;
  ASSIGN_OR_RETURN(weights["B"], Weight(node, ctx, b, "B"));
  if (c != nullptr) {
    ASSIGN_OR_RETURN(weights["C"], Weight(node, ctx, c, "C"));
  }
  return ctx.AddNode(node, OpType::kGemm, attrs, {a}, std::move(weights)).status();
}

Status ConvertMatMul(const NodeView& node, ImportContext& ctx) {
  RETURN_IF_ERROR(CheckArity(node, ctx, 2, 2, 1));
  ASSIGN_OR_RETURN(ValueId a, ctx.ActivationInput(node, 0));
  if (ctx.IsConstant(node.input(1))) {
    ASSIGN_OR_RETURN(ConstPtr b, ctx.ConstantInput(node, 1, "B"));
    std::map<std::string, Tensor> weights;
    ASSIGN_OR_RETURN(weights["B"], Weight(node, ctx, b, "B"));
    return ctx.AddNode(node, OpType::kMatMul, NoAttrs{}, {a}, std::move(weights)).status();
  }
  ASSIGN_OR_RETURN(ValueId b, ctx.ActivationInput(node, 1));
  return ctx.AddNode(node, OpType::kMatMul, NoAttrs{}, {a, b}).status();
}

// Whether an Einsum equation is a MatMul: "<P>ij,<P>jk-><P>ik" or
// "<P>ij,jk-><P>ik", with P batch letters (or "...") and i, j, k three
// letters not in P; `a_rank` is the number of letters the first term needs.
bool IsMatMulEquation(std::string equation, size_t& a_rank) {
  std::erase(equation, ' ');
  const size_t comma = equation.find(',');
  const size_t arrow = equation.find("->");
  if (comma == std::string::npos || arrow == std::string::npos || arrow < comma) return false;
  std::string a = equation.substr(0, comma);
  std::string b = equation.substr(comma + 1, arrow - comma - 1);
  std::string out = equation.substr(arrow + 2);
  auto strip = [](std::string& term) {
    const bool ellipsis = term.starts_with("...");
    if (ellipsis) term = "." + term.substr(3);  // one letter for the batch axes
    return ellipsis;
  };
  const bool ellipsis = strip(a);
  strip(b);
  strip(out);
  if (a.size() < 2 || b.size() < 2 || out.size() != a.size()) return false;
  const std::string batch = a.substr(0, a.size() - 2);
  const char i = a[a.size() - 2], j = a.back(), k = b.back();
  if (b.size() != 2 && b != batch + j + k) return false;
  if (b.size() == 2 && b[0] != j) return false;
  if (out != batch + i + k || i == j || j == k || i == k) return false;
  for (const char c : {i, j, k}) {
    if (c == '.' || batch.find(c) != std::string::npos) return false;
  }
  if (std::set<char>(batch.begin(), batch.end()).size() != batch.size()) return false;
  a_rank = ellipsis ? 0 : a.size();
  return true;
}

Status ConvertEinsum(const NodeView& node, ImportContext& ctx) {
  RETURN_IF_ERROR(CheckArity(node, ctx, 2, 2, 1));
  ASSIGN_OR_RETURN(std::string equation, node.GetString("equation", ""));
  size_t a_rank = 0;
  if (!IsMatMulEquation(equation, a_rank)) {
    return node.Errorf("equation '", equation,
                       "' is not supported: only an Einsum that is a MatMul ('bij,bjk->bik', "
                       "'...ij,jk->...ik') is");
  }
  ASSIGN_OR_RETURN(ValueId a, ctx.ActivationInput(node, 0));
  if (a_rank != 0 && ctx.ShapeOf(a).size() != a_rank) {
    return node.Errorf("equation '", equation, "' names ", a_rank, " axes of input 0 of shape ",
                       ShapeToString(ctx.ShapeOf(a)));
  }
  return ConvertMatMul(node, ctx);
}

Status ConvertBatchNorm(const NodeView& node, ImportContext& ctx) {
  ASSIGN_OR_RETURN(int64_t training, node.GetInt("training_mode", 0));
  int outputs = 0;
  for (int i = 0; i < node.num_outputs(); ++i) outputs += node.output(i).empty() ? 0 : 1;
  if (training != 0 || outputs > 1) {
    return node.Error(
        "training-mode node (training_mode=1 or running statistics outputs) "
        "is not supported");
  }
  RETURN_IF_ERROR(CheckArity(node, ctx, 5, 5, 1));
  ASSIGN_OR_RETURN(ValueId x, ctx.ActivationInput(node, 0));
  BatchNormAttrs attrs;
  ASSIGN_OR_RETURN(attrs.epsilon, node.GetFloat("epsilon", 1e-5f));
  std::map<std::string, Tensor> weights;
  const char* roles[] = {"scale", "bias", "mean", "var"};
  for (int i = 0; i < 4; ++i) {
    ASSIGN_OR_RETURN(ConstPtr w, ctx.ConstantInput(node, i + 1, roles[i]));
    ASSIGN_OR_RETURN(weights[roles[i]], Weight(node, ctx, w, roles[i]));
  }
  return ctx.AddNode(node, OpType::kBatchNormalization, attrs, {x}, std::move(weights)).status();
}

Status ConvertDropout(const NodeView& node, ImportContext& ctx) {
  RETURN_IF_ERROR(CheckArity(node, ctx, 1, 3, 1));
  ASSIGN_OR_RETURN(ValueId x, ctx.ActivationInput(node, 0));
  ASSIGN_OR_RETURN(ConstPtr training, ctx.OptionalConstantInput(node, 2, "training_mode"));
  if (training != nullptr) {
    ASSIGN_OR_RETURN(double mode, ToScalar(*training, node.Label() + " input 'training_mode'"));
    if (mode != 0.0) return node.Error("training-mode node is not supported");
  }
  return ctx.AddNode(node, OpType::kDropout, NoAttrs{}, {x}).status();
}

using Converter = Status (*)(const NodeView&, ImportContext&);

template <OpType kType>
Status Unary(const NodeView& node, ImportContext& ctx) {
  return ConvertUnary(node, ctx, kType);
}
template <OpType kType>
Status Binary(const NodeView& node, ImportContext& ctx) {
  return ConvertBinary(node, ctx, kType);
}
template <OpType kType>
Status Pool(const NodeView& node, ImportContext& ctx) {
  return ConvertPool(node, ctx, kType);
}
template <OpType kType>
Status Reduce(const NodeView& node, ImportContext& ctx) {
  return converters_internal::ConvertReduce(node, ctx, kType);
}
template <UnaryFunction kFunction>
Status UnaryMath(const NodeView& node, ImportContext& ctx) {
  return converters_internal::ConvertUnaryMath(node, ctx, kFunction);
}

const std::map<std::string_view, Converter>& Converters() {
  namespace ci = converters_internal;
  static const auto* const kConverters = new std::map<std::string_view, Converter>{
      {"Conv", ConvertConv},
      {"ConvTranspose", ci::ConvertConvTranspose},
      {"MaxPool", Pool<OpType::kMaxPool>},
      {"AveragePool", Pool<OpType::kAveragePool>},
      {"GlobalAveragePool", Unary<OpType::kGlobalAveragePool>},
      {"GlobalMaxPool", Unary<OpType::kGlobalMaxPool>},
      {"Relu", Unary<OpType::kRelu>},
      {"Sigmoid", Unary<OpType::kSigmoid>},
      {"Tanh", Unary<OpType::kTanh>},
      {"HardSwish", Unary<OpType::kHardSwish>},
      {"Identity", Unary<OpType::kIdentity>},
      {"HardSigmoid", ConvertHardSigmoid},
      {"Clip", ConvertClip},
      {"Add", Binary<OpType::kAdd>},
      {"Sub", Binary<OpType::kSub>},
      {"Mul", Binary<OpType::kMul>},
      {"Div", Binary<OpType::kDiv>},
      {"Gemm", ConvertGemm},
      {"MatMul", ConvertMatMul},
      {"Einsum", ConvertEinsum},
      {"BatchNormalization", ConvertBatchNorm},
      {"Dropout", ConvertDropout},
      {"Concat", ci::ConvertConcat},
      {"Split", ci::ConvertSplit},
      {"Slice", ci::ConvertSlice},
      {"Pad", ci::ConvertPad},
      {"Reshape", ci::ConvertReshape},
      {"Flatten", ci::ConvertFlatten},
      {"Transpose", ci::ConvertTranspose},
      {"Squeeze", ci::ConvertSqueezeOrUnsqueeze},
      {"Unsqueeze", ci::ConvertSqueezeOrUnsqueeze},
      {"ReduceMean", Reduce<OpType::kReduceMean>},
      {"ReduceSum", Reduce<OpType::kReduceSum>},
      {"ReduceMax", Reduce<OpType::kReduceMax>},
      {"ReduceMin", Reduce<OpType::kReduceMin>},
      {"Softmax", ci::ConvertSoftmax},
      {"Cast", ci::ConvertCast},
      {"Resize", ci::ConvertResize},
      {"PRelu", ci::ConvertPRelu},
      {"InstanceNormalization", ci::ConvertInstanceNormalization},
      {"LayerNormalization", ci::ConvertLayerNormalization},
      {"LeakyRelu", UnaryMath<UnaryFunction::kLeakyRelu>},
      {"Elu", UnaryMath<UnaryFunction::kElu>},
      {"Selu", UnaryMath<UnaryFunction::kSelu>},
      {"Softplus", UnaryMath<UnaryFunction::kSoftplus>},
      {"Mish", UnaryMath<UnaryFunction::kMish>},
      {"Erf", UnaryMath<UnaryFunction::kErf>},
      {"Sqrt", UnaryMath<UnaryFunction::kSqrt>},
      {"Exp", UnaryMath<UnaryFunction::kExp>},
      {"Log", UnaryMath<UnaryFunction::kLog>},
      {"Neg", UnaryMath<UnaryFunction::kNeg>},
      {"Abs", UnaryMath<UnaryFunction::kAbs>},
      {"Reciprocal", UnaryMath<UnaryFunction::kReciprocal>},
      {"Pow", UnaryMath<UnaryFunction::kPow>},
  };
  return *kConverters;
}

// What to use instead of an operator the importer does not convert, or
// why there is none ("" when there is nothing more to say).
std::string UnsupportedOpHint(std::string_view op) {
  static const auto* const kHints = new std::map<std::string_view, std::string_view>{
      {"Upsample",
       "; it is an operator of opsets 7 to 9: export at opset 11 to 17, where it is "
       "Resize"},
      {"GroupNormalization",
       "; export at opset 17 or lower, where torch writes GroupNorm as "
       "InstanceNormalization, which is supported"},
      {"Attention",
       "; attention-based networks (Transformers) are out of scope: iosfarm "
       "schedules CNNs"},
      {"MultiHeadAttention",
       "; attention-based networks (Transformers) are out of scope: "
       "iosfarm schedules CNNs"},
  };
  auto it = kHints->find(op);
  return it == kHints->end() ? std::string() : std::string(it->second);
}

}  // namespace

bool HasConverter(std::string_view op_type) { return Converters().count(op_type) > 0; }

Status ConvertNode(const NodeView& node, ImportContext& ctx) {
  auto it = Converters().find(node.op_type());
  if (it == Converters().end()) {
    return node.Errorf("unsupported op type '", node.op_type(), "'",
                       UnsupportedOpHint(node.op_type()));
  }
  return it->second(node, ctx);
}

}  // namespace iosfarm::graph::onnx_import
