// NASNet-A (Zoph et al., "Learning Transferable Architectures for Scalable
// Image Recognition", CVPR 2018) for ImageNet: the Large 6@4032 network the
// IOS paper schedules (331x331) and the Mobile 4@1056 one (224x224).
//
// Structure (TensorFlow slim nasnet.py and its PyTorch port
// pretrainedmodels/nasnet{,_mobile}.py): conv0 3x3/2 VALID with folded BN, two
// stem reduction cells, then N normal cells, a reduction cell, N normal cells,
// a reduction cell, N normal cells; head Relu, GlobalAveragePool, Flatten,
// Linear "logits" [batch,1000] (1000 classes, no background class).
//   * Each cell first adapts its two inputs: the current one by Relu -> 1x1
//     conv (folded BN); the previous one the same way, or, when its spatial
//     size is twice the current one, by a factorized reduction (Relu, then two
//     paths AvgPool 1x1/2 -> 1x1 conv, the second on the input shifted by one
//     pixel with Pad + Slice, then Concat; the BN folds into both convs).
//   * A separable branch is Relu -> SepConv(k, stride) with folded BN and
//     fused ReLU -> SepConv(k, 1) with folded BN; SepConv = depthwise k x k
//     conv (no bias) + pointwise 1x1 conv (bias).
//   * Normal cell: 5 combinations (sep5(cur)+sep3(prev), sep5(prev)+sep3(prev),
//     avg3(cur)+prev, avg3(prev)+avg3(prev), sep3(cur)+cur), output Concat of
//     [prev, c0..c4] (6 x filters channels).
//   * Reduction cell: c0 = sep5/2(cur)+sep7/2(prev), c1 = max3/2(cur)+sep7/2(prev),
//     c2 = avg3/2(cur)+sep5/2(prev), c3 = avg3(c0)+c1, c4 = sep3(c0)+max3/2(cur);
//     output Concat [c1..c4] (4 x filters). Stem 0 uses the raw conv0 output as
//     its "prev" input.
//   * Padding is TensorFlow "SAME" (extra pixel bottom/right at stride 2 on
//     even sizes, which the PyTorch port emulates with ZeroPad2d and crops);
//     average pools exclude padding.
// A ReLU that precedes a conv is its own Relu node, once per branch, as in the
// reference implementations.
//
// Large (filters 168, stem 96, N = 6, skip_reduction_layer_input): 867
//   nodes (488 Conv of which 220 depthwise, 154 Relu, 110 Add, 70 AveragePool,
//   8 MaxPool, 26 Concat, 4 Pad, 4 Slice, head); 23,783,414,658 MACs and
//   88,654,816 parameters per image. The paper (Table 2) reports 23.8 B
//   multiply-adds and 88.9 M parameters (1001 classes, BN not folded).
// Mobile (filters 44, stem 32, N = 4): 639 nodes (356 Conv of which 160
//   depthwise); 563,638,816 MACs and 5,271,609 parameters; paper (Table 3):
//   564 M and 5.3 M.
#ifndef IOSFARM_GRAPH_MODELS_NASNET_A_H_
#define IOSFARM_GRAPH_MODELS_NASNET_A_H_

#include <cstdint>
#include <string>

#include "common/status.h"
#include "graph/graph.h"

namespace iosfarm::graph::models {

struct NasNetAConfig {
  std::string name;                 // graph name
  int64_t image_size = 0;           // square input
  int64_t stem_filters = 0;         // conv0 output channels
  int64_t penultimate_filters = 0;  // channels before the head; filters = this / 24
  int cells_per_stack = 0;          // N normal cells between reductions
  // TF hparam: the cell after a reduction takes as "prev" the input of the
  // reduction's own "prev" (true for Large) instead of the cell just before
  // the reduction (Mobile).
  bool skip_reduction_layer_input = false;
};

// NASNet-A Large 6@4032 at 331x331.
NasNetAConfig NasNetALargeConfig();
// NASNet-A Mobile 4@1056 at 224x224.
NasNetAConfig NasNetAMobileConfig();

// Builds a NASNet-A network. InvalidArgument unless 1 <= batch <= 4096, or
// for a config with penultimate_filters not a positive multiple of 24,
// cells_per_stack < 1, stem_filters < 1, or an image too small for the five
// stride-2 steps (< 32).
StatusOr<Graph> BuildNasNetA(int64_t batch, const NasNetAConfig& config);

StatusOr<Graph> BuildNasNetALarge(int64_t batch);
StatusOr<Graph> BuildNasNetAMobile(int64_t batch);

}  // namespace iosfarm::graph::models

#endif  // IOSFARM_GRAPH_MODELS_NASNET_A_H_
