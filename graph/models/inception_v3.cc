#include "graph/models/inception_v3.h"

#include <string>

#include "graph/graph_builder.h"
#include "graph/models/layers.h"

namespace iosfarm::graph::models {
namespace {

// BasicConv2d: conv (no bias) + BN + ReLU, folded into one Conv.
ValueId Basic(GraphBuilder& b, ValueId x, int64_t out, std::array<int64_t, 2> kernel,
              const std::string& name, std::array<int64_t, 2> padding = {0, 0},
              int64_t stride = 1) {
  return ConvBn(b, x, out, kernel, {stride, stride}, padding, name);
}

// 3x3 stride-1 average pool with padding 1 counting the padding, as
// torchvision's F.avg_pool2d(x, 3, 1, 1).
ValueId BranchAvgPool(GraphBuilder& b, ValueId x, const std::string& name) {
  return b.AveragePool(x, {3, 3}, {1, 1}, {1, 1, 1, 1}, /*count_include_pad=*/true, name);
}

ValueId MaxPool3x3s2(GraphBuilder& b, ValueId x, const std::string& name) {
  return b.MaxPool(x, {3, 3}, {2, 2}, {0, 0, 0, 0}, name);
}

ValueId InceptionA(GraphBuilder& b, ValueId x, int64_t pool_features,
                   const std::string& n) {
  const ValueId b1 = Basic(b, x, 64, {1, 1}, n + "/branch1x1");
  ValueId b5 = Basic(b, x, 48, {1, 1}, n + "/branch5x5_1");
  b5 = Basic(b, b5, 64, {5, 5}, n + "/branch5x5_2", {2, 2});
  ValueId b3 = Basic(b, x, 64, {1, 1}, n + "/branch3x3dbl_1");
  b3 = Basic(b, b3, 96, {3, 3}, n + "/branch3x3dbl_2", {1, 1});
  b3 = Basic(b, b3, 96, {3, 3}, n + "/branch3x3dbl_3", {1, 1});
  ValueId bp = BranchAvgPool(b, x, n + "/avg_pool");
  bp = Basic(b, bp, pool_features, {1, 1}, n + "/branch_pool");
  return b.Concat({b1, b5, b3, bp}, 1, n + "/concat");
}

ValueId InceptionB(GraphBuilder& b, ValueId x, const std::string& n) {
  const ValueId b3 = Basic(b, x, 384, {3, 3}, n + "/branch3x3", {0, 0}, 2);
  ValueId bd = Basic(b, x, 64, {1, 1}, n + "/branch3x3dbl_1");
  bd = Basic(b, bd, 96, {3, 3}, n + "/branch3x3dbl_2", {1, 1});
  bd = Basic(b, bd, 96, {3, 3}, n + "/branch3x3dbl_3", {0, 0}, 2);
  const ValueId bp = MaxPool3x3s2(b, x, n + "/max_pool");
  return b.Concat({b3, bd, bp}, 1, n + "/concat");
}

ValueId InceptionC(GraphBuilder& b, ValueId x, int64_t c7, const std::string& n) {
  const ValueId b1 = Basic(b, x, 192, {1, 1}, n + "/branch1x1");
  ValueId b7 = Basic(b, x, c7, {1, 1}, n + "/branch7x7_1");
  b7 = Basic(b, b7, c7, {1, 7}, n + "/branch7x7_2", {0, 3});
  b7 = Basic(b, b7, 192, {7, 1}, n + "/branch7x7_3", {3, 0});
  ValueId bd = Basic(b, x, c7, {1, 1}, n + "/branch7x7dbl_1");
  bd = Basic(b, bd, c7, {7, 1}, n + "/branch7x7dbl_2", {3, 0});
  bd = Basic(b, bd, c7, {1, 7}, n + "/branch7x7dbl_3", {0, 3});
  bd = Basic(b, bd, c7, {7, 1}, n + "/branch7x7dbl_4", {3, 0});
  bd = Basic(b, bd, 192, {1, 7}, n + "/branch7x7dbl_5", {0, 3});
  ValueId bp = BranchAvgPool(b, x, n + "/avg_pool");
  bp = Basic(b, bp, 192, {1, 1}, n + "/branch_pool");
  return b.Concat({b1, b7, bd, bp}, 1, n + "/concat");
}

ValueId InceptionD(GraphBuilder& b, ValueId x, const std::string& n) {
  ValueId b3 = Basic(b, x, 192, {1, 1}, n + "/branch3x3_1");
  b3 = Basic(b, b3, 320, {3, 3}, n + "/branch3x3_2", {0, 0}, 2);
  ValueId b7 = Basic(b, x, 192, {1, 1}, n + "/branch7x7x3_1");
  b7 = Basic(b, b7, 192, {1, 7}, n + "/branch7x7x3_2", {0, 3});
  b7 = Basic(b, b7, 192, {7, 1}, n + "/branch7x7x3_3", {3, 0});
  b7 = Basic(b, b7, 192, {3, 3}, n + "/branch7x7x3_4", {0, 0}, 2);
  const ValueId bp = MaxPool3x3s2(b, x, n + "/max_pool");
  return b.Concat({b3, b7, bp}, 1, n + "/concat");
}

ValueId InceptionE(GraphBuilder& b, ValueId x, const std::string& n) {
  const ValueId b1 = Basic(b, x, 320, {1, 1}, n + "/branch1x1");
  const ValueId b3 = Basic(b, x, 384, {1, 1}, n + "/branch3x3_1");
  const ValueId b3a = Basic(b, b3, 384, {1, 3}, n + "/branch3x3_2a", {0, 1});
  const ValueId b3b = Basic(b, b3, 384, {3, 1}, n + "/branch3x3_2b", {1, 0});
  const ValueId b3cat = b.Concat({b3a, b3b}, 1, n + "/branch3x3_concat");
  ValueId bd = Basic(b, x, 448, {1, 1}, n + "/branch3x3dbl_1");
  bd = Basic(b, bd, 384, {3, 3}, n + "/branch3x3dbl_2", {1, 1});
  const ValueId bda = Basic(b, bd, 384, {1, 3}, n + "/branch3x3dbl_3a", {0, 1});
  const ValueId bdb = Basic(b, bd, 384, {3, 1}, n + "/branch3x3dbl_3b", {1, 0});
  const ValueId bdcat = b.Concat({bda, bdb}, 1, n + "/branch3x3dbl_concat");
  ValueId bp = BranchAvgPool(b, x, n + "/avg_pool");
  bp = Basic(b, bp, 192, {1, 1}, n + "/branch_pool");
  return b.Concat({b1, b3cat, bdcat, bp}, 1, n + "/concat");
}

}  // namespace

StatusOr<Graph> BuildInceptionV3(int64_t batch) {
  RETURN_IF_ERROR(CheckZooBatch("inception_v3", batch));
  GraphBuilder b("inception_v3");
  ValueId x = b.Input("input", {batch, 3, 299, 299});
  x = Basic(b, x, 32, {3, 3}, "Conv2d_1a_3x3", {0, 0}, 2);
  x = Basic(b, x, 32, {3, 3}, "Conv2d_2a_3x3");
  x = Basic(b, x, 64, {3, 3}, "Conv2d_2b_3x3", {1, 1});
  x = MaxPool3x3s2(b, x, "maxpool1");
  x = Basic(b, x, 80, {1, 1}, "Conv2d_3b_1x1");
  x = Basic(b, x, 192, {3, 3}, "Conv2d_4a_3x3");
  x = MaxPool3x3s2(b, x, "maxpool2");
  x = InceptionA(b, x, 32, "Mixed_5b");
  x = InceptionA(b, x, 64, "Mixed_5c");
  x = InceptionA(b, x, 64, "Mixed_5d");
  x = InceptionB(b, x, "Mixed_6a");
  x = InceptionC(b, x, 128, "Mixed_6b");
  x = InceptionC(b, x, 160, "Mixed_6c");
  x = InceptionC(b, x, 160, "Mixed_6d");
  x = InceptionC(b, x, 192, "Mixed_6e");
  x = InceptionD(b, x, "Mixed_7a");
  x = InceptionE(b, x, "Mixed_7b");
  x = InceptionE(b, x, "Mixed_7c");
  ClassifierHead(b, x);
  return std::move(b).Finish();
}

}  // namespace iosfarm::graph::models
