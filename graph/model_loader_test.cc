#include "graph/model_loader.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "graph/models/zoo.h"
#include "graph/onnx/onnx_test_util.h"
#include "graph/onnx/torchvision_export.h"

namespace iosfarm::graph {
namespace {

using ::testing::HasSubstr;
using onnx_import::testing::OnnxModelBuilder;

// A one-Relu model over x[N, 4] (N = `batch`, or dynamic when -1).
std::string TinyOnnx(int64_t batch) {
  OnnxModelBuilder b;
  b.Input("x", {batch, 4}).Output("y");
  b.Node("Relu", {"x"}, {"y"});
  return b.Serialize();
}

std::string WriteTemp(const std::string& name, const std::string& bytes) {
  const std::string path = ::testing::TempDir() + "/" + name;
  std::ofstream(path, std::ios::binary) << bytes;
  return path;
}

Shape InputShape(const Graph& graph) { return graph.value(graph.inputs()[0]).shape; }
Shape OutputShape(const Graph& graph) { return graph.value(graph.outputs()[0]).shape; }

TEST(ModelLoaderTest, ResolvesZooNamesFirstThenFiles) {
  StatusOr<ModelRef> zoo = ResolveModel("squeezenet");
  ASSERT_TRUE(zoo.ok()) << zoo.status();
  EXPECT_EQ(zoo->source, "zoo");
  EXPECT_EQ(zoo->name, "squeezenet");
  EXPECT_EQ(zoo->path, "");

  const std::string path = WriteTemp("resolve_me.onnx", TinyOnnx(1));
  StatusOr<ModelRef> file = ResolveModel(path);
  ASSERT_TRUE(file.ok()) << file.status();
  EXPECT_EQ(file->source, "onnx");
  EXPECT_EQ(file->name, "resolve_me.onnx");
  EXPECT_EQ(file->path, path);
}

TEST(ModelLoaderTest, UnknownModelIsNotFoundAndSaysBoth) {
  StatusOr<ModelRef> ref = ResolveModel("no_such_model");
  EXPECT_EQ(ref.status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(ref.status().message(),
            "model 'no_such_model' is neither a zoo model (see `iosfarm models`) nor an existing "
            "file");
  EXPECT_EQ(LoadModel("no_such_model", 1).status(), ref.status());
}

TEST(ModelLoaderTest, DirectoryIsInvalidArgumentNamingIt) {
  const std::string dir = ::testing::TempDir() + "/a_directory.onnx";
  std::filesystem::create_directories(dir);
  StatusOr<LoadedModel> model = LoadModel(dir, std::nullopt);
  EXPECT_EQ(model.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(model.status().message(), HasSubstr("'" + dir + "': is a directory"));
}

TEST(ModelLoaderTest, ZooModelsDefaultToBatchOne) {
  StatusOr<LoadedModel> one = LoadModel("squeezenet", std::nullopt);
  ASSERT_TRUE(one.ok()) << one.status();
  EXPECT_EQ(one->source, "zoo");
  EXPECT_EQ(one->path, "");
  EXPECT_EQ(InputShape(one->graph)[0], 1);
  StatusOr<LoadedModel> four = LoadModel("squeezenet", 4);
  ASSERT_TRUE(four.ok()) << four.status();
  EXPECT_EQ(OutputShape(four->graph), (Shape{4, 1000}));
  EXPECT_EQ(four->graph.num_nodes(), models::BuildZooModel("squeezenet", 4)->num_nodes());
}

TEST(ModelLoaderTest, ZooBatchErrorsPassThrough) {
  StatusOr<LoadedModel> model = LoadModel("resnet50", 0);
  EXPECT_EQ(model.status(), models::BuildZooModel("resnet50", 0).status());
  EXPECT_EQ(model.status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(ModelLoaderTest, OnnxFilesKeepTheirBatchUnlessOverridden) {
  const std::string path = WriteTemp("tiny_loader.onnx", TinyOnnx(3));
  StatusOr<LoadedModel> own = LoadModel(path, std::nullopt);
  ASSERT_TRUE(own.ok()) << own.status();
  EXPECT_EQ(own->source, "onnx");
  EXPECT_EQ(own->path, path);
  EXPECT_EQ(own->graph.name(), "tiny_loader");
  EXPECT_EQ(InputShape(own->graph), (Shape{3, 4}));
  StatusOr<LoadedModel> five = LoadModel(path, 5);
  ASSERT_TRUE(five.ok()) << five.status();
  EXPECT_EQ(InputShape(five->graph), (Shape{5, 4}));
}

TEST(ModelLoaderTest, BadOnnxFileErrorNamesTheFile) {
  const std::string path = WriteTemp("not_a_model.onnx", "this is not an onnx model");
  StatusOr<LoadedModel> model = LoadModel(path, std::nullopt);
  EXPECT_EQ(model.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(model.status().message(), HasSubstr("ONNX model '" + path + "'"));
}

TEST(ModelLoaderTest, LoadsARealTorchvisionExport) {
  StatusOr<std::string> path =
      onnx_import::testing::ExportTorchvisionModel("squeezenet1_1", {"squeezenet1_1"});
  if (absl::IsFailedPrecondition(path.status())) GTEST_SKIP() << path.status().message();
  ASSERT_TRUE(path.ok()) << path.status();
  StatusOr<LoadedModel> own = LoadModel(*path, std::nullopt);
  ASSERT_TRUE(own.ok()) << own.status();
  EXPECT_EQ(own->graph.name(), "squeezenet1_1");
  EXPECT_EQ(OutputShape(own->graph), (Shape{1, 1000}));
  StatusOr<LoadedModel> two = LoadModel(*path, 2);
  ASSERT_TRUE(two.ok()) << two.status();
  EXPECT_EQ(OutputShape(two->graph), (Shape{2, 1000}));
  EXPECT_EQ(two->graph.num_nodes(), own->graph.num_nodes());

  // The same file as stored bytes gives the same graph.
  std::ifstream in(*path, std::ios::binary);
  const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  onnx_import::OnnxImportOptions options;
  options.batch = 2;
  StatusOr<Graph> stored = LoadModelData(kOnnxSource, "squeezenet1_1", bytes, options);
  ASSERT_TRUE(stored.ok()) << stored.status();
  EXPECT_EQ(stored->num_nodes(), two->graph.num_nodes());
  EXPECT_EQ(OutputShape(*stored), (Shape{2, 1000}));
}

TEST(ModelLoaderTest, ModelDataBuildsZooModelsAtTheBatch) {
  onnx_import::OnnxImportOptions options;
  StatusOr<Graph> one = LoadModelData(kZooSource, "inception_v3", "", options);
  ASSERT_TRUE(one.ok()) << one.status();
  EXPECT_EQ(OutputShape(*one), (Shape{1, 1000}));
  options.batch = 8;
  StatusOr<Graph> eight = LoadModelData(kZooSource, "inception_v3", "", options);
  ASSERT_TRUE(eight.ok()) << eight.status();
  EXPECT_EQ(OutputShape(*eight), (Shape{8, 1000}));
  EXPECT_EQ(LoadModelData(kZooSource, "alexnet", "", options).status().code(),
            absl::StatusCode::kNotFound);
}

TEST(ModelLoaderTest, ModelDataImportsOnnxBytesWithinTheLimits) {
  onnx_import::OnnxImportOptions options;
  options.batch = 2;
  StatusOr<Graph> graph = LoadModelData(kOnnxSource, "tiny.onnx", TinyOnnx(-1), options);
  ASSERT_TRUE(graph.ok()) << graph.status();
  EXPECT_EQ(InputShape(*graph), (Shape{2, 4}));

  options.max_model_bytes = 8;
  StatusOr<Graph> big = LoadModelData(kOnnxSource, "tiny.onnx", TinyOnnx(-1), options);
  EXPECT_EQ(big.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(big.status().message(), HasSubstr("ONNX model 'tiny.onnx'"));
}

TEST(ModelLoaderTest, UnknownSourceIsInvalidArgumentNamingTheModel) {
  StatusOr<Graph> graph = LoadModelData("tflite", "m.tflite", "bytes");
  EXPECT_EQ(graph.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(graph.status().message(), HasSubstr("model 'm.tflite' has unknown source 'tflite'"));
}

}  // namespace
}  // namespace iosfarm::graph
