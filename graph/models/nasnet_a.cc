#include "graph/models/nasnet_a.h"

#include <string>
#include <vector>

#include "common/strings.h"
#include "graph/graph_builder.h"
#include "graph/models/layers.h"

namespace iosfarm::graph::models {
namespace {

int64_t Spatial(const GraphBuilder& b, ValueId x) {
  const Shape& s = b.shape(x);
  return s.size() == 4 ? s[2] : 0;
}

int64_t Channels(const GraphBuilder& b, ValueId x) {
  const Shape& s = b.shape(x);
  return s.size() == 4 ? s[1] : 0;
}

// Relu -> 1x1 conv with folded BN.
ValueId ReluConvBn(GraphBuilder& b, ValueId x, int64_t out, const std::string& name) {
  const ValueId r = b.Relu(x, name + "/relu");
  return ConvBn(b, r, out, {1, 1}, {1, 1}, {0, 0}, name + "/conv", Activation::kNone);
}

// TF factorized_reduction with stride 2: two half-width 1x1 convs on the input
// subsampled at even and at odd (shifted) positions.
ValueId FactorizedReduction(GraphBuilder& b, ValueId x, int64_t out,
                            const std::string& name) {
  const ValueId r = b.Relu(x, name + "/relu");
  ValueId p1 =
      b.AveragePool(r, {1, 1}, {2, 2}, {0, 0, 0, 0}, false, name + "/path1/avgpool");
  p1 = ConvBn(b, p1, out / 2, {1, 1}, {1, 1}, {0, 0}, name + "/path1/conv",
              Activation::kNone);
  // Shift by one pixel: pad one zero row/column at the bottom/right, drop the
  // first row/column.
  ValueId p2 = b.Pad(r, {0, 0, 0, 0, 0, 0, 1, 1}, name + "/path2/pad");
  const Shape& padded = b.shape(p2);
  const int64_t h = padded.size() == 4 ? padded[2] : 1;
  const int64_t w = padded.size() == 4 ? padded[3] : 1;
  p2 = b.AddNode(OpType::kSlice, SliceAttrs{{2, 3}, {1, 1}, {h, w}, {1, 1}}, {p2},
                 name + "/path2/slice")[0];
  p2 = b.AveragePool(p2, {1, 1}, {2, 2}, {0, 0, 0, 0}, false, name + "/path2/avgpool");
  p2 = ConvBn(b, p2, out - out / 2, {1, 1}, {1, 1}, {0, 0}, name + "/path2/conv",
              Activation::kNone);
  return b.Concat({p1, p2}, 1, name + "/concat");
}

// TF _reduce_prev_layer: brings the previous cell's output to the current
// spatial size and `filters` channels.
ValueId AdaptPrev(GraphBuilder& b, ValueId prev, int64_t spatial, int64_t filters,
                  const std::string& name) {
  if (Spatial(b, prev) != spatial) return FactorizedReduction(b, prev, filters, name);
  if (Channels(b, prev) != filters) return ReluConvBn(b, prev, filters, name);
  return prev;
}

// Relu -> SepConv(k, stride) + BN + ReLU -> SepConv(k, 1) + BN.
ValueId SepBranch(GraphBuilder& b, ValueId x, int64_t out, int64_t k, int64_t stride,
                  const std::string& name) {
  const ValueId r = b.Relu(x, name + "/relu");
  const ValueId y = SeparableConvBn(b, r, out, k, stride, SamePads(b, r, k, stride),
                                    name + "/sep1", Activation::kRelu);
  return SeparableConvBn(b, y, out, k, 1, SamePads(b, y, k, 1), name + "/sep2");
}

ValueId AvgPool3(GraphBuilder& b, ValueId x, int64_t stride, const std::string& name) {
  return b.AveragePool(x, {3, 3}, {stride, stride}, SamePads(b, x, 3, stride),
                       /*count_include_pad=*/false, name);
}

ValueId MaxPool3(GraphBuilder& b, ValueId x, int64_t stride, const std::string& name) {
  return b.MaxPool(x, {3, 3}, {stride, stride}, SamePads(b, x, 3, stride), name);
}

// Normal cell on the adapted inputs h (current) and p (previous).
ValueId NormalCell(GraphBuilder& b, ValueId h, ValueId p, int64_t f,
                   const std::string& n) {
  const ValueId c0 = b.Add(SepBranch(b, h, f, 5, 1, n + "/comb0_left"),
                           SepBranch(b, p, f, 3, 1, n + "/comb0_right"), n + "/comb0");
  const ValueId c1 = b.Add(SepBranch(b, p, f, 5, 1, n + "/comb1_left"),
                           SepBranch(b, p, f, 3, 1, n + "/comb1_right"), n + "/comb1");
  const ValueId c2 = b.Add(AvgPool3(b, h, 1, n + "/comb2_left"), p, n + "/comb2");
  const ValueId c3 = b.Add(AvgPool3(b, p, 1, n + "/comb3_left"),
                           AvgPool3(b, p, 1, n + "/comb3_right"), n + "/comb3");
  const ValueId c4 = b.Add(SepBranch(b, h, f, 3, 1, n + "/comb4_left"), h, n + "/comb4");
  return b.Concat({p, c0, c1, c2, c3, c4}, 1, n + "/concat");
}

// Reduction cell on the adapted inputs h (current) and p (previous).
ValueId ReductionCell(GraphBuilder& b, ValueId h, ValueId p, int64_t f,
                      const std::string& n) {
  const ValueId c0 = b.Add(SepBranch(b, h, f, 5, 2, n + "/comb0_left"),
                           SepBranch(b, p, f, 7, 2, n + "/comb0_right"), n + "/comb0");
  const ValueId c1 = b.Add(MaxPool3(b, h, 2, n + "/comb1_left"),
                           SepBranch(b, p, f, 7, 2, n + "/comb1_right"), n + "/comb1");
  const ValueId c2 = b.Add(AvgPool3(b, h, 2, n + "/comb2_left"),
                           SepBranch(b, p, f, 5, 2, n + "/comb2_right"), n + "/comb2");
  const ValueId c3 = b.Add(AvgPool3(b, c0, 1, n + "/comb3_right"), c1, n + "/comb3");
  const ValueId c4 = b.Add(SepBranch(b, c0, f, 3, 1, n + "/comb4_left"),
                           MaxPool3(b, h, 2, n + "/comb4_right"), n + "/comb4");
  return b.Concat({c1, c2, c3, c4}, 1, n + "/concat");
}

// A cell of either kind taking the raw outputs of the two previous cells.
ValueId Cell(GraphBuilder& b, bool reduction, ValueId cur, ValueId prev, int64_t f,
             const std::string& n) {
  const ValueId p = AdaptPrev(b, prev, Spatial(b, cur), f, n + "/prev");
  const ValueId h = ReluConvBn(b, cur, f, n + "/conv_1x1");
  return reduction ? ReductionCell(b, h, p, f, n) : NormalCell(b, h, p, f, n);
}

Status CheckConfig(const NasNetAConfig& c) {
  if (c.penultimate_filters < 24 || c.penultimate_filters % 24 != 0 ||
      c.cells_per_stack < 1 || c.stem_filters < 1 || c.image_size < 32 ||
      c.image_size > 4096) {
    return absl::InvalidArgumentError(StrCat(
        "NASNet-A config '", c.name,
        "': need penultimate_filters a positive multiple of 24 (", c.penultimate_filters,
        "), cells_per_stack >= 1 (", c.cells_per_stack, "), stem_filters >= 1 (",
        c.stem_filters, ") and 32 <= image_size <= 4096 (", c.image_size, ")"));
  }
  return absl::OkStatus();
}

}  // namespace

NasNetAConfig NasNetALargeConfig() {
  return NasNetAConfig{"nasnet_a", 331, 96, 4032, 6, true};
}

NasNetAConfig NasNetAMobileConfig() {
  return NasNetAConfig{"nasnet_a_mobile", 224, 32, 1056, 4, false};
}

StatusOr<Graph> BuildNasNetA(int64_t batch, const NasNetAConfig& config) {
  RETURN_IF_ERROR(CheckZooBatch(config.name, batch));
  RETURN_IF_ERROR(CheckConfig(config));
  const int64_t filters = config.penultimate_filters / 24;
  GraphBuilder b(config.name);
  const ValueId input =
      b.Input("input", {batch, 3, config.image_size, config.image_size});
  const ValueId conv0 = ConvBn(b, input, config.stem_filters, {3, 3}, {2, 2}, {0, 0},
                               "conv0", Activation::kNone);
  // Stem 0 has no previous cell: its "prev" input is conv0's raw output.
  const ValueId stem0 =
      ReductionCell(b, ReluConvBn(b, conv0, filters / 4, "cell_stem_0/conv_1x1"), conv0,
                    filters / 4, "cell_stem_0");
  const ValueId stem1 = Cell(b, true, stem0, conv0, filters / 2, "cell_stem_1");

  std::vector<ValueId> outputs = {stem0, stem1};  // TF's cell_outputs
  ValueId net = stem1;
  int64_t f = filters;
  int normal = 0;
  for (int stack = 0; stack < 3; ++stack) {
    ValueId first_prev = outputs[outputs.size() - 2];
    if (stack > 0) {
      f *= 2;
      net = Cell(b, true, net, outputs[outputs.size() - 2], f,
                 StrCat("reduction_cell_", stack - 1));
      outputs.push_back(net);
      if (!config.skip_reduction_layer_input) first_prev = outputs[outputs.size() - 2];
    }
    for (int i = 0; i < config.cells_per_stack; ++i) {
      const ValueId prev = i == 0 ? first_prev : outputs[outputs.size() - 2];
      net = Cell(b, false, net, prev, f, StrCat("cell_", normal++));
      outputs.push_back(net);
    }
  }
  ClassifierHead(b, b.Relu(net, "head/relu"));
  return std::move(b).Finish();
}

StatusOr<Graph> BuildNasNetALarge(int64_t batch) {
  return BuildNasNetA(batch, NasNetALargeConfig());
}

StatusOr<Graph> BuildNasNetAMobile(int64_t batch) {
  return BuildNasNetA(batch, NasNetAMobileConfig());
}

}  // namespace iosfarm::graph::models
