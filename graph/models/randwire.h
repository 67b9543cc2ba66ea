// RandWire-WS (Xie et al., "Exploring Randomly Wired Neural Networks for
// Image Recognition", ICCV 2019) for 224x224 ImageNet images, in the paper's
// two computation regimes (Table 2). The zoo's "randwire" is the regular
// regime with C = 154, the network IOS's reference code benchmarks as
// randwire_large and IOPS reports as RandWire (112 convs, 8.06 G).
//
// Graph: input "input" [batch,3,224,224] -> output "logits" [batch,1000].
//   stage   regular regime (default)               small regime
//   conv1   3x3/2 conv, C/2, folded BN     112x112  3x3/2 conv, C/2, BN + ReLU
//   conv2   random stage, N/2 nodes, C       56x56  3x3/2 conv, C, folded BN
//   conv3   random stage, N nodes, 2C        28x28  random stage, N nodes, C
//   conv4   random stage, N nodes, 4C        14x14  random stage, N nodes, 2C
//   conv5   random stage, N nodes, 8C         7x7   random stage, N nodes, 4C
//   head    Relu, 1x1 conv to 1280 (folded BN), GlobalAveragePool, Flatten,
//           Linear "logits"
// Random stage s (0-based, in order) wires its nodes with
// WattsStrogatzDag(nodes, K=4, P=0.75, seed + s) (graph/models/watts_strogatz.h);
// the default seed is kRandWireSeed = 1, so the regular regime's stages use
// seeds 1..4 (16, 32, 32, 32 nodes) and the small regime's seeds 1..3. Every
// DAG node aggregates its predecessors by a weighted sum, emitted as a chain
// of Add nodes (the learned per-edge positive scalars need no node of their
// own: they change neither shapes nor MACs and belong to the element-wise sum
// kernel), then applies Relu and a 3x3 separable conv: depthwise 3x3 (no
// bias) then pointwise 1x1 with the folded BN as bias. Nodes without
// predecessors read the previous stage's output with stride 2. The stage
// output is the sum (Add chain) of the nodes without successors (the paper
// averages them; the 1/k scale folds into the next convs, since ReLU commutes
// with a positive scale).
//
// Regular regime, C = 154, default seed: the stages have 32/64/64/64 edges,
// 3/7/5/4 input nodes and 2/7/6/5 output nodes; the graph has 489 nodes: 226
// Conv (conv1, 112 separable convs x 2, head conv), 113 Relu, 147 Add,
// GlobalAveragePool, Flatten, Gemm. Cost: 7,901,217,584 MACs and 63,304,317
// parameters per image, against the paper's 7.9 B FLOPs (multiply-adds) and
// 61.5 M parameters (Table 4, RandWire-WS regular, C=154) for its own,
// unpublished, random graphs, and IOPS's 8.06 G (Table 5). (With C = 109 the
// same graphs give 4,015,406,648 MACs and 32,817,751 parameters; paper: 4.0 B,
// 31.9 M.) The wiring changes the cost only through the number of input
// nodes, whose pointwise convs read the narrower previous stage: MACs move
// little between seeds (7.64..8.02 G over seeds 1..20), parameters more
// (59.6..63.4 M; each input node of conv5 saves 0.76 M).
//
// Small regime, C = 78 (RandWireOptions::Small()), default seed: the stages
// have 64 edges each, 5/7/5 input nodes and 5/7/6 output nodes; the graph has
// 423 nodes: 195 Conv (conv1, conv2, 96 separable convs x 2, head conv), 97
// Relu, 128 Add, GlobalAveragePool, Flatten, Gemm. Cost: 578,715,404 MACs and
// 5,632,886 parameters per image, against the paper's 583 M FLOPs and 5.6 M
// parameters (Table 3, RandWire-WS small, C=78).
#ifndef IOSFARM_GRAPH_MODELS_RANDWIRE_H_
#define IOSFARM_GRAPH_MODELS_RANDWIRE_H_

#include <cstdint>

#include "common/status.h"
#include "graph/graph.h"

namespace iosfarm::graph::models {

inline constexpr uint64_t kRandWireSeed = 1;
inline constexpr int64_t kRandWireRegularChannels = 154;
inline constexpr int64_t kRandWireSmallChannels = 78;

enum class RandWireRegime {
  kRegular,  // conv1, then random stages of N/2, N, N, N nodes (C, 2C, 4C, 8C)
  kSmall,    // conv1, conv2, then random stages of N, N, N nodes (C, 2C, 4C)
};

// Defaults: the regular regime with C = 154, the zoo's "randwire".
struct RandWireOptions {
  RandWireRegime regime = RandWireRegime::kRegular;
  int64_t channels = kRandWireRegularChannels;  // C
  int nodes = 32;                 // N; the regular regime's first random stage has N / 2
  int k = 4;                      // WS: each node starts linked to k nearest neighbours
  double p = 0.75;                // WS: rewiring probability
  uint64_t seed = kRandWireSeed;  // random stage s (0-based) uses seed + s

  // The paper's small-regime network: regime kSmall, C = 78, other fields
  // default.
  static RandWireOptions Small();
};

// Builds the regular-regime RandWire-WS (C = 154) with the default options.
// InvalidArgument unless 1 <= batch <= 4096.
StatusOr<Graph> BuildRandWire(int64_t batch);

// Same with explicit options; also InvalidArgument, naming the stage, for a
// stage size the generator rejects (see WattsStrogatzDag; the regular regime
// needs k < N / 2), and for channels < 2 or an unknown regime. The graph is
// named "randwire" (regular) or "randwire_small". Deterministic: the same
// arguments give an identical graph.
StatusOr<Graph> BuildRandWire(int64_t batch, const RandWireOptions& options);

}  // namespace iosfarm::graph::models

#endif  // IOSFARM_GRAPH_MODELS_RANDWIRE_H_
