#include "worker/backends/backend_oracle.h"

#include <gtest/gtest.h>

#include "graph/models/zoo.h"
#include "scheduler/ios/baselines.h"
#include "worker/backends/backend_factory.h"

namespace iosfarm::worker {
namespace {

// Forwards to a real backend and counts Profile calls.
class CountingBackend : public Backend {
 public:
  explicit CountingBackend(std::unique_ptr<Backend> inner) : inner_(std::move(inner)) {}
  std::string name() const override { return inner_->name(); }
  std::string device_description() const override { return inner_->device_description(); }
  Status CheckSupported(const graph::Graph& g) const override { return inner_->CheckSupported(g); }
  StatusOr<std::vector<std::unique_ptr<StagePlan>>> Build(
      const graph::Graph& g, const std::vector<scheduler::ios::Stage>& stages) override {
    return inner_->Build(g, stages);
  }
  StatusOr<std::vector<LatencyStats>> Profile(const std::vector<const StagePlan*>& plans,
                                              const ProfileOptions& options) override {
    ++profiles;
    return inner_->Profile(plans, options);
  }
  StatusOr<RunResult> RunSchedule(const graph::Graph& g, const scheduler::ios::Schedule& s,
                                  const RunOptions& options) override {
    return inner_->RunSchedule(g, s, options);
  }
  int profiles = 0;

 private:
  std::unique_ptr<Backend> inner_;
};

TEST(BackendOracleTest, MeasuresEachSignatureOnce) {
  auto graph = graph::models::BuildZooModel("squeezenet", 1);
  ASSERT_TRUE(graph.ok());
  auto inner = CreateBackend("sim");
  ASSERT_TRUE(inner.ok()) << inner.status();
  CountingBackend backend(std::move(*inner));
  auto oracle = MakeBackendOracle(*graph, backend, ProfileOptions{});
  auto sequential = scheduler::ios::SequentialSchedule(*graph);
  ASSERT_TRUE(sequential.ok());
  const scheduler::ios::Stage& stage = sequential->stages[3].stage;
  auto first = oracle(stage);
  auto second = oracle(stage);
  ASSERT_TRUE(first.ok() && second.ok());
  EXPECT_EQ(*first, *second);
  EXPECT_EQ(backend.profiles, 1);
  // Costing the whole schedule measures each distinct signature once.
  ASSERT_TRUE(scheduler::ios::CostSchedule(*graph, *sequential, oracle).ok());
  const int after_first_pass = backend.profiles;
  ASSERT_TRUE(scheduler::ios::CostSchedule(*graph, *sequential, oracle).ok());
  EXPECT_EQ(backend.profiles, after_first_pass);
  EXPECT_LE(after_first_pass, static_cast<int>(sequential->stages.size()));
}

TEST(BackendOracleTest, SimMedianMatchesProfileAndCostsSchedules) {
  auto graph = graph::models::BuildZooModel("squeezenet", 1);
  ASSERT_TRUE(graph.ok());
  auto backend = CreateBackend("sim:v100");
  ASSERT_TRUE(backend.ok()) << backend.status();
  ProfileOptions options;
  auto oracle = MakeBackendOracle(*graph, **backend, options);
  auto sequential = scheduler::ios::SequentialSchedule(*graph);
  ASSERT_TRUE(sequential.ok());
  const scheduler::ios::Stage& first = sequential->stages[0].stage;
  auto latency = oracle(first);
  ASSERT_TRUE(latency.ok()) << latency.status();
  auto plans = (*backend)->Build(*graph, {first});
  ASSERT_TRUE(plans.ok());
  auto stats = (*backend)->Profile({(*plans)[0].get()}, options);
  ASSERT_TRUE(stats.ok());
  EXPECT_DOUBLE_EQ(*latency, (*stats)[0].median_ms);
  EXPECT_GT(*latency, 0);
  ASSERT_TRUE(scheduler::ios::CostSchedule(*graph, *sequential, oracle).ok());
  EXPECT_GT(sequential->latency_ms, *latency);
}

}  // namespace
}  // namespace iosfarm::worker
