#include "graph/models/layers.h"

#include <algorithm>

#include "common/strings.h"

namespace iosfarm::graph::models {

Status CheckZooBatch(std::string_view model, int64_t batch) {
  if (batch < 1 || batch > kMaxZooBatch) {
    return absl::InvalidArgumentError(StrCat("model '", model, "': batch size ", batch,
                                             " is out of range [1, ", kMaxZooBatch, "]"));
  }
  return absl::OkStatus();
}

ValueId ConvBn(GraphBuilder& b, ValueId x, int64_t out_channels,
               std::array<int64_t, 2> kernel, std::array<int64_t, 2> stride,
               std::array<int64_t, 2> padding, const std::string& name,
               Activation activation) {
  ConvSpec spec;
  spec.out_channels = out_channels;
  spec.kernel = kernel;
  spec.stride = stride;
  spec.padding = padding;
  spec.bias = true;
  spec.activation = activation;
  return b.Conv(x, spec, name);
}

std::array<int64_t, 2> SamePadding(int64_t in, int64_t kernel, int64_t stride) {
  const int64_t out = (in + stride - 1) / stride;
  const int64_t total = std::max<int64_t>(0, (out - 1) * stride + kernel - in);
  return {total / 2, total - total / 2};
}

std::array<int64_t, 4> SamePads(const GraphBuilder& b, ValueId x, int64_t kernel,
                                int64_t stride) {
  const Shape& s = b.shape(x);
  // A malformed input shape is reported by the builder on the next node.
  const int64_t h = s.size() == 4 ? s[2] : 1;
  const int64_t w = s.size() == 4 ? s[3] : 1;
  const auto ph = SamePadding(h, kernel, stride);
  const auto pw = SamePadding(w, kernel, stride);
  return {ph[0], pw[0], ph[1], pw[1]};
}

ValueId SeparableConvBn(GraphBuilder& b, ValueId x, int64_t out_channels, int64_t kernel,
                        int64_t stride, std::array<int64_t, 4> pads,
                        const std::string& name, Activation activation) {
  const Shape& s = b.shape(x);
  const int64_t channels = s.size() == 4 ? s[1] : 1;
  ConvSpec dw;
  dw.out_channels = channels;
  dw.kernel = {kernel, kernel};
  dw.stride = {stride, stride};
  dw.pads = pads;
  dw.groups = channels;
  dw.bias = false;
  const ValueId depthwise = b.Conv(x, dw, name + "/dw");
  ConvSpec pw;
  pw.out_channels = out_channels;
  pw.bias = true;
  pw.activation = activation;
  return b.Conv(depthwise, pw, name + "/pw");
}

ValueId AddAll(GraphBuilder& b, const std::vector<ValueId>& xs, const std::string& name) {
  ValueId sum = xs.front();
  for (size_t i = 1; i < xs.size(); ++i) sum = b.Add(sum, xs[i], name);
  return sum;
}

ValueId ClassifierHead(GraphBuilder& b, ValueId features) {
  const ValueId pooled = b.GlobalAveragePool(features, "global_pool");
  const ValueId flat = b.Flatten(pooled, 1, "flatten");
  const ValueId logits = b.Linear(flat, kNumClasses, "logits");
  b.Output(logits);
  return logits;
}

}  // namespace iosfarm::graph::models
