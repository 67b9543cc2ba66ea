#include "graph/shape_inference.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "graph/graph_builder.h"

namespace iosfarm::graph {
namespace {

using ::testing::HasSubstr;

std::string Message(const Status& status) { return std::string(status.message()); }

TEST(ShapeInferenceTest, ConvWithStrideDilationGroupsAndAsymmetricPads) {
  GraphBuilder b("g");
  ValueId x = b.Input("x", {2, 8, 17, 17});
  ConvSpec spec;
  spec.out_channels = 16;
  spec.kernel = {3, 5};
  spec.stride = {2, 1};
  spec.dilation = {1, 2};
  spec.pads = {1, 0, 0, 4};  // top, left, bottom, right
  spec.groups = 4;
  ValueId y = b.Conv(x, spec, "conv");
  ASSERT_TRUE(b.status().ok()) << b.status();
  // H: (17 + 1 + 0 - 3) / 2 + 1 = 8; W: (17 + 0 + 4 - 9) / 1 + 1 = 13.
  EXPECT_EQ(b.shape(y), (Shape{2, 16, 8, 13}));
}

TEST(ShapeInferenceTest, ConvRejectsChannelMismatchNamingNode) {
  Node node;
  node.name = "bad_conv";
  node.type = OpType::kConv;
  ConvAttrs a;
  a.out_channels = 4;
  a.kernel = {3, 3};
  node.attrs = a;
  node.weights["W"].shape = {4, 5, 3, 3};
  auto result = InferNodeShapes(node, {{1, 3, 8, 8}});
  ASSERT_FALSE(result.ok());
  EXPECT_THAT(Message(result.status()), HasSubstr("bad_conv"));
  EXPECT_THAT(Message(result.status()), HasSubstr("[4,3,3,3]"));
}

TEST(ShapeInferenceTest, PoolCeilModeMatchesPyTorch) {
  GraphBuilder b("g");
  ValueId x = b.Input("x", {1, 64, 112, 112});
  // GoogLeNet: MaxPool 3x3/2 ceil_mode on 112 -> 56.
  ValueId y = b.MaxPool(x, {3, 3}, {2, 2}, {0, 0, 0, 0}, "pool", /*ceil_mode=*/true);
  EXPECT_EQ(b.shape(y), (Shape{1, 64, 56, 56}));
  // 14 -> ceil((14 - 3) / 2) + 1 = 7 with ceil, 6 without.
  ValueId z = b.Input("z", {1, 8, 14, 14});
  EXPECT_EQ(b.shape(b.MaxPool(z, {3, 3}, {2, 2}, {0, 0, 0, 0}, "p2", true)),
            (Shape{1, 8, 7, 7}));
  EXPECT_EQ(b.shape(b.MaxPool(z, {3, 3}, {2, 2}, {0, 0, 0, 0}, "p3", false)),
            (Shape{1, 8, 6, 6}));
  // Last window starting in the trailing padding is dropped: 5, k2, s2, pad 1.
  ValueId w = b.Input("w", {1, 1, 5, 5});
  EXPECT_EQ(b.shape(b.MaxPool(w, {2, 2}, {2, 2}, {1, 1, 1, 1}, "p4", true)),
            (Shape{1, 1, 3, 3}));
  ASSERT_TRUE(b.status().ok()) << b.status();
}

TEST(ShapeInferenceTest, BroadcastingFollowsNumpy) {
  EXPECT_EQ(*BroadcastShapes({1, 32, 1, 1}, {4, 32, 7, 7}), (Shape{4, 32, 7, 7}));
  EXPECT_EQ(*BroadcastShapes({7}, {2, 3, 1}), (Shape{2, 3, 7}));
  auto bad = BroadcastShapes({2, 3}, {4, 3});
  ASSERT_FALSE(bad.ok());
  EXPECT_THAT(Message(bad.status()), HasSubstr("[2,3]"));
}

TEST(ShapeInferenceTest, ConcatSplitSliceAndPad) {
  GraphBuilder b("g");
  ValueId x = b.Input("x", {1, 6, 4, 4});
  ValueId y = b.Input("y", {1, 2, 4, 4});
  ValueId c = b.Concat({x, y}, 1, "cat");
  EXPECT_EQ(b.shape(c), (Shape{1, 8, 4, 4}));
  auto parts = b.Split(c, 1, {3, 5}, "split");
  ASSERT_EQ(parts.size(), 2u);
  EXPECT_EQ(b.shape(parts[1]), (Shape{1, 5, 4, 4}));
  auto sliced = b.AddNode(OpType::kSlice, SliceAttrs{{2, 3}, {0, 1}, {4, 4}, {2, 1}}, {x}, "slice");
  EXPECT_EQ(b.shape(sliced[0]), (Shape{1, 6, 2, 3}));
  ValueId padded = b.Pad(x, {0, 0, 1, 0, 0, 0, 2, 3}, "pad");
  EXPECT_EQ(b.shape(padded), (Shape{1, 6, 7, 7}));
  ASSERT_TRUE(b.status().ok()) << b.status();
}

TEST(ShapeInferenceTest, ReshapeFlattenTransposeReduceGemmSoftmax) {
  GraphBuilder b("g");
  ValueId x = b.Input("x", {2, 8, 3, 3});
  EXPECT_EQ(b.shape(b.Reshape(x, {2, 4, 2, 9}, "r")), (Shape{2, 4, 2, 9}));
  EXPECT_EQ(b.shape(b.Transpose(x, {0, 2, 3, 1}, "t")), (Shape{2, 3, 3, 8}));
  EXPECT_EQ(b.shape(b.ReduceMean(x, {2, 3}, false, "m")), (Shape{2, 8}));
  EXPECT_EQ(b.shape(b.ReduceMean(x, {2, 3}, true, "m2")), (Shape{2, 8, 1, 1}));
  ValueId f = b.Flatten(x, 1, "f");
  EXPECT_EQ(b.shape(f), (Shape{2, 72}));
  ValueId fc = b.Linear(f, 10, "fc");
  EXPECT_EQ(b.shape(fc), (Shape{2, 10}));
  EXPECT_EQ(b.shape(b.Softmax(fc, 1, "sm")), (Shape{2, 10}));
  ASSERT_TRUE(b.status().ok()) << b.status();
}

TEST(ShapeInferenceTest, MatMulWithBatchBroadcast) {
  Node node;
  node.name = "mm";
  node.type = OpType::kMatMul;
  node.attrs = NoAttrs{};
  auto out = InferNodeShapes(node, {{4, 1, 3, 5}, {2, 5, 7}});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ((*out)[0], (Shape{4, 2, 3, 7}));
  auto bad = InferNodeShapes(node, {{3, 5}, {4, 7}});
  EXPECT_FALSE(bad.ok());
}

TEST(ShapeInferenceTest, ErrorsNameTheNode) {
  GraphBuilder b("g");
  ValueId x = b.Input("x", {1, 6, 4, 4});
  b.Reshape(x, {5, 5}, "bad_reshape");
  ASSERT_FALSE(b.status().ok());
  EXPECT_THAT(Message(b.status()), HasSubstr("bad_reshape"));
  EXPECT_THAT(Message(b.status()), HasSubstr("[1,6,4,4]"));
  EXPECT_FALSE(std::move(b).Finish().ok());
}

TEST(ShapeInferenceTest, RejectsHugeOrNonPositiveDimensions) {
  Node node;
  node.name = "r";
  node.type = OpType::kReshape;
  node.attrs = ReshapeAttrs{{int64_t{1} << 40, int64_t{1} << 40}};
  auto result = InferNodeShapes(node, {{1, 4}});
  ASSERT_FALSE(result.ok());
  EXPECT_THAT(Message(result.status()), HasSubstr("too large"));
  node.attrs = ReshapeAttrs{{-1, 4}};
  EXPECT_FALSE(InferNodeShapes(node, {{1, 4}}).ok());
}

TEST(ShapeInferenceTest, InferShapesFillsWholeGraphAndReportsDanglingInput) {
  Graph g("g");
  ValueId x = g.AddInput("x", {1, 3, 4, 4});
  Node relu;
  relu.name = "relu";
  relu.type = OpType::kRelu;
  relu.inputs = {x};
  NodeId r = g.AddNode(relu);
  g.AddOutput(g.node(r).outputs[0]);
  ASSERT_TRUE(InferShapes(g).ok());
  EXPECT_EQ(g.value(g.node(r).outputs[0]).shape, (Shape{1, 3, 4, 4}));

  Node dangling;
  dangling.name = "reads_ghost";
  dangling.type = OpType::kRelu;
  dangling.inputs = {g.AddValue("ghost")};
  g.AddNode(dangling);
  Status status = InferShapes(g);
  ASSERT_FALSE(status.ok());
  EXPECT_THAT(Message(status), HasSubstr("reads_ghost"));
  EXPECT_THAT(Message(status), HasSubstr("ghost"));
}

}  // namespace
}  // namespace iosfarm::graph
