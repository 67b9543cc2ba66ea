#include "graph/onnx/constant_folding.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <limits>

#include "graph/onnx/onnx_test_util.h"

namespace iosfarm::graph::onnx_import {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using testing::SetAttr;

ConstPtr Ints(std::vector<int64_t> dims, std::vector<int64_t> values) {
  return std::make_shared<const ConstTensor>(MakeIntTensor(std::move(dims), std::move(values)));
}

ConstPtr Floats(std::vector<int64_t> dims, std::vector<float> values) {
  return std::make_shared<const ConstTensor>(MakeFloatTensor(std::move(dims), std::move(values)));
}

class ConstantFoldingTest : public ::testing::Test {
 protected:
  onnx::NodeProto& MakeNode(const std::string& op, int num_inputs, int num_outputs = 1) {
    proto_.Clear();
    proto_.set_op_type(op);
    proto_.set_name("n");
    for (int i = 0; i < num_inputs; ++i) proto_.add_input("in" + std::to_string(i));
    for (int i = 0; i < num_outputs; ++i) proto_.add_output("out" + std::to_string(i));
    return proto_;
  }

  StatusOr<ConstTensor> Fold(std::vector<ConstPtr> inputs, int64_t opset = 13) {
    NodeView node(proto_, "n", opset);
    ASSIGN_OR_RETURN(std::vector<ConstPtr> outs, FoldNode(node, inputs, budget_));
    return *outs[0];
  }

  onnx::NodeProto proto_;
  FoldBudget budget_{1 << 20, 1 << 22};
};

TEST_F(ConstantFoldingTest, GatherWithNegativeIndex) {
  MakeNode("Gather", 2);
  auto out = Fold({Ints({4}, {1, 3, 224, 224}), Ints({}, {-3})});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_TRUE(out->dims.empty());
  EXPECT_THAT(out->ints, ElementsAre(3));
}

TEST_F(ConstantFoldingTest, GatherOutOfRange) {
  MakeNode("Gather", 2);
  auto out = Fold({Ints({4}, {1, 3, 224, 224}), Ints({1}, {4})});
  ASSERT_FALSE(out.ok());
  EXPECT_THAT(out.status().message(), HasSubstr("out of range"));
}

TEST_F(ConstantFoldingTest, UnsqueezeFromAttributeAtOpset11AndInputAt13) {
  SetAttr(MakeNode("Unsqueeze", 1), "axes", std::vector<int64_t>{0});
  auto a = Fold({Ints({}, {7})}, 11);
  ASSERT_TRUE(a.ok()) << a.status();
  EXPECT_THAT(a->dims, ElementsAre(1));
  MakeNode("Unsqueeze", 2);
  auto b = Fold({Ints({2}, {7, 8}), Ints({1}, {-1})}, 13);
  ASSERT_TRUE(b.ok()) << b.status();
  EXPECT_THAT(b->dims, ElementsAre(2, 1));
}

TEST_F(ConstantFoldingTest, ConcatAndArithmetic) {
  SetAttr(MakeNode("Concat", 2), "axis", int64_t{0});
  auto c = Fold({Ints({1}, {1}), Ints({3}, {-1, 7, 7})});
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_THAT(c->ints, ElementsAre(1, -1, 7, 7));
  MakeNode("Div", 2);
  auto d = Fold({Ints({2}, {7, -7}), Ints({}, {2})});
  ASSERT_TRUE(d.ok()) << d.status();
  EXPECT_THAT(d->ints, ElementsAre(3, -3));  // truncation, as C and ONNX Runtime
  auto zero = Fold({Ints({1}, {7}), Ints({1}, {0})});
  ASSERT_FALSE(zero.ok());
  EXPECT_THAT(zero.status().message(), HasSubstr("divides by zero"));
  MakeNode("Mul", 2);
  auto f = Fold({Floats({2, 1}, {1, 2}), Floats({3}, {1, 10, 100})});
  ASSERT_TRUE(f.ok()) << f.status();
  EXPECT_THAT(f->dims, ElementsAre(2, 3));
  EXPECT_THAT(f->floats, ElementsAre(1, 10, 100, 2, 20, 200));
  auto mixed = Fold({Floats({1}, {1}), Ints({1}, {1})});
  ASSERT_FALSE(mixed.ok());
}

TEST_F(ConstantFoldingTest, SliceWithNegativeStepAndClamping) {
  MakeNode("Slice", 5);
  auto out =
      Fold({Ints({5}, {0, 1, 2, 3, 4}), Ints({1}, {-1}),
            Ints({1}, {std::numeric_limits<int64_t>::min()}), Ints({1}, {0}), Ints({1}, {-2})});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_THAT(out->ints, ElementsAre(4, 2, 0));
}

TEST_F(ConstantFoldingTest, TransposeAndReshape) {
  SetAttr(MakeNode("Transpose", 1), "perm", std::vector<int64_t>{1, 0});
  auto t = Fold({Ints({2, 3}, {1, 2, 3, 4, 5, 6})});
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_THAT(t->dims, ElementsAre(3, 2));
  EXPECT_THAT(t->ints, ElementsAre(1, 4, 2, 5, 3, 6));
  MakeNode("Reshape", 2);
  auto r = Fold({Ints({2, 3}, {1, 2, 3, 4, 5, 6}), Ints({2}, {-1, 2})});
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_THAT(r->dims, ElementsAre(3, 2));
}

TEST_F(ConstantFoldingTest, CastRangeWhereExpandConstantOfShape) {
  SetAttr(MakeNode("Cast", 1), "to", int64_t{onnx::TensorProto::INT64});
  auto c = Fold({Floats({3}, {1.9f, -1.9f, 3.0f})});
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_THAT(c->ints, ElementsAre(1, -1, 3));
  auto nan = Fold({Floats({1}, {std::numeric_limits<float>::quiet_NaN()})});
  ASSERT_FALSE(nan.ok());

  MakeNode("Range", 3);
  auto r = Fold({Ints({}, {10}), Ints({}, {0}), Ints({}, {-3})});
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_THAT(r->ints, ElementsAre(10, 7, 4, 1));
  auto huge = Fold({Ints({}, {0}), Ints({}, {std::numeric_limits<int64_t>::max()}), Ints({}, {1})});
  ASSERT_FALSE(huge.ok());

  MakeNode("Where", 3);
  ConstTensor cond = MakeIntTensor({2}, {1, 0});
  cond.kind = ConstKind::kBool;
  auto w2 = Fold({std::make_shared<const ConstTensor>(cond), Ints({2}, {5, 6}), Ints({}, {-1})});
  ASSERT_TRUE(w2.ok()) << w2.status();
  EXPECT_THAT(w2->ints, ElementsAre(5, -1));

  MakeNode("Expand", 2);
  auto e = Fold({Ints({1}, {3}), Ints({2}, {2, 2})});
  ASSERT_TRUE(e.ok()) << e.status();
  EXPECT_THAT(e->ints, ElementsAre(3, 3, 3, 3));

  MakeNode("ConstantOfShape", 1);
  auto k = Fold({Ints({2}, {2, 3})});
  ASSERT_TRUE(k.ok()) << k.status();
  EXPECT_EQ(k->num_elements(), 6);
  auto too_big = Fold({Ints({2}, {1 << 20, 1 << 20})});
  ASSERT_FALSE(too_big.ok());
  EXPECT_THAT(too_big.status().message(), HasSubstr("limit"));
}

TEST_F(ConstantFoldingTest, BudgetIsCumulative) {
  budget_ = FoldBudget(100, 150);
  MakeNode("ConstantOfShape", 1);
  ASSERT_TRUE(Fold({Ints({1}, {100})}).ok());
  auto second = Fold({Ints({1}, {100})});
  ASSERT_FALSE(second.ok());
  EXPECT_THAT(second.status().message(), HasSubstr("budget"));
}

TEST_F(ConstantFoldingTest, ShapeOfWithStartEnd) {
  onnx::NodeProto& node = MakeNode("Shape", 1);
  SetAttr(node, "start", int64_t{1});
  SetAttr(node, "end", int64_t{-1});
  NodeView view(proto_, "n", 15);
  auto out = FoldShapeOf(view, {1, 3, 224, 224}, budget_);
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_THAT((*out)->ints, ElementsAre(3, 224));
}

TEST_F(ConstantFoldingTest, SplitOfConstant) {
  onnx::NodeProto& node = MakeNode("Split", 1, 2);
  SetAttr(node, "split", std::vector<int64_t>{1, 3});
  NodeView view(proto_, "n", 11);
  auto outs = FoldNode(view, {Ints({4}, {1, 2, 3, 4})}, budget_);
  ASSERT_TRUE(outs.ok()) << outs.status();
  EXPECT_THAT((*outs)[0]->ints, ElementsAre(1));
  EXPECT_THAT((*outs)[1]->ints, ElementsAre(2, 3, 4));
}

TEST_F(ConstantFoldingTest, IdentityAliases) {
  MakeNode("Identity", 1);
  ConstPtr in = Floats({2}, {1, 2});
  NodeView view(proto_, "n", 13);
  auto outs = FoldNode(view, {in}, budget_);
  ASSERT_TRUE(outs.ok());
  EXPECT_EQ((*outs)[0].get(), in.get());
}

}  // namespace
}  // namespace iosfarm::graph::onnx_import
