// Resize imports on hand-built ONNX models: sizes, scales, the defaults, and
// the refusals that name what is supported.
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

// x [1, 8, 7, 5] -> Resize -> y; `inputs` after x ("" for an absent one).
struct ResizeModel {
  explicit ResizeModel(int64_t opset, std::vector<int64_t> dims = {1, 8, 7, 5}) : builder(opset) {
    builder.Input("x", dims).Output("y");
    node = &builder.Node("Resize", {"x"}, {"y"}, "up");
  }
  ResizeModel& Scales(int input, std::vector<float> values) {
    const int64_t count = static_cast<int64_t>(values.size());
    builder.Weight("scales", {count}, std::move(values));
    SetInput(input, "scales");
    return *this;
  }
  ResizeModel& Sizes(int input, std::vector<int64_t> values) {
    builder.Ints("sizes", values);
    SetInput(input, "sizes");
    return *this;
  }
  void SetInput(int input, const std::string& name) {
    while (node->input_size() <= input) node->add_input("");
    node->set_input(input, name);
  }
  StatusOr<Graph> Import() const {
    return ImportOnnxBytes(builder.Serialize(), "resize_model", OnnxImportOptions{});
  }
  OnnxModelBuilder builder;
  onnx::NodeProto* node = nullptr;
};

const ResizeAttrs& TheResize(const Graph& graph) {
  for (const Node& node : graph.nodes()) {
    if (node.type == OpType::kResize) return std::get<ResizeAttrs>(node.attrs);
  }
  ADD_FAILURE() << "no Resize node";
  static const ResizeAttrs kNone;
  return kNone;
}

TEST(ResizeImportTest, SizesGiveTheOutputAndTheirRatioTheScale) {
  ResizeModel m(13);
  SetAttr(*m.node, "mode", "linear");
  m.Sizes(3, {1, 8, 14, 10});
  auto graph = m.Import();
  ASSERT_TRUE(graph.ok()) << graph.status();
  EXPECT_THAT(graph->value(graph->outputs()[0]).shape, ElementsAre(1, 8, 14, 10));
  const ResizeAttrs& a = TheResize(*graph);
  EXPECT_EQ(a.mode, ResizeMode::kLinear);
  EXPECT_EQ(a.coordinates, ResizeCoordinates::kHalfPixel);  // the default since opset 11
  EXPECT_THAT(a.size, ElementsAre(14, 10));
  EXPECT_THAT(a.scale, ElementsAre(2.0f, 2.0f));
  // It survives serialization (the stored graph of a farm job).
  auto round_trip = ParseGraph(SerializeGraph(*graph));
  ASSERT_TRUE(round_trip.ok()) << round_trip.status();
  EXPECT_EQ(TheResize(*round_trip), a);
}

TEST(ResizeImportTest, ScalesFloorTheOutputAndKeepTheirFactor) {
  ResizeModel m(11);
  SetAttr(*m.node, "coordinate_transformation_mode", "asymmetric");
  SetAttr(*m.node, "nearest_mode", "floor");
  m.SetInput(1, "");  // roi absent
  m.Scales(2, {1.0f, 1.0f, 1.5f, 0.5f});
  auto graph = m.Import();
  ASSERT_TRUE(graph.ok()) << graph.status();
  const ResizeAttrs& a = TheResize(*graph);
  EXPECT_EQ(a.mode, ResizeMode::kNearest);
  EXPECT_EQ(a.coordinates, ResizeCoordinates::kAsymmetric);
  EXPECT_EQ(a.rounding, NearestRounding::kFloor);
  EXPECT_THAT(a.size, ElementsAre(10, 2));  // floor(7 * 1.5), floor(5 * 0.5)
  EXPECT_THAT(a.scale, ElementsAre(1.5f, 0.5f));
}

// Each refusal names the node and what is supported.
TEST(ResizeImportTest, WhatIsNotSupportedIsNamed) {
  const auto refused = [](ResizeModel m, const std::string& message) {
    auto graph = m.Import();
    ASSERT_FALSE(graph.ok()) << message;
    EXPECT_THAT(graph.status().message(), HasSubstr("'up' (Resize)")) << message;
    EXPECT_THAT(graph.status().message(), HasSubstr(message));
  };
  {
    ResizeModel m(13);
    SetAttr(*m.node, "mode", "cubic");
    m.Sizes(3, {1, 8, 14, 10});
    refused(m, "mode 'cubic' is not supported (nearest and linear are)");
  }
  {
    ResizeModel m(13);
    SetAttr(*m.node, "coordinate_transformation_mode", "tf_crop_and_resize");
    m.Sizes(3, {1, 8, 14, 10});
    refused(m, "coordinate_transformation_mode 'tf_crop_and_resize' is not supported");
  }
  {
    ResizeModel m(13);
    m.Scales(2, {1.0f, 2.0f, 2.0f, 2.0f});
    refused(m, "resizing N or C");
  }
  {
    ResizeModel m(13, {8, 7, 5});
    m.Sizes(3, {8, 14, 10});
    refused(m, "only 4-D (N, C, H, W) inputs are resized");
  }
  {
    ResizeModel m(13);
    refused(m, "needs 'scales' or 'sizes'");
  }
}

}  // namespace
}  // namespace iosfarm::graph::onnx_import
