// The backend's own kernels, per-element math and host-built parameters,
// run on the CPU over whole tensors (one loop iteration per CUDA thread
// index) and compared with the reference kernels. No GPU needed.
#include "worker/backends/cuda/planner/kernel_math.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <limits>
#include <vector>

#include "common/strings.h"
#include "graph/shape_inference.h"
#include "worker/backends/cuda/planner/kernel_params.h"
#include "worker/backends/reference/compare.h"
#include "worker/backends/reference/kernels.h"
#include "worker/backends/weights.h"

namespace iosfarm::worker::cuda {
namespace {

using graph::Shape;
using graph::Tensor;

Tensor Random(const Shape& shape, uint64_t seed, float scale = 1.0f) {
  Tensor t = RandomTensor(shape, seed);
  for (float& v : t.data) v *= scale;
  return t;
}

Tensor Empty(const Shape& shape) {
  Tensor t;
  t.shape = shape;
  t.data.assign(static_cast<size_t>(graph::NumElements(shape)), 0.0f);
  return t;
}

reference::ConstView In(const Tensor& t) { return {t.data.data(), t.shape}; }
reference::MutableView Out(Tensor& t) { return {t.data.data(), t.shape}; }

void ExpectClose(const Tensor& actual, const Tensor& expected, double rtol,
                 const std::string& what) {
  Status status = reference::CompareTensors(actual, expected, rtol, what);
  EXPECT_TRUE(status.ok()) << status;
}

TEST(KernelMathTest, UnaryMatchesReference) {
  const Tensor x = Random({2, 3, 7, 5}, 11, 4.0f);
  const float inf = std::numeric_limits<float>::infinity();
  const std::vector<std::pair<graph::OpType, graph::Attributes>> ops = {
      {graph::OpType::kRelu, graph::NoAttrs{}},
      {graph::OpType::kClip, graph::ClipAttrs{-0.5f, 0.25f}},
      {graph::OpType::kClip, graph::ClipAttrs{-0.3f, inf}},
      {graph::OpType::kSigmoid, graph::NoAttrs{}},
      {graph::OpType::kHardSigmoid, graph::HardSigmoidAttrs{1.0f / 6, 0.5f}},
      {graph::OpType::kHardSwish, graph::NoAttrs{}},
      {graph::OpType::kTanh, graph::NoAttrs{}}};
  for (const auto& [type, attrs] : ops) {
    auto f = MakeUnaryParams(type, attrs);
    ASSERT_TRUE(f.ok()) << f.status();
    Tensor actual = Empty(x.shape), expected = Empty(x.shape);
    for (size_t i = 0; i < x.data.size(); ++i) actual.data[i] = math::ApplyUnary(x.data[i], *f);
    reference::Unary(type, attrs, In(x), Out(expected));
    ExpectClose(actual, expected, 1e-5, std::string(graph::OpTypeName(type)));
  }
  EXPECT_FALSE(MakeUnaryParams(graph::OpType::kAdd, graph::NoAttrs{}).ok());
}

// Every UnaryMath function (fp32 on the device against the reference's
// double), on positive inputs where it needs them.
TEST(KernelMathTest, UnaryMathMatchesReference) {
  const Tensor signed_x = Random({2, 3, 7, 5}, 12, 4.0f);
  Tensor positive = signed_x;
  for (float& v : positive.data) v = std::abs(v) + 0.1f;
  for (graph::UnaryFunction function : graph::kAllUnaryFunctions) {
    const graph::UnaryMathAttrs attrs{function, function == graph::UnaryFunction::kPow ? 2.5f : 0.2f,
                                      1.0507f};
    const bool needs_positive =
        function == graph::UnaryFunction::kSqrt || function == graph::UnaryFunction::kLog ||
        function == graph::UnaryFunction::kReciprocal || function == graph::UnaryFunction::kPow;
    const Tensor& x = needs_positive ? positive : signed_x;
    auto f = MakeUnaryParams(graph::OpType::kUnaryMath, attrs);
    ASSERT_TRUE(f.ok()) << f.status();
    Tensor actual = Empty(x.shape), expected = Empty(x.shape);
    for (size_t i = 0; i < x.data.size(); ++i) actual.data[i] = math::ApplyUnary(x.data[i], *f);
    reference::Unary(graph::OpType::kUnaryMath, attrs, In(x), Out(expected));
    ExpectClose(actual, expected, 1e-5, std::string(graph::UnaryFunctionName(function)));
  }
}

TEST(KernelMathTest, BiasActivationAndChannelAffineFindTheChannel) {
  // [2, 3, 4, 5]: element i is in channel (i / 20) % 3.
  for (int64_t i = 0; i < 120; ++i) EXPECT_EQ(math::Channel(i, 3, 20), (i / 20) % 3);
  graph::ConvAttrs conv;
  conv.activation = graph::Activation::kClip;
  conv.clip_min = -1.0f;
  conv.clip_max = 2.0f;
  const UnaryParams clip = ConvActivationParams(conv);
  EXPECT_EQ(clip.kind, UnaryKind::kClip);
  EXPECT_EQ(math::ApplyUnary(5.0f, clip), 2.0f);
  EXPECT_EQ(math::ApplyUnary(-5.0f, clip), -1.0f);
  conv.activation = graph::Activation::kNone;
  EXPECT_EQ(math::ApplyUnary(-5.0f, ConvActivationParams(conv)), -5.0f);
  // The epilogue of a conv with a fused residual: act((v + bias) + z).
  conv.activation = graph::Activation::kRelu;
  const UnaryParams relu = ConvActivationParams(conv);
  EXPECT_EQ(math::BiasResidualActivation(1.0f, 0.5f, -2.0f, relu), 0.0f);
  EXPECT_EQ(math::BiasResidualActivation(1.0f, 0.5f, 2.0f, relu), 3.5f);
  EXPECT_EQ(math::BiasResidualActivation(1.0f, 0.5f, -2.0f, ConvActivationParams({})), -0.5f);
}

TEST(KernelMathTest, BinaryBroadcastMatchesReference) {
  const std::vector<std::pair<Shape, Shape>> cases = {
      {{2, 24, 5, 5}, {2, 24, 5, 5}}, {{2, 24, 5, 5}, {1, 24, 1, 1}}, {{2, 24, 5, 5}, {24, 1, 1}},
      {{1, 24, 1, 1}, {2, 24, 5, 5}}, {{2, 24, 5, 5}, {5}},           {{1, 24, 1, 1}, {1, 1, 5, 5}},
      {{3, 17}, {17}},                {{3, 1}, {1, 4}}};
  for (const auto& [as, bs] : cases) {
    auto y_shape = graph::BroadcastShapes(as, bs);
    ASSERT_TRUE(y_shape.ok());
    const Tensor a = Random(as, 1), b = Random(bs, 2);
    for (graph::OpType type : {graph::OpType::kAdd, graph::OpType::kSub, graph::OpType::kMul,
                               graph::OpType::kDiv}) {
      auto kind = MakeBinaryKind(type);
      auto p = MakeBroadcastParams(as, bs, *y_shape);
      ASSERT_TRUE(kind.ok() && p.ok()) << p.status();
      Tensor actual = Empty(*y_shape), expected = Empty(*y_shape);
      for (int64_t i = 0; i < actual.num_elements(); ++i) {
        int64_t ia = 0, ib = 0;
        math::BroadcastOffsets(i, *p, &ia, &ib);
        ASSERT_GE(ia, 0);
        ASSERT_LT(ia, a.num_elements());
        ASSERT_GE(ib, 0);
        ASSERT_LT(ib, b.num_elements());
        actual.data[i] = math::ApplyBinary(*kind, a.data[ia], b.data[ib]);
      }
      reference::Binary(type, In(a), In(b), Out(expected));
      ExpectClose(actual, expected, 1e-6,
                  StrCat(graph::OpTypeName(type), " ", graph::ShapeToString(as), " ",
                         graph::ShapeToString(bs)));
    }
  }
}

TEST(KernelMathTest, SliceAndTransposeMatchReference) {
  struct SliceCase {
    Shape x;
    graph::SliceAttrs attrs;
  };
  const std::vector<SliceCase> slices = {
      {{1, 24, 10, 10}, {{2, 3}, {1, 0}, {9, 10}, {2, 3}}},
      {{1, 24, 4, 4}, {{1}, {4}, {20}, {1}}},
      {{6, 10}, {{0, 1}, {1, 2}, {5, 9}, {1, 2}}}};
  for (const SliceCase& c : slices) {
    Shape y = c.x;
    for (size_t i = 0; i < c.attrs.axes.size(); ++i) {
      const size_t axis = static_cast<size_t>(c.attrs.axes[i]);
      y[axis] = (c.attrs.ends[i] - c.attrs.starts[i] + c.attrs.steps[i] - 1) / c.attrs.steps[i];
    }
    const Tensor x = Random(c.x, 3);
    auto p = MakeSliceParams(c.attrs, c.x, y);
    ASSERT_TRUE(p.ok()) << p.status();
    Tensor actual = Empty(y), expected = Empty(y);
    for (int64_t i = 0; i < actual.num_elements(); ++i) {
      actual.data[i] = x.data[math::GatherOffset(i, *p)];
    }
    reference::Slice(c.attrs, In(x), Out(expected));
    ExpectClose(actual, expected, 0, "slice " + graph::ShapeToString(c.x));
  }
  const std::vector<std::pair<Shape, std::vector<int64_t>>> transposes = {
      {{2, 24, 3, 5}, {0, 2, 3, 1}}, {{3, 17}, {1, 0}}, {{2, 3, 4, 5}, {3, 1, 0, 2}}};
  for (const auto& [xs, perm] : transposes) {
    Shape y;
    for (int64_t d : perm) y.push_back(xs[static_cast<size_t>(d)]);
    const Tensor x = Random(xs, 4);
    auto p = MakeTransposeParams(perm, xs, y);
    ASSERT_TRUE(p.ok()) << p.status();
    Tensor actual = Empty(y), expected = Empty(y);
    for (int64_t i = 0; i < actual.num_elements(); ++i) {
      actual.data[i] = x.data[math::GatherOffset(i, *p)];
    }
    reference::Transpose(perm, In(x), Out(expected));
    ExpectClose(actual, expected, 0, "transpose " + graph::ShapeToString(xs));
  }
}

TEST(KernelMathTest, PadMatchesReference) {
  const std::vector<std::pair<Shape, graph::PadAttrs>> cases = {
      {{1, 8, 5, 5}, {{0, 0, 1, 2, 0, 0, 2, 1}, graph::PadMode::kConstant, 0.5f}},
      {{1, 24, 5, 5}, {{0, 0, 2, 1, 0, 0, 1, 2}, graph::PadMode::kReflect, 0.0f}},
      {{2, 8, 4, 5}, {{0, 0, 3, 0, 0, 0, 0, 2}, graph::PadMode::kEdge, 0.0f}},
      {{1, 16, 3, 3}, {{0, 2, 0, 0, 0, 1, 0, 0}, graph::PadMode::kConstant, -1.0f}},
      {{4, 6}, {{1, 2, 3, 1}, graph::PadMode::kReflect, 0.0f}}};
  for (const auto& [xs, attrs] : cases) {
    Shape y = xs;
    for (size_t d = 0; d < xs.size(); ++d) y[d] += attrs.pads[d] + attrs.pads[d + xs.size()];
    const Tensor x = Random(xs, 5);
    auto p = MakePadParams(attrs, xs, y);
    ASSERT_TRUE(p.ok()) << p.status();
    Tensor actual = Empty(y), expected = Empty(y);
    for (int64_t i = 0; i < actual.num_elements(); ++i) {
      const int64_t offset = math::PadOffset(i, *p);
      ASSERT_LT(offset, x.num_elements());
      actual.data[i] = offset < 0 ? p->value : x.data[offset];
    }
    reference::Pad(attrs, In(x), Out(expected));
    ExpectClose(actual, expected, 0, "pad " + graph::ShapeToString(xs));
  }
}

TEST(KernelMathTest, ResizeMatchesReference) {
  const Shape xs = {2, 3, 7, 5};
  const Tensor x = Random(xs, 11);
  struct Case {
    std::array<int64_t, 2> size;
    std::array<float, 2> scale;
  };
  // Up (sizes), down (sizes), and scales whose factor is not out / in.
  for (const Case& c : {Case{{14, 10}, {2.0f, 2.0f}}, Case{{3, 2}, {3.0f / 7, 2.0f / 5}},
                        Case{{10, 7}, {1.5f, 1.5f}}, Case{{1, 1}, {1.0f / 7, 1.0f / 5}}}) {
    for (graph::ResizeMode mode : {graph::ResizeMode::kNearest, graph::ResizeMode::kLinear}) {
      for (graph::ResizeCoordinates coordinates :
           {graph::ResizeCoordinates::kHalfPixel, graph::ResizeCoordinates::kPytorchHalfPixel,
            graph::ResizeCoordinates::kAlignCorners, graph::ResizeCoordinates::kAsymmetric}) {
        for (graph::NearestRounding rounding :
             {graph::NearestRounding::kRoundPreferFloor, graph::NearestRounding::kRoundPreferCeil,
              graph::NearestRounding::kFloor, graph::NearestRounding::kCeil}) {
          graph::ResizeAttrs attrs{c.size, c.scale, mode, coordinates, rounding};
          const Shape y = {xs[0], xs[1], c.size[0], c.size[1]};
          auto p = MakeResizeParams(attrs, xs, y);
          ASSERT_TRUE(p.ok()) << p.status();
          Tensor actual = Empty(y), expected = Empty(y);
          for (int64_t i = 0; i < actual.num_elements(); ++i) {
            actual.data[i] = math::ResizeValue(x.data.data(), i, *p);
          }
          reference::Resize(attrs, In(x), Out(expected));
          ExpectClose(
              actual, expected, 1e-5,
              StrCat("resize to ", graph::ShapeToString(y), " ", graph::ResizeModeName(mode), " ",
                     graph::ResizeCoordinatesName(coordinates), " ",
                     graph::NearestRoundingName(rounding)));
        }
      }
    }
  }
  EXPECT_FALSE(MakeResizeParams(graph::ResizeAttrs{}, {1, 3, 4}, {1, 3, 1, 1}).ok());
}

TEST(KernelMathTest, ConvTransposeMatchesReference) {
  struct Case {
    Shape x;
    graph::ConvTransposeAttrs attrs;
  };
  const std::vector<Case> cases = {
      {{1, 8, 5, 6}, {4, {3, 3}, {2, 2}, {1, 1}, {1, 1, 1, 1}, {1, 1}, 1, true}},
      {{2, 6, 4, 4}, {4, {4, 4}, {2, 2}, {1, 1}, {1, 1, 1, 1}, {0, 0}, 2, false}},
      {{1, 4, 5, 3}, {6, {2, 3}, {1, 3}, {2, 1}, {0, 2, 1, 0}, {1, 2}, 2, true}},
      {{1, 3, 3, 3}, {3, {1, 1}, {3, 2}, {1, 1}, {0, 0, 0, 0}, {2, 1}, 3, false}},
  };
  for (const Case& c : cases) {
    graph::Node node;
    node.name = "up";
    node.type = graph::OpType::kConvTranspose;
    node.attrs = c.attrs;
    const Shape ws = {c.x[1], c.attrs.out_channels / c.attrs.groups, c.attrs.kernel[0],
                      c.attrs.kernel[1]};
    node.weights["W"] = Random(ws, 3);
    if (c.attrs.has_bias) node.weights["B"] = Random({c.attrs.out_channels}, 4);
    auto shapes = graph::InferNodeShapes(node, {c.x});
    ASSERT_TRUE(shapes.ok()) << shapes.status();
    const Shape& y = (*shapes)[0];
    auto p = MakeConvTransposeParams(c.attrs, c.x, y);
    ASSERT_TRUE(p.ok()) << p.status();
    const Tensor x = Random(c.x, 5);
    const float* bias = c.attrs.has_bias ? node.weights["B"].data.data() : nullptr;
    Tensor actual = Empty(y), expected = Empty(y);
    for (int64_t i = 0; i < actual.num_elements(); ++i) {
      actual.data[i] =
          math::ConvTransposeValue(x.data.data(), node.weights["W"].data.data(), bias, i, *p);
    }
    reference::ConvTranspose2D(c.attrs, In(x), node.weights["W"].data.data(), bias, Out(expected));
    ExpectClose(
        actual, expected, 1e-5,
        StrCat("conv-transpose of ", graph::ShapeToString(c.x), " to ", graph::ShapeToString(y)));
  }
  EXPECT_FALSE(MakeConvTransposeParams(graph::ConvTransposeAttrs{}, {1, 3, 4}, {1, 3, 1, 1}).ok());
}

TEST(KernelMathTest, ReductionsMatchReference) {
  const std::vector<std::pair<Shape, graph::ReduceAttrs>> cases = {{{2, 24, 5, 5}, {{2, 3}, true}},
                                                                   {{2, 24, 5, 5}, {{2, 3}, false}},
                                                                   {{2, 24, 5, 5}, {{1}, false}},
                                                                   {{3, 17}, {{}, false}},
                                                                   {{2, 3, 4, 5}, {{0, 2}, true}}};
  for (const graph::OpType type : {graph::OpType::kReduceMean, graph::OpType::kReduceSum,
                                   graph::OpType::kReduceMax, graph::OpType::kReduceMin}) {
    for (const auto& [xs, attrs] : cases) {
      const Tensor x = Random(xs, 6);
      auto p = MakeReduceParams(type, attrs, xs);
      ASSERT_TRUE(p.ok()) << p.status();
      int64_t n_out = 1;
      Shape kept = xs;
      for (size_t d = 0; d < xs.size(); ++d) {
        const bool reduced =
            attrs.axes.empty() || std::find(attrs.axes.begin(), attrs.axes.end(),
                                            static_cast<int64_t>(d)) != attrs.axes.end();
        if (reduced) kept[d] = 1;
        n_out *= kept[d];
      }
      Tensor actual = Empty(kept), expected = Empty(kept);
      for (int64_t o = 0; o < n_out; ++o) {
        const int64_t base = math::ReduceBase(o, *p);
        float acc = math::ReduceIdentity(p->function);
        for (int64_t r = 0; r < p->count; ++r) {
          acc = math::ReduceCombine(p->function, acc, x.data[base + math::ReduceOffset(r, *p)]);
        }
        actual.data[o] = math::ReduceFinish(p->function, acc, p->count);
      }
      reference::Reduce(type, attrs, In(x), Out(expected));
      ExpectClose(actual, expected, 1e-5,
                  StrCat(graph::OpTypeName(type), " ", graph::ShapeToString(xs)));
    }
  }
  EXPECT_FALSE(MakeReduceParams(graph::OpType::kRelu, {}, {2, 3}).ok());
}

TEST(KernelMathTest, Pool2dMatchesReference) {
  struct PoolCase {
    graph::OpType type;
    Shape x;
    graph::PoolAttrs attrs;
  };
  auto attrs = [](std::array<int64_t, 2> k, std::array<int64_t, 2> s, std::array<int64_t, 4> p,
                  bool ceil, bool include) {
    return graph::PoolAttrs{k, s, p, ceil, include};
  };
  const std::vector<PoolCase> cases = {
      {graph::OpType::kMaxPool, {1, 4, 13, 13}, attrs({3, 3}, {2, 2}, {0, 0, 0, 0}, false, false)},
      {graph::OpType::kMaxPool, {1, 4, 14, 14}, attrs({3, 3}, {2, 2}, {0, 0, 0, 0}, true, false)},
      {graph::OpType::kMaxPool, {1, 4, 7, 7}, attrs({2, 2}, {2, 2}, {0, 0, 1, 1}, false, false)},
      {graph::OpType::kAveragePool, {1, 4, 9, 9}, attrs({3, 3}, {1, 1}, {1, 1, 1, 1}, false, true)},
      {graph::OpType::kAveragePool, {2, 3, 9, 9}, attrs({3, 3}, {1, 1}, {1, 1, 1, 1}, false, false)},
      {graph::OpType::kAveragePool, {1, 4, 14, 14}, attrs({3, 3}, {2, 2}, {1, 1, 1, 1}, true, false)},
      {graph::OpType::kAveragePool, {1, 4, 14, 14}, attrs({3, 3}, {2, 2}, {0, 0, 0, 0}, true, true)},
      {graph::OpType::kAveragePool, {1, 4, 10, 10}, attrs({3, 3}, {2, 2}, {1, 1, 1, 1}, true, true)}};
  for (const PoolCase& c : cases) {
    // Output size as shape inference computes it (ceil mode: the last window
    // must start inside the input or the leading padding).
    Shape y = c.x;
    for (int d = 0; d < 2; ++d) {
      const int64_t padded = c.x[2 + d] + c.attrs.pads[d] + c.attrs.pads[2 + d];
      const int64_t span = padded - c.attrs.kernel[d];
      int64_t out = c.attrs.ceil_mode ? (span + c.attrs.stride[d] - 1) / c.attrs.stride[d] + 1
                                      : span / c.attrs.stride[d] + 1;
      if (c.attrs.ceil_mode && (out - 1) * c.attrs.stride[d] >= c.x[2 + d] + c.attrs.pads[d]) {
        --out;
      }
      y[2 + d] = out;
    }
    const Tensor x = Random(c.x, 7);
    auto p = MakePool2dParams(c.type, c.attrs, c.x, y);
    ASSERT_TRUE(p.ok()) << p.status();
    Tensor actual = Empty(y), expected = Empty(y);
    for (int64_t i = 0; i < actual.num_elements(); ++i) {
      actual.data[i] = math::Pool2dValue(x.data.data(), i, *p);
    }
    reference::Pool2D(c.type, c.attrs, In(x), Out(expected));
    ExpectClose(actual, expected, 1e-5, "pool " + graph::ShapeToString(c.x));
  }
}

TEST(KernelMathTest, CopyRowsAddressesStridedRows) {
  // Rows of 3 from a pitch of 5 into a pitch of 7.
  int64_t src = 0, dst = 0;
  math::CopyRowsOffsets(7, 3, 5, 7, &src, &dst);  // row 2, column 1
  EXPECT_EQ(src, 2 * 5 + 1);
  EXPECT_EQ(dst, 2 * 7 + 1);
}

}  // namespace
}  // namespace iosfarm::worker::cuda
