// Imports real third-party models: torchvision CNNs exported to ONNX (opset
// 13, random weights) on the fly (torchvision_export.h). Skipped, never
// passed, when python3/torch/torchvision are missing.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <iostream>
#include <string>
#include <vector>

#include "graph/cost.h"
#include "graph/onnx/onnx_importer.h"
#include "graph/onnx/torchvision_export.h"

namespace iosfarm::graph::onnx_import {
namespace {

struct ZooCase {
  const char* model;
  int convs;         // Conv nodes after import (BatchNorms folded into them)
  double giga_macs;  // published multiply-accumulates at batch 1
};

// MACs as published by torchvision / the papers.
const ZooCase kZoo[] = {
    {"inception_v3", 94, 5.7},        {"resnet50", 53, 4.1},
    {"squeezenet1_1", 26, 0.35},      {"googlenet", 57, 1.5},
    {"densenet121", 120, 2.9},        {"mobilenet_v2", 52, 0.30},
    {"mobilenet_v3_small", 52, 0.06}, {"shufflenet_v2_x1_0", 56, 0.15},
    {"efficientnet_b0", 81, 0.39},    {"mnasnet1_0", 52, 0.31},
    {"regnet_y_400mf", 85, 0.4},
};

void PrintTo(const ZooCase& c, std::ostream* os) { *os << c.model; }

// Exports `model`, with every case of kZoo in the same python run.
StatusOr<std::string> ExportModel(const std::string& model) {
  std::vector<std::string> all;
  for (const ZooCase& c : kZoo) all.push_back(c.model);
  return testing::ExportTorchvisionModel(model, all);
}

class TorchvisionImportTest : public ::testing::TestWithParam<ZooCase> {};

TEST_P(TorchvisionImportTest, ImportsWithPublishedCost) {
  const ZooCase& c = GetParam();
  StatusOr<std::string> exported = ExportModel(c.model);
  if (absl::IsFailedPrecondition(exported.status())) GTEST_SKIP() << exported.status().message();
  ASSERT_TRUE(exported.ok()) << exported.status();
  const std::string& path = *exported;

  auto graph = ImportOnnxFile(path);
  ASSERT_TRUE(graph.ok()) << graph.status();
  EXPECT_EQ(graph->name(), c.model);
  ASSERT_EQ(graph->outputs().size(), 1u);
  EXPECT_EQ(graph->value(graph->outputs()[0]).shape, (Shape{1, 1000}));
  int convs = 0;
  for (const Node& node : graph->nodes()) convs += node.type == OpType::kConv ? 1 : 0;
  EXPECT_EQ(convs, c.convs);
  const double macs = static_cast<double>(ComputeGraphCost(*graph).macs);
  EXPECT_NEAR(macs / 1e9, c.giga_macs, 0.1 * c.giga_macs) << "MACs of " << c.model;
  std::cout << "[ zoo ] " << c.model << ": " << graph->num_nodes() << " nodes, " << convs
            << " convs, " << macs / 1e9 << " GMACs\n";

  OnnxImportOptions options;
  options.batch = 4;
  auto batched = ImportOnnxFile(path, options);
  ASSERT_TRUE(batched.ok()) << batched.status();
  EXPECT_EQ(batched->value(batched->outputs()[0]).shape, (Shape{4, 1000}));
  EXPECT_EQ(batched->num_nodes(), graph->num_nodes());
  EXPECT_EQ(ComputeGraphCost(*batched).macs, 4 * ComputeGraphCost(*graph).macs);
}

INSTANTIATE_TEST_SUITE_P(Zoo, TorchvisionImportTest, ::testing::ValuesIn(kZoo),
                         [](const ::testing::TestParamInfo<ZooCase>& info) {
                           return std::string(info.param.model);
                         });

}  // namespace
}  // namespace iosfarm::graph::onnx_import
