// ConvTranspose on hand-built ONNX models: its attributes, the pads ONNX
// derives from output_shape and auto_pad, and its refusals. Its values:
// tests/conformance (every backend against the reference) and
// python/tests/test_torchvision.py (against PyTorch).
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

// x [1, 8, 5, 6] -> ConvTranspose(W [8, out / group, kh, kw]) -> y.
struct Model {
  Model(std::vector<int64_t> w_shape, bool bias = false) : builder(17) {
    builder.Input("x", {1, 8, 5, 6}).Output("y");
    builder.Weight("w", w_shape);
    std::vector<std::string> inputs = {"x", "w"};
    if (bias) {
      builder.Weight("b", {w_shape[1] * 1});
      inputs.push_back("b");
    }
    node = &builder.Node("ConvTranspose", inputs, {"y"}, "up");
  }
  StatusOr<Graph> Import() const {
    return ImportOnnxBytes(builder.Serialize(), "model", OnnxImportOptions{});
  }
  OnnxModelBuilder builder;
  onnx::NodeProto* node = nullptr;
};

struct Imported {
  ConvTransposeAttrs attrs;
  Shape output;
};

StatusOr<Imported> ImportedOf(const Model& model) {
  ASSIGN_OR_RETURN(Graph graph, model.Import());
  RETURN_IF_ERROR(ParseGraph(SerializeGraph(graph)).status());
  for (const Node& node : graph.nodes()) {
    if (node.type != OpType::kConvTranspose) continue;
    return Imported{std::get<ConvTransposeAttrs>(node.attrs), graph.value(node.outputs[0]).shape};
  }
  return absl::NotFoundError("no ConvTranspose node");
}

TEST(ConvTransposeImportTest, StridesPadsAndOutputPaddingGiveTheOutputSize) {
  Model model({8, 4, 3, 3}, /*bias=*/true);
  SetAttr(*model.node, "strides", std::vector<int64_t>{2, 2});
  SetAttr(*model.node, "pads", std::vector<int64_t>{1, 1, 1, 1});
  SetAttr(*model.node, "output_padding", std::vector<int64_t>{1, 0});
  auto imported = ImportedOf(model);
  ASSERT_TRUE(imported.ok()) << imported.status();
  EXPECT_EQ(imported->attrs.out_channels, 4);
  EXPECT_TRUE(imported->attrs.has_bias);
  EXPECT_THAT(imported->attrs.pads, ElementsAre(1, 1, 1, 1));
  EXPECT_THAT(imported->attrs.output_padding, ElementsAre(1, 0));
  // (5 - 1) * 2 - 2 + 2 + 1 + 1 = 10, (6 - 1) * 2 - 2 + 2 + 0 + 1 = 11.
  EXPECT_THAT(imported->output, ElementsAre(1, 4, 10, 11));
}

TEST(ConvTransposeImportTest, GroupsAndDilationsAreKept) {
  Model model({8, 3, 2, 3});
  SetAttr(*model.node, "group", int64_t{2});
  SetAttr(*model.node, "dilations", std::vector<int64_t>{2, 1});
  auto imported = ImportedOf(model);
  ASSERT_TRUE(imported.ok()) << imported.status();
  EXPECT_EQ(imported->attrs.out_channels, 6);
  EXPECT_EQ(imported->attrs.groups, 2);
  EXPECT_THAT(imported->attrs.dilation, ElementsAre(2, 1));
  EXPECT_THAT(imported->output, ElementsAre(1, 6, 7, 8));
}

TEST(ConvTransposeImportTest, OutputShapeAndAutoPadGiveThePads) {
  // Total padding (5 - 1) * 2 + 3 - 9 = 2 rows, (6 - 1) * 2 + 3 - 12 = 1 column.
  Model explicit_shape({8, 4, 3, 3});
  SetAttr(*explicit_shape.node, "strides", std::vector<int64_t>{2, 2});
  SetAttr(*explicit_shape.node, "output_shape", std::vector<int64_t>{9, 12});
  auto imported = ImportedOf(explicit_shape);
  ASSERT_TRUE(imported.ok()) << imported.status();
  EXPECT_THAT(imported->attrs.pads, ElementsAre(1, 1, 1, 0));  // the odd one at the start
  EXPECT_THAT(imported->output, ElementsAre(1, 4, 9, 12));

  Model same_upper({8, 4, 3, 3});
  SetAttr(*same_upper.node, "strides", std::vector<int64_t>{2, 2});
  SetAttr(*same_upper.node, "auto_pad", "SAME_UPPER");
  imported = ImportedOf(same_upper);
  ASSERT_TRUE(imported.ok()) << imported.status();
  EXPECT_THAT(imported->attrs.pads, ElementsAre(0, 0, 1, 1));  // the odd one at the end
  EXPECT_THAT(imported->output, ElementsAre(1, 4, 10, 12));
}

TEST(ConvTransposeImportTest, RefusesWhatItCannotRun) {
  Model too_much_output_padding({8, 4, 3, 3});
  SetAttr(*too_much_output_padding.node, "strides", std::vector<int64_t>{2, 2});
  SetAttr(*too_much_output_padding.node, "output_padding", std::vector<int64_t>{2, 0});
  auto imported = ImportedOf(too_much_output_padding);
  ASSERT_FALSE(imported.ok());
  EXPECT_THAT(imported.status().message(), HasSubstr("output_padding 2 must be"));

  Model wrong_channels({4, 4, 3, 3});
  imported = ImportedOf(wrong_channels);
  ASSERT_FALSE(imported.ok());
  EXPECT_THAT(imported.status().message(), HasSubstr("do not fit an input of 8 channels"));

  Model too_large({8, 4, 3, 3});
  SetAttr(*too_large.node, "output_shape", std::vector<int64_t>{7, 20});
  imported = ImportedOf(too_large);
  ASSERT_FALSE(imported.ok());
  EXPECT_THAT(imported.status().message(), HasSubstr("output_shape 20 is larger"));

  Model bad_pad({8, 4, 3, 3});
  SetAttr(*bad_pad.node, "auto_pad", "SAME");
  imported = ImportedOf(bad_pad);
  ASSERT_FALSE(imported.ok());
  EXPECT_THAT(imported.status().message(), HasSubstr("auto_pad 'SAME' is not supported"));

  Model all_padding({8, 4, 3, 3});
  SetAttr(*all_padding.node, "pads", std::vector<int64_t>{6, 0, 6, 0});
  imported = ImportedOf(all_padding);
  ASSERT_FALSE(imported.ok());
  EXPECT_THAT(imported.status().message(), HasSubstr("leave no output"));
}

}  // namespace
}  // namespace iosfarm::graph::onnx_import
