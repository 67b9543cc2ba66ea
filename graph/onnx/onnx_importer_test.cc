// Importer tests on hand-built ONNX models: one per op converter, auto_pad,
// shape folding, Split at opset 11 and 13, batch override.
#include "graph/onnx/onnx_importer.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fstream>
#include <limits>

#include "graph/onnx/onnx_test_util.h"
#include "graph/serialize.h"

namespace iosfarm::graph::onnx_import {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using testing::OnnxModelBuilder;
using testing::SetAttr;

StatusOr<Graph> Import(const OnnxModelBuilder& builder, const OnnxImportOptions& options = {}) {
  return ImportOnnxBytes(builder.Serialize(), "test_model", options);
}

int CountNodes(const Graph& graph, OpType type) {
  int n = 0;
  for (const Node& node : graph.nodes()) n += node.type == type ? 1 : 0;
  return n;
}

const Node* FindNode(const Graph& graph, OpType type) {
  for (const Node& node : graph.nodes()) {
    if (node.type == type) return &node;
  }
  return nullptr;
}

const Shape& OutputShape(const Graph& graph, int i = 0) {
  return graph.value(graph.outputs()[i]).shape;
}

// x [1,3,8,8] -> Conv(W [4,3,3,3]) -> y, with extra conv attributes.
OnnxModelBuilder ConvModel(const std::vector<int64_t>& input_dims = {1, 3, 8, 8}) {
  OnnxModelBuilder b;
  b.Input("x", input_dims).Output("y").Weight("W", {4, 3, 3, 3}).Weight("B", {4});
  b.Node("Conv", {"x", "W", "B"}, {"y"}, "conv");
  return b;
}

TEST(OnnxImporterTest, ConvWithExplicitPadsKeepsWeights) {
  OnnxModelBuilder b = ConvModel();
  onnx::NodeProto& conv = *b.graph().mutable_node(0);
  SetAttr(conv, "pads", std::vector<int64_t>{1, 2, 0, 1});  // h_begin, w_begin, h_end, w_end
  SetAttr(conv, "strides", std::vector<int64_t>{1, 2});
  SetAttr(conv, "kernel_shape", std::vector<int64_t>{3, 3});
  auto graph = Import(b);
  ASSERT_TRUE(graph.ok()) << graph.status();
  EXPECT_EQ(graph->name(), "test_model");
  const Node* node = FindNode(*graph, OpType::kConv);
  ASSERT_NE(node, nullptr);
  const auto& attrs = std::get<ConvAttrs>(node->attrs);
  EXPECT_EQ(attrs.out_channels, 4);
  EXPECT_THAT(attrs.pads, ElementsAre(1, 2, 0, 1));  // top, left, bottom, right
  EXPECT_THAT(attrs.stride, ElementsAre(1, 2));
  EXPECT_TRUE(attrs.has_bias);
  const Tensor& w = node->weights.at("W");
  EXPECT_EQ(w.shape, (Shape{4, 3, 3, 3}));
  ASSERT_EQ(w.data.size(), 108u);
  EXPECT_FLOAT_EQ(w.data[5], 0.05f);
  EXPECT_EQ(OutputShape(*graph), (Shape{1, 4, 7, 5}));
}

struct AutoPadCase {
  const char* auto_pad;
  int64_t input;
  int64_t stride;
  std::array<int64_t, 4> pads;
  int64_t output;
};

class AutoPadTest : public ::testing::TestWithParam<AutoPadCase> {};

TEST_P(AutoPadTest, ResolvesExplicitPads) {
  const AutoPadCase& c = GetParam();
  OnnxModelBuilder b = ConvModel({1, 3, c.input, c.input});
  onnx::NodeProto& conv = *b.graph().mutable_node(0);
  SetAttr(conv, "auto_pad", c.auto_pad);
  SetAttr(conv, "strides", std::vector<int64_t>{c.stride, c.stride});
  auto graph = Import(b);
  ASSERT_TRUE(graph.ok()) << graph.status();
  const auto& attrs = std::get<ConvAttrs>(FindNode(*graph, OpType::kConv)->attrs);
  EXPECT_EQ(attrs.pads, c.pads);
  EXPECT_EQ(OutputShape(*graph), (Shape{1, 4, c.output, c.output}));
}

INSTANTIATE_TEST_SUITE_P(AllModes, AutoPadTest,
                         ::testing::Values(AutoPadCase{"NOTSET", 8, 1, {0, 0, 0, 0}, 6},
                                           AutoPadCase{"VALID", 8, 2, {0, 0, 0, 0}, 3},
                                           AutoPadCase{"SAME_UPPER", 8, 1, {1, 1, 1, 1}, 8},
                                           AutoPadCase{"SAME_UPPER", 8, 2, {0, 0, 1, 1}, 4},
                                           AutoPadCase{"SAME_LOWER", 8, 2, {1, 1, 0, 0}, 4},
                                           AutoPadCase{"SAME_UPPER", 7, 2, {1, 1, 1, 1}, 4}));

TEST(OnnxImporterTest, ConvBatchNormReluFoldsIntoOneConv) {
  OnnxModelBuilder b;
  b.Input("x", {1, 3, 8, 8}).Output("z").Weight("W", {4, 3, 1, 1});
  b.Weight("s", {4}, {1, 1, 1, 1})
      .Weight("bb", {4})
      .Weight("m", {4})
      .Weight("v", {4}, {1, 1, 1, 1});
  b.Node("Conv", {"x", "W"}, {"y"});
  b.Node("BatchNormalization", {"y", "s", "bb", "m", "v"}, {"bn"});
  b.Node("Relu", {"bn"}, {"z"});
  auto graph = Import(b);
  ASSERT_TRUE(graph.ok()) << graph.status();
  EXPECT_EQ(graph->num_nodes(), 1);
  const auto& attrs = std::get<ConvAttrs>(FindNode(*graph, OpType::kConv)->attrs);
  EXPECT_EQ(attrs.activation, Activation::kRelu);
  EXPECT_TRUE(attrs.has_bias);
  EXPECT_EQ(graph->value(graph->outputs()[0]).name, "z");
}

TEST(OnnxImporterTest, StandaloneBatchNormKeepsWeights) {
  OnnxModelBuilder b;
  b.Input("x", {1, 2, 4, 4}).Output("y");
  b.Weight("s", {2}).Weight("bb", {2}).Weight("m", {2}).Weight("v", {2}, {1, 2});
  onnx::NodeProto& bn = b.Node("BatchNormalization", {"x", "s", "bb", "m", "v"}, {"y"});
  SetAttr(bn, "epsilon", 1e-3f);
  auto graph = Import(b);
  ASSERT_TRUE(graph.ok()) << graph.status();
  const Node* node = FindNode(*graph, OpType::kBatchNormalization);
  ASSERT_NE(node, nullptr);
  EXPECT_FLOAT_EQ(std::get<BatchNormAttrs>(node->attrs).epsilon, 1e-3f);
  EXPECT_THAT(node->weights.at("var").data, ElementsAre(1.0f, 2.0f));
  EXPECT_EQ(node->weights.size(), 4u);
}

TEST(OnnxImporterTest, PoolsWithCeilModeAndCountIncludePad) {
  OnnxModelBuilder b;
  b.Input("x", {1, 2, 8, 8}).Output("a").Output("m").Output("g").Output("gm");
  onnx::NodeProto& avg = b.Node("AveragePool", {"x"}, {"a"});
  SetAttr(avg, "kernel_shape", std::vector<int64_t>{3, 3});
  SetAttr(avg, "strides", std::vector<int64_t>{2, 2});
  SetAttr(avg, "pads", std::vector<int64_t>{1, 1, 1, 1});
  SetAttr(avg, "count_include_pad", int64_t{1});
  onnx::NodeProto& max = b.Node("MaxPool", {"x"}, {"m"});
  SetAttr(max, "kernel_shape", std::vector<int64_t>{3, 3});
  SetAttr(max, "strides", std::vector<int64_t>{2, 2});
  SetAttr(max, "ceil_mode", int64_t{1});
  b.Node("GlobalAveragePool", {"x"}, {"g"});
  b.Node("GlobalMaxPool", {"x"}, {"gm"});
  auto graph = Import(b);
  ASSERT_TRUE(graph.ok()) << graph.status();
  const auto& a = std::get<PoolAttrs>(FindNode(*graph, OpType::kAveragePool)->attrs);
  EXPECT_TRUE(a.count_include_pad);
  EXPECT_THAT(a.pads, ElementsAre(1, 1, 1, 1));
  const auto& m = std::get<PoolAttrs>(FindNode(*graph, OpType::kMaxPool)->attrs);
  EXPECT_TRUE(m.ceil_mode);
  EXPECT_EQ(OutputShape(*graph, 0), (Shape{1, 2, 4, 4}));
  EXPECT_EQ(OutputShape(*graph, 1), (Shape{1, 2, 4, 4}));  // ceil((8-3)/2)+1
  EXPECT_EQ(OutputShape(*graph, 2), (Shape{1, 2, 1, 1}));
  EXPECT_EQ(OutputShape(*graph, 3), (Shape{1, 2, 1, 1}));
}

TEST(OnnxImporterTest, PoolDilationIsRejected) {
  OnnxModelBuilder b;
  b.Input("x", {1, 2, 8, 8}).Output("m");
  onnx::NodeProto& max = b.Node("MaxPool", {"x"}, {"m"}, "pool1");
  SetAttr(max, "kernel_shape", std::vector<int64_t>{3, 3});
  SetAttr(max, "dilations", std::vector<int64_t>{2, 2});
  auto graph = Import(b);
  ASSERT_FALSE(graph.ok());
  EXPECT_THAT(graph.status().message(), HasSubstr("pool1"));
  EXPECT_THAT(graph.status().message(), HasSubstr("dilations"));
}

TEST(OnnxImporterTest, ActivationsAndClipFromInputs) {
  OnnxModelBuilder b;
  b.Input("x", {1, 4}).Output("c").Output("hs").Output("hw").Output("s").Output("t");
  b.Node("Constant", {}, {"lo"});
  SetAttr(*b.graph().mutable_node(0), "value", testing::FloatTensor("", {}, {0.5f}));
  b.Weight("hi", {}, {6.0f});
  b.Node("Clip", {"x", "lo", "hi"}, {"c"});
  onnx::NodeProto& hs = b.Node("HardSigmoid", {"x"}, {"hs"});
  SetAttr(hs, "alpha", 0.25f);
  b.Node("HardSwish", {"x"}, {"hw"});
  b.Node("Sigmoid", {"x"}, {"s"});
  b.Node("Tanh", {"x"}, {"t"});
  auto graph = Import(b);
  ASSERT_TRUE(graph.ok()) << graph.status();
  const auto& clip = std::get<ClipAttrs>(FindNode(*graph, OpType::kClip)->attrs);
  EXPECT_FLOAT_EQ(clip.min, 0.5f);
  EXPECT_FLOAT_EQ(clip.max, 6.0f);
  const auto& hard = std::get<HardSigmoidAttrs>(FindNode(*graph, OpType::kHardSigmoid)->attrs);
  EXPECT_FLOAT_EQ(hard.alpha, 0.25f);
  EXPECT_FLOAT_EQ(hard.beta, 0.5f);
  EXPECT_EQ(CountNodes(*graph, OpType::kHardSwish), 1);
  EXPECT_EQ(CountNodes(*graph, OpType::kSigmoid), 1);
  EXPECT_EQ(CountNodes(*graph, OpType::kTanh), 1);
}

TEST(OnnxImporterTest, ClipWithoutBoundsIsUnbounded) {
  OnnxModelBuilder b;
  b.Input("x", {1, 4}).Output("c");
  b.Node("Clip", {"x", "", ""}, {"c"});
  auto graph = Import(b);
  ASSERT_TRUE(graph.ok()) << graph.status();
  const auto& clip = std::get<ClipAttrs>(FindNode(*graph, OpType::kClip)->attrs);
  EXPECT_EQ(clip.min, -std::numeric_limits<float>::infinity());
  EXPECT_EQ(clip.max, std::numeric_limits<float>::infinity());
}

TEST(OnnxImporterTest, BinaryOpsWithConstantOperandGetConstantNode) {
  OnnxModelBuilder b;
  b.Input("x", {1, 2, 3, 3}).Output("d");
  b.Weight("k", {2, 1, 1}, {2.0f, 4.0f});
  b.Weight("one", {}, {1.0f});
  b.Node("Mul", {"x", "k"}, {"a"});
  b.Node("Sub", {"one", "a"}, {"b"});
  b.Node("Add", {"b", "x"}, {"c"});
  b.Node("Div", {"c", "k"}, {"d"});
  auto graph = Import(b);
  ASSERT_TRUE(graph.ok()) << graph.status();
  EXPECT_EQ(CountNodes(*graph, OpType::kConstant), 2);  // "k" is materialised once
  EXPECT_EQ(CountNodes(*graph, OpType::kMul), 1);
  EXPECT_EQ(CountNodes(*graph, OpType::kDiv), 1);
  const Node* sub = FindNode(*graph, OpType::kSub);
  ASSERT_NE(sub, nullptr);
  const Node& one = graph->node(graph->value(sub->inputs[0]).producer);
  EXPECT_EQ(one.type, OpType::kConstant);
  EXPECT_EQ(one.weights.at("value").shape, (Shape{1}));
  EXPECT_EQ(OutputShape(*graph), (Shape{1, 2, 3, 3}));
}

TEST(OnnxImporterTest, GemmMatMulFlattenSoftmax) {
  OnnxModelBuilder b;
  b.Input("x", {1, 8, 1, 1}).Output("p").Output("q");
  b.Weight("B", {10, 8}).Weight("C", {10}).Weight("M", {8, 5});
  b.Node("Flatten", {"x"}, {"f"});
  onnx::NodeProto& gemm = b.Node("Gemm", {"f", "B", "C"}, {"g"});
  SetAttr(gemm, "transB", int64_t{1});
  SetAttr(gemm, "alpha", 0.5f);
  b.Node("Softmax", {"g"}, {"p"});
  b.Node("MatMul", {"f", "M"}, {"q"});
  auto graph = Import(b);
  ASSERT_TRUE(graph.ok()) << graph.status();
  const Node* g = FindNode(*graph, OpType::kGemm);
  ASSERT_NE(g, nullptr);
  EXPECT_TRUE(std::get<GemmAttrs>(g->attrs).trans_b);
  EXPECT_FLOAT_EQ(std::get<GemmAttrs>(g->attrs).alpha, 0.5f);
  EXPECT_EQ(g->weights.at("C").shape, (Shape{10}));
  EXPECT_EQ(std::get<SoftmaxAttrs>(FindNode(*graph, OpType::kSoftmax)->attrs).axis, 1);
  EXPECT_EQ(FindNode(*graph, OpType::kMatMul)->weights.at("B").shape, (Shape{8, 5}));
  EXPECT_EQ(OutputShape(*graph, 0), (Shape{1, 10}));
  EXPECT_EQ(OutputShape(*graph, 1), (Shape{1, 5}));
}

TEST(OnnxImporterTest, Opset11SoftmaxAcceptsEquivalentAxis) {
  OnnxModelBuilder b(11);
  b.Input("x", {2, 10}).Output("p");
  b.Node("Softmax", {"x"}, {"p"});  // default axis 1 = last axis
  auto graph = Import(b);
  ASSERT_TRUE(graph.ok()) << graph.status();
  EXPECT_EQ(std::get<SoftmaxAttrs>(FindNode(*graph, OpType::kSoftmax)->attrs).axis, 1);
}

TEST(OnnxImporterTest, Opset11SoftmaxRejectsCoercedAxis) {
  OnnxModelBuilder b(11);
  b.Input("x", {1, 3, 4}).Output("p");
  b.Node("Softmax", {"x"}, {"p"}, "sm");
  auto graph = Import(b);
  ASSERT_FALSE(graph.ok());
  EXPECT_THAT(graph.status().message(), HasSubstr("'sm' (Softmax)"));
  EXPECT_THAT(graph.status().message(), HasSubstr("coercion"));
}

TEST(OnnxImporterTest, ConcatTransposeReduceMeanPad) {
  OnnxModelBuilder b;
  b.Input("x", {1, 2, 4, 4}).Output("r").Output("t").Output("p");
  b.Ints("pads", {0, 0, 1, 2, 0, 0, 3, 1});
  b.Node("Concat", {"x", "x"}, {"c"});
  SetAttr(*b.graph().mutable_node(0), "axis", int64_t{-3});
  onnx::NodeProto& reduce = b.Node("ReduceMean", {"c"}, {"r"});
  SetAttr(reduce, "axes", std::vector<int64_t>{-1, 2});
  SetAttr(reduce, "keepdims", int64_t{0});
  onnx::NodeProto& transpose = b.Node("Transpose", {"x"}, {"t"});
  SetAttr(transpose, "perm", std::vector<int64_t>{0, 2, 3, 1});
  onnx::NodeProto& pad = b.Node("Pad", {"x", "pads"}, {"p"});
  SetAttr(pad, "mode", "reflect");
  auto graph = Import(b);
  ASSERT_TRUE(graph.ok()) << graph.status();
  EXPECT_EQ(std::get<ConcatAttrs>(FindNode(*graph, OpType::kConcat)->attrs).axis, 1);
  const auto& reduce_attrs = std::get<ReduceAttrs>(FindNode(*graph, OpType::kReduceMean)->attrs);
  EXPECT_THAT(reduce_attrs.axes, ElementsAre(2, 3));
  EXPECT_FALSE(reduce_attrs.keepdims);
  const auto& pad_attrs = std::get<PadAttrs>(FindNode(*graph, OpType::kPad)->attrs);
  EXPECT_EQ(pad_attrs.mode, PadMode::kReflect);
  EXPECT_EQ(OutputShape(*graph, 0), (Shape{1, 4}));
  EXPECT_EQ(OutputShape(*graph, 1), (Shape{1, 4, 4, 2}));
  EXPECT_EQ(OutputShape(*graph, 2), (Shape{1, 2, 8, 7}));
}

TEST(OnnxImporterTest, SplitOpset11UsesAttribute) {
  OnnxModelBuilder b(11);
  b.Input("x", {1, 6, 2, 2}).Output("a").Output("b");
  onnx::NodeProto& split = b.Node("Split", {"x"}, {"a", "b"});
  SetAttr(split, "axis", int64_t{1});
  SetAttr(split, "split", std::vector<int64_t>{2, 4});
  auto graph = Import(b);
  ASSERT_TRUE(graph.ok()) << graph.status();
  EXPECT_THAT(std::get<SplitAttrs>(FindNode(*graph, OpType::kSplit)->attrs).sizes,
              ElementsAre(2, 4));
  EXPECT_EQ(OutputShape(*graph, 1), (Shape{1, 4, 2, 2}));
}

TEST(OnnxImporterTest, SplitOpset13UsesInput) {
  OnnxModelBuilder b(13);
  b.Input("x", {1, 6, 2, 2}).Output("a").Output("b").Ints("sizes", {5, 1});
  onnx::NodeProto& split = b.Node("Split", {"x", "sizes"}, {"a", "b"});
  SetAttr(split, "axis", int64_t{1});
  auto graph = Import(b);
  ASSERT_TRUE(graph.ok()) << graph.status();
  EXPECT_THAT(std::get<SplitAttrs>(FindNode(*graph, OpType::kSplit)->attrs).sizes,
              ElementsAre(5, 1));
}

TEST(OnnxImporterTest, SplitWithoutSizesSplitsEqually) {
  OnnxModelBuilder b(13);
  b.Input("x", {1, 6, 2, 2}).Output("a").Output("b").Output("c");
  onnx::NodeProto& split = b.Node("Split", {"x"}, {"a", "b", "c"});
  SetAttr(split, "axis", int64_t{1});
  auto graph = Import(b);
  ASSERT_TRUE(graph.ok()) << graph.status();
  EXPECT_THAT(std::get<SplitAttrs>(FindNode(*graph, OpType::kSplit)->attrs).sizes,
              ElementsAre(2, 2, 2));
}

TEST(OnnxImporterTest, SliceClampsStaticBounds) {
  OnnxModelBuilder b;
  b.Input("x", {1, 8, 6, 6}).Output("y");
  b.Ints("starts", {-3, 1}).Ints("ends", {std::numeric_limits<int64_t>::max(), 100});
  b.Ints("axes", {1, -1}).Ints("steps", {1, 2});
  b.Node("Slice", {"x", "starts", "ends", "axes", "steps"}, {"y"});
  auto graph = Import(b);
  ASSERT_TRUE(graph.ok()) << graph.status();
  const auto& attrs = std::get<SliceAttrs>(FindNode(*graph, OpType::kSlice)->attrs);
  EXPECT_THAT(attrs.axes, ElementsAre(1, 3));
  EXPECT_THAT(attrs.starts, ElementsAre(5, 1));
  EXPECT_THAT(attrs.ends, ElementsAre(8, 6));
  EXPECT_THAT(attrs.steps, ElementsAre(1, 2));
  EXPECT_EQ(OutputShape(*graph), (Shape{1, 3, 6, 3}));
}

TEST(OnnxImporterTest, ReshapeResolvesZeroAndMinusOne) {
  OnnxModelBuilder b;
  b.Input("x", {2, 3, 4, 5}).Output("y").Ints("shape", {0, -1, 5});
  b.Node("Reshape", {"x", "shape"}, {"y"});
  auto graph = Import(b);
  ASSERT_TRUE(graph.ok()) << graph.status();
  EXPECT_THAT(std::get<ReshapeAttrs>(FindNode(*graph, OpType::kReshape)->attrs).shape,
              ElementsAre(2, 12, 5));
}

TEST(OnnxImporterTest, SqueezeAndUnsqueezeBecomeReshape) {
  OnnxModelBuilder b(13);
  b.Input("x", {1, 4, 1, 1}).Output("u").Ints("axes", {2, 3}).Ints("uaxes", {0});
  b.Node("Squeeze", {"x", "axes"}, {"s"});
  b.Node("Unsqueeze", {"s", "uaxes"}, {"u"});
  auto graph = Import(b);
  ASSERT_TRUE(graph.ok()) << graph.status();
  EXPECT_EQ(CountNodes(*graph, OpType::kReshape), 2);
  EXPECT_EQ(OutputShape(*graph), (Shape{1, 1, 4}));
}

TEST(OnnxImporterTest, IdentityDropoutAndCastAreRemoved) {
  OnnxModelBuilder b;
  b.Input("x", {1, 4}).Output("y");
  b.Node("Identity", {"x"}, {"a"});
  b.Node("Dropout", {"a"}, {"b"});
  onnx::NodeProto& cast = b.Node("Cast", {"b"}, {"c"});
  SetAttr(cast, "to", int64_t{onnx::TensorProto::FLOAT});
  b.Node("Relu", {"c"}, {"y"});
  auto graph = Import(b);
  ASSERT_TRUE(graph.ok()) << graph.status();
  EXPECT_EQ(graph->num_nodes(), 1);
  EXPECT_EQ(graph->node(0).type, OpType::kRelu);
}

TEST(OnnxImporterTest, ConvWeightThroughIdentityIsResolved) {
  // torch 1.13 exports put initializers behind Identity nodes.
  OnnxModelBuilder b;
  b.Input("x", {1, 3, 8, 8}).Output("y").Weight("W0", {4, 3, 3, 3});
  b.Node("Identity", {"W0"}, {"W"});
  b.Node("Conv", {"x", "W"}, {"y"});
  auto graph = Import(b);
  ASSERT_TRUE(graph.ok()) << graph.status();
  EXPECT_EQ(graph->num_nodes(), 1);
  EXPECT_EQ(FindNode(*graph, OpType::kConv)->weights.at("W").data.size(), 108u);
}

TEST(OnnxImporterTest, HalfAndDoubleWeightsBecomeFloat) {
  OnnxModelBuilder b;
  b.Input("x", {1, 1, 2, 2}).Output("y");
  onnx::TensorProto w;
  w.set_name("W");
  w.set_data_type(onnx::TensorProto::FLOAT16);
  for (int64_t d : {2, 1, 1, 1}) w.add_dims(d);
  w.add_int32_data(0x3c00);  // 1.0
  w.add_int32_data(0xc000);  // -2.0
  *b.graph().add_initializer() = w;
  onnx::TensorProto bias;
  bias.set_name("B");
  bias.set_data_type(onnx::TensorProto::DOUBLE);
  bias.add_dims(2);
  bias.add_double_data(0.25);
  bias.add_double_data(-1.5);
  *b.graph().add_initializer() = bias;
  b.Node("Conv", {"x", "W", "B"}, {"y"});
  auto graph = Import(b);
  ASSERT_TRUE(graph.ok()) << graph.status();
  const Node* conv = FindNode(*graph, OpType::kConv);
  EXPECT_THAT(conv->weights.at("W").data, ElementsAre(1.0f, -2.0f));
  EXPECT_THAT(conv->weights.at("B").data, ElementsAre(0.25f, -1.5f));
}

// Channel shuffle as torch exports it without constant folding:
// Shape -> Gather -> Unsqueeze -> Concat -> Reshape -> Transpose -> Reshape.
OnnxModelBuilder ChannelShuffleModel(int64_t batch_dim) {
  OnnxModelBuilder b(13);
  b.Input("x", {batch_dim, 8, 4, 4}).Output("y");
  b.Node("Shape", {"x"}, {"shape"});
  b.IntConstant("zero", {0});
  b.Node("Gather", {"shape", "zero"}, {"n"});  // [1] -> Gather gives [1]-shaped
  onnx::NodeProto& scalar = b.Node("Constant", {}, {"idx_scalar"});
  SetAttr(scalar, "value", testing::IntTensor("", {}, {0}));
  b.Node("Gather", {"shape", "idx_scalar"}, {"n_scalar"});
  b.Ints("unsq_axes", {0});
  b.Node("Unsqueeze", {"n_scalar", "unsq_axes"}, {"n1"});
  b.IntConstant("rest", {2, 4, 4, 4});
  onnx::NodeProto& concat = b.Node("Concat", {"n1", "rest"}, {"target"});
  SetAttr(concat, "axis", int64_t{0});
  b.Node("Reshape", {"x", "target"}, {"r"});
  onnx::NodeProto& transpose = b.Node("Transpose", {"r"}, {"t"});
  SetAttr(transpose, "perm", std::vector<int64_t>{0, 2, 1, 3, 4});
  // Second target: [n, -1, 4, 4] computed as Concat(n, [-1], [4, 4]).
  b.IntConstant("minus", {-1});
  b.IntConstant("hw", {4, 4});
  onnx::NodeProto& concat2 = b.Node("Concat", {"n", "minus", "hw"}, {"target2"});
  SetAttr(concat2, "axis", int64_t{0});
  b.Node("Reshape", {"t", "target2"}, {"y"});
  return b;
}

TEST(OnnxImporterTest, ShapeArithmeticIsFolded) {
  auto graph = Import(ChannelShuffleModel(1));
  ASSERT_TRUE(graph.ok()) << graph.status();
  EXPECT_EQ(graph->num_nodes(), 3);  // Reshape, Transpose, Reshape
  EXPECT_EQ(CountNodes(*graph, OpType::kReshape), 2);
  EXPECT_EQ(CountNodes(*graph, OpType::kConstant), 0);
  EXPECT_THAT(std::get<ReshapeAttrs>(FindNode(*graph, OpType::kReshape)->attrs).shape,
              ElementsAre(1, 2, 4, 4, 4));
  EXPECT_EQ(OutputShape(*graph), (Shape{1, 8, 4, 4}));
}

TEST(OnnxImporterTest, BatchOverrideFoldsShapesAfterOverride) {
  OnnxImportOptions options;
  options.batch = 3;
  auto graph = Import(ChannelShuffleModel(-1), options);  // dynamic batch "N"
  ASSERT_TRUE(graph.ok()) << graph.status();
  EXPECT_THAT(std::get<ReshapeAttrs>(FindNode(*graph, OpType::kReshape)->attrs).shape,
              ElementsAre(3, 2, 4, 4, 4));
  EXPECT_EQ(OutputShape(*graph), (Shape{3, 8, 4, 4}));
}

TEST(OnnxImporterTest, BatchOverrideRewritesBakedReshapeBatch) {
  // Exporters bake the traced batch: Reshape(x, [1, -1]).
  OnnxModelBuilder b;
  b.Input("x", {1, 8, 2, 2}).Output("y", {1, 32}).Ints("shape", {1, -1});
  b.Node("Reshape", {"x", "shape"}, {"y"});
  OnnxImportOptions options;
  options.batch = 4;
  auto graph = Import(b, options);
  ASSERT_TRUE(graph.ok()) << graph.status();
  EXPECT_EQ(graph->value(graph->inputs()[0]).shape, (Shape{4, 8, 2, 2}));
  EXPECT_EQ(OutputShape(*graph), (Shape{4, 32}));
}

TEST(OnnxImporterTest, DeadNodesAreIgnored) {
  OnnxModelBuilder b;
  b.Input("x", {1, 4}).Output("y");
  b.Node("Relu", {"x"}, {"y"});
  b.Node("SomethingExotic", {"x"}, {"unused"});
  auto graph = Import(b);
  ASSERT_TRUE(graph.ok()) << graph.status();
  EXPECT_EQ(graph->num_nodes(), 1);
}

TEST(OnnxImporterTest, InitializerListedAsInputIsNotAnInput) {
  OnnxModelBuilder b = ConvModel();
  b.Input("W", {4, 3, 3, 3});  // IR < 4 style: initializers also listed as inputs
  auto graph = Import(b);
  ASSERT_TRUE(graph.ok()) << graph.status();
  EXPECT_EQ(graph->inputs().size(), 1u);
}

TEST(OnnxImporterTest, UnsortedNodesAreOrdered) {
  OnnxModelBuilder b;
  b.Input("x", {1, 4}).Output("y");
  b.Node("Relu", {"a"}, {"y"});
  b.Node("Sigmoid", {"x"}, {"a"});
  auto graph = Import(b);
  ASSERT_TRUE(graph.ok()) << graph.status();
  EXPECT_EQ(graph->num_nodes(), 2);
}

TEST(OnnxImporterTest, DeclaredOutputShapeIsChecked) {
  OnnxModelBuilder b;
  b.Input("x", {1, 4}).Output("y", {1, 5});
  b.Node("Relu", {"x"}, {"y"});
  auto graph = Import(b);
  ASSERT_FALSE(graph.ok());
  EXPECT_THAT(graph.status().message(), HasSubstr("graph output 'y'"));
  EXPECT_THAT(graph.status().message(), HasSubstr("shape mismatch"));
}

TEST(OnnxImporterTest, DeclaredValueInfoIsChecked) {
  OnnxModelBuilder b;
  b.Input("x", {1, 4}).Output("y").Weight("half", {}, {0.5f});
  b.Node("Mul", {"x", "half"}, {"m"});
  b.Node("Relu", {"m"}, {"y"});
  auto add_info = [&](const std::string& name, const std::vector<int64_t>& dims) {
    auto* info = b.graph().add_value_info();
    info->set_name(name);
    auto* tensor = info->mutable_type()->mutable_tensor_type();
    tensor->set_elem_type(onnx::TensorProto::FLOAT);
    auto* shape = tensor->mutable_shape();
    for (int64_t d : dims) shape->add_dim()->set_dim_value(d);
  };
  add_info("half", {});  // a scalar constant: not compared
  add_info("m", {1, 4});
  ASSERT_TRUE(Import(b).ok());
  b.graph()
      .mutable_value_info(1)
      ->mutable_type()
      ->mutable_tensor_type()
      ->mutable_shape()
      ->mutable_dim(1)
      ->set_dim_value(3);
  auto graph = Import(b);
  ASSERT_FALSE(graph.ok());
  EXPECT_THAT(graph.status().message(), HasSubstr("value 'm' has shape [1,4]"));
}

TEST(OnnxImporterTest, ImportOnnxFileNamesGraphAfterStem) {
  const std::string path = ::testing::TempDir() + "/tiny_relu.onnx";
  OnnxModelBuilder b;
  b.Input("x", {1, 4}).Output("y");
  b.Node("Relu", {"x"}, {"y"});
  {
    std::ofstream out(path, std::ios::binary);
    out << b.Serialize();
  }
  auto graph = ImportOnnxFile(path);
  ASSERT_TRUE(graph.ok()) << graph.status();
  EXPECT_EQ(graph->name(), "tiny_relu");
  // The same bytes under the file's name (as the CLI sends them to a
  // server) give the same graph: a schedule tuned on a farm opens with the
  // file.
  auto from_bytes = ImportOnnxBytes(b.Serialize(), "models/tiny_relu.onnx");
  ASSERT_TRUE(from_bytes.ok()) << from_bytes.status();
  EXPECT_EQ(from_bytes->name(), "tiny_relu");
  EXPECT_EQ(SerializeGraph(*from_bytes), SerializeGraph(*graph));
}

}  // namespace
}  // namespace iosfarm::graph::onnx_import
