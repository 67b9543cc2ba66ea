// Reference convolution and pooling.
#include <algorithm>
#include <cmath>
#include <limits>

#include "worker/backends/reference/kernels.h"

namespace iosfarm::worker::reference {

void ApplyActivation(graph::Activation activation, float clip_min, float clip_max, float* data,
                     int64_t n) {
  for (int64_t i = 0; i < n; ++i) {
    const float v = data[i];
    switch (activation) {
      case graph::Activation::kNone:
        break;
      case graph::Activation::kRelu:
        data[i] = v > 0.0f ? v : 0.0f;
        break;
      case graph::Activation::kClip:
        data[i] = std::min(std::max(v, clip_min), clip_max);
        break;
      case graph::Activation::kSigmoid:
        data[i] = static_cast<float>(1.0 / (1.0 + std::exp(-static_cast<double>(v))));
        break;
      case graph::Activation::kTanh:
        data[i] = static_cast<float>(std::tanh(static_cast<double>(v)));
        break;
    }
  }
}

void Conv2D(const graph::ConvAttrs& attrs, const ConstView& x, const float* w,
            const float* bias, const MutableView& y) {
  const int64_t batch = x.shape[0], channels = x.shape[1], height = x.shape[2],
                width = x.shape[3];
  const int64_t out_channels = y.shape[1], out_h = y.shape[2], out_w = y.shape[3];
  const int64_t kh = attrs.kernel[0], kw = attrs.kernel[1];
  const int64_t in_per_group = channels / attrs.groups;
  const int64_t out_per_group = out_channels / attrs.groups;
  std::vector<double> acc(static_cast<size_t>(out_h * out_w));
  for (int64_t n = 0; n < batch; ++n) {
    for (int64_t oc = 0; oc < out_channels; ++oc) {
      const int64_t group = oc / out_per_group;
      std::fill(acc.begin(), acc.end(), bias != nullptr ? static_cast<double>(bias[oc]) : 0.0);
      for (int64_t ic = 0; ic < in_per_group; ++ic) {
        const int64_t c = group * in_per_group + ic;
        const float* plane = x.data + (n * channels + c) * height * width;
        for (int64_t i = 0; i < kh; ++i) {
          for (int64_t j = 0; j < kw; ++j) {
            const double weight = w[((oc * in_per_group + ic) * kh + i) * kw + j];
            for (int64_t oh = 0; oh < out_h; ++oh) {
              const int64_t ih = oh * attrs.stride[0] - attrs.pads[0] + i * attrs.dilation[0];
              if (ih < 0 || ih >= height) continue;
              for (int64_t ow = 0; ow < out_w; ++ow) {
                const int64_t iw =
                    ow * attrs.stride[1] - attrs.pads[1] + j * attrs.dilation[1];
                if (iw < 0 || iw >= width) continue;
                acc[oh * out_w + ow] += weight * plane[ih * width + iw];
              }
            }
          }
        }
      }
      float* out = y.data + (n * out_channels + oc) * out_h * out_w;
      for (int64_t k = 0; k < out_h * out_w; ++k) out[k] = static_cast<float>(acc[k]);
      ApplyActivation(attrs.activation, attrs.clip_min, attrs.clip_max, out, out_h * out_w);
    }
  }
}

void ConvTranspose2D(const graph::ConvTransposeAttrs& attrs, const ConstView& x, const float* w,
                     const float* bias, const MutableView& y) {
  const int64_t batch = x.shape[0], channels = x.shape[1], height = x.shape[2], width = x.shape[3];
  const int64_t out_channels = y.shape[1], out_h = y.shape[2], out_w = y.shape[3];
  const int64_t kh = attrs.kernel[0], kw = attrs.kernel[1];
  const int64_t in_per_group = channels / attrs.groups;
  const int64_t out_per_group = out_channels / attrs.groups;
  const int64_t plane = out_h * out_w;
  // Each input pixel scatters into the output pixels its taps reach.
  std::vector<double> acc(static_cast<size_t>(out_channels * plane));
  for (int64_t n = 0; n < batch; ++n) {
    for (int64_t oc = 0; oc < out_channels; ++oc) {
      std::fill(acc.begin() + oc * plane, acc.begin() + (oc + 1) * plane,
                bias != nullptr ? static_cast<double>(bias[oc]) : 0.0);
    }
    for (int64_t c = 0; c < channels; ++c) {
      const int64_t group = c / in_per_group;
      const float* in = x.data + (n * channels + c) * height * width;
      for (int64_t o = 0; o < out_per_group; ++o) {
        const int64_t oc = group * out_per_group + o;
        double* out = acc.data() + oc * plane;
        for (int64_t i = 0; i < kh; ++i) {
          for (int64_t j = 0; j < kw; ++j) {
            const double weight = w[((c * out_per_group + o) * kh + i) * kw + j];
            for (int64_t ih = 0; ih < height; ++ih) {
              const int64_t oh = ih * attrs.stride[0] - attrs.pads[0] + i * attrs.dilation[0];
              if (oh < 0 || oh >= out_h) continue;
              for (int64_t iw = 0; iw < width; ++iw) {
                const int64_t ow = iw * attrs.stride[1] - attrs.pads[1] + j * attrs.dilation[1];
                if (ow < 0 || ow >= out_w) continue;
                out[oh * out_w + ow] += weight * in[ih * width + iw];
              }
            }
          }
        }
      }
    }
    float* out = y.data + n * out_channels * plane;
    for (int64_t k = 0; k < out_channels * plane; ++k) out[k] = static_cast<float>(acc[k]);
  }
}

void Pool2D(graph::OpType type, const graph::PoolAttrs& attrs, const ConstView& x,
            const MutableView& y) {
  const int64_t planes = x.shape[0] * x.shape[1], height = x.shape[2], width = x.shape[3];
  const int64_t out_h = y.shape[2], out_w = y.shape[3];
  const bool is_max = type == graph::OpType::kMaxPool;
  for (int64_t p = 0; p < planes; ++p) {
    const float* in = x.data + p * height * width;
    float* out = y.data + p * out_h * out_w;
    for (int64_t oh = 0; oh < out_h; ++oh) {
      for (int64_t ow = 0; ow < out_w; ++ow) {
        const int64_t h0 = oh * attrs.stride[0] - attrs.pads[0];
        const int64_t w0 = ow * attrs.stride[1] - attrs.pads[1];
        const int64_t h1 = h0 + attrs.kernel[0], w1 = w0 + attrs.kernel[1];
        double sum = 0;
        float best = -std::numeric_limits<float>::infinity();
        int64_t inside = 0;
        for (int64_t ih = std::max<int64_t>(h0, 0); ih < std::min(h1, height); ++ih) {
          for (int64_t iw = std::max<int64_t>(w0, 0); iw < std::min(w1, width); ++iw) {
            const float v = in[ih * width + iw];
            best = std::max(best, v);
            sum += v;
            ++inside;
          }
        }
        if (is_max) {
          out[oh * out_w + ow] = best;
        } else {
          int64_t divisor = inside;
          if (attrs.count_include_pad) {
            // The window clipped to the explicitly padded input.
            const int64_t rows = std::min(h1, height + attrs.pads[2]) - h0;
            const int64_t cols = std::min(w1, width + attrs.pads[3]) - w0;
            divisor = rows * cols;
          }
          out[oh * out_w + ow] = static_cast<float>(sum / static_cast<double>(divisor));
        }
      }
    }
  }
}

void GlobalPool(graph::OpType type, const ConstView& x, const MutableView& y) {
  const int64_t planes = x.shape[0] * x.shape[1], size = x.shape[2] * x.shape[3];
  for (int64_t p = 0; p < planes; ++p) {
    const float* in = x.data + p * size;
    if (type == graph::OpType::kGlobalMaxPool) {
      y.data[p] = *std::max_element(in, in + size);
    } else {
      double sum = 0;
      for (int64_t i = 0; i < size; ++i) sum += in[i];
      y.data[p] = static_cast<float>(sum / static_cast<double>(size));
    }
  }
}

}  // namespace iosfarm::worker::reference
