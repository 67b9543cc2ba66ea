// ReduceMean, ReduceSum, ReduceMax and ReduceMin on hand-built ONNX models:
// axes as an attribute, ReduceSum's axes as an input (opset 13 on) and its
// noop_with_empty_axes, keepdims, and their refusals.
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

struct Imported {
  OpType type;
  ReduceAttrs attrs;
  Shape output;
};

StatusOr<Imported> ImportOne(const OnnxModelBuilder& builder) {
  ASSIGN_OR_RETURN(Graph graph, ImportOnnxBytes(builder.Serialize(), "model", OnnxImportOptions{}));
  RETURN_IF_ERROR(ParseGraph(SerializeGraph(graph)).status());
  for (const Node& node : graph.nodes()) {
    if (const auto* attrs = std::get_if<ReduceAttrs>(&node.attrs)) {
      return Imported{node.type, *attrs, graph.value(node.outputs[0]).shape};
    }
  }
  return absl::NotFoundError("no reduction");
}

TEST(ReduceImportTest, MaxAndMinTakeTheirAxesAsAnAttribute) {
  for (const auto& [op, type] :
       {std::pair{"ReduceMax", OpType::kReduceMax}, std::pair{"ReduceMin", OpType::kReduceMin},
        std::pair{"ReduceMean", OpType::kReduceMean}}) {
    SCOPED_TRACE(op);
    OnnxModelBuilder builder(17);
    builder.Input("x", {2, 8, 5, 6}).Output("y");
    auto& node = builder.Node(op, {"x"}, {"y"}, "r");
    SetAttr(node, "axes", std::vector<int64_t>{-1, 1});
    SetAttr(node, "keepdims", int64_t{0});
    auto imported = ImportOne(builder);
    ASSERT_TRUE(imported.ok()) << imported.status();
    EXPECT_EQ(imported->type, type);
    EXPECT_THAT(imported->attrs.axes, ElementsAre(1, 3));
    EXPECT_THAT(imported->output, ElementsAre(2, 5));
  }
}

TEST(ReduceImportTest, SumTakesItsAxesAsAnInputFromOpset13) {
  OnnxModelBuilder builder(13);
  builder.Input("x", {2, 8, 5, 6}).Output("y");
  builder.Ints("axes", {2, 3});
  builder.Node("ReduceSum", {"x", "axes"}, {"y"}, "r");
  auto imported = ImportOne(builder);
  ASSERT_TRUE(imported.ok()) << imported.status();
  EXPECT_EQ(imported->type, OpType::kReduceSum);
  EXPECT_THAT(imported->attrs.axes, ElementsAre(2, 3));
  EXPECT_THAT(imported->output, ElementsAre(2, 8, 1, 1));

  OnnxModelBuilder all(13);  // no axes: every axis
  all.Input("x", {2, 8, 5, 6}).Output("y");
  SetAttr(all.Node("ReduceSum", {"x"}, {"y"}, "r"), "keepdims", int64_t{0});
  imported = ImportOne(all);
  ASSERT_TRUE(imported.ok()) << imported.status();
  EXPECT_THAT(imported->attrs.axes, ElementsAre(0, 1, 2, 3));
  EXPECT_THAT(imported->output, ElementsAre(1));  // the IR keeps one dimension

  OnnxModelBuilder older(11);  // opset 11: the attribute
  older.Input("x", {2, 8, 5, 6}).Output("y");
  SetAttr(older.Node("ReduceSum", {"x"}, {"y"}, "r"), "axes", std::vector<int64_t>{1});
  imported = ImportOne(older);
  ASSERT_TRUE(imported.ok()) << imported.status();
  EXPECT_THAT(imported->attrs.axes, ElementsAre(1));
}

TEST(ReduceImportTest, SumWithNoAxesAndNoopIsTheInput) {
  OnnxModelBuilder builder(13);
  builder.Input("x", {2, 8, 5, 6}).Output("y");
  SetAttr(builder.Node("ReduceSum", {"x"}, {"y"}, "r"), "noop_with_empty_axes", int64_t{1});
  auto graph = ImportOnnxBytes(builder.Serialize(), "model", OnnxImportOptions{});
  ASSERT_TRUE(graph.ok()) << graph.status();
  for (const Node& node : graph->nodes()) EXPECT_NE(node.type, OpType::kReduceSum);
  EXPECT_THAT(graph->value(graph->outputs()[0]).shape, ElementsAre(2, 8, 5, 6));
}

TEST(ReduceImportTest, RefusesComputedAxesAndAxesOutOfRange) {
  OnnxModelBuilder computed(13);
  computed.Input("x", {2, 8, 5, 6}).Input("axes", {1}, onnx::TensorProto::INT64).Output("y");
  computed.Node("ReduceSum", {"x", "axes"}, {"y"}, "r");
  auto imported = ImportOne(computed);
  ASSERT_FALSE(imported.ok());
  EXPECT_THAT(imported.status().message(), HasSubstr("'axes'"));

  OnnxModelBuilder out_of_range(17);
  out_of_range.Input("x", {2, 8, 5, 6}).Output("y");
  SetAttr(out_of_range.Node("ReduceMax", {"x"}, {"y"}, "r"), "axes", std::vector<int64_t>{4});
  imported = ImportOne(out_of_range);
  ASSERT_FALSE(imported.ok());
  EXPECT_THAT(imported.status().message(), HasSubstr("axes"));
}

}  // namespace
}  // namespace iosfarm::graph::onnx_import
