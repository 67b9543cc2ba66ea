// Resize of H and W (graph/attributes.h ResizeAttrs), in double.
#include <algorithm>
#include <cmath>

#include "worker/backends/reference/kernels.h"

namespace iosfarm::worker::reference {
namespace {

// The input coordinate that output index `o` of an axis samples.
double SourceCoordinate(const graph::ResizeAttrs& a, int axis, int64_t o, int64_t in, int64_t out) {
  const double scale = a.scale[axis];
  const double y = static_cast<double>(o);
  switch (a.coordinates) {
    case graph::ResizeCoordinates::kHalfPixel:
      return (y + 0.5) / scale - 0.5;
    case graph::ResizeCoordinates::kPytorchHalfPixel:
      return out > 1 ? (y + 0.5) / scale - 0.5 : 0.0;
    case graph::ResizeCoordinates::kAlignCorners:
      return out > 1 ? y * static_cast<double>(in - 1) / static_cast<double>(out - 1) : 0.0;
    case graph::ResizeCoordinates::kAsymmetric:
      return y / scale;
  }
  return 0.0;
}

int64_t ClampIndex(double i, int64_t in) {
  return static_cast<int64_t>(std::clamp(i, 0.0, static_cast<double>(in - 1)));
}

int64_t NearestIndex(graph::NearestRounding rounding, double x, int64_t in) {
  const double lo = std::floor(x);
  const bool half = x - lo == 0.5;
  switch (rounding) {
    case graph::NearestRounding::kRoundPreferFloor:
      return ClampIndex(half ? lo : std::round(x), in);
    case graph::NearestRounding::kRoundPreferCeil:
      return ClampIndex(half ? lo + 1 : std::round(x), in);
    case graph::NearestRounding::kFloor:
      return ClampIndex(lo, in);
    case graph::NearestRounding::kCeil:
      return ClampIndex(std::ceil(x), in);
  }
  return 0;
}

// Linear interpolation along one axis: the two input indices and the
// weight of the second, the coordinate clamped into [0, in - 1].
struct Taps {
  int64_t i0 = 0;
  int64_t i1 = 0;
  double w1 = 0.0;
};

Taps LinearTaps(double x, int64_t in) {
  const double clamped = std::clamp(x, 0.0, static_cast<double>(in - 1));
  Taps t;
  t.i0 = static_cast<int64_t>(std::floor(clamped));
  t.i1 = std::min(t.i0 + 1, in - 1);
  t.w1 = clamped - static_cast<double>(t.i0);
  return t;
}

}  // namespace

void Resize(const graph::ResizeAttrs& attrs, const ConstView& x, const MutableView& y) {
  const int64_t planes = x.shape[0] * x.shape[1];
  const int64_t ih = x.shape[2], iw = x.shape[3];
  const int64_t oh = y.shape[2], ow = y.shape[3];
  for (int64_t p = 0; p < planes; ++p) {
    const float* in = x.data + p * ih * iw;
    float* out = y.data + p * oh * ow;
    for (int64_t oy = 0; oy < oh; ++oy) {
      const double sy = SourceCoordinate(attrs, 0, oy, ih, oh);
      for (int64_t ox = 0; ox < ow; ++ox) {
        const double sx = SourceCoordinate(attrs, 1, ox, iw, ow);
        if (attrs.mode == graph::ResizeMode::kNearest) {
          out[oy * ow + ox] =
              in[NearestIndex(attrs.rounding, sy, ih) * iw + NearestIndex(attrs.rounding, sx, iw)];
          continue;
        }
        const Taps ty = LinearTaps(sy, ih), tx = LinearTaps(sx, iw);
        const auto at = [&](int64_t r, int64_t c) { return static_cast<double>(in[r * iw + c]); };
        const double top = at(ty.i0, tx.i0) * (1 - tx.w1) + at(ty.i0, tx.i1) * tx.w1;
        const double bottom = at(ty.i1, tx.i0) * (1 - tx.w1) + at(ty.i1, tx.i1) * tx.w1;
        out[oy * ow + ox] = static_cast<float>(top * (1 - ty.w1) + bottom * ty.w1);
      }
    }
  }
}

}  // namespace iosfarm::worker::reference
