#include "graph/models/resnet50.h"

#include <string>

#include "common/strings.h"
#include "graph/graph_builder.h"
#include "graph/models/layers.h"

namespace iosfarm::graph::models {
namespace {

// torchvision Bottleneck with expansion 4: 1x1 -> 3x3 (stride) -> 1x1, plus an
// optional 1x1 stride-`stride` projection of the input.
ValueId Bottleneck(GraphBuilder& b, ValueId x, int64_t width, int64_t stride,
                   bool project, const std::string& name) {
  ValueId y = ConvBn(b, x, width, {1, 1}, {1, 1}, {0, 0}, name + "/conv1");
  y = ConvBn(b, y, width, {3, 3}, {stride, stride}, {1, 1}, name + "/conv2");
  y = ConvBn(b, y, 4 * width, {1, 1}, {1, 1}, {0, 0}, name + "/conv3", Activation::kNone);
  const ValueId shortcut = project
                               ? ConvBn(b, x, 4 * width, {1, 1}, {stride, stride}, {0, 0},
                                        name + "/downsample", Activation::kNone)
                               : x;
  return b.Relu(b.Add(y, shortcut, name + "/add"), name + "/relu");
}

}  // namespace

StatusOr<Graph> BuildResNet50(int64_t batch) {
  RETURN_IF_ERROR(CheckZooBatch("resnet50", batch));
  GraphBuilder b("resnet50");
  ValueId x = b.Input("input", {batch, 3, 224, 224});
  x = ConvBn(b, x, 64, {7, 7}, {2, 2}, {3, 3}, "conv1");
  x = b.MaxPool(x, {3, 3}, {2, 2}, {1, 1, 1, 1}, "maxpool");
  struct Stage {
    int blocks;
    int64_t width;
    int64_t stride;
  };
  constexpr Stage kStages[] = {{3, 64, 1}, {4, 128, 2}, {6, 256, 2}, {3, 512, 2}};
  for (int s = 0; s < 4; ++s) {
    for (int i = 0; i < kStages[s].blocks; ++i) {
      const bool first = i == 0;
      x = Bottleneck(b, x, kStages[s].width, first ? kStages[s].stride : 1, first,
                     StrCat("layer", s + 1, ".", i));
    }
  }
  ClassifierHead(b, x);
  return std::move(b).Finish();
}

}  // namespace iosfarm::graph::models
