#include "worker/backends/merged_conv_weights.h"

#include <variant>

#include "common/strings.h"
#include "worker/backends/weights.h"

namespace iosfarm::worker {

StatusOr<MergedConvWeights> AssembleMergedConvWeights(const graph::Graph& graph,
                                                      const scheduler::ios::MergedConv& merged) {
  const graph::ConvAttrs& attrs = merged.attrs;
  if (merged.input < 0 || merged.input >= graph.num_values() ||
      graph.value(merged.input).shape.size() != 4) {
    return absl::InvalidArgumentError("merged conv: input is not a known 4-D tensor");
  }
  const int64_t channels = graph.value(merged.input).shape[1];
  const int64_t kh = attrs.kernel[0], kw = attrs.kernel[1];
  MergedConvWeights out;
  out.weight.shape = {attrs.out_channels, channels, kh, kw};
  out.weight.data.assign(static_cast<size_t>(out.weight.num_elements()), 0.0f);
  if (attrs.has_bias) {
    out.bias.shape = {attrs.out_channels};
    out.bias.data.assign(static_cast<size_t>(attrs.out_channels), 0.0f);
  }
  for (const scheduler::ios::MergedBranch& branch : merged.branches) {
    if (branch.op < 0 || branch.op >= graph.num_nodes()) {
      return absl::InvalidArgumentError(StrCat("merged conv: node id ", branch.op,
                                               " out of range"));
    }
    const graph::Node& node = graph.node(branch.op);
    const auto* a = std::get_if<graph::ConvAttrs>(&node.attrs);
    auto w_it = node.weights.find("W");
    if (node.type != graph::OpType::kConv || a == nullptr || w_it == node.weights.end()) {
      return absl::InvalidArgumentError(
          StrCat("merged conv: branch '", node.name, "' is not a Conv with a weight"));
    }
    const graph::Shape& ws = w_it->second.shape;
    const int64_t oc = branch.channel_end - branch.channel_begin;
    if (ws.size() != 4 || ws[0] != oc || ws[1] != channels || branch.channel_begin < 0 ||
        branch.channel_end > attrs.out_channels || a->groups != 1) {
      return absl::InvalidArgumentError(StrCat(
          "merged conv: branch '", node.name, "' weight ", graph::ShapeToString(ws),
          " does not fit channels [", branch.channel_begin, ",", branch.channel_end, ") of ",
          attrs.out_channels, " reading ", channels, " channels"));
    }
    const int64_t row0 = branch.kernel_offset[0], col0 = branch.kernel_offset[1];
    if (row0 < 0 || col0 < 0 || row0 + ws[2] > kh || col0 + ws[3] > kw) {
      return absl::InvalidArgumentError(StrCat("merged conv: branch '", node.name, "' kernel ",
                                               ws[2], "x", ws[3], " at offset (", row0, ",",
                                               col0, ") leaves the ", kh, "x", kw, " kernel"));
    }
    const graph::Tensor w = MaterializeWeight(node, "W", w_it->second);
    for (int64_t o = 0; o < oc; ++o) {
      for (int64_t c = 0; c < channels; ++c) {
        for (int64_t i = 0; i < ws[2]; ++i) {
          for (int64_t j = 0; j < ws[3]; ++j) {
            const int64_t src = ((o * channels + c) * ws[2] + i) * ws[3] + j;
            const int64_t dst =
                (((branch.channel_begin + o) * channels + c) * kh + row0 + i) * kw + col0 + j;
            out.weight.data[static_cast<size_t>(dst)] = w.data[static_cast<size_t>(src)];
          }
        }
      }
    }
    if (a->has_bias) {
      auto b_it = node.weights.find("B");
      if (!attrs.has_bias || b_it == node.weights.end() || b_it->second.num_elements() != oc) {
        return absl::InvalidArgumentError(
            StrCat("merged conv: branch '", node.name, "' bias does not fit the merged conv"));
      }
      const graph::Tensor b = MaterializeWeight(node, "B", b_it->second);
      for (int64_t o = 0; o < oc; ++o) {
        out.bias.data[static_cast<size_t>(branch.channel_begin + o)] =
            b.data[static_cast<size_t>(o)];
      }
    }
  }
  return out;
}

}  // namespace iosfarm::worker
