#include "graph/models/zoo.h"

#include <string>

#include "gmock/gmock.h"
#include "graph/cost.h"
#include "graph/models/model_test_util.h"
#include "gtest/gtest.h"

namespace iosfarm::graph::models {
namespace {

using ::testing::HasSubstr;

TEST(ZooTest, ListsTheSixModelsInOrder) {
  const std::vector<ZooModel>& models = ZooModels();
  ASSERT_EQ(models.size(), 6u);
  const char* names[] = {"inception_v3", "resnet50", "squeezenet",
                         "randwire",     "nasnet_a", "nasnet_a_mobile"};
  const int64_t sizes[] = {299, 224, 224, 224, 331, 224};
  for (size_t i = 0; i < models.size(); ++i) {
    EXPECT_EQ(models[i].name, names[i]);
    EXPECT_EQ(models[i].image_size, sizes[i]) << names[i];
    EXPECT_FALSE(models[i].description.empty()) << names[i];
    EXPECT_NE(models[i].build, nullptr) << names[i];
  }
  EXPECT_EQ(&ZooModels(), &models);  // one constant table
}

TEST(ZooTest, EveryModelBuildsThroughTheTableAndByName) {
  for (const ZooModel& model : ZooModels()) {
    SCOPED_TRACE(std::string(model.name));
    StatusOr<Graph> direct = model.build(2);
    ASSERT_TRUE(direct.ok()) << direct.status();
    ExpectZooContract(*direct, 2, model.image_size);
    EXPECT_EQ(direct->name(), model.name);
    StatusOr<Graph> named = BuildZooModel(model.name, 2);
    ASSERT_TRUE(named.ok()) << named.status();
    EXPECT_EQ(named->num_nodes(), direct->num_nodes());
    EXPECT_EQ(ComputeGraphCost(*named).macs, ComputeGraphCost(*direct).macs);
  }
}

TEST(ZooTest, UnknownNameIsNotFoundAndListsValidNames) {
  StatusOr<Graph> graph = BuildZooModel("alexnet", 1);
  ASSERT_EQ(graph.status().code(), absl::StatusCode::kNotFound);
  const std::string message(graph.status().message());
  EXPECT_THAT(message, HasSubstr("alexnet"));
  for (const ZooModel& model : ZooModels()) {
    EXPECT_THAT(message, HasSubstr(std::string(model.name)));
  }
  EXPECT_EQ(BuildZooModel("", 1).status().code(), absl::StatusCode::kNotFound);
}

TEST(ZooTest, BatchOutOfRangeIsInvalidArgument) {
  for (const ZooModel& model : ZooModels()) {
    SCOPED_TRACE(std::string(model.name));
    EXPECT_EQ(BuildZooModel(model.name, 0).status().code(),
              absl::StatusCode::kInvalidArgument);
    EXPECT_EQ(BuildZooModel(model.name, -3).status().code(),
              absl::StatusCode::kInvalidArgument);
    EXPECT_EQ(BuildZooModel(model.name, 4097).status().code(),
              absl::StatusCode::kInvalidArgument);
  }
  StatusOr<Graph> largest = BuildZooModel("squeezenet", 4096);
  ASSERT_TRUE(largest.ok()) << largest.status();
  ExpectZooContract(*largest, 4096, 224);
}

}  // namespace
}  // namespace iosfarm::graph::models
