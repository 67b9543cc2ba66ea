// The operators that import as several IR nodes (normalization_converters.cc)
// on hand-built ONNX models: the nodes they become, their axes and
// constants, and their refusals. Their values against numpy and PyTorch:
// python/tests/test_onnx_ops.py and test_torchvision.py.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "graph/onnx/onnx_importer.h"
#include "graph/onnx/onnx_test_util.h"
#include "graph/serialize.h"

namespace iosfarm::graph::onnx_import {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using testing::OnnxModelBuilder;
using testing::SetAttr;

StatusOr<Graph> Import(const OnnxModelBuilder& builder) {
  ASSIGN_OR_RETURN(Graph graph, ImportOnnxBytes(builder.Serialize(), "model", OnnxImportOptions{}));
  // It survives serialization (the stored graph of a farm job).
  RETURN_IF_ERROR(ParseGraph(SerializeGraph(graph)).status());
  return graph;
}

// The op types of the graph's nodes other than constants, in order.
std::vector<OpType> OpTypes(const Graph& graph) {
  std::vector<OpType> types;
  for (const Node& node : graph.nodes()) {
    if (node.type != OpType::kConstant) types.push_back(node.type);
  }
  return types;
}

const Shape& OutputShape(const Graph& graph) { return graph.value(graph.outputs()[0]).shape; }

TEST(NormalizationImportTest, PReluPerChannelIsReluMinusSlopeTimesReluOfTheNegation) {
  OnnxModelBuilder builder(17);
  builder.Input("x", {2, 8, 5, 5}).Output("y");
  builder.Weight("slope", {8, 1, 1});
  builder.Node("PRelu", {"x", "slope"}, {"y"}, "prelu");
  auto graph = Import(builder);
  ASSERT_TRUE(graph.ok()) << graph.status();
  EXPECT_THAT(OpTypes(*graph), ElementsAre(OpType::kRelu, OpType::kUnaryMath, OpType::kRelu,
                                           OpType::kMul, OpType::kSub));
  EXPECT_THAT(OutputShape(*graph), ElementsAre(2, 8, 5, 5));
}

TEST(NormalizationImportTest, PReluWithOneSlopeIsOneLeakyRelu) {
  OnnxModelBuilder builder(17);
  builder.Input("x", {2, 8, 5, 5}).Output("y");
  builder.Weight("slope", {1, 1, 1}, {0.25f});
  builder.Node("PRelu", {"x", "slope"}, {"y"}, "prelu");
  auto graph = Import(builder);
  ASSERT_TRUE(graph.ok()) << graph.status();
  ASSERT_THAT(OpTypes(*graph), ElementsAre(OpType::kUnaryMath));
  for (const Node& node : graph->nodes()) {
    if (node.type != OpType::kUnaryMath) continue;
    EXPECT_EQ(std::get<UnaryMathAttrs>(node.attrs),
              (UnaryMathAttrs{UnaryFunction::kLeakyRelu, 0.25f, 0.0f}));
  }
}

TEST(NormalizationImportTest, PReluRefusesASlopeThatDoesNotBroadcast) {
  OnnxModelBuilder builder(17);
  builder.Input("x", {2, 8, 5, 5}).Output("y");
  builder.Weight("slope", {3, 1, 1});
  builder.Node("PRelu", {"x", "slope"}, {"y"}, "prelu");
  auto graph = Import(builder);
  ASSERT_FALSE(graph.ok());
  EXPECT_THAT(graph.status().message(), HasSubstr("slope of shape [3,1,1]"));
  EXPECT_THAT(graph.status().message(), HasSubstr("prelu"));
}

// The ReduceMean axes of a decomposed normalization (mean, then variance).
std::vector<std::vector<int64_t>> ReducedAxes(const Graph& graph) {
  std::vector<std::vector<int64_t>> axes;
  for (const Node& node : graph.nodes()) {
    if (node.type == OpType::kReduceMean) axes.push_back(std::get<ReduceAttrs>(node.attrs).axes);
  }
  return axes;
}

TEST(NormalizationImportTest, InstanceNormalizationNormalizesEachChannelOverSpace) {
  OnnxModelBuilder builder(17);
  builder.Input("x", {2, 8, 5, 5}).Output("y");
  builder.Weight("scale", {8}).Weight("bias", {8});
  auto& node = builder.Node("InstanceNormalization", {"x", "scale", "bias"}, {"y"}, "norm");
  SetAttr(node, "epsilon", 1e-3f);
  auto graph = Import(builder);
  ASSERT_TRUE(graph.ok()) << graph.status();
  EXPECT_THAT(OpTypes(*graph), ElementsAre(OpType::kReduceMean, OpType::kSub, OpType::kMul,
                                           OpType::kReduceMean, OpType::kAdd, OpType::kUnaryMath,
                                           OpType::kDiv, OpType::kMul, OpType::kAdd));
  EXPECT_THAT(ReducedAxes(*graph), ElementsAre(ElementsAre(2, 3), ElementsAre(2, 3)));
  EXPECT_THAT(OutputShape(*graph), ElementsAre(2, 8, 5, 5));
  bool epsilon = false, scale = false;
  for (const Node& n : graph->nodes()) {
    if (n.type != OpType::kConstant) continue;
    const Tensor& value = n.weights.at("value");
    if (value.num_elements() == 1 && value.data[0] == 1e-3f) epsilon = true;
    if (value.shape == Shape{8, 1, 1}) scale = true;
  }
  EXPECT_TRUE(epsilon);
  EXPECT_TRUE(scale);
}

TEST(NormalizationImportTest, InstanceNormalizationOfGroupsIsRankThree) {
  // torch's GroupNorm export: [N, groups, C / groups * H * W].
  OnnxModelBuilder builder(17);
  builder.Input("x", {2, 4, 50}).Output("y");
  builder.Weight("scale", {4}).Weight("bias", {4});
  builder.Node("InstanceNormalization", {"x", "scale", "bias"}, {"y"}, "norm");
  auto graph = Import(builder);
  ASSERT_TRUE(graph.ok()) << graph.status();
  EXPECT_THAT(ReducedAxes(*graph), ElementsAre(ElementsAre(2), ElementsAre(2)));
  EXPECT_THAT(OutputShape(*graph), ElementsAre(2, 4, 50));
}

TEST(NormalizationImportTest, InstanceNormalizationRefusesBadScalesAndRanks) {
  OnnxModelBuilder wrong_scale(17);
  wrong_scale.Input("x", {2, 8, 5, 5}).Output("y");
  wrong_scale.Weight("scale", {4}).Weight("bias", {8});
  wrong_scale.Node("InstanceNormalization", {"x", "scale", "bias"}, {"y"}, "norm");
  auto graph = Import(wrong_scale);
  ASSERT_FALSE(graph.ok());
  EXPECT_THAT(graph.status().message(), HasSubstr("input 'scale' has shape [4]"));

  OnnxModelBuilder flat(17);
  flat.Input("x", {2, 8}).Output("y");
  flat.Weight("scale", {8}).Weight("bias", {8});
  flat.Node("InstanceNormalization", {"x", "scale", "bias"}, {"y"}, "norm");
  graph = Import(flat);
  ASSERT_FALSE(graph.ok());
  EXPECT_THAT(graph.status().message(), HasSubstr("at least one spatial axis"));

  OnnxModelBuilder computed(17);
  computed.Input("x", {2, 8, 5, 5}).Input("scale", {8}).Output("y");
  computed.Weight("bias", {8});
  computed.Node("InstanceNormalization", {"x", "scale", "bias"}, {"y"}, "norm");
  graph = Import(computed);
  ASSERT_FALSE(graph.ok());
  EXPECT_THAT(graph.status().message(), HasSubstr("must be a constant"));
}

TEST(NormalizationImportTest, LayerNormalizationNormalizesFromItsAxisOn) {
  for (const auto& [axis, expected] : std::vector<std::pair<int64_t, std::vector<int64_t>>>{
           {-1, {3}}, {1, {1, 2, 3}}, {2, {2, 3}}}) {
    SCOPED_TRACE(axis);
    OnnxModelBuilder builder(17);
    builder.Input("x", {2, 5, 5, 8}).Output("y");
    std::vector<int64_t> normalized = {2, 5, 5, 8};
    normalized.erase(normalized.begin(), normalized.begin() + (axis < 0 ? 4 + axis : axis));
    builder.Weight("scale", normalized).Weight("bias", normalized);
    auto& node = builder.Node("LayerNormalization", {"x", "scale", "bias"}, {"y"}, "ln");
    SetAttr(node, "axis", axis);
    auto graph = Import(builder);
    ASSERT_TRUE(graph.ok()) << graph.status();
    const auto axes = ReducedAxes(*graph);
    ASSERT_EQ(axes.size(), 2u);
    EXPECT_EQ(axes[0], expected);
    EXPECT_EQ(axes[1], expected);
    EXPECT_THAT(OutputShape(*graph), ElementsAre(2, 5, 5, 8));
  }
}

TEST(NormalizationImportTest, LayerNormalizationWithoutBiasEndsWithTheScale) {
  OnnxModelBuilder builder(17);
  builder.Input("x", {2, 5, 8}).Output("y");
  builder.Weight("scale", {8});
  builder.Node("LayerNormalization", {"x", "scale"}, {"y"}, "ln");
  auto graph = Import(builder);
  ASSERT_TRUE(graph.ok()) << graph.status();
  EXPECT_EQ(OpTypes(*graph).back(), OpType::kMul);
  EXPECT_EQ(OpTypes(*graph).size(), 8u);
}

TEST(NormalizationImportTest, LayerNormalizationRefusesWhatItDoesNotCompute) {
  OnnxModelBuilder half_stash(17);
  half_stash.Input("x", {2, 5, 8}).Output("y");
  half_stash.Weight("scale", {8});
  SetAttr(half_stash.Node("LayerNormalization", {"x", "scale"}, {"y"}, "ln"), "stash_type",
          int64_t{0});
  auto graph = Import(half_stash);
  ASSERT_FALSE(graph.ok());
  EXPECT_THAT(graph.status().message(), HasSubstr("stash_type 0 is not supported"));

  OnnxModelBuilder mean_used(17);
  mean_used.Input("x", {2, 5, 8}).Output("y").Output("mean");
  mean_used.Weight("scale", {8});
  mean_used.Node("LayerNormalization", {"x", "scale"}, {"y", "mean"}, "ln");
  graph = Import(mean_used);
  ASSERT_FALSE(graph.ok());
  EXPECT_THAT(graph.status().message(), HasSubstr("output 1 ('mean') is not supported"));
}

}  // namespace
}  // namespace iosfarm::graph::onnx_import
