#include "graph/graph_builder.h"

#include "common/strings.h"
#include "graph/shape_inference.h"

namespace iosfarm::graph {

std::string GraphBuilder::UniqueName(const std::string& name) {
  std::string unique = name;
  for (int n = 1; names_.count(unique) > 0; ++n) unique = StrCat(name, "_", n);
  names_.insert(unique);
  return unique;
}

ValueId GraphBuilder::Input(const std::string& name, Shape shape) {
  return graph_.AddInput(UniqueName(name), std::move(shape));
}

std::vector<ValueId> GraphBuilder::AddNode(OpType type, Attributes attrs,
                                           std::vector<ValueId> inputs,
                                           const std::string& name,
                                           std::map<std::string, Tensor> weights,
                                           int num_outputs) {
  Node node;
  node.name = UniqueName(name);
  node.type = type;
  node.attrs = std::move(attrs);
  node.inputs = std::move(inputs);
  node.weights = std::move(weights);
  std::vector<Shape> input_shapes;
  for (ValueId v : node.inputs) input_shapes.push_back(graph_.value(v).shape);
  StatusOr<std::vector<Shape>> shapes = InferNodeShapes(node, input_shapes);
  if (!shapes.ok() && status_.ok()) status_ = shapes.status();
  const int outputs = shapes.ok() ? static_cast<int>(shapes->size()) : num_outputs;
  const NodeId id = graph_.AddNode(std::move(node), outputs);
  std::vector<ValueId> result = graph_.node(id).outputs;
  if (shapes.ok()) {
    for (size_t i = 0; i < result.size(); ++i) {
      graph_.mutable_value(result[i]).shape = (*shapes)[i];
    }
  }
  return result;
}

ValueId GraphBuilder::Conv(ValueId x, const ConvSpec& spec, const std::string& name) {
  ConvAttrs a;
  a.out_channels = spec.out_channels;
  a.kernel = spec.kernel;
  a.stride = spec.stride;
  a.dilation = spec.dilation;
  a.pads = spec.pads[0] >= 0
               ? spec.pads
               : std::array<int64_t, 4>{spec.padding[0], spec.padding[1], spec.padding[0],
                                        spec.padding[1]};
  a.groups = spec.groups;
  a.has_bias = spec.bias;
  a.activation = spec.activation;
  a.clip_min = spec.clip_min;
  a.clip_max = spec.clip_max;
  const Shape& in = shape(x);
  const int64_t in_channels = in.size() == 4 ? in[1] : 0;
  std::map<std::string, Tensor> weights;
  weights["W"].shape = {spec.out_channels, spec.groups > 0 ? in_channels / spec.groups : 0,
                        spec.kernel[0], spec.kernel[1]};
  if (spec.bias) weights["B"].shape = {spec.out_channels};
  return AddNode(OpType::kConv, a, {x}, name, std::move(weights))[0];
}

ValueId GraphBuilder::MaxPool(ValueId x, std::array<int64_t, 2> kernel,
                              std::array<int64_t, 2> stride, std::array<int64_t, 4> pads,
                              const std::string& name, bool ceil_mode) {
  PoolAttrs a{kernel, stride, pads, ceil_mode, false};
  return AddNode(OpType::kMaxPool, a, {x}, name)[0];
}

ValueId GraphBuilder::AveragePool(ValueId x, std::array<int64_t, 2> kernel,
                                  std::array<int64_t, 2> stride, std::array<int64_t, 4> pads,
                                  bool count_include_pad, const std::string& name,
                                  bool ceil_mode) {
  PoolAttrs a{kernel, stride, pads, ceil_mode, count_include_pad};
  return AddNode(OpType::kAveragePool, a, {x}, name)[0];
}

ValueId GraphBuilder::GlobalAveragePool(ValueId x, const std::string& name) {
  return AddNode(OpType::kGlobalAveragePool, NoAttrs{}, {x}, name)[0];
}

ValueId GraphBuilder::Relu(ValueId x, const std::string& name) {
  return AddNode(OpType::kRelu, NoAttrs{}, {x}, name)[0];
}

ValueId GraphBuilder::Clip(ValueId x, float min, float max, const std::string& name) {
  return AddNode(OpType::kClip, ClipAttrs{min, max}, {x}, name)[0];
}

ValueId GraphBuilder::Sigmoid(ValueId x, const std::string& name) {
  return AddNode(OpType::kSigmoid, NoAttrs{}, {x}, name)[0];
}

ValueId GraphBuilder::HardSigmoid(ValueId x, float alpha, float beta,
                                  const std::string& name) {
  return AddNode(OpType::kHardSigmoid, HardSigmoidAttrs{alpha, beta}, {x}, name)[0];
}

ValueId GraphBuilder::HardSwish(ValueId x, const std::string& name) {
  return AddNode(OpType::kHardSwish, NoAttrs{}, {x}, name)[0];
}

ValueId GraphBuilder::UnaryMath(ValueId x, UnaryFunction function, const std::string& name,
                                float alpha, float beta) {
  return AddNode(OpType::kUnaryMath, UnaryMathAttrs{function, alpha, beta}, {x}, name)[0];
}

ValueId GraphBuilder::Tanh(ValueId x, const std::string& name) {
  return AddNode(OpType::kTanh, NoAttrs{}, {x}, name)[0];
}

ValueId GraphBuilder::Binary(OpType type, ValueId a, ValueId b, const std::string& name) {
  return AddNode(type, NoAttrs{}, {a, b}, name)[0];
}

ValueId GraphBuilder::Concat(const std::vector<ValueId>& xs, int64_t axis,
                             const std::string& name) {
  return AddNode(OpType::kConcat, ConcatAttrs{axis}, xs, name)[0];
}

std::vector<ValueId> GraphBuilder::Split(ValueId x, int64_t axis, std::vector<int64_t> sizes,
                                         const std::string& name) {
  const int n = static_cast<int>(sizes.size());
  return AddNode(OpType::kSplit, SplitAttrs{axis, std::move(sizes)}, {x}, name, {}, n);
}

ValueId GraphBuilder::Pad(ValueId x, std::vector<int64_t> pads, const std::string& name) {
  return AddNode(OpType::kPad, PadAttrs{std::move(pads), PadMode::kConstant, 0.0f}, {x},
                 name)[0];
}

ValueId GraphBuilder::Flatten(ValueId x, int64_t axis, const std::string& name) {
  return AddNode(OpType::kFlatten, FlattenAttrs{axis}, {x}, name)[0];
}

ValueId GraphBuilder::Reshape(ValueId x, std::vector<int64_t> shape, const std::string& name) {
  return AddNode(OpType::kReshape, ReshapeAttrs{std::move(shape)}, {x}, name)[0];
}

ValueId GraphBuilder::Transpose(ValueId x, std::vector<int64_t> perm, const std::string& name) {
  return AddNode(OpType::kTranspose, TransposeAttrs{std::move(perm)}, {x}, name)[0];
}

ValueId GraphBuilder::ReduceMean(ValueId x, std::vector<int64_t> axes, bool keepdims,
                                 const std::string& name) {
  return AddNode(OpType::kReduceMean, ReduceAttrs{std::move(axes), keepdims}, {x}, name)[0];
}

ValueId GraphBuilder::Linear(ValueId x, int64_t out_features, const std::string& name) {
  const Shape& in = shape(x);
  std::map<std::string, Tensor> weights;
  weights["B"].shape = {out_features, in.size() == 2 ? in[1] : 0};
  weights["C"].shape = {out_features};
  GemmAttrs a;
  a.trans_b = true;
  return AddNode(OpType::kGemm, a, {x}, name, std::move(weights))[0];
}

ValueId GraphBuilder::Softmax(ValueId x, int64_t axis, const std::string& name) {
  return AddNode(OpType::kSoftmax, SoftmaxAttrs{axis}, {x}, name)[0];
}

ValueId GraphBuilder::BatchNorm(ValueId x, const std::string& name) {
  const Shape& in = shape(x);
  const int64_t channels = in.size() >= 2 ? in[1] : 0;
  std::map<std::string, Tensor> weights;
  for (const char* role : {"scale", "bias", "mean", "var"}) weights[role].shape = {channels};
  return AddNode(OpType::kBatchNormalization, BatchNormAttrs{}, {x}, name,
                 std::move(weights))[0];
}

ValueId GraphBuilder::ConvTranspose(ValueId x, const ConvTransposeAttrs& attrs,
                                    const std::string& name) {
  const Shape& in = shape(x);
  std::map<std::string, Tensor> weights;
  weights["W"].shape = {in.size() == 4 ? in[1] : 0,
                        attrs.groups > 0 ? attrs.out_channels / attrs.groups : 0, attrs.kernel[0],
                        attrs.kernel[1]};
  if (attrs.has_bias) weights["B"].shape = {attrs.out_channels};
  return AddNode(OpType::kConvTranspose, attrs, {x}, name, std::move(weights))[0];
}

ValueId GraphBuilder::Resize(ValueId x, const ResizeAttrs& attrs, const std::string& name) {
  return AddNode(OpType::kResize, attrs, {x}, name)[0];
}

StatusOr<Graph> GraphBuilder::Finish() && {
  if (!status_.ok()) return status_;
  if (graph_.outputs().empty()) {
    return absl::InvalidArgumentError(
        StrCat("graph '", graph_.name(), "' has no outputs"));
  }
  return std::move(graph_);
}

}  // namespace iosfarm::graph
