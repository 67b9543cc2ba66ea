// Imports real third-party models: torchvision CNNs exported to ONNX (opset
// 13, random weights) on the fly by tests/onnx/export_torchvision.py into the
// build dir (cached by file existence). Skipped, never passed, when
// python3/torch/torchvision are missing.
#include <fcntl.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/file.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>

#include "graph/cost.h"
#include "graph/onnx/onnx_importer.h"

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

std::string SourceDir() {
  if (const char* dir = std::getenv("IOSFARM_SOURCE_DIR")) return dir;
  return std::filesystem::path(__FILE__).parent_path().parent_path().parent_path().string();
}

// <build dir>/onnx_models; without IOSFARM_BINARY_DIR (test run by hand),
// next to the test binary.
std::string ModelDir() {
  std::filesystem::path dir;
  if (const char* env = std::getenv("IOSFARM_BINARY_DIR")) {
    dir = env;
  } else {
    std::error_code error;
    dir = std::filesystem::read_symlink("/proc/self/exe", error).parent_path();
    if (error) dir = ::testing::TempDir();
  }
  return (dir / "onnx_models").string();
}

// Holds an exclusive flock on `path` while alive (test processes run in
// parallel under ctest; one exports, the others wait and reuse its files).
class FileLock {
 public:
  explicit FileLock(const std::string& path) : fd_(open(path.c_str(), O_CREAT | O_RDWR, 0644)) {
    if (fd_ >= 0) flock(fd_, LOCK_EX);
  }
  ~FileLock() {
    if (fd_ >= 0) close(fd_);  // releases the lock
  }
  FileLock(const FileLock&) = delete;
  FileLock& operator=(const FileLock&) = delete;

 private:
  int fd_;
};

// Exports `model` unless already there (exporting every zoo model in the same
// python run, which costs about as much as one). Returns the path, or sets
// `skip`.
std::string ExportModel(const std::string& model, std::string& skip) {
  const std::string dir = ModelDir();
  const std::string path = dir + "/" + model + ".onnx";
  if (std::filesystem::exists(path)) return path;
  const std::string python = "/usr/bin/python3";
  if (!std::filesystem::exists(python)) {
    skip = "python3 is not installed (" + python + ")";
    return "";
  }
  std::filesystem::create_directories(dir);
  FileLock lock(dir + "/.export.lock");
  if (std::filesystem::exists(path)) return path;  // exported while we waited
  const std::string script = SourceDir() + "/tests/onnx/export_torchvision.py";
  const std::string log = dir + "/export.log";
  std::string command = python + " '" + script + "' '" + dir + "' --opset 13";
  for (const ZooCase& c : kZoo) command += std::string(" ") + c.model;
  command += " > '" + log + "' 2>&1";
  const int status = std::system(command.c_str());
  std::ifstream log_file(log);
  std::stringstream output;
  output << log_file.rdbuf();
  if (WIFEXITED(status) && WEXITSTATUS(status) == 3) {
    skip = "cannot export torchvision models: " + output.str();
    return "";
  }
  if (status != 0 || !std::filesystem::exists(path)) {
    ADD_FAILURE() << "export of " << model << " failed (status " << status << "): " << output.str();
    return "";
  }
  return path;
}

class TorchvisionImportTest : public ::testing::TestWithParam<ZooCase> {};

TEST_P(TorchvisionImportTest, ImportsWithPublishedCost) {
  const ZooCase& c = GetParam();
  std::string skip;
  const std::string path = ExportModel(c.model, skip);
  if (!skip.empty()) GTEST_SKIP() << skip;
  ASSERT_FALSE(path.empty());

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
