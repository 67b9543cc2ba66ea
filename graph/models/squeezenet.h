// SqueezeNet 1.1 (torchvision `squeezenet1_1`) for 224x224 ImageNet images.
//
// Graph: input "input" [batch,3,224,224] -> output "logits" [batch,1000].
// The architecture has no BatchNorm and no fully connected layer: the
// classifier is a 1x1 conv to 1000 channels with ReLU, a GlobalAveragePool and
// a Flatten named "logits" (so, unlike the other zoo models, no Gemm). Every
// conv has a bias and a fused ReLU. 26 convs (conv1, 8 fire modules x 3,
// conv10), 3 max pools with ceil_mode as in torchvision.
// MACs 349,151,936 per image; 1,235,496 parameters (same as torchvision).
#ifndef IOSFARM_GRAPH_MODELS_SQUEEZENET_H_
#define IOSFARM_GRAPH_MODELS_SQUEEZENET_H_

#include <cstdint>

#include "common/status.h"
#include "graph/graph.h"

namespace iosfarm::graph::models {

// Builds SqueezeNet 1.1 for `batch` images. InvalidArgument unless
// 1 <= batch <= 4096.
StatusOr<Graph> BuildSqueezeNet(int64_t batch);

}  // namespace iosfarm::graph::models

#endif  // IOSFARM_GRAPH_MODELS_SQUEEZENET_H_
