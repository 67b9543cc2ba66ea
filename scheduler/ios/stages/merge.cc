#include "scheduler/ios/stages/merge.h"

#include <algorithm>
#include <cstring>

#include "common/strings.h"
#include "scheduler/ios/stages/stable_hash.h"

namespace iosfarm::scheduler::ios {
namespace {

uint64_t FloatBits(float f) {
  uint32_t bits;
  std::memcpy(&bits, &f, sizeof(bits));
  return bits;
}

// Centred padding invariant of one side: 2*pad - dilation*kernel.
int64_t CentredPad(int64_t pad, int64_t dilation, int64_t kernel) {
  return 2 * pad - dilation * kernel;
}

}  // namespace

uint64_t MergeClassKey(const graph::Graph& graph, const graph::Node& node) {
  if (node.type != graph::OpType::kConv || node.inputs.empty()) return 0;
  const auto& a = std::get<graph::ConvAttrs>(node.attrs);
  if (a.groups != 1) return 0;
  uint64_t h = HashCombine(0x6d65726765ULL, static_cast<uint64_t>(node.inputs[0]));
  for (int i = 0; i < 2; ++i) {
    h = HashCombine(h, static_cast<uint64_t>(a.stride[i]));
    h = HashCombine(h, static_cast<uint64_t>(a.dilation[i]));
    h = HashCombine(h, static_cast<uint64_t>(a.kernel[i] & 1));
  }
  h = HashCombine(h, static_cast<uint64_t>(CentredPad(a.pads[0], a.dilation[0], a.kernel[0])));
  h = HashCombine(h, static_cast<uint64_t>(CentredPad(a.pads[1], a.dilation[1], a.kernel[1])));
  h = HashCombine(h, static_cast<uint64_t>(CentredPad(a.pads[2], a.dilation[0], a.kernel[0])));
  h = HashCombine(h, static_cast<uint64_t>(CentredPad(a.pads[3], a.dilation[1], a.kernel[1])));
  h = HashCombine(h, static_cast<uint64_t>(a.activation));
  if (a.activation == graph::Activation::kClip) {
    h = HashCombine(h, FloatBits(a.clip_min));
    h = HashCombine(h, FloatBits(a.clip_max));
  }
  // Output shape (equal for equal keys given the rules; kept for safety).
  for (graph::ValueId v : node.outputs) {
    const graph::Shape& shape = graph.value(v).shape;
    for (size_t d = 0; d < shape.size(); ++d) {
      if (d != 1) h = HashCombine(h, static_cast<uint64_t>(shape[d]));
    }
  }
  return h == 0 ? 1 : h;
}

StatusOr<MergedConv> MergeConvs(const graph::Graph& graph,
                                const std::vector<graph::NodeId>& ops) {
  if (ops.size() < 2) {
    return absl::FailedPreconditionError("a merge needs at least two convolutions");
  }
  for (graph::NodeId id : ops) {
    if (id < 0 || id >= graph.num_nodes()) {
      return absl::FailedPreconditionError(StrCat("merge: node id ", id, " out of range"));
    }
    const graph::Node& node = graph.node(id);
    if (node.type != graph::OpType::kConv) {
      return absl::FailedPreconditionError(
          StrCat("merge: '", node.name, "' is ", graph::OpTypeName(node.type), ", not Conv"));
    }
    if (std::get<graph::ConvAttrs>(node.attrs).groups != 1) {
      return absl::FailedPreconditionError(
          StrCat("merge: '", node.name, "' is a grouped convolution"));
    }
  }
  for (size_t i = 0; i < ops.size(); ++i) {
    for (size_t j = i + 1; j < ops.size(); ++j) {
      if (ops[i] == ops[j]) {
        return absl::FailedPreconditionError(
            StrCat("merge: '", graph.node(ops[i]).name, "' appears twice"));
      }
    }
  }
  const graph::Node& first = graph.node(ops[0]);
  const auto& a0 = std::get<graph::ConvAttrs>(first.attrs);
  MergedConv merged;
  merged.input = first.inputs[0];
  merged.attrs = a0;
  merged.attrs.out_channels = 0;
  merged.attrs.has_bias = false;
  for (graph::NodeId id : ops) {
    const graph::Node& node = graph.node(id);
    const auto& a = std::get<graph::ConvAttrs>(node.attrs);
    if (node.inputs[0] != merged.input) {
      return absl::FailedPreconditionError(StrCat("merge: '", node.name, "' reads '",
                                                  graph.value(node.inputs[0]).name, "', not '",
                                                  graph.value(merged.input).name, "'"));
    }
    if (a.stride != a0.stride || a.dilation != a0.dilation) {
      return absl::FailedPreconditionError(
          StrCat("merge: '", node.name, "' has a different stride or dilation"));
    }
    if (a.activation != a0.activation ||
        (a.activation == graph::Activation::kClip &&
         (a.clip_min != a0.clip_min || a.clip_max != a0.clip_max))) {
      return absl::FailedPreconditionError(
          StrCat("merge: '", node.name, "' has a different activation"));
    }
    for (int d = 0; d < 2; ++d) {
      merged.attrs.kernel[d] = std::max(merged.attrs.kernel[d], a.kernel[d]);
    }
    merged.attrs.has_bias = merged.attrs.has_bias || a.has_bias;
  }
  int64_t channel = 0;
  bool have_pads = false;
  for (graph::NodeId id : ops) {
    const graph::Node& node = graph.node(id);
    const auto& a = std::get<graph::ConvAttrs>(node.attrs);
    MergedBranch branch;
    branch.op = id;
    for (int d = 0; d < 2; ++d) {
      const int64_t diff = merged.attrs.kernel[d] - a.kernel[d];
      if (diff % 2 != 0) {
        return absl::FailedPreconditionError(
            StrCat("merge: '", node.name, "' kernel ", a.kernel[0], "x", a.kernel[1],
                   " cannot be centred in ", merged.attrs.kernel[0], "x",
                   merged.attrs.kernel[1]));
      }
      branch.kernel_offset[d] = diff / 2;
    }
    // pads: top, left, bottom, right; offsets: row, column.
    const std::array<int64_t, 4> pads = {
        a.pads[0] + a.dilation[0] * branch.kernel_offset[0],
        a.pads[1] + a.dilation[1] * branch.kernel_offset[1],
        a.pads[2] + a.dilation[0] * branch.kernel_offset[0],
        a.pads[3] + a.dilation[1] * branch.kernel_offset[1]};
    if (!have_pads) {
      merged.attrs.pads = pads;
      have_pads = true;
    } else if (pads != merged.attrs.pads) {
      return absl::FailedPreconditionError(
          StrCat("merge: '", node.name, "' padding does not line up with '", first.name,
                 "' once kernels are centred"));
    }
    const graph::Shape& out = graph.value(node.outputs[0]).shape;
    const graph::Shape& out0 = graph.value(first.outputs[0]).shape;
    if (out.size() != 4 || out0.size() != 4 || out[0] != out0[0] || out[2] != out0[2] ||
        out[3] != out0[3]) {
      return absl::FailedPreconditionError(
          StrCat("merge: '", node.name, "' output shape ", graph::ShapeToString(out),
                 " does not match '", first.name, "' ", graph::ShapeToString(out0)));
    }
    branch.channel_begin = channel;
    channel += a.out_channels;
    branch.channel_end = channel;
    merged.branches.push_back(branch);
  }
  merged.attrs.out_channels = channel;
  return merged;
}

}  // namespace iosfarm::scheduler::ios
