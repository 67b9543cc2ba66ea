// ResNet-50 (torchvision `resnet50`, i.e. ResNet v1.5: the stride of a
// downsampling bottleneck sits on its 3x3 conv) for 224x224 ImageNet images.
//
// Graph: input "input" [batch,3,224,224] -> output "logits" [batch,1000].
// BatchNorm is folded: every conv has a bias; conv-BN-ReLU is one Conv with a
// fused ReLU. The residual join is Add followed by a Relu node (the ReLU comes
// after the sum, so it cannot be fused into a conv). 53 convs (49 in the main
// path + 4 projection shortcuts), 16 bottlenecks.
// MACs 4,089,184,256 per image and 25,530,472 parameters (torchvision's
// 25,557,032 minus one of the two BN vectors per channel, folded away).
#ifndef IOSFARM_GRAPH_MODELS_RESNET50_H_
#define IOSFARM_GRAPH_MODELS_RESNET50_H_

#include <cstdint>

#include "common/status.h"
#include "graph/graph.h"

namespace iosfarm::graph::models {

// Builds ResNet-50 for `batch` images. InvalidArgument unless 1 <= batch <= 4096.
StatusOr<Graph> BuildResNet50(int64_t batch);

}  // namespace iosfarm::graph::models

#endif  // IOSFARM_GRAPH_MODELS_RESNET50_H_
