#include "worker/backends/reference/kernels.h"

#include <cmath>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace iosfarm::worker::reference {
namespace {

using ::testing::ElementsAre;
using ::testing::ElementsAreArray;
using ::testing::FloatNear;
using ::testing::Pointwise;

// Owns the data of a test tensor.
struct Buffer {
  graph::Shape shape;
  std::vector<float> data;

  Buffer(graph::Shape s, std::vector<float> d) : shape(std::move(s)), data(std::move(d)) {
    if (data.empty()) data.assign(static_cast<size_t>(graph::NumElements(shape)), -99.0f);
  }
  explicit Buffer(graph::Shape s) : Buffer(std::move(s), {}) {}
  ConstView in() const { return {data.data(), shape}; }
  MutableView out() { return {data.data(), shape}; }
};

// 0, 1, 2, ... in `shape`.
Buffer Iota(graph::Shape shape, float start = 0.0f) {
  std::vector<float> data(static_cast<size_t>(graph::NumElements(shape)));
  for (size_t i = 0; i < data.size(); ++i) data[i] = start + static_cast<float>(i);
  return Buffer(std::move(shape), std::move(data));
}

TEST(ConvTest, PlainKernelNoPadding) {
  Buffer x = Iota({1, 1, 3, 3}, 1);
  graph::ConvAttrs a;
  a.out_channels = 1;
  a.kernel = {2, 2};
  const std::vector<float> w(4, 1.0f);
  Buffer y({1, 1, 2, 2});
  Conv2D(a, x.in(), w.data(), nullptr, y.out());
  EXPECT_THAT(y.data, ElementsAre(12, 16, 24, 28));
}

TEST(ConvTest, AsymmetricPadsStrideBiasAndRelu) {
  Buffer x = Iota({1, 1, 3, 3}, 1);  // 1..9
  graph::ConvAttrs a;
  a.out_channels = 1;
  a.kernel = {2, 2};
  a.stride = {2, 2};
  a.pads = {1, 0, 0, 1};  // top 1, right 1
  a.has_bias = true;
  a.activation = graph::Activation::kRelu;
  // Weights [[1, -1], [0, 1]].
  const std::vector<float> w = {1, -1, 0, 1};
  const float bias = -2;
  // Output 2x2: rows start at -1, 1; columns at 0, 2 (the right column padded).
  Buffer y({1, 1, 2, 2});
  Conv2D(a, x.in(), w.data(), &bias, y.out());
  // (0,0): pad row, then x[0][0..1] = 1,2: 0*1+1*2 = 2, -2 -> 0.
  // (0,1): pad row, x[0][2]=3, x[0][3]=pad: 0*3 + 1*0 = 0 -> relu(-2) = 0.
  // (1,0): x[1][0..1] = 4,5 -> 4-5; x[2][0..1] = 7,8 -> 0*7+8: 7 - 2 = 5.
  // (1,1): x[1][2]=6, pad; x[2][2]=9, pad: 6 + 0 - 2 = 4.
  EXPECT_THAT(y.data, ElementsAre(0, 0, 5, 4));
}

TEST(ConvTest, GroupsAndDilation) {
  Buffer x = Iota({1, 2, 5, 5});
  graph::ConvAttrs a;
  a.out_channels = 4;
  a.kernel = {2, 2};
  a.dilation = {2, 2};
  a.groups = 2;
  // Output channel o reads input channel o / 2; weight = o + 1 on every tap.
  std::vector<float> w;
  for (int o = 0; o < 4; ++o) w.insert(w.end(), 4, static_cast<float>(o + 1));
  Buffer y({1, 4, 3, 3});
  Conv2D(a, x.in(), w.data(), nullptr, y.out());
  // y[o][0][0] = (o+1) * (x[c][0][0] + x[c][0][2] + x[c][2][0] + x[c][2][2]).
  const float c0 = 0 + 2 + 10 + 12, c1 = 25 + 27 + 35 + 37;
  EXPECT_FLOAT_EQ(y.data[0 * 9], 1 * c0);
  EXPECT_FLOAT_EQ(y.data[1 * 9], 2 * c0);
  EXPECT_FLOAT_EQ(y.data[2 * 9], 3 * c1);
  EXPECT_FLOAT_EQ(y.data[3 * 9], 4 * c1);
  // Last position (2,2) of channel 0: taps at rows/cols 2 and 4.
  EXPECT_FLOAT_EQ(y.data[8], 12 + 14 + 22 + 24);
}

TEST(ConvTest, FusedActivations) {
  std::vector<float> v = {-2, -0.5f, 0, 3, 8};
  std::vector<float> clip = v;
  ApplyActivation(graph::Activation::kClip, 0, 6, clip.data(), 5);
  EXPECT_THAT(clip, ElementsAre(0, 0, 0, 3, 6));
  std::vector<float> sigmoid = v;
  ApplyActivation(graph::Activation::kSigmoid, 0, 0, sigmoid.data(), 5);
  EXPECT_NEAR(sigmoid[0], 1 / (1 + std::exp(2.0)), 1e-7);
  std::vector<float> tanh = v;
  ApplyActivation(graph::Activation::kTanh, 0, 0, tanh.data(), 5);
  EXPECT_NEAR(tanh[3], std::tanh(3.0), 1e-7);
}

TEST(ConvTransposeTest, StrideTwoOfOnesRepeatsEachPixelOverItsBlock) {
  Buffer x = Iota({1, 1, 2, 2}, 1);  // 1..4
  graph::ConvTransposeAttrs a;
  a.out_channels = 1;
  a.kernel = {2, 2};
  a.stride = {2, 2};
  a.has_bias = true;
  const std::vector<float> w(4, 1.0f);
  const float bias = 0.5f;
  Buffer y({1, 1, 4, 4});
  ConvTranspose2D(a, x.in(), w.data(), &bias, y.out());
  EXPECT_THAT(y.data, ElementsAre(1.5, 1.5, 2.5, 2.5, 1.5, 1.5, 2.5, 2.5, 3.5, 3.5, 4.5, 4.5, 3.5,
                                  3.5, 4.5, 4.5));
}

// The transposed convolution is the adjoint of the convolution with the same
// weight: <conv(x), u> = <x, conv_transpose(u)> for every x and u.
TEST(ConvTransposeTest, IsTheAdjointOfTheConvolution) {
  struct Case {
    int64_t channels, out_channels, groups;
    std::array<int64_t, 2> kernel, stride, dilation;
    std::array<int64_t, 4> pads;
  };
  for (const Case& c : {Case{3, 4, 1, {3, 3}, {2, 2}, {1, 1}, {1, 1, 1, 1}},
                        Case{4, 6, 2, {2, 3}, {1, 2}, {2, 1}, {0, 1, 1, 0}},
                        Case{2, 2, 2, {3, 1}, {3, 1}, {1, 1}, {2, 0, 0, 0}}}) {
    graph::ConvAttrs conv;
    conv.out_channels = c.out_channels;
    conv.kernel = c.kernel;
    conv.stride = c.stride;
    conv.dilation = c.dilation;
    conv.pads = c.pads;
    conv.groups = c.groups;
    const graph::Shape x_shape = {2, c.channels, 9, 8};
    graph::Shape y_shape = {2, c.out_channels, 0, 0};
    graph::ConvTransposeAttrs transpose;
    transpose.out_channels = c.channels;
    transpose.kernel = c.kernel;
    transpose.stride = c.stride;
    transpose.dilation = c.dilation;
    transpose.pads = c.pads;
    transpose.groups = c.groups;
    for (int d = 0; d < 2; ++d) {
      const int64_t span = c.dilation[d] * (c.kernel[d] - 1) + 1;
      y_shape[2 + d] = (x_shape[2 + d] + c.pads[d] + c.pads[2 + d] - span) / c.stride[d] + 1;
      // The rows the convolution's last window leaves out.
      transpose.output_padding[d] =
          x_shape[2 + d] - ((y_shape[2 + d] - 1) * c.stride[d] - c.pads[d] - c.pads[2 + d] + span);
    }
    Buffer x(x_shape), u(y_shape), y(y_shape), back(x_shape);
    std::vector<float> w(
        static_cast<size_t>(c.out_channels * c.channels / c.groups * c.kernel[0] * c.kernel[1]));
    uint32_t state = 7;
    auto next = [&state] {
      state = state * 1664525u + 1013904223u;
      return static_cast<float>(state >> 8) / 16777216.0f - 0.5f;
    };
    for (float& v : x.data) v = next();
    for (float& v : u.data) v = next();
    for (float& v : w) v = next();
    Conv2D(conv, x.in(), w.data(), nullptr, y.out());
    ConvTranspose2D(transpose, u.in(), w.data(), nullptr, back.out());
    double lhs = 0, rhs = 0;
    for (size_t i = 0; i < y.data.size(); ++i) lhs += double{y.data[i]} * u.data[i];
    for (size_t i = 0; i < x.data.size(); ++i) rhs += double{x.data[i]} * back.data[i];
    EXPECT_NEAR(lhs, rhs, 1e-4 * (1 + std::abs(lhs)))
        << c.channels << " channels, groups " << c.groups;
    EXPECT_NE(lhs, 0.0);
  }
}

TEST(PoolTest, MaxAndAverageWithPadding) {
  Buffer x = Iota({1, 1, 3, 3}, 1);
  graph::PoolAttrs a;
  a.kernel = {2, 2};
  a.stride = {2, 2};
  a.pads = {1, 1, 1, 1};
  Buffer max({1, 1, 2, 2});
  Pool2D(graph::OpType::kMaxPool, a, x.in(), max.out());
  EXPECT_THAT(max.data, ElementsAre(1, 3, 7, 9));
  Buffer avg({1, 1, 2, 2});
  Pool2D(graph::OpType::kAveragePool, a, x.in(), avg.out());
  // Windows: {1}, {2,3}, {4,7}, {5,6,8,9}.
  EXPECT_THAT(avg.data, ElementsAre(1, 2.5, 5.5, 7));
  a.count_include_pad = true;
  Pool2D(graph::OpType::kAveragePool, a, x.in(), avg.out());
  EXPECT_THAT(avg.data, ElementsAre(0.25, 1.25, 2.75, 7));
}

TEST(PoolTest, CeilModeDoesNotCountTheOverhang) {
  Buffer x = Iota({1, 1, 1, 5});  // 0..4 in one row
  graph::PoolAttrs a;
  a.kernel = {1, 2};
  a.stride = {1, 2};
  a.ceil_mode = true;
  Buffer y({1, 1, 1, 3});
  Pool2D(graph::OpType::kAveragePool, a, x.in(), y.out());
  EXPECT_THAT(y.data, ElementsAre(0.5, 2.5, 4));
  a.count_include_pad = true;  // no explicit pad: the last window still counts 1
  Pool2D(graph::OpType::kAveragePool, a, x.in(), y.out());
  EXPECT_THAT(y.data, ElementsAre(0.5, 2.5, 4));
  a.pads = {0, 0, 0, 1};  // now the explicit right pad counts
  Pool2D(graph::OpType::kAveragePool, a, x.in(), y.out());
  EXPECT_THAT(y.data, ElementsAre(0.5, 2.5, 2));
  Pool2D(graph::OpType::kMaxPool, a, x.in(), y.out());
  EXPECT_THAT(y.data, ElementsAre(1, 3, 4));
}

TEST(PoolTest, GlobalPools) {
  Buffer x = Iota({1, 2, 2, 2});
  Buffer y({1, 2, 1, 1});
  GlobalPool(graph::OpType::kGlobalAveragePool, x.in(), y.out());
  EXPECT_THAT(y.data, ElementsAre(1.5, 5.5));
  GlobalPool(graph::OpType::kGlobalMaxPool, x.in(), y.out());
  EXPECT_THAT(y.data, ElementsAre(3, 7));
}

TEST(UnaryTest, EveryActivation) {
  Buffer x({5}, {-4, -1, 0, 1, 4});
  Buffer y({5});
  Unary(graph::OpType::kRelu, graph::NoAttrs{}, x.in(), y.out());
  EXPECT_THAT(y.data, ElementsAre(0, 0, 0, 1, 4));
  Unary(graph::OpType::kClip, graph::ClipAttrs{-0.5f, 2.0f}, x.in(), y.out());
  EXPECT_THAT(y.data, ElementsAre(-0.5, -0.5, 0, 1, 2));
  Unary(graph::OpType::kHardSigmoid, graph::HardSigmoidAttrs{0.2f, 0.5f}, x.in(), y.out());
  EXPECT_THAT(y.data, Pointwise(FloatNear(1e-6), {0.0f, 0.3f, 0.5f, 0.7f, 1.0f}));
  Unary(graph::OpType::kHardSwish, graph::NoAttrs{}, x.in(), y.out());
  EXPECT_THAT(y.data, Pointwise(FloatNear(1e-6), {0.0f, -1.0f / 3, 0.0f, 2.0f / 3, 4.0f}));
  Unary(graph::OpType::kSigmoid, graph::NoAttrs{}, x.in(), y.out());
  EXPECT_NEAR(y.data[3], 1 / (1 + std::exp(-1.0)), 1e-7);
  Unary(graph::OpType::kTanh, graph::NoAttrs{}, x.in(), y.out());
  EXPECT_NEAR(y.data[0], std::tanh(-4.0), 1e-7);
}

TEST(BinaryTest, NumpyBroadcasting) {
  Buffer a = Iota({2, 3});          // [[0,1,2],[3,4,5]]
  Buffer row({3}, {10, 20, 30});    // broadcast over rows
  Buffer col({2, 1}, {1, 2});       // broadcast over columns
  Buffer y({2, 3});
  Binary(graph::OpType::kAdd, a.in(), row.in(), y.out());
  EXPECT_THAT(y.data, ElementsAre(10, 21, 32, 13, 24, 35));
  Binary(graph::OpType::kSub, row.in(), a.in(), y.out());
  EXPECT_THAT(y.data, ElementsAre(10, 19, 28, 7, 16, 25));
  Binary(graph::OpType::kMul, a.in(), col.in(), y.out());
  EXPECT_THAT(y.data, ElementsAre(0, 1, 2, 6, 8, 10));
  Binary(graph::OpType::kDiv, a.in(), col.in(), y.out());
  EXPECT_THAT(y.data, ElementsAre(0, 1, 2, 1.5, 2, 2.5));
  // Both operands broadcast: [2,1] x [3] -> [2,3].
  Binary(graph::OpType::kMul, col.in(), row.in(), y.out());
  EXPECT_THAT(y.data, ElementsAre(10, 20, 30, 20, 40, 60));
}

TEST(LayoutTest, ConcatAndSplitAlongAnAxis) {
  Buffer a = Iota({2, 1, 2});       // 0 1 | 2 3
  Buffer b = Iota({2, 2, 2}, 10);   // 10..13 | 14..17
  Buffer y({2, 3, 2});
  Concat(1, {a.in(), b.in()}, y.out());
  EXPECT_THAT(y.data, ElementsAre(0, 1, 10, 11, 12, 13, 2, 3, 14, 15, 16, 17));
  Buffer p({2, 1, 2}), q({2, 2, 2});
  Split(1, y.in(), {p.out(), q.out()});
  EXPECT_EQ(p.data, a.data);
  EXPECT_EQ(q.data, b.data);
}

TEST(LayoutTest, SliceWithSteps) {
  Buffer x = Iota({3, 5});
  graph::SliceAttrs a{{0, 1}, {1, 0}, {3, 5}, {1, 2}};
  Buffer y({2, 3});
  Slice(a, x.in(), y.out());
  EXPECT_THAT(y.data, ElementsAre(5, 7, 9, 10, 12, 14));
}

TEST(LayoutTest, PadModes) {
  Buffer x({1, 3}, {1, 2, 3});
  graph::PadAttrs a;
  a.pads = {0, 2, 0, 1};  // two before and one after the last axis
  Buffer y({1, 6});
  a.value = 9;
  Pad(a, x.in(), y.out());
  EXPECT_THAT(y.data, ElementsAre(9, 9, 1, 2, 3, 9));
  a.mode = graph::PadMode::kReflect;
  Pad(a, x.in(), y.out());
  EXPECT_THAT(y.data, ElementsAre(3, 2, 1, 2, 3, 2));
  a.mode = graph::PadMode::kEdge;
  Pad(a, x.in(), y.out());
  EXPECT_THAT(y.data, ElementsAre(1, 1, 1, 2, 3, 3));
}

// The values PyTorch's F.interpolate gives for [[1, 2], [3, 4]].
TEST(ResizeTest, TwoByTwoToFourByFourInEveryMode) {
  Buffer x({1, 1, 2, 2}, {1, 2, 3, 4});
  Buffer y({1, 1, 4, 4});
  graph::ResizeAttrs a;
  a.size = {4, 4};
  a.scale = {2.0f, 2.0f};
  a.mode = graph::ResizeMode::kLinear;  // bilinear, align_corners=False
  Resize(a, x.in(), y.out());
  EXPECT_THAT(y.data, ElementsAre(1, 1.25, 1.75, 2, 1.5, 1.75, 2.25, 2.5, 2.5, 2.75, 3.25, 3.5, 3,
                                  3.25, 3.75, 4));
  a.coordinates = graph::ResizeCoordinates::kAlignCorners;  // align_corners=True
  Resize(a, x.in(), y.out());
  EXPECT_FLOAT_EQ(y.data[1], 4.0f / 3.0f);
  EXPECT_FLOAT_EQ(y.data[2], 5.0f / 3.0f);
  EXPECT_FLOAT_EQ(y.data[4], 5.0f / 3.0f);
  EXPECT_FLOAT_EQ(y.data[15], 4.0f);
  a.mode = graph::ResizeMode::kNearest;  // mode="nearest": floor of asymmetric
  a.coordinates = graph::ResizeCoordinates::kAsymmetric;
  a.rounding = graph::NearestRounding::kFloor;
  Resize(a, x.in(), y.out());
  EXPECT_THAT(y.data, ElementsAre(1, 1, 2, 2, 1, 1, 2, 2, 3, 3, 4, 4, 3, 3, 4, 4));
}

TEST(ResizeTest, RoundingAndOneElementAxes) {
  Buffer x({1, 1, 1, 4}, {10, 20, 30, 40});
  graph::ResizeAttrs a;
  a.size = {1, 2};
  a.scale = {1.0f, 0.5f};
  Buffer y({1, 1, 1, 2});
  // half_pixel: (o + 0.5) * 2 - 0.5 = 0.5, 2.5; ties go down or up.
  Resize(a, x.in(), y.out());
  EXPECT_THAT(y.data, ElementsAre(10, 30));
  a.rounding = graph::NearestRounding::kRoundPreferCeil;
  Resize(a, x.in(), y.out());
  EXPECT_THAT(y.data, ElementsAre(20, 40));
  a.rounding = graph::NearestRounding::kCeil;
  Resize(a, x.in(), y.out());
  EXPECT_THAT(y.data, ElementsAre(20, 40));
  // Linear to one element: half_pixel samples the middle, pytorch_half_pixel
  // the first.
  a.mode = graph::ResizeMode::kLinear;
  a.size = {1, 1};
  a.scale = {1.0f, 0.25f};
  Buffer one({1, 1, 1, 1});
  Resize(a, x.in(), one.out());
  EXPECT_FLOAT_EQ(one.data[0], 25.0f);  // (0.5) * 4 - 0.5 = 1.5
  a.coordinates = graph::ResizeCoordinates::kPytorchHalfPixel;
  Resize(a, x.in(), one.out());
  EXPECT_FLOAT_EQ(one.data[0], 10.0f);
}

TEST(LayoutTest, TransposeAndCopy) {
  Buffer x = Iota({2, 3, 2});
  Buffer y({2, 2, 3});
  Transpose({0, 2, 1}, x.in(), y.out());
  EXPECT_THAT(y.data, ElementsAre(0, 2, 4, 1, 3, 5, 6, 8, 10, 7, 9, 11));
  Buffer z({3, 2, 2});
  Transpose({1, 0, 2}, x.in(), z.out());
  EXPECT_THAT(z.data, ElementsAre(0, 1, 6, 7, 2, 3, 8, 9, 4, 5, 10, 11));
  Buffer c({12});
  Copy(x.in(), c.out());
  EXPECT_EQ(c.data, x.data);
}

TEST(NormalizationTest, ReductionsSoftmaxBatchNorm) {
  Buffer x = Iota({2, 3});
  Buffer rows({2, 1});
  const graph::OpType reduce_mean = graph::OpType::kReduceMean;
  Reduce(reduce_mean, {{1}, true}, x.in(), rows.out());
  EXPECT_THAT(rows.data, ElementsAre(1, 4));
  Buffer cols({3});
  Reduce(reduce_mean, {{0}, false}, x.in(), cols.out());
  EXPECT_THAT(cols.data, ElementsAre(1.5, 2.5, 3.5));
  Buffer all({1});
  Reduce(reduce_mean, {{}, false}, x.in(), all.out());
  EXPECT_THAT(all.data, ElementsAre(2.5));
  // [[0, -1, 2], [3, 4, -5]] for the sum, max and min.
  Buffer signed_x({2, 3}, {0, -1, 2, 3, 4, -5});
  Reduce(graph::OpType::kReduceSum, {{1}, true}, signed_x.in(), rows.out());
  EXPECT_THAT(rows.data, ElementsAre(1, 2));
  Reduce(graph::OpType::kReduceMax, {{0}, false}, signed_x.in(), cols.out());
  EXPECT_THAT(cols.data, ElementsAre(3, 4, 2));
  Reduce(graph::OpType::kReduceMin, {{}, false}, signed_x.in(), all.out());
  EXPECT_THAT(all.data, ElementsAre(-5));

  Buffer s({2, 3});
  Softmax(1, x.in(), s.out());
  const double e = std::exp(1.0), denom = 1 + e + e * e;
  EXPECT_THAT(s.data, Pointwise(FloatNear(1e-7), std::vector<float>{
                                                     float(1 / denom), float(e / denom),
                                                     float(e * e / denom), float(1 / denom),
                                                     float(e / denom), float(e * e / denom)}));
  Buffer s0({2, 3});
  Softmax(0, x.in(), s0.out());  // columns: softmax of (i, i + 3)
  const float low = static_cast<float>(1 / (1 + std::exp(3.0)));
  EXPECT_NEAR(s0.data[0], low, 1e-7);
  EXPECT_NEAR(s0.data[3], 1 - low, 1e-7);

  Buffer b = Iota({1, 2, 2});  // channel 0: 0 1, channel 1: 2 3
  const float scale[] = {2, 1}, bias[] = {1, 0}, mean[] = {1, 2}, var[] = {3, 0};
  Buffer y({1, 2, 2});
  BatchNorm(1.0f, b.in(), scale, bias, mean, var, y.out());
  // (x - mean) / sqrt(var + 1) * scale + bias.
  EXPECT_THAT(y.data, ElementsAre(0, 1, 0, 1));
}

TEST(LinearTest, GemmTransposesAlphaBetaAndBroadcastBias) {
  Buffer a = Iota({2, 3});            // M=2, K=3
  Buffer b({2, 3}, {1, 0, 1, 0, 1, 0});  // trans_b: N=2
  Buffer c({2, 1}, {100, 200});      // per-row bias
  graph::GemmAttrs attrs;
  attrs.alpha = 2;
  attrs.beta = 0.5;
  attrs.trans_b = true;
  Buffer y({2, 2});
  const ConstView cv = c.in();
  Gemm(attrs, a.in(), b.in(), &cv, y.out());
  // A B^T = [[0+2, 1], [3+5, 4]] -> 2x + 0.5 c.
  EXPECT_THAT(y.data, ElementsAre(54, 52, 116, 108));
  // trans_a: A given as [K, M].
  Buffer at({3, 2}, {0, 3, 1, 4, 2, 5});
  attrs.trans_a = true;
  Buffer scalar({1}, {10});
  const ConstView sv = scalar.in();
  Gemm(attrs, at.in(), b.in(), &sv, y.out());
  EXPECT_THAT(y.data, ElementsAre(9, 7, 21, 13));
  attrs.trans_a = false;
  Gemm(attrs, a.in(), b.in(), nullptr, y.out());
  EXPECT_THAT(y.data, ElementsAre(4, 2, 16, 8));
}

TEST(LinearTest, MatMulBatchedBroadcastAndVectors) {
  Buffer a = Iota({2, 1, 2, 3});  // two batches of 2x3
  Buffer b({3, 3, 1}, {1, 1, 1, 1, 0, 0, 0, 0, 1});  // three 3x1 column vectors
  Buffer y({2, 3, 2, 1});
  MatMul(a.in(), b.in(), y.out());
  // Batch (i, j): rows of a[i] times column b[j]: sums, first element, last.
  EXPECT_THAT(y.data, ElementsAreArray({3.0f, 12.0f, 0.0f, 3.0f, 2.0f, 5.0f, 21.0f, 30.0f,
                                        6.0f, 9.0f, 8.0f, 11.0f}));
  Buffer v({3}, {1, 2, 3});
  Buffer m = Iota({3, 2});  // [[0,1],[2,3],[4,5]]
  Buffer vm({2});
  MatMul(v.in(), m.in(), vm.out());
  EXPECT_THAT(vm.data, ElementsAre(16, 22));
  Buffer mv({2});
  Buffer mt = Iota({2, 3});
  MatMul(mt.in(), v.in(), mv.out());
  EXPECT_THAT(mv.data, ElementsAre(8, 26));
}

}  // namespace
}  // namespace iosfarm::worker::reference
