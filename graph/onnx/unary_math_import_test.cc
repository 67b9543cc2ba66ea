// The element-wise functions that import as one UnaryMath node, on
// hand-built ONNX models: the ONNX defaults of their attributes, the values
// given, Pow's constant exponent, and its refusals.
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

// x [2, 8, 5, 5] -> op -> y.
struct UnaryModel {
  UnaryModel(const std::string& op, int64_t opset = 17) : builder(opset) {
    builder.Input("x", {2, 8, 5, 5}).Output("y");
    node = &builder.Node(op, {"x"}, {"y"}, "f");
  }
  StatusOr<Graph> Import() const {
    return ImportOnnxBytes(builder.Serialize(), "unary_model", OnnxImportOptions{});
  }
  OnnxModelBuilder builder;
  onnx::NodeProto* node = nullptr;
};

StatusOr<UnaryMathAttrs> ImportedAttrs(const UnaryModel& model) {
  ASSIGN_OR_RETURN(Graph graph, model.Import());
  for (const Node& node : graph.nodes()) {
    if (node.type != OpType::kUnaryMath) continue;
    EXPECT_THAT(graph.value(node.outputs[0]).shape, ElementsAre(2, 8, 5, 5));
    // It survives serialization (the stored graph of a farm job).
    auto round_trip = ParseGraph(SerializeGraph(graph));
    EXPECT_TRUE(round_trip.ok()) << round_trip.status();
    return std::get<UnaryMathAttrs>(node.attrs);
  }
  return absl::NotFoundError("no UnaryMath node");
}

TEST(UnaryMathImportTest, EachFunctionImportsWithTheOnnxDefaults) {
  const struct {
    const char* op;
    UnaryFunction function;
    float alpha, beta;
  } cases[] = {
      {"LeakyRelu", UnaryFunction::kLeakyRelu, 0.01f, 0.0f},
      {"Elu", UnaryFunction::kElu, 1.0f, 0.0f},
      {"Selu", UnaryFunction::kSelu, 1.67326319217681884765625f, 1.05070102214813232421875f},
      {"Softplus", UnaryFunction::kSoftplus, 0.0f, 0.0f},
      {"Mish", UnaryFunction::kMish, 0.0f, 0.0f},
      {"Erf", UnaryFunction::kErf, 0.0f, 0.0f},
      {"Sqrt", UnaryFunction::kSqrt, 0.0f, 0.0f},
      {"Exp", UnaryFunction::kExp, 0.0f, 0.0f},
      {"Log", UnaryFunction::kLog, 0.0f, 0.0f},
      {"Neg", UnaryFunction::kNeg, 0.0f, 0.0f},
      {"Abs", UnaryFunction::kAbs, 0.0f, 0.0f},
      {"Reciprocal", UnaryFunction::kReciprocal, 0.0f, 0.0f},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.op);
    auto attrs = ImportedAttrs(UnaryModel(c.op));
    ASSERT_TRUE(attrs.ok()) << attrs.status();
    EXPECT_EQ(*attrs, (UnaryMathAttrs{c.function, c.alpha, c.beta}));
  }
}

TEST(UnaryMathImportTest, AttributesGivenAreKept) {
  UnaryModel leaky("LeakyRelu");
  SetAttr(*leaky.node, "alpha", 0.2f);
  auto attrs = ImportedAttrs(leaky);
  ASSERT_TRUE(attrs.ok()) << attrs.status();
  EXPECT_EQ(attrs->alpha, 0.2f);
  UnaryModel selu("Selu");
  SetAttr(*selu.node, "alpha", 2.0f);
  SetAttr(*selu.node, "gamma", 3.0f);
  attrs = ImportedAttrs(selu);
  ASSERT_TRUE(attrs.ok()) << attrs.status();
  EXPECT_EQ(*attrs, (UnaryMathAttrs{UnaryFunction::kSelu, 2.0f, 3.0f}));
}

TEST(UnaryMathImportTest, PowTakesAConstantScalarExponentOnly) {
  OnnxModelBuilder square(17);
  square.Input("x", {2, 8, 5, 5}).Output("y");
  square.Weight("two", {}, {2.0f});
  square.Node("Pow", {"x", "two"}, {"y"}, "square");
  auto graph = ImportOnnxBytes(square.Serialize(), "pow_model", OnnxImportOptions{});
  ASSERT_TRUE(graph.ok()) << graph.status();
  bool found = false;
  for (const Node& node : graph->nodes()) {
    if (node.type != OpType::kUnaryMath) continue;
    found = true;
    EXPECT_EQ(std::get<UnaryMathAttrs>(node.attrs), (UnaryMathAttrs{UnaryFunction::kPow, 2.0f}));
  }
  EXPECT_TRUE(found);

  OnnxModelBuilder per_channel(17);
  per_channel.Input("x", {2, 8, 5, 5}).Output("y");
  per_channel.Weight("e", {8, 1, 1}, std::vector<float>(8, 2.0f));
  per_channel.Node("Pow", {"x", "e"}, {"y"}, "pow");
  auto refused = ImportOnnxBytes(per_channel.Serialize(), "pow_model", OnnxImportOptions{});
  ASSERT_FALSE(refused.ok());
  EXPECT_THAT(refused.status().message(), HasSubstr("constant scalar exponent"));

  OnnxModelBuilder computed(17);
  computed.Input("x", {2, 8, 5, 5}).Input("e", {1}).Output("y");
  computed.Node("Pow", {"x", "e"}, {"y"}, "pow");
  refused = ImportOnnxBytes(computed.Serialize(), "pow_model", OnnxImportOptions{});
  ASSERT_FALSE(refused.ok());
  EXPECT_THAT(refused.status().message(), HasSubstr("input 1 is computed"));
}

}  // namespace
}  // namespace iosfarm::graph::onnx_import
