#include "graph/models/squeezenet.h"

#include <string>

#include "graph/graph_builder.h"
#include "graph/models/layers.h"

namespace iosfarm::graph::models {
namespace {

// Fire module: squeeze 1x1 -> {expand 1x1, expand 3x3} -> concat.
ValueId Fire(GraphBuilder& b, ValueId x, int64_t squeeze, int64_t expand,
             const std::string& name) {
  const ValueId s = ConvBn(b, x, squeeze, {1, 1}, {1, 1}, {0, 0}, name + "/squeeze1x1");
  const ValueId e1 = ConvBn(b, s, expand, {1, 1}, {1, 1}, {0, 0}, name + "/expand1x1");
  const ValueId e3 = ConvBn(b, s, expand, {3, 3}, {1, 1}, {1, 1}, name + "/expand3x3");
  return b.Concat({e1, e3}, 1, name + "/concat");
}

ValueId CeilMaxPool(GraphBuilder& b, ValueId x, const std::string& name) {
  return b.MaxPool(x, {3, 3}, {2, 2}, {0, 0, 0, 0}, name, /*ceil_mode=*/true);
}

}  // namespace

StatusOr<Graph> BuildSqueezeNet(int64_t batch) {
  RETURN_IF_ERROR(CheckZooBatch("squeezenet", batch));
  GraphBuilder b("squeezenet");
  ValueId x = b.Input("input", {batch, 3, 224, 224});
  x = ConvBn(b, x, 64, {3, 3}, {2, 2}, {0, 0}, "conv1");
  x = CeilMaxPool(b, x, "pool1");
  x = Fire(b, x, 16, 64, "fire2");
  x = Fire(b, x, 16, 64, "fire3");
  x = CeilMaxPool(b, x, "pool3");
  x = Fire(b, x, 32, 128, "fire4");
  x = Fire(b, x, 32, 128, "fire5");
  x = CeilMaxPool(b, x, "pool5");
  x = Fire(b, x, 48, 192, "fire6");
  x = Fire(b, x, 48, 192, "fire7");
  x = Fire(b, x, 64, 256, "fire8");
  x = Fire(b, x, 64, 256, "fire9");
  x = ConvBn(b, x, kNumClasses, {1, 1}, {1, 1}, {0, 0}, "conv10");
  x = b.GlobalAveragePool(x, "global_pool");
  b.Output(b.Flatten(x, 1, "logits"));
  return std::move(b).Finish();
}

}  // namespace iosfarm::graph::models
