// Layer helpers shared by the model zoo builders.
//
// Conventions of every zoo model: BatchNorm is folded into the preceding
// convolution (Conv with a bias, and the following ReLU fused into it when the
// architecture has conv-BN-ReLU); a ReLU that comes *before* a convolution
// (pre-activation, as in NASNet and RandWire) is a separate Relu node. Weights
// have shapes only. Shape errors are recorded by the GraphBuilder and surface
// from GraphBuilder::Finish(), so these helpers return value ids, not Status.
// Not thread-safe (they mutate the builder).
#ifndef IOSFARM_GRAPH_MODELS_LAYERS_H_
#define IOSFARM_GRAPH_MODELS_LAYERS_H_

#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"
#include "graph/graph_builder.h"

namespace iosfarm::graph::models {

// Largest batch size a zoo builder accepts.
inline constexpr int64_t kMaxZooBatch = 4096;

// Number of ImageNet classes every zoo model predicts.
inline constexpr int64_t kNumClasses = 1000;

// OK for 1 <= batch <= kMaxZooBatch, else InvalidArgument naming the model.
Status CheckZooBatch(std::string_view model, int64_t batch);

// Conv with a bias (a folded BN, or the conv's own bias where the architecture
// has no BN) and the given fused activation (ReLU by default). `padding` is
// symmetric {h, w}.
ValueId ConvBn(GraphBuilder& b, ValueId x, int64_t out_channels,
               std::array<int64_t, 2> kernel, std::array<int64_t, 2> stride,
               std::array<int64_t, 2> padding, const std::string& name,
               Activation activation = Activation::kRelu);

// TensorFlow "SAME" padding of one spatial dimension: {before, after} such that
// the output size is ceil(in / stride). The extra pixel, if any, goes after.
std::array<int64_t, 2> SamePadding(int64_t in, int64_t kernel, int64_t stride);

// {top, left, bottom, right} TF "SAME" pads for a square kernel over x.
std::array<int64_t, 4> SamePads(const GraphBuilder& b, ValueId x, int64_t kernel,
                                int64_t stride);

// Separable convolution: depthwise k x k conv (no bias, `pads`, `stride`)
// followed by a pointwise 1x1 conv to `out_channels` with the folded BN as its
// bias and `activation` fused. Adds two Conv nodes "<name>/dw" and "<name>/pw".
ValueId SeparableConvBn(GraphBuilder& b, ValueId x, int64_t out_channels, int64_t kernel,
                        int64_t stride, std::array<int64_t, 4> pads,
                        const std::string& name,
                        Activation activation = Activation::kNone);

// Sums `xs` (at least one value) with a left-to-right chain of binary Add
// nodes "<name>", "<name>_1", ...; returns xs[0] itself when there is one.
ValueId AddAll(GraphBuilder& b, const std::vector<ValueId>& xs, const std::string& name);

// The ImageNet head: GlobalAveragePool -> Flatten -> Linear(kNumClasses) whose
// node (and output value) is named "logits" [batch, 1000]; marks it as the
// graph output and returns it.
ValueId ClassifierHead(GraphBuilder& b, ValueId features);

}  // namespace iosfarm::graph::models

#endif  // IOSFARM_GRAPH_MODELS_LAYERS_H_
