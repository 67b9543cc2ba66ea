#include "worker/backends/backend_oracle.h"

#include <gtest/gtest.h>

#include "graph/models/zoo.h"
#include "scheduler/ios/baselines.h"
#include "scheduler/ios/stages/signature.h"
#include "worker/backends/backend_factory.h"

namespace iosfarm::worker {
namespace {

// Forwards to a real backend and counts Profile calls. Its plans wrap the
// inner backend's (the base refuses plans another instance built).
class CountingBackend : public Backend {
 public:
  explicit CountingBackend(std::unique_ptr<Backend> inner) : inner_(std::move(inner)) {}
  std::string name() const override { return inner_->name(); }
  std::string device_description() const override { return inner_->device_description(); }
  Status CheckSupported(const graph::Graph& g) const override { return inner_->CheckSupported(g); }
  int profiles = 0;

 private:
  struct WrappedPlan : StagePlan {
    std::unique_ptr<StagePlan> inner;
  };

  StatusOr<std::vector<std::unique_ptr<StagePlan>>> DoBuild(
      const graph::Graph& g, const std::vector<scheduler::ios::Stage>& stages) override {
    ASSIGN_OR_RETURN(std::vector<std::unique_ptr<StagePlan>> inner, inner_->Build(g, stages));
    std::vector<std::unique_ptr<StagePlan>> plans;
    for (auto& plan : inner) {
      auto wrapped = std::make_unique<WrappedPlan>();
      wrapped->inner = std::move(plan);
      plans.push_back(std::move(wrapped));
    }
    return plans;
  }
  StatusOr<std::vector<LatencyStats>> DoProfile(const std::vector<const StagePlan*>& plans,
                                                const ProfileOptions& options) override {
    ++profiles;
    std::vector<const StagePlan*> inner;
    for (const StagePlan* plan : plans) inner.push_back(PlanAs<WrappedPlan>(plan).inner.get());
    return inner_->Profile(inner, options);
  }
  StatusOr<RunResult> DoRunSchedule(const graph::Graph& g, const scheduler::ios::Schedule& s,
                                    const RunOptions& options) override {
    return inner_->RunSchedule(g, s, options);
  }

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
  auto signature = scheduler::ios::StageSignature(*graph, stage);
  ASSERT_TRUE(signature.ok());
  auto first = oracle(*signature, stage);
  auto second = oracle(*signature, stage);
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
  auto signature = scheduler::ios::StageSignature(*graph, first);
  ASSERT_TRUE(signature.ok());
  auto latency = oracle(*signature, first);
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
