// The shared checks and the device lock of the Backend base (backend.h),
// through a fake backend that records what reaches its Do* methods.
#include "worker/backends/backend.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <thread>

#include "absl/synchronization/notification.h"
#include "graph/test_graphs.h"
#include "scheduler/ios/baselines.h"
#include "scheduler/ios/testing/testing_util.h"

namespace iosfarm::worker {
namespace {

using ::testing::HasSubstr;

class FakePlan final : public StagePlan {};

// Counts calls and the largest number of Do* calls in flight at once; each
// DoProfile / DoRunSchedule lasts `hold` (long enough for callers to overlap
// if nothing serialised them) and first runs `on_profile` if set.
class FakeBackend final : public Backend {
 public:
  explicit FakeBackend(std::chrono::milliseconds hold = std::chrono::milliseconds(0))
      : hold_(hold) {}

  std::string name() const override { return "fake"; }
  std::string device_description() const override { return "a fake device"; }
  Status CheckSupported(const graph::Graph& /*graph*/) const override {
    return absl::OkStatus();
  }

  std::atomic<int> builds{0};
  std::atomic<int> profiles{0};
  std::atomic<int> runs{0};
  std::atomic<int> max_in_flight{0};
  std::function<void()> on_profile;

 private:
  StatusOr<std::vector<std::unique_ptr<StagePlan>>> DoBuild(
      const graph::Graph& /*graph*/, const std::vector<scheduler::ios::Stage>& stages) override {
    ++builds;
    std::vector<std::unique_ptr<StagePlan>> plans;
    for (size_t i = 0; i < stages.size(); ++i) plans.push_back(std::make_unique<FakePlan>());
    return plans;
  }
  StatusOr<std::vector<LatencyStats>> DoProfile(const std::vector<const StagePlan*>& plans,
                                                const ProfileOptions& /*options*/) override {
    ++profiles;
    Occupy();
    if (on_profile) on_profile();
    return std::vector<LatencyStats>(plans.size());
  }
  StatusOr<RunResult> DoRunSchedule(const graph::Graph& /*graph*/,
                                    const scheduler::ios::Schedule& /*schedule*/,
                                    const RunOptions& /*options*/) override {
    ++runs;
    Occupy();
    return RunResult{};
  }

  // Marks one call in flight for `hold_`.
  void Occupy() {
    const int now = ++in_flight_;
    int seen = max_in_flight.load();
    while (now > seen && !max_in_flight.compare_exchange_weak(seen, now)) {
    }
    std::this_thread::sleep_for(hold_);
    --in_flight_;
  }

  const std::chrono::milliseconds hold_;
  std::atomic<int> in_flight_{0};
};

class BackendTest : public ::testing::Test {
 protected:
  BackendTest() : graph_(graph::testing::SmallBranchyGraph(false)) {
    stages_ = {scheduler::ios::testing::ConcurrentStage({{0}})};
    schedule_ = *scheduler::ios::SequentialSchedule(graph_);
  }

  std::vector<std::unique_ptr<StagePlan>> BuildOn(Backend& backend) {
    auto plans = backend.Build(graph_, stages_);
    EXPECT_TRUE(plans.ok()) << plans.status();
    return plans.ok() ? std::move(*plans) : std::vector<std::unique_ptr<StagePlan>>{};
  }

  graph::Graph graph_;
  std::vector<scheduler::ios::Stage> stages_;
  scheduler::ios::Schedule schedule_;
};

TEST_F(BackendTest, BuildStampsItsPlansAndRefusesInvalidStages) {
  FakeBackend backend;
  std::vector<std::unique_ptr<StagePlan>> plans = BuildOn(backend);
  ASSERT_EQ(plans.size(), 1u);
  EXPECT_EQ(plans[0]->owner(), &backend);

  auto twice = backend.Build(graph_, {scheduler::ios::testing::ConcurrentStage({{0}}),
                                      scheduler::ios::testing::ConcurrentStage({{1}, {1}})});
  EXPECT_EQ(twice.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(twice.status().message()), HasSubstr("stage 1: "));
  EXPECT_EQ(backend.builds, 1);  // the invalid stage never reached DoBuild
}

// A backend that does not run stages on cores cannot time a single-core
// stage, and says so before DoBuild.
TEST_F(BackendTest, BuildRefusesSingleCoreStagesWithoutCores) {
  FakeBackend backend;
  ASSERT_EQ(backend.cores(), 0);
  scheduler::ios::Stage single = scheduler::ios::testing::ConcurrentStage({{0}});
  single.single_core = true;
  auto plans = backend.Build(graph_, {stages_[0], single});
  EXPECT_EQ(plans.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(plans.status().message()), HasSubstr("stage 1: "));
  EXPECT_THAT(std::string(plans.status().message()), HasSubstr("single-core"));
  EXPECT_EQ(backend.builds, 0);
}

TEST_F(BackendTest, ProfileRefusesPlansOfAnotherInstance) {
  FakeBackend first;
  FakeBackend second;
  std::vector<std::unique_ptr<StagePlan>> mine = BuildOn(second);
  std::vector<std::unique_ptr<StagePlan>> theirs = BuildOn(first);
  ASSERT_FALSE(mine.empty() || theirs.empty());

  auto stats = second.Profile({mine[0].get(), theirs[0].get()}, {});
  EXPECT_EQ(stats.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(std::string(stats.status().message()),
            "fake Profile: plan 1 was not built by this fake backend instance");
  FakePlan never_built;
  EXPECT_EQ(second.Profile({&never_built}, {}).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(second.Profile({nullptr}, {}).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(second.profiles, 0);

  auto own = second.Profile({mine[0].get()}, {});
  ASSERT_TRUE(own.ok()) << own.status();
  EXPECT_EQ(own->size(), 1u);
  EXPECT_EQ(second.profiles, 1);
}

TEST_F(BackendTest, RefusesBadOptionsAndSchedules) {
  FakeBackend backend;
  std::vector<std::unique_ptr<StagePlan>> plans = BuildOn(backend);
  ASSERT_FALSE(plans.empty());
  ProfileOptions invalid;
  invalid.min_repeats = 0;
  EXPECT_EQ(backend.Profile({plans[0].get()}, invalid).status().code(),
            absl::StatusCode::kInvalidArgument);
  RunOptions run;
  run.profile = invalid;
  EXPECT_EQ(backend.RunSchedule(graph_, schedule_, run).status().code(),
            absl::StatusCode::kInvalidArgument);
  scheduler::ios::Schedule incomplete = schedule_;
  incomplete.stages.pop_back();
  EXPECT_EQ(backend.RunSchedule(graph_, incomplete, {}).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(backend.profiles, 0);
  EXPECT_EQ(backend.runs, 0);

  EXPECT_TRUE(backend.RunSchedule(graph_, schedule_, {}).ok());
  EXPECT_EQ(backend.runs, 1);
}

TEST_F(BackendTest, SerialisesProfileAndRunSchedule) {
  FakeBackend backend(std::chrono::milliseconds(20));
  std::vector<std::unique_ptr<StagePlan>> plans = BuildOn(backend);
  ASSERT_FALSE(plans.empty());
  std::vector<std::thread> callers;
  for (int i = 0; i < 4; ++i) {
    callers.emplace_back([&] { EXPECT_TRUE(backend.Profile({plans[0].get()}, {}).ok()); });
    callers.emplace_back([&] { EXPECT_TRUE(backend.RunSchedule(graph_, schedule_, {}).ok()); });
  }
  for (std::thread& caller : callers) caller.join();
  EXPECT_EQ(backend.profiles, 4);
  EXPECT_EQ(backend.runs, 4);
  EXPECT_EQ(backend.max_in_flight, 1);
}

TEST_F(BackendTest, BuildRunsWhileAProfileIsInFlight) {
  FakeBackend backend;
  std::vector<std::unique_ptr<StagePlan>> plans = BuildOn(backend);
  ASSERT_FALSE(plans.empty());
  absl::Notification profiling;
  absl::Notification built;
  bool build_finished_during_profile = false;
  backend.on_profile = [&] {
    profiling.Notify();
    build_finished_during_profile = built.WaitForNotificationWithTimeout(absl::Seconds(10));
  };
  std::thread profile([&] { EXPECT_TRUE(backend.Profile({plans[0].get()}, {}).ok()); });
  profiling.WaitForNotification();
  EXPECT_EQ(BuildOn(backend).size(), 1u);  // would wait for the Profile if Build locked
  built.Notify();
  profile.join();
  EXPECT_TRUE(build_finished_during_profile);
}

}  // namespace
}  // namespace iosfarm::worker
