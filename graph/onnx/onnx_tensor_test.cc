#include "graph/onnx/onnx_tensor.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstring>
#include <limits>

#include "graph/onnx/onnx_test_util.h"

namespace iosfarm::graph::onnx_import {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

constexpr int64_t kLimit = 1 << 20;

onnx::TensorProto Proto(int32_t type, std::vector<int64_t> dims) {
  onnx::TensorProto t;
  t.set_data_type(type);
  for (int64_t d : dims) t.add_dims(d);
  return t;
}

TEST(OnnxTensorTest, FloatRawAndTypedAgree) {
  auto raw = ConstTensorFromProto(testing::FloatTensor("w", {2}, {1.5f, -2.0f}), kLimit, "w");
  ASSERT_TRUE(raw.ok()) << raw.status();
  EXPECT_EQ(raw->kind, ConstKind::kFloat);
  EXPECT_THAT(raw->floats, ElementsAre(1.5f, -2.0f));
  onnx::TensorProto typed = Proto(onnx::TensorProto::FLOAT, {2});
  typed.add_float_data(1.5f);
  typed.add_float_data(-2.0f);
  auto t = ConstTensorFromProto(typed, kLimit, "w");
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ(t->floats, raw->floats);
}

TEST(OnnxTensorTest, HalfBfloatAndDoubleConvert) {
  onnx::TensorProto half = Proto(onnx::TensorProto::FLOAT16, {4});
  const uint16_t bits[4] = {0x3c00, 0x3800, 0x0001, 0xfc00};  // 1, 0.5, min subnormal, -inf
  half.set_raw_data(std::string(reinterpret_cast<const char*>(bits), sizeof(bits)));
  auto h = ConstTensorFromProto(half, kLimit, "h");
  ASSERT_TRUE(h.ok()) << h.status();
  EXPECT_FLOAT_EQ(h->floats[0], 1.0f);
  EXPECT_FLOAT_EQ(h->floats[1], 0.5f);
  EXPECT_FLOAT_EQ(h->floats[2], 5.9604645e-8f);
  EXPECT_EQ(h->floats[3], -std::numeric_limits<float>::infinity());

  onnx::TensorProto bf = Proto(onnx::TensorProto::BFLOAT16, {1});
  bf.add_int32_data(0x4040);  // 3.0
  auto b = ConstTensorFromProto(bf, kLimit, "b");
  ASSERT_TRUE(b.ok()) << b.status();
  EXPECT_FLOAT_EQ(b->floats[0], 3.0f);

  onnx::TensorProto dbl = Proto(onnx::TensorProto::DOUBLE, {2});
  dbl.add_double_data(0.25);
  dbl.add_double_data(1e300);  // saturates to inf instead of undefined behaviour
  auto d = ConstTensorFromProto(dbl, kLimit, "d");
  ASSERT_TRUE(d.ok()) << d.status();
  EXPECT_FLOAT_EQ(d->floats[0], 0.25f);
  EXPECT_EQ(d->floats[1], std::numeric_limits<float>::infinity());
}

TEST(OnnxTensorTest, IntegerKindsAndBool) {
  onnx::TensorProto i8 = Proto(onnx::TensorProto::INT8, {3});
  i8.set_raw_data(std::string("\x01\xff\x80", 3));
  auto a = ConstTensorFromProto(i8, kLimit, "i8");
  ASSERT_TRUE(a.ok()) << a.status();
  EXPECT_EQ(a->kind, ConstKind::kInt);
  EXPECT_THAT(a->ints, ElementsAre(1, -1, -128));

  onnx::TensorProto b = Proto(onnx::TensorProto::BOOL, {2});
  b.add_int32_data(0);
  b.add_int32_data(7);
  auto c = ConstTensorFromProto(b, kLimit, "b");
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->kind, ConstKind::kBool);
  EXPECT_THAT(c->ints, ElementsAre(0, 1));

  onnx::TensorProto u64 = Proto(onnx::TensorProto::UINT64, {1});
  u64.add_uint64_data(std::numeric_limits<uint64_t>::max());
  auto u = ConstTensorFromProto(u64, kLimit, "u");
  ASSERT_FALSE(u.ok());
  EXPECT_THAT(u.status().message(), HasSubstr("does not fit"));
}

TEST(OnnxTensorTest, ScalarAndEmptyTensors) {
  auto scalar = ConstTensorFromProto(testing::IntTensor("s", {}, {42}), kLimit, "s");
  ASSERT_TRUE(scalar.ok()) << scalar.status();
  EXPECT_TRUE(scalar->dims.empty());
  EXPECT_THAT(scalar->ints, ElementsAre(42));
  auto empty = ConstTensorFromProto(testing::IntTensor("e", {0, 5}, {}), kLimit, "e");
  ASSERT_TRUE(empty.ok()) << empty.status();
  EXPECT_EQ(empty->num_elements(), 0);
}

TEST(OnnxTensorTest, LengthMismatchesAreErrors) {
  onnx::TensorProto raw = testing::FloatTensor("w", {3}, {1, 2, 3});
  raw.mutable_raw_data()->pop_back();
  auto a = ConstTensorFromProto(raw, kLimit, "tensor 'w'");
  ASSERT_FALSE(a.ok());
  EXPECT_THAT(a.status().message(), HasSubstr("tensor 'w'"));
  EXPECT_THAT(a.status().message(), HasSubstr("wrong data length"));

  onnx::TensorProto typed = testing::IntTensor("i", {4}, {1, 2});
  auto b = ConstTensorFromProto(typed, kLimit, "i");
  ASSERT_FALSE(b.ok());
  EXPECT_THAT(b.status().message(), HasSubstr("wrong data length"));

  onnx::TensorProto missing = Proto(onnx::TensorProto::FLOAT, {2, 2});
  EXPECT_FALSE(ConstTensorFromProto(missing, kLimit, "m").ok());
}

TEST(OnnxTensorTest, DimensionChecksAvoidOverflow) {
  onnx::TensorProto neg = Proto(onnx::TensorProto::FLOAT, {2, -1});
  auto a = ConstTensorFromProto(neg, kLimit, "n");
  ASSERT_FALSE(a.ok());
  EXPECT_THAT(a.status().message(), HasSubstr("negative dimension"));

  const int64_t big = int64_t{1} << 62;
  onnx::TensorProto huge = Proto(onnx::TensorProto::FLOAT, {big, big, 4});
  auto b = ConstTensorFromProto(huge, std::numeric_limits<int64_t>::max(), "h");
  ASSERT_FALSE(b.ok());
  EXPECT_THAT(b.status().message(), HasSubstr("exceed"));

  // An empty tensor with huge other dimensions is refused too.
  onnx::TensorProto empty_huge = Proto(onnx::TensorProto::FLOAT, {0, big, big});
  EXPECT_FALSE(ConstTensorFromProto(empty_huge, kLimit, "z").ok());

  EXPECT_FALSE(CheckedElementCount({kLimit, 2}, kLimit, "x").ok());
  auto ok = CheckedElementCount({kLimit / 2, 2}, kLimit, "x");
  ASSERT_TRUE(ok.ok());
  EXPECT_EQ(*ok, kLimit);
}

TEST(OnnxTensorTest, UnsupportedStorage) {
  onnx::TensorProto segmented = testing::FloatTensor("w", {1}, {1});
  segmented.mutable_segment()->set_begin(0);
  EXPECT_FALSE(ConstTensorFromProto(segmented, kLimit, "w").ok());
  onnx::TensorProto complex = Proto(onnx::TensorProto::COMPLEX64, {1});
  auto c = ConstTensorFromProto(complex, kLimit, "c");
  ASSERT_FALSE(c.ok());
  EXPECT_THAT(c.status().message(), HasSubstr("COMPLEX64"));
}

TEST(OnnxTensorTest, ToIrTensor) {
  auto t = ToIrTensor(MakeIntTensor({}, {3}), "s");
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ(t->shape, (Shape{1}));
  EXPECT_THAT(t->data, ElementsAre(3.0f));
  EXPECT_FALSE(ToIrTensor(MakeFloatTensor({0, 2}, {}), "z").ok());
}

}  // namespace
}  // namespace iosfarm::graph::onnx_import
