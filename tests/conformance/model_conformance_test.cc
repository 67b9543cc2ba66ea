// Whole zoo models on every backend, with the sequential, the greedy and an
// IOS schedule, compared with the reference executor.
//
// squeezenet and nasnet_a_mobile run by default; the reference executor is
// slow on the larger models, so IOSFARM_CONFORMANCE_MODELS (comma-separated
// zoo names, e.g. "resnet50,inception_v3") replaces the list.
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>
#include <tuple>

#include "graph/models/zoo.h"
#include "scheduler/ios/analytic_oracle.h"
#include "scheduler/ios/baselines.h"
#include "scheduler/ios/inline_search.h"
#include "tests/conformance/conformance_backends.h"
#include "tests/conformance/conformance_util.h"

namespace iosfarm::conformance {
namespace {

std::vector<std::string> Models() {
  const char* env = std::getenv("IOSFARM_CONFORMANCE_MODELS");
  if (env == nullptr || *env == '\0') return {"squeezenet", "nasnet_a_mobile"};
  std::vector<std::string> models;
  std::string current;
  for (const char* p = env;; ++p) {
    if (*p == ',' || *p == '\0') {
      if (!current.empty()) models.push_back(current);
      current.clear();
      if (*p == '\0') break;
    } else {
      current.push_back(*p);
    }
  }
  return models;
}

class ModelConformanceTest
    : public ::testing::TestWithParam<std::tuple<std::string, std::string>> {};

TEST_P(ModelConformanceTest, SequentialAndGreedyMatchReference) {
  const auto& [backend_name, model] = GetParam();
  IOSFARM_BACKEND_OR_SKIP(backend, backend_name, /*needs_values=*/true);
  auto graph = graph::models::BuildZooModel(model, 1);
  ASSERT_TRUE(graph.ok()) << graph.status();
  auto sequential = scheduler::ios::SequentialSchedule(*graph);
  ASSERT_TRUE(sequential.ok()) << sequential.status();
  Status status = RunAndCompare(*backend, *graph, *sequential, model + " sequential", 1, model);
  EXPECT_TRUE(status.ok()) << status;
  auto greedy = scheduler::ios::GreedySchedule(*graph, 4);
  ASSERT_TRUE(greedy.ok()) << greedy.status();
  status = RunAndCompare(*backend, *graph, *greedy, model + " greedy", 1, model);
  EXPECT_TRUE(status.ok()) << status;
}

// An IOS schedule (analytic oracle, r = 3, s = 8, 30-op blocks) groups
// chains of ops, so the backends fuse what they can inside groups (residual
// adds: worker/backends/residual_fusion.h); values must not change.
TEST_P(ModelConformanceTest, IosScheduleMatchesReference) {
  const auto& [backend_name, model] = GetParam();
  IOSFARM_BACKEND_OR_SKIP(backend, backend_name, /*needs_values=*/true);
  auto graph = graph::models::BuildZooModel(model, 1);
  ASSERT_TRUE(graph.ok()) << graph.status();
  scheduler::ios::SearchOptions options;
  options.max_block_ops = 30;
  auto result = scheduler::ios::RunSearch(*graph, options,
                                          scheduler::ios::MakeAnalyticOracle(*graph));
  ASSERT_TRUE(result.ok()) << result.status();
  Status status = RunAndCompare(*backend, *graph, result->schedule, model + " IOS", 1, model);
  EXPECT_TRUE(status.ok()) << status;
}

INSTANTIATE_TEST_SUITE_P(
    Zoo, ModelConformanceTest,
    ::testing::Combine(::testing::ValuesIn(ConformanceBackendNames()),
                       ::testing::ValuesIn(Models())),
    [](const ::testing::TestParamInfo<ModelConformanceTest::ParamType>& info) {
      return std::get<0>(info.param) + "_" + std::get<1>(info.param);
    });

}  // namespace
}  // namespace iosfarm::conformance
