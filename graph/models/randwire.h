// RandWire-WS, small computation regime (Xie et al., "Exploring Randomly Wired
// Neural Networks for Image Recognition", ICCV 2019, Table 2) for 224x224
// ImageNet images: the zoo's stand-in for the RandWire network of the IOS and
// IOPS papers.
//
// Graph: input "input" [batch,3,224,224] -> output "logits" [batch,1000].
//   conv1  3x3/2 conv, C/2 channels, folded BN + fused ReLU      112x112
//   conv2  3x3/2 conv, C channels, folded BN                      56x56
//   conv3  random stage, WS(N=32, K=4, P=0.75), C channels         28x28
//   conv4  random stage, WS(N=32, K=4, P=0.75), 2C channels        14x14
//   conv5  random stage, WS(N=32, K=4, P=0.75), 4C channels         7x7
//   head   Relu, 1x1 conv to 1280 (folded BN), GlobalAveragePool, Flatten,
//          Linear "logits"
// with C = 78 (the small regime uses N nodes in all three random stages; the
// regular regime, which IOS's reference code calls randwire_large, has a
// fourth stage and N/2 nodes in the first one). Stage s (s = 0, 1, 2 for
// conv3..conv5) wires its nodes with WattsStrogatzDag(32, 4, 0.75, seed + s)
// (graph/models/watts_strogatz.h); the default seed is kRandWireSeed = 1, so
// the stages use seeds 1, 2 and 3. Every DAG node aggregates its predecessors
// by a weighted sum, emitted as a chain of Add nodes (the learned per-edge
// positive scalars need no node of their own: they change neither shapes nor
// MACs and belong to the element-wise sum kernel), then applies Relu and a 3x3
// separable conv: depthwise 3x3 (no bias) then pointwise 1x1 with the folded
// BN as bias. Nodes without predecessors read the previous stage's output with
// stride 2. The stage output is the sum (Add chain) of the nodes without
// successors (the paper averages them; the 1/k scale folds into the next
// convs, since ReLU commutes with a positive scale).
//
// Default seed: stages have 64 edges each, 5/7/5 input nodes and 5/7/6 output
// nodes; the graph has 423 nodes: 195 Conv (conv1, conv2, 96 separable convs
// x 2, head conv), 97 Relu, 128 Add, GlobalAveragePool, Flatten, Gemm. Cost:
// 578,715,404 MACs and 5,632,886 parameters per image, against the paper's
// 583 M FLOPs (multiply-adds) and 5.6 M parameters (Table 3, RandWire-WS
// small, C=78) for its own, unpublished, random graphs: the separable-conv
// MACs depend on the wiring only through the number of input nodes.
#ifndef IOSFARM_GRAPH_MODELS_RANDWIRE_H_
#define IOSFARM_GRAPH_MODELS_RANDWIRE_H_

#include <cstdint>

#include "common/status.h"
#include "graph/graph.h"

namespace iosfarm::graph::models {

inline constexpr uint64_t kRandWireSeed = 1;

struct RandWireOptions {
  int64_t channels = 78;  // C
  int nodes = 32;         // N, nodes of each of the three random stages
  int k = 4;              // WS: each node starts linked to k nearest neighbours
  double p = 0.75;        // WS: rewiring probability
  uint64_t seed = kRandWireSeed;
};

// Builds RandWire-WS small regime with the default options.
// InvalidArgument unless 1 <= batch <= 4096.
StatusOr<Graph> BuildRandWire(int64_t batch);

// Same with explicit options; also InvalidArgument for options the generator
// rejects (see WattsStrogatzDag) or channels < 2. Deterministic: the same
// arguments give an identical graph.
StatusOr<Graph> BuildRandWire(int64_t batch, const RandWireOptions& options);

}  // namespace iosfarm::graph::models

#endif  // IOSFARM_GRAPH_MODELS_RANDWIRE_H_
