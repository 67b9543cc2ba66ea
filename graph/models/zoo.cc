#include "graph/models/zoo.h"

#include <string>

#include "common/strings.h"
#include "graph/models/inception_v3.h"
#include "graph/models/nasnet_a.h"
#include "graph/models/randwire.h"
#include "graph/models/resnet50.h"
#include "graph/models/squeezenet.h"

namespace iosfarm::graph::models {

const std::vector<ZooModel>& ZooModels() {
  // The one allowed global: a constant table, never destroyed.
  static const auto* const kModels = new std::vector<ZooModel>{
      {"inception_v3", "Inception-v3 (torchvision, no aux head), 299x299, 5.7 G MACs",
       299, &BuildInceptionV3},
      {"resnet50", "ResNet-50 v1.5 (torchvision), 224x224, 4.1 G MACs", 224,
       &BuildResNet50},
      {"squeezenet", "SqueezeNet 1.1 (torchvision), 224x224, 0.35 G MACs", 224,
       &BuildSqueezeNet},
      {"randwire",
       "RandWire-WS regular regime (C=154, WS(32,4,0.75), seed 1), 224x224, 7.9 G MACs",
       224, &BuildRandWire},
      {"nasnet_a", "NASNet-A Large 6@4032, 331x331, 23.8 G MACs", 331,
       &BuildNasNetALarge},
      {"nasnet_a_mobile", "NASNet-A Mobile 4@1056, 224x224, 0.56 G MACs", 224,
       &BuildNasNetAMobile},
  };
  return *kModels;
}

StatusOr<Graph> BuildZooModel(std::string_view name, int64_t batch) {
  for (const ZooModel& model : ZooModels()) {
    if (model.name == name) return model.build(batch);
  }
  std::string names;
  for (const ZooModel& model : ZooModels()) {
    names += StrCat(names.empty() ? "" : ", ", model.name);
  }
  return absl::NotFoundError(
      StrCat("unknown zoo model '", name, "'; valid names: ", names));
}

}  // namespace iosfarm::graph::models
