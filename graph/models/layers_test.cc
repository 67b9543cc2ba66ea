#include "graph/models/layers.h"

#include "graph/models/model_test_util.h"
#include "gtest/gtest.h"

namespace iosfarm::graph::models {
namespace {

TEST(LayersTest, CheckZooBatch) {
  EXPECT_TRUE(CheckZooBatch("m", 1).ok());
  EXPECT_TRUE(CheckZooBatch("m", kMaxZooBatch).ok());
  const Status zero = CheckZooBatch("mymodel", 0);
  EXPECT_EQ(zero.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(std::string(zero.message()).find("mymodel"), std::string::npos);
  EXPECT_EQ(CheckZooBatch("m", kMaxZooBatch + 1).code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(LayersTest, SamePaddingMatchesTensorFlow) {
  using P = std::array<int64_t, 2>;
  EXPECT_EQ(SamePadding(42, 5, 2), (P{1, 2}));  // even size: extra pixel after
  EXPECT_EQ(SamePadding(83, 3, 2), (P{1, 1}));  // odd size: symmetric
  EXPECT_EQ(SamePadding(165, 7, 2), (P{3, 3}));
  EXPECT_EQ(SamePadding(28, 3, 1), (P{1, 1}));
  EXPECT_EQ(SamePadding(7, 1, 1), (P{0, 0}));
  EXPECT_EQ(SamePadding(4, 1, 2), (P{0, 0}));  // never negative
}

TEST(LayersTest, SeparableConvIsDepthwiseThenPointwise) {
  GraphBuilder b("t");
  const ValueId x = b.Input("input", {2, 8, 10, 10});
  const ValueId y =
      SeparableConvBn(b, x, 16, 3, 2, SamePads(b, x, 3, 2), "sep", Activation::kRelu);
  b.Output(y);
  EXPECT_EQ(b.shape(y), (Shape{2, 16, 5, 5}));
  StatusOr<Graph> graph = std::move(b).Finish();
  ASSERT_TRUE(graph.ok()) << graph.status();
  ASSERT_EQ(graph->num_nodes(), 2);
  const auto& dw = std::get<ConvAttrs>(graph->node(0).attrs);
  EXPECT_EQ(graph->node(0).name, "sep/dw");
  EXPECT_EQ(dw.groups, 8);
  EXPECT_FALSE(dw.has_bias);
  EXPECT_EQ(dw.pads, (std::array<int64_t, 4>{0, 0, 1, 1}));
  const auto& pw = std::get<ConvAttrs>(graph->node(1).attrs);
  EXPECT_EQ(graph->node(1).name, "sep/pw");
  EXPECT_EQ(pw.kernel, (std::array<int64_t, 2>{1, 1}));
  EXPECT_TRUE(pw.has_bias);
  EXPECT_EQ(pw.activation, Activation::kRelu);
  EXPECT_TRUE(Validate(*graph).ok());
}

TEST(LayersTest, AddAllChainsBinaryAdds) {
  GraphBuilder b("t");
  const ValueId x = b.Input("input", {1, 4, 3, 3});
  EXPECT_EQ(AddAll(b, {x}, "sum"), x);  // a single term adds nothing
  const ValueId s = AddAll(b, {x, x, x}, "sum");
  b.Output(s);
  StatusOr<Graph> graph = std::move(b).Finish();
  ASSERT_TRUE(graph.ok()) << graph.status();
  EXPECT_EQ(CountOps(*graph, OpType::kAdd), 2);
  EXPECT_EQ(graph->value(s).shape, (Shape{1, 4, 3, 3}));
}

TEST(LayersTest, ClassifierHeadProducesLogits) {
  GraphBuilder b("t");
  const ValueId x = b.Input("input", {3, 32, 7, 7});
  const ValueId logits = ClassifierHead(b, x);
  StatusOr<Graph> graph = std::move(b).Finish();
  ASSERT_TRUE(graph.ok()) << graph.status();
  ASSERT_EQ(graph->outputs().size(), 1u);
  EXPECT_EQ(graph->outputs()[0], logits);
  EXPECT_EQ(graph->value(logits).name, "logits");
  EXPECT_EQ(graph->value(logits).shape, (Shape{3, kNumClasses}));
  EXPECT_EQ(CountOps(*graph, OpType::kGemm), 1);
  EXPECT_TRUE(Validate(*graph).ok());
}

}  // namespace
}  // namespace iosfarm::graph::models
