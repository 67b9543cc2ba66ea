#include "worker/backends/cpu/layout.h"

#include <algorithm>
#include <cstring>
#include <vector>

namespace iosfarm::worker::cpu {
namespace {

using dnnl::memory;

// Element offsets of a 4-D fp32 memory: offset(n, c, h, w) =
// n * sn + (c / block) * sc + h * sh + w * sw + c % block.
struct Geometry {
  int64_t block = 1;
  int64_t sn = 0, sc = 0, sh = 0, sw = 0;
  int64_t offset0 = 0;
  bool dense_plain = false;  // plain NCHW without gaps
};

Geometry GeometryOf(const memory::desc& md) {
  const dnnl_memory_desc_t& d = md.data;
  const dnnl_blocking_desc_t& b = d.format_desc.blocking;
  Geometry g;
  g.block = b.inner_nblks == 1 ? b.inner_blks[0] : 1;
  g.sn = b.strides[0];
  g.sc = b.strides[1];
  g.sh = b.strides[2];
  g.sw = b.strides[3];
  g.offset0 = d.offset0;
  g.dense_plain = b.inner_nblks == 0 && g.sw == 1 && g.sh == d.dims[3] &&
                  g.sc == d.dims[2] * d.dims[3] && g.sn == d.dims[1] * g.sc;
  return g;
}

}  // namespace

memory::dims ToDims(const graph::Shape& shape) { return memory::dims(shape.begin(), shape.end()); }

memory::desc PlainDesc(const graph::Shape& shape) {
  memory::dims strides(shape.size(), 1);
  for (size_t d = shape.size(); d-- > 1;) strides[d - 1] = strides[d] * shape[d];
  return memory::desc(ToDims(shape), memory::data_type::f32, strides);
}

std::string_view ActivationLayoutName(ActivationLayout layout) {
  switch (layout) {
    case ActivationLayout::kPlain:
      return "plain";
    case ActivationLayout::kChannelsLast:
      return "nhwc";
    case ActivationLayout::kBlocked8:
      return "nChw8c";
    case ActivationLayout::kBlocked16:
      return "nChw16c";
  }
  return "unknown";
}

memory::desc StorageDesc(const graph::Shape& shape, ActivationLayout layout) {
  if (shape.size() != 4) return PlainDesc(shape);
  const auto f32 = memory::data_type::f32;
  switch (layout) {
    case ActivationLayout::kPlain:
      break;
    case ActivationLayout::kChannelsLast:
      return memory::desc(ToDims(shape), f32, memory::format_tag::nhwc);
    case ActivationLayout::kBlocked8:
      if (shape[1] >= 8) return memory::desc(ToDims(shape), f32, memory::format_tag::nChw8c);
      break;
    case ActivationLayout::kBlocked16:
      if (shape[1] >= 16) return memory::desc(ToDims(shape), f32, memory::format_tag::nChw16c);
      break;
  }
  return PlainDesc(shape);
}

bool IsPlain(const memory::desc& desc) {
  const dnnl_memory_desc_t& d = desc.data;
  if (d.format_kind != dnnl_blocked || d.format_desc.blocking.inner_nblks != 0) return false;
  int64_t expected = 1;
  for (int i = d.ndims; i-- > 0;) {
    if (d.dims[i] != 1 && d.format_desc.blocking.strides[i] != expected) return false;
    expected *= d.dims[i];
  }
  return d.offset0 == 0;
}

bool IsChannelCopyable(const memory::desc& desc) {
  const dnnl_memory_desc_t& d = desc.data;
  if (d.ndims != 4 || d.format_kind != dnnl_blocked) return false;
  const dnnl_blocking_desc_t& b = d.format_desc.blocking;
  return b.inner_nblks == 0 || (b.inner_nblks == 1 && b.inner_idxs[0] == 1);
}

ActivationLayout DetectActivationLayout(const dnnl::engine& engine) {
  try {
    const memory::dims src = {1, 64, 14, 14}, weights = {64, 64, 3, 3};
    const memory::desc any_src(src, memory::data_type::f32, memory::format_tag::any);
    const memory::desc any_w(weights, memory::data_type::f32, memory::format_tag::any);
    dnnl::convolution_forward::desc desc(dnnl::prop_kind::forward_inference,
                                         dnnl::algorithm::convolution_direct, any_src, any_w,
                                         any_src, {1, 1}, {1, 1}, {1, 1});
    dnnl::convolution_forward::primitive_desc pd(desc, engine);
    for (ActivationLayout layout : {ActivationLayout::kChannelsLast, ActivationLayout::kBlocked16,
                                    ActivationLayout::kBlocked8}) {
      if (pd.dst_desc() == StorageDesc({1, 64, 14, 14}, layout)) return layout;
    }
  } catch (const dnnl::error&) {
  }
  return ActivationLayout::kPlain;
}

bool HasChannelPadding(const memory::desc& desc) {
  const dnnl_memory_desc_t& d = desc.data;
  return d.ndims == 4 && d.format_kind == dnnl_blocked && d.padded_dims[1] > d.dims[1];
}

void ZeroChannelPadding(const memory& m) {
  const memory::desc md = m.get_desc();
  if (!HasChannelPadding(md)) return;
  const Geometry g = GeometryOf(md);
  const dnnl_memory_desc_t& d = md.data;
  float* data = static_cast<float*>(m.get_data_handle()) + g.offset0;
  const int64_t channels = d.dims[1], last_block = channels / g.block;
  const int64_t valid = channels % g.block;
  for (int64_t n = 0; n < d.dims[0]; ++n) {
    for (int64_t h = 0; h < d.dims[2]; ++h) {
      for (int64_t w = 0; w < d.dims[3]; ++w) {
        float* lanes = data + n * g.sn + last_block * g.sc + h * g.sh + w * g.sw;
        std::fill(lanes + valid, lanes + g.block, 0.0f);
      }
    }
  }
}

void CopyChannels(const memory& src, int64_t src_begin, const memory& dst, int64_t dst_begin,
                  int64_t count) {
  const memory::desc src_md = src.get_desc(), dst_md = dst.get_desc();
  const Geometry s = GeometryOf(src_md), d = GeometryOf(dst_md);
  const float* in = static_cast<const float*>(src.get_data_handle()) + s.offset0;
  float* out = static_cast<float*>(dst.get_data_handle()) + d.offset0;
  const int64_t batch = src_md.data.dims[0], height = src_md.data.dims[2],
                width = src_md.data.dims[3];
  const int64_t plane = height * width;
  if (s.dense_plain && d.dense_plain) {
#pragma omp parallel for collapse(2) schedule(static)
    for (int64_t n = 0; n < batch; ++n) {
      for (int64_t c = 0; c < count; ++c) {
        std::memcpy(out + n * d.sn + (dst_begin + c) * d.sc, in + n * s.sn + (src_begin + c) * s.sc,
                    static_cast<size_t>(plane) * sizeof(float));
      }
    }
    return;
  }
  if (s.block == 1 && d.block == 1 && s.sc == 1 && d.sc == 1) {
    // Channels innermost in both (NHWC): one contiguous run per pixel.
#pragma omp parallel for collapse(2) schedule(static)
    for (int64_t n = 0; n < batch; ++n) {
      for (int64_t h = 0; h < height; ++h) {
        for (int64_t w = 0; w < width; ++w) {
          std::memcpy(out + n * d.sn + h * d.sh + w * d.sw + dst_begin,
                      in + n * s.sn + h * s.sh + w * s.sw + src_begin,
                      static_cast<size_t>(count) * sizeof(float));
        }
      }
    }
    return;
  }
  const bool block_aligned = s.block == d.block && s.block > 1 && src_begin % s.block == 0 &&
                             dst_begin % d.block == 0 && s.sw == s.block && d.sw == d.block &&
                             s.sh == width * s.block && d.sh == width * d.block;
  if (block_aligned) {
    const int64_t b = s.block;
    const int64_t blocks = (count + b - 1) / b;
#pragma omp parallel for collapse(2) schedule(static)
    for (int64_t n = 0; n < batch; ++n) {
      for (int64_t k = 0; k < blocks; ++k) {
        const float* from = in + n * s.sn + (src_begin / b + k) * s.sc;
        float* to = out + n * d.sn + (dst_begin / b + k) * d.sc;
        const int64_t valid = std::min(b, count - k * b);
        if (valid == b) {
          std::memcpy(to, from, static_cast<size_t>(plane * b) * sizeof(float));
        } else {
          for (int64_t p = 0; p < plane; ++p) {
            std::memcpy(to + p * b, from + p * b, static_cast<size_t>(valid) * sizeof(float));
          }
        }
      }
    }
    return;
  }
  // General case: per-channel offsets, channels innermost.
  std::vector<int64_t> src_off(static_cast<size_t>(count)), dst_off(static_cast<size_t>(count));
  for (int64_t c = 0; c < count; ++c) {
    const int64_t sc = src_begin + c, dc = dst_begin + c;
    src_off[c] = (sc / s.block) * s.sc + sc % s.block;
    dst_off[c] = (dc / d.block) * d.sc + dc % d.block;
  }
#pragma omp parallel for collapse(2) schedule(static)
  for (int64_t n = 0; n < batch; ++n) {
    for (int64_t h = 0; h < height; ++h) {
      for (int64_t w = 0; w < width; ++w) {
        const float* from = in + n * s.sn + h * s.sh + w * s.sw;
        float* to = out + n * d.sn + h * d.sh + w * d.sw;
        for (int64_t c = 0; c < count; ++c) to[dst_off[c]] = from[src_off[c]];
      }
    }
  }
}

}  // namespace iosfarm::worker::cpu
