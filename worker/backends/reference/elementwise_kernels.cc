// Reference element-wise, normalisation and reduction kernels.
#include <algorithm>
#include <cmath>
#include <limits>
#include <variant>

#include "worker/backends/reference/kernels.h"
#include "worker/backends/reference/shape_util.h"

namespace iosfarm::worker::reference {
namespace {

// UnaryMathAttrs' function, in double.
double UnaryMathValue(const graph::UnaryMathAttrs& a, double x) {
  constexpr double kSqrtHalf = 0.70710678118654752440;
  constexpr double kSqrtTwoOverPi = 0.79788456080286535588;
  const auto softplus = [](double v) { return v > 20.0 ? v : std::log1p(std::exp(v)); };
  switch (a.function) {
    case graph::UnaryFunction::kLeakyRelu:
      return x >= 0.0 ? x : a.alpha * x;
    case graph::UnaryFunction::kElu:
      return x >= 0.0 ? x : a.alpha * std::expm1(x);
    case graph::UnaryFunction::kSelu:
      return a.beta * (x > 0.0 ? x : a.alpha * std::expm1(x));
    case graph::UnaryFunction::kSoftplus:
      return softplus(x);
    case graph::UnaryFunction::kMish:
      return x * std::tanh(softplus(x));
    case graph::UnaryFunction::kGelu:
      return 0.5 * x * (1.0 + std::erf(x * kSqrtHalf));
    case graph::UnaryFunction::kGeluTanh:
      return 0.5 * x * (1.0 + std::tanh(kSqrtTwoOverPi * (x + 0.044715 * x * x * x)));
    case graph::UnaryFunction::kErf:
      return std::erf(x);
    case graph::UnaryFunction::kSqrt:
      return std::sqrt(x);
    case graph::UnaryFunction::kExp:
      return std::exp(x);
    case graph::UnaryFunction::kLog:
      return std::log(x);
    case graph::UnaryFunction::kNeg:
      return -x;
    case graph::UnaryFunction::kAbs:
      return std::abs(x);
    case graph::UnaryFunction::kReciprocal:
      return 1.0 / x;
    case graph::UnaryFunction::kPow:
      return std::pow(x, static_cast<double>(a.alpha));
  }
  return x;
}

float UnaryValue(graph::OpType type, const graph::Attributes& attrs, float v) {
  const double x = v;
  switch (type) {
    case graph::OpType::kRelu:
      return v > 0.0f ? v : 0.0f;
    case graph::OpType::kClip: {
      const auto& a = std::get<graph::ClipAttrs>(attrs);
      return std::min(std::max(v, a.min), a.max);
    }
    case graph::OpType::kSigmoid:
      return static_cast<float>(1.0 / (1.0 + std::exp(-x)));
    case graph::OpType::kHardSigmoid: {
      const auto& a = std::get<graph::HardSigmoidAttrs>(attrs);
      return static_cast<float>(std::clamp(a.alpha * x + a.beta, 0.0, 1.0));
    }
    case graph::OpType::kHardSwish:
      return static_cast<float>(x * std::clamp(x / 6.0 + 0.5, 0.0, 1.0));
    case graph::OpType::kTanh:
      return static_cast<float>(std::tanh(x));
    case graph::OpType::kUnaryMath:
      return static_cast<float>(UnaryMathValue(std::get<graph::UnaryMathAttrs>(attrs), x));
    default:
      return v;
  }
}

double BinaryValue(graph::OpType type, double a, double b) {
  switch (type) {
    case graph::OpType::kAdd:
      return a + b;
    case graph::OpType::kSub:
      return a - b;
    case graph::OpType::kMul:
      return a * b;
    case graph::OpType::kDiv:
      return a / b;
    default:
      return 0;
  }
}

}  // namespace

void Unary(graph::OpType type, const graph::Attributes& attrs, const ConstView& x,
           const MutableView& y) {
  const int64_t n = graph::NumElements(x.shape);
  for (int64_t i = 0; i < n; ++i) y.data[i] = UnaryValue(type, attrs, x.data[i]);
}

void Binary(graph::OpType type, const ConstView& a, const ConstView& b, const MutableView& y) {
  const size_t rank = y.shape.size();
  const std::vector<int64_t> sa = BroadcastStrides(a.shape, rank);
  const std::vector<int64_t> sb = BroadcastStrides(b.shape, rank);
  std::vector<int64_t> index(rank, 0);
  int64_t out = 0;
  do {
    int64_t ia = 0, ib = 0;
    for (size_t d = 0; d < rank; ++d) {
      ia += index[d] * sa[d];
      ib += index[d] * sb[d];
    }
    // The operation in fp32, as every backend computes it.
    y.data[out++] = static_cast<float>(BinaryValue(type, a.data[ia], b.data[ib]));
  } while (NextIndex(y.shape, index));
}

void BatchNorm(float epsilon, const ConstView& x, const float* scale, const float* bias,
               const float* mean, const float* var, const MutableView& y) {
  const int64_t batch = x.shape[0], channels = x.shape[1];
  const int64_t inner = Product(x.shape, 2, x.shape.size());
  for (int64_t n = 0; n < batch; ++n) {
    for (int64_t c = 0; c < channels; ++c) {
      const double inv_std = 1.0 / std::sqrt(static_cast<double>(var[c]) + epsilon);
      const int64_t base = (n * channels + c) * inner;
      for (int64_t i = 0; i < inner; ++i) {
        y.data[base + i] = static_cast<float>(
            (x.data[base + i] - static_cast<double>(mean[c])) * inv_std * scale[c] + bias[c]);
      }
    }
  }
}

void Softmax(int64_t axis, const ConstView& x, const MutableView& y) {
  const int64_t outer = Product(x.shape, 0, static_cast<size_t>(axis));
  const int64_t size = x.shape[static_cast<size_t>(axis)];
  const int64_t inner = Product(x.shape, static_cast<size_t>(axis) + 1, x.shape.size());
  for (int64_t o = 0; o < outer; ++o) {
    for (int64_t i = 0; i < inner; ++i) {
      const int64_t base = o * size * inner + i;
      double max = x.data[base];
      for (int64_t k = 1; k < size; ++k) max = std::max(max, double{x.data[base + k * inner]});
      double sum = 0;
      for (int64_t k = 0; k < size; ++k) sum += std::exp(x.data[base + k * inner] - max);
      for (int64_t k = 0; k < size; ++k) {
        y.data[base + k * inner] =
            static_cast<float>(std::exp(x.data[base + k * inner] - max) / sum);
      }
    }
  }
}

void Reduce(graph::OpType type, const graph::ReduceAttrs& attrs, const ConstView& x,
            const MutableView& y) {
  const size_t rank = x.shape.size();
  std::vector<bool> reduced(rank, attrs.axes.empty());
  for (int64_t axis : attrs.axes) reduced[static_cast<size_t>(axis)] = true;
  // The output with kept (size 1) reduced dimensions; same element order.
  graph::Shape kept = x.shape;
  int64_t count = 1;
  for (size_t d = 0; d < rank; ++d) {
    if (reduced[d]) {
      count *= kept[d];
      kept[d] = 1;
    }
  }
  const std::vector<int64_t> out_strides = BroadcastStrides(kept, rank);
  const bool is_max = type == graph::OpType::kReduceMax;
  const bool is_min = type == graph::OpType::kReduceMin;
  const double identity = is_max   ? -std::numeric_limits<double>::infinity()
                          : is_min ? std::numeric_limits<double>::infinity()
                                   : 0.0;
  std::vector<double> acc(static_cast<size_t>(graph::NumElements(kept)), identity);
  std::vector<int64_t> index(rank, 0);
  int64_t in = 0;
  do {
    int64_t out = 0;
    for (size_t d = 0; d < rank; ++d) out += index[d] * out_strides[d];
    double& a = acc[static_cast<size_t>(out)];
    const double v = x.data[in++];
    a = is_max ? std::max(a, v) : is_min ? std::min(a, v) : a + v;
  } while (NextIndex(x.shape, index));
  const double divisor = type == graph::OpType::kReduceMean ? static_cast<double>(count) : 1.0;
  for (size_t i = 0; i < acc.size(); ++i) y.data[i] = static_cast<float>(acc[i] / divisor);
}

}  // namespace iosfarm::worker::reference
