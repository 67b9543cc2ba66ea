// The per-element arithmetic of the backend's own CUDA kernels, shared by
// the kernels (.cu, compiled for the device) and host tests (compiled by
// the C++ compiler), so the index math is tested without a GPU
// (kernel_math_test.cc runs it over whole tensors against the reference
// kernels). Plain functions of their arguments; no absl.
#ifndef IOSFARM_WORKER_BACKENDS_CUDA_PLANNER_KERNEL_MATH_H_
#define IOSFARM_WORKER_BACKENDS_CUDA_PLANNER_KERNEL_MATH_H_

#include <cmath>
#include <cstdint>

#include "worker/backends/cuda/planner/kernel_types.h"

#if defined(__CUDACC__)
#define IOSFARM_HOST_DEVICE __host__ __device__
#else
#define IOSFARM_HOST_DEVICE
#endif

namespace iosfarm::worker::cuda::math {

IOSFARM_HOST_DEVICE inline float Clamp(float v, float lo, float hi) {
  return fminf(fmaxf(v, lo), hi);
}

IOSFARM_HOST_DEVICE inline float ApplyUnary(float v, const UnaryParams& f) {
  switch (f.kind) {
    case UnaryKind::kIdentity:
      return v;
    case UnaryKind::kRelu:
      return v > 0.0f ? v : 0.0f;
    case UnaryKind::kClip:
      return Clamp(v, f.a, f.b);
    case UnaryKind::kSigmoid:
      return 1.0f / (1.0f + expf(-v));
    case UnaryKind::kHardSigmoid:
      return Clamp(f.a * v + f.b, 0.0f, 1.0f);
    case UnaryKind::kHardSwish:
      return v * Clamp(v / 6.0f + 0.5f, 0.0f, 1.0f);
    case UnaryKind::kTanh:
      return tanhf(v);
    case UnaryKind::kLeakyRelu:
      return v >= 0.0f ? v : f.a * v;
    case UnaryKind::kElu:
      return v >= 0.0f ? v : f.a * expm1f(v);
    case UnaryKind::kSelu:
      return f.b * (v > 0.0f ? v : f.a * expm1f(v));
    case UnaryKind::kSoftplus:
      return v > 20.0f ? v : log1pf(expf(v));
    case UnaryKind::kMish:
      return v * tanhf(v > 20.0f ? v : log1pf(expf(v)));
    case UnaryKind::kGelu:
      return 0.5f * v * (1.0f + erff(v * 0.70710678118654752f));
    case UnaryKind::kGeluTanh:
      return 0.5f * v * (1.0f + tanhf(0.79788456080286536f * (v + 0.044715f * v * v * v)));
    case UnaryKind::kErf:
      return erff(v);
    case UnaryKind::kSqrt:
      return sqrtf(v);
    case UnaryKind::kExp:
      return expf(v);
    case UnaryKind::kLog:
      return logf(v);
    case UnaryKind::kNeg:
      return -v;
    case UnaryKind::kAbs:
      return fabsf(v);
    case UnaryKind::kReciprocal:
      return 1.0f / v;
    case UnaryKind::kPow:
      return powf(v, f.a);
  }
  return v;
}

IOSFARM_HOST_DEVICE inline float ApplyBinary(BinaryKind kind, float a, float b) {
  switch (kind) {
    case BinaryKind::kAdd:
      return a + b;
    case BinaryKind::kSub:
      return a - b;
    case BinaryKind::kMul:
      return a * b;
    case BinaryKind::kDiv:
      return a / b;
  }
  return 0.0f;
}

// NCHW channel of element i of a tensor with `channels` channels of `inner`
// elements each.
IOSFARM_HOST_DEVICE inline int64_t Channel(int64_t i, int64_t channels, int64_t inner) {
  return (i / inner) % channels;
}

// The conv epilogue with a residual: f((v + bias) + z), in the order of the
// unfused graph (the conv's bias first, then the Add).
IOSFARM_HOST_DEVICE inline float BiasResidualActivation(float v, float bias, float z,
                                                        const UnaryParams& f) {
  return ApplyUnary((v + bias) + z, f);
}

// Offsets in a and b read by output element i.
IOSFARM_HOST_DEVICE inline void BroadcastOffsets(int64_t i, const BroadcastParams& p,
                                                 int64_t* ia, int64_t* ib) {
  if (p.rank == 0) {
    *ia = i;
    *ib = i;
    return;
  }
  int64_t a = 0, b = 0, rest = i;
  for (int d = p.rank - 1; d >= 0; --d) {
    const int64_t index = rest % p.out_dims[d];
    rest /= p.out_dims[d];
    a += index * p.a_strides[d];
    b += index * p.b_strides[d];
  }
  *ia = a;
  *ib = b;
}

// Source and destination offsets of element i of a row copy.
IOSFARM_HOST_DEVICE inline void CopyRowsOffsets(int64_t i, int64_t width, int64_t src_pitch,
                                                int64_t dst_pitch, int64_t* src, int64_t* dst) {
  const int64_t r = i / width;
  const int64_t c = i - r * width;
  *src = r * src_pitch + c;
  *dst = r * dst_pitch + c;
}

// Input offset read by output element i.
IOSFARM_HOST_DEVICE inline int64_t GatherOffset(int64_t i, const GatherParams& p) {
  int64_t offset = p.base, rest = i;
  for (int d = p.rank - 1; d >= 0; --d) {
    const int64_t index = rest % p.out_dims[d];
    rest /= p.out_dims[d];
    offset += index * p.in_strides[d];
  }
  return offset;
}

// Source index along one dimension, or -1 for the constant value.
IOSFARM_HOST_DEVICE inline int64_t PadSource(PadKind mode, int64_t i, int64_t n) {
  if (i >= 0 && i < n) return i;
  switch (mode) {
    case PadKind::kConstant:
      return -1;
    case PadKind::kEdge:
      return i < 0 ? 0 : n - 1;
    case PadKind::kReflect:
      return i < 0 ? -i : 2 * (n - 1) - i;
  }
  return -1;
}

// Input offset read by output element i, or -1 for the constant value.
IOSFARM_HOST_DEVICE inline int64_t PadOffset(int64_t i, const PadParams& p) {
  int64_t offset = 0, rest = i;
  bool constant = false;
  for (int d = p.rank - 1; d >= 0; --d) {
    const int64_t index = rest % p.out_dims[d];
    rest /= p.out_dims[d];
    const int64_t source = PadSource(p.mode, index - p.pad_begin[d], p.in_dims[d]);
    if (source < 0) {
      constant = true;
    } else {
      offset += source * p.in_strides[d];
    }
  }
  return constant ? -1 : offset;
}

// Offset of the first input element reduced into output o.
IOSFARM_HOST_DEVICE inline int64_t ReduceBase(int64_t o, const ReduceParams& p) {
  int64_t base = 0, rest = o;
  for (int d = p.kept_rank - 1; d >= 0; --d) {
    const int64_t index = rest % p.kept_dims[d];
    rest /= p.kept_dims[d];
    base += index * p.kept_strides[d];
  }
  return base;
}

// Offset, relative to ReduceBase, of the r-th reduced element.
IOSFARM_HOST_DEVICE inline int64_t ReduceOffset(int64_t r, const ReduceParams& p) {
  int64_t offset = 0, rest = r;
  for (int d = p.reduced_rank - 1; d >= 0; --d) {
    const int64_t index = rest % p.reduced_dims[d];
    rest /= p.reduced_dims[d];
    offset += index * p.reduced_strides[d];
  }
  return offset;
}

// What a reduction starts from (and lanes that see no element keep), how it
// takes in one more value, and its result over `count` values.
IOSFARM_HOST_DEVICE inline float ReduceIdentity(ReduceFunctionKind f) {
  return f == ReduceFunctionKind::kMax   ? -INFINITY
         : f == ReduceFunctionKind::kMin ? INFINITY
                                         : 0.0f;
}
IOSFARM_HOST_DEVICE inline float ReduceCombine(ReduceFunctionKind f, float a, float b) {
  return f == ReduceFunctionKind::kMax   ? fmaxf(a, b)
         : f == ReduceFunctionKind::kMin ? fminf(a, b)
                                         : a + b;
}
IOSFARM_HOST_DEVICE inline float ReduceFinish(ReduceFunctionKind f, float acc, int64_t count) {
  return f == ReduceFunctionKind::kMean ? acc / static_cast<float>(count) : acc;
}

// Output element i of a 2-D pool over x (all planes), the reference's
// semantics: windows clipped to the input; average divisor = elements
// inside the input, or with count_include_pad the window clipped to the
// explicitly padded input.
IOSFARM_HOST_DEVICE inline float Pool2dValue(const float* x, int64_t i, const Pool2dParams& p) {
  const int64_t ow = i % p.out_w;
  const int64_t oh = (i / p.out_w) % p.out_h;
  const int64_t plane = i / (p.out_w * p.out_h);
  const float* in = x + plane * p.in_h * p.in_w;
  const int64_t h0 = oh * p.stride_h - p.pad_top;
  const int64_t w0 = ow * p.stride_w - p.pad_left;
  const int64_t h1 = h0 + p.kernel_h;
  const int64_t w1 = w0 + p.kernel_w;
  const int64_t hs = h0 > 0 ? h0 : 0, he = h1 < p.in_h ? h1 : p.in_h;
  const int64_t ws = w0 > 0 ? w0 : 0, we = w1 < p.in_w ? w1 : p.in_w;
  float best = -INFINITY;
  float sum = 0.0f;
  int64_t inside = 0;
  for (int64_t ih = hs; ih < he; ++ih) {
    for (int64_t iw = ws; iw < we; ++iw) {
      const float v = in[ih * p.in_w + iw];
      best = fmaxf(best, v);
      sum += v;
      ++inside;
    }
  }
  if (p.is_max) return best;
  int64_t divisor = inside;
  if (p.count_include_pad) {
    const int64_t h_end = h1 < p.in_h + p.pad_bottom ? h1 : p.in_h + p.pad_bottom;
    const int64_t w_end = w1 < p.in_w + p.pad_right ? w1 : p.in_w + p.pad_right;
    divisor = (h_end - h0) * (w_end - w0);
  }
  return sum / static_cast<float>(divisor);
}

// Output element i of a ConvTranspose (the reference's semantics,
// worker/backends/reference/window_kernels.cc, gathered instead of
// scattered): the taps whose input pixel lands on it, in float. `bias` is
// null or out_channels values.
IOSFARM_HOST_DEVICE inline float ConvTransposeValue(const float* x, const float* w,
                                                    const float* bias, int64_t i,
                                                    const ConvTransposeParams& p) {
  const int64_t ox = i % p.out_w;
  const int64_t oy = (i / p.out_w) % p.out_h;
  const int64_t oc = (i / (p.out_w * p.out_h)) % p.out_channels;
  const int64_t n = i / (p.out_w * p.out_h * p.out_channels);
  const int64_t in_per_group = p.channels / p.groups;
  const int64_t out_per_group = p.out_channels / p.groups;
  const int64_t group = oc / out_per_group, o = oc % out_per_group;
  float sum = bias != nullptr ? bias[oc] : 0.0f;
  for (int64_t ky = 0; ky < p.kernel_h; ++ky) {
    const int64_t ty = oy + p.pad_top - ky * p.dilation_h;  // = iy * stride_h
    if (ty < 0 || ty % p.stride_h != 0) continue;
    const int64_t iy = ty / p.stride_h;
    if (iy >= p.in_h) continue;
    for (int64_t kx = 0; kx < p.kernel_w; ++kx) {
      const int64_t tx = ox + p.pad_left - kx * p.dilation_w;
      if (tx < 0 || tx % p.stride_w != 0) continue;
      const int64_t ix = tx / p.stride_w;
      if (ix >= p.in_w) continue;
      for (int64_t c = group * in_per_group; c < (group + 1) * in_per_group; ++c) {
        sum += x[((n * p.channels + c) * p.in_h + iy) * p.in_w + ix] *
               w[((c * out_per_group + o) * p.kernel_h + ky) * p.kernel_w + kx];
      }
    }
  }
  return sum;
}

// The input coordinate output index o of a Resize axis samples. In double,
// as the reference computes it, so that both pick the same nearest pixel
// where a coordinate falls next to an integer (one per output row or
// column: cheap even where double arithmetic is slow).
IOSFARM_HOST_DEVICE inline double ResizeSource(ResizeCoordinatesKind mode, int64_t o, int64_t in,
                                               int64_t out, float scale) {
  const double y = static_cast<double>(o);
  const double s = static_cast<double>(scale);
  switch (mode) {
    case ResizeCoordinatesKind::kHalfPixel:
      return (y + 0.5) / s - 0.5;
    case ResizeCoordinatesKind::kPytorchHalfPixel:
      return out > 1 ? (y + 0.5) / s - 0.5 : 0.0;
    case ResizeCoordinatesKind::kAlignCorners:
      return out > 1 ? y * static_cast<double>(in - 1) / static_cast<double>(out - 1) : 0.0;
    case ResizeCoordinatesKind::kAsymmetric:
      return y / s;
  }
  return 0.0;
}

IOSFARM_HOST_DEVICE inline int64_t ClampIndex(double i, int64_t in) {
  const double hi = static_cast<double>(in - 1);
  return static_cast<int64_t>(i < 0.0 ? 0.0 : (i > hi ? hi : i));
}

// The nearest input index of coordinate x on an axis of `in` elements.
IOSFARM_HOST_DEVICE inline int64_t ResizeNearest(NearestRoundingKind rounding, double x,
                                                 int64_t in) {
  const double lo = floor(x);
  const bool half = x - lo == 0.5;
  switch (rounding) {
    case NearestRoundingKind::kRoundPreferFloor:
      return ClampIndex(half ? lo : round(x), in);
    case NearestRoundingKind::kRoundPreferCeil:
      return ClampIndex(half ? lo + 1.0 : round(x), in);
    case NearestRoundingKind::kFloor:
      return ClampIndex(lo, in);
    case NearestRoundingKind::kCeil:
      return ClampIndex(ceil(x), in);
  }
  return 0;
}

// Output element i of a Resize over x (all planes), the reference's
// semantics (worker/backends/reference/resample_kernels.cc); the weights in
// float.
IOSFARM_HOST_DEVICE inline float ResizeValue(const float* x, int64_t i, const ResizeParams& p) {
  const int64_t ox = i % p.out_w;
  const int64_t oy = (i / p.out_w) % p.out_h;
  const int64_t plane = i / (p.out_w * p.out_h);
  const float* in = x + plane * p.in_h * p.in_w;
  const double sy = ResizeSource(p.coordinates, oy, p.in_h, p.out_h, p.scale_h);
  const double sx = ResizeSource(p.coordinates, ox, p.in_w, p.out_w, p.scale_w);
  if (p.mode == ResizeModeKind::kNearest) {
    return in[ResizeNearest(p.rounding, sy, p.in_h) * p.in_w +
              ResizeNearest(p.rounding, sx, p.in_w)];
  }
  const double hy = static_cast<double>(p.in_h - 1), hx = static_cast<double>(p.in_w - 1);
  const double cy = sy < 0.0 ? 0.0 : (sy > hy ? hy : sy);
  const double cx = sx < 0.0 ? 0.0 : (sx > hx ? hx : sx);
  const int64_t y0 = static_cast<int64_t>(floor(cy)), x0 = static_cast<int64_t>(floor(cx));
  const int64_t y1 = y0 + 1 < p.in_h ? y0 + 1 : p.in_h - 1;
  const int64_t x1 = x0 + 1 < p.in_w ? x0 + 1 : p.in_w - 1;
  const float wy = static_cast<float>(cy - static_cast<double>(y0));
  const float wx = static_cast<float>(cx - static_cast<double>(x0));
  const float top = in[y0 * p.in_w + x0] * (1.0f - wx) + in[y0 * p.in_w + x1] * wx;
  const float bottom = in[y1 * p.in_w + x0] * (1.0f - wx) + in[y1 * p.in_w + x1] * wx;
  return top * (1.0f - wy) + bottom * wy;
}

}  // namespace iosfarm::worker::cuda::math

#endif  // IOSFARM_WORKER_BACKENDS_CUDA_PLANNER_KERNEL_MATH_H_
