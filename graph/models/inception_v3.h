// Inception-v3 (torchvision `inception_v3`, aux_logits=False,
// transform_input=False) for 299x299 ImageNet images.
//
// Graph: input "input" [batch,3,299,299] -> output "logits" [batch,1000].
// Every BasicConv2d (conv-BN-ReLU) is one Conv with bias and fused ReLU. Branch
// order, pooling (average pools count padding, as torchvision's F.avg_pool2d)
// and the nested concats of the Mixed_7 blocks follow torchvision exactly.
// 94 convs: stem 5, Mixed_5b/c/d 7 each, Mixed_6a 4, Mixed_6b-e 10 each,
// Mixed_7a 6, Mixed_7b/c 9 each. 11 inception blocks.
// MACs 5,713,216,096 per image; 23,817,352 parameters (torchvision without the
// aux head: 23,834,568, minus one of the two BN vectors per channel).
#ifndef IOSFARM_GRAPH_MODELS_INCEPTION_V3_H_
#define IOSFARM_GRAPH_MODELS_INCEPTION_V3_H_

#include <cstdint>

#include "common/status.h"
#include "graph/graph.h"

namespace iosfarm::graph::models {

// Builds Inception-v3 for `batch` images. InvalidArgument unless
// 1 <= batch <= 4096.
StatusOr<Graph> BuildInceptionV3(int64_t batch);

}  // namespace iosfarm::graph::models

#endif  // IOSFARM_GRAPH_MODELS_INCEPTION_V3_H_
