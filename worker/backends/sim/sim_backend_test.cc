#include "worker/backends/sim/sim_backend.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <functional>
#include <map>
#include <thread>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "common/strings.h"
#include "graph/models/zoo.h"
#include "scheduler/ios/baselines.h"
#include "worker/backends/sim/sim_test_graphs.h"

namespace iosfarm::worker::sim {
namespace {

using ::testing::HasSubstr;
using testing::ConcurrentStage;
using testing::MakeTwoConvs;
using testing::MergeStage;

std::unique_ptr<SimBackend> MakeBackend(SimOptions options = {}) {
  StatusOr<std::unique_ptr<SimBackend>> backend = SimBackend::Create(std::move(options));
  EXPECT_TRUE(backend.ok()) << backend.status();
  return *std::move(backend);
}

SimOptions WithPreset(std::string_view preset) {
  SimOptions options;
  options.device = *SimDevicePreset(preset);
  return options;
}

// Profiles each stage of `graph` alone and returns the medians.
std::vector<LatencyStats> ProfileStages(SimBackend& backend, const graph::Graph& graph,
                                        const std::vector<scheduler::ios::Stage>& stages,
                                        const ProfileOptions& options = {}) {
  auto plans = backend.Build(graph, stages);
  EXPECT_TRUE(plans.ok()) << plans.status();
  std::vector<const StagePlan*> pointers;
  for (const auto& plan : *plans) pointers.push_back(plan.get());
  auto stats = backend.Profile(pointers, options);
  EXPECT_TRUE(stats.ok()) << stats.status();
  return *std::move(stats);
}

double MedianMs(SimBackend& backend, const graph::Graph& graph,
                const scheduler::ios::Stage& stage) {
  return ProfileStages(backend, graph, {stage})[0].median_ms;
}

double WallMs(const std::function<void()>& f) {
  const auto start = std::chrono::steady_clock::now();
  f();
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
      .count();
}

TEST(SimBackendTest, DescribesItself) {
  auto backend = MakeBackend(WithPreset("h100"));
  EXPECT_EQ(backend->name(), "sim");
  EXPECT_EQ(backend->device_description(),
            "sim h100 (132 SMs, 67 TFLOP/s fp32, 3350 GB/s, simulated)");
  const testing::TwoConvs g = MakeTwoConvs(8, 4, 1);
  EXPECT_TRUE(backend->CheckSupported(g.graph).ok());
}

TEST(SimBackendTest, RejectsInvalidOptions) {
  SimOptions options;
  options.noise_sigma = -0.1;
  EXPECT_THAT(std::string(SimBackend::Create(options).status().message()),
              HasSubstr("noise_sigma"));
  options = {};
  options.failure_probability = 2;
  EXPECT_THAT(std::string(SimBackend::Create(options).status().message()),
              HasSubstr("failure_probability"));
  options = {};
  options.device.sm_count = 0;
  EXPECT_THAT(std::string(SimBackend::Create(options).status().message()),
              HasSubstr("sm_count"));
  options = {};
  options.time_scale = -1;
  EXPECT_EQ(SimBackend::Create(options).status().code(), absl::StatusCode::kInvalidArgument);
}

// The model has no cores: single-core stages (a cpu measurement) are
// refused by name, in Build and in the model.
TEST(SimBackendTest, RefusesSingleCoreStages) {
  const testing::TwoConvs g = MakeTwoConvs(64, 8, 3);
  scheduler::ios::Stage stage = ConcurrentStage({{g.a}, {g.b}});
  stage.single_core = true;
  auto backend = MakeBackend();
  EXPECT_EQ(backend->cores(), 0);
  const Status built = backend->Build(g.graph, {stage}).status();
  EXPECT_EQ(built.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(std::string(built.message()).find("single-core"), std::string::npos);
  EXPECT_EQ(backend->StageLatencyMs(g.graph, stage).status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(SimBackendTest, ProfileWithoutNoiseIsExactAndDeterministic) {
  const testing::TwoConvs g = MakeTwoConvs(64, 8, 3);
  const scheduler::ios::Stage stage = ConcurrentStage({{g.a}, {g.b}});
  auto backend = MakeBackend();
  const LatencyStats stats = ProfileStages(*backend, g.graph, {stage})[0];
  const double model_ms = *backend->StageLatencyMs(g.graph, stage);
  EXPECT_DOUBLE_EQ(stats.median_ms, model_ms);
  EXPECT_DOUBLE_EQ(stats.p10_ms, model_ms);
  EXPECT_DOUBLE_EQ(stats.p90_ms, model_ms);
  EXPECT_NEAR(stats.cv, 0, 1e-12);
  // The median is stable at the second check: 2 * min_repeats samples.
  EXPECT_EQ(stats.repeats, 20);
  // v100, 2 groups of a 2-SM conv (4.7 MFLOP at 0.4 * 15.7 TFLOP/s = 0.75
  // us of work, 30 us alone): issued at 4 and 8 us, the second ends at 38 us,
  // + 3 us sync.
  EXPECT_NEAR(model_ms, 0.041, 0.001);
  // Another instance with the same options gives the same numbers.
  auto other = MakeBackend();
  EXPECT_DOUBLE_EQ(ProfileStages(*other, g.graph, {stage})[0].median_ms, stats.median_ms);
}

TEST(SimBackendTest, PresetsOrderAsTheirHardware) {
  const testing::TwoConvs g = MakeTwoConvs(64, 112, 3);
  const scheduler::ios::Stage stage = ConcurrentStage({{g.a}});
  std::map<std::string, double> ms;
  for (std::string_view preset : SimDevicePresetNames()) {
    auto backend = MakeBackend(WithPreset(preset));
    ms[std::string(preset)] = MedianMs(*backend, g.graph, stage);
    EXPECT_GT(ms[std::string(preset)], 0) << preset;
  }
  // A 0.9 GFLOP conv that fills every GPU: compute bound, ordered by peak.
  EXPECT_LT(ms["h100"], ms["a100"]);
  EXPECT_LT(ms["a100"], ms["v100"]);
  EXPECT_LT(ms["v100"], ms["t4"]);
  EXPECT_LT(ms["t4"], ms["cpu-small"]);
  // v100: 925 MFLOP at 0.4 * 15.7 TFLOP/s = 147 us, + launch and sync.
  EXPECT_NEAR(ms["v100"], 0.154, 0.002);
}

TEST(SimBackendTest, SmallIndependentConvsOverlapAsGroups) {
  const testing::TwoConvs g = MakeTwoConvs(64, 8, 3);
  auto backend = MakeBackend();
  const double concurrent = MedianMs(*backend, g.graph, ConcurrentStage({{g.a}, {g.b}}));
  const double one_stream = MedianMs(*backend, g.graph, ConcurrentStage({{g.a, g.b}}));
  const double separate = MedianMs(*backend, g.graph, ConcurrentStage({{g.a}})) +
                          MedianMs(*backend, g.graph, ConcurrentStage({{g.b}}));
  EXPECT_LT(concurrent, one_stream);
  EXPECT_LT(concurrent, 0.7 * separate);
}

TEST(SimBackendTest, DeviceFillingConvsGainNothingFromGroups) {
  const testing::TwoConvs g = MakeTwoConvs(64, 112, 3);
  auto backend = MakeBackend();
  const double concurrent = MedianMs(*backend, g.graph, ConcurrentStage({{g.a}, {g.b}}));
  const double one_stream = MedianMs(*backend, g.graph, ConcurrentStage({{g.a, g.b}}));
  const double separate = MedianMs(*backend, g.graph, ConcurrentStage({{g.a}})) +
                          MedianMs(*backend, g.graph, ConcurrentStage({{g.b}}));
  EXPECT_NEAR(concurrent, one_stream, 0.01 * one_stream);
  EXPECT_GT(concurrent, 0.9 * separate);
  EXPECT_LT(concurrent, separate);  // one stage sync and launch saved
}

TEST(SimBackendTest, MergingSmallConvsBeatsRunningThemSeparately) {
  const testing::TwoConvs g = MakeTwoConvs(64, 8, 3);
  auto backend = MakeBackend();
  const double merged = MedianMs(*backend, g.graph, MergeStage(g.graph, {g.a, g.b}));
  const double concurrent = MedianMs(*backend, g.graph, ConcurrentStage({{g.a}, {g.b}}));
  const double one_stream = MedianMs(*backend, g.graph, ConcurrentStage({{g.a, g.b}}));
  EXPECT_LT(merged, concurrent);
  EXPECT_LT(merged, one_stream);
}

TEST(SimBackendTest, NoiseIsSeededAndReproducible) {
  const testing::TwoConvs g = MakeTwoConvs(64, 8, 3);
  const scheduler::ios::Stage stage = ConcurrentStage({{g.a}, {g.b}});
  SimOptions options;
  options.noise_sigma = 0.05;
  options.seed = 42;
  auto first = MakeBackend(options);
  auto second = MakeBackend(options);
  const LatencyStats a = ProfileStages(*first, g.graph, {stage})[0];
  const LatencyStats b = ProfileStages(*second, g.graph, {stage})[0];
  EXPECT_EQ(a.median_ms, b.median_ms);
  EXPECT_EQ(a.p10_ms, b.p10_ms);
  EXPECT_EQ(a.repeats, b.repeats);
  // Profiling again on the same instance repeats the same samples.
  EXPECT_EQ(ProfileStages(*first, g.graph, {stage})[0].p90_ms, a.p90_ms);
  // Noise spreads the samples around the model time.
  const double model_ms = *first->StageLatencyMs(g.graph, stage);
  EXPECT_GT(a.cv, 0.01);
  EXPECT_LT(a.cv, 0.2);
  EXPECT_LT(a.p10_ms, a.p90_ms);
  EXPECT_NEAR(a.median_ms, model_ms, 0.1 * model_ms);
  // Another seed, other samples.
  options.seed = 43;
  auto third = MakeBackend(options);
  EXPECT_NE(ProfileStages(*third, g.graph, {stage})[0].p90_ms, a.p90_ms);
}

TEST(SimBackendTest, InjectsFailuresEveryNthCall) {
  const testing::TwoConvs g = MakeTwoConvs(8, 4, 1);
  SimOptions options;
  options.fail_every_n = 3;
  auto backend = MakeBackend(options);
  auto plans = *backend->Build(g.graph, {ConcurrentStage({{g.a}})});
  for (int call = 1; call <= 7; ++call) {
    StatusOr<std::vector<LatencyStats>> stats = backend->Profile({plans[0].get()}, {});
    if (call % 3 == 0) {
      EXPECT_EQ(stats.status().code(), absl::StatusCode::kUnavailable) << call;
      EXPECT_THAT(std::string(stats.status().message()),
                  HasSubstr(StrCat("injected failure (Profile call ", call, ")")));
    } else {
      EXPECT_TRUE(stats.ok()) << call << " " << stats.status();
    }
  }
  EXPECT_EQ(backend->profile_calls(), 7);
}

TEST(SimBackendTest, InjectsFailuresWithAProbability) {
  const testing::TwoConvs g = MakeTwoConvs(8, 4, 1);
  SimOptions options;
  options.failure_probability = 0.5;
  options.seed = 7;
  auto count_failures = [&](const SimOptions& o) {
    auto backend = MakeBackend(o);
    auto plans = *backend->Build(g.graph, {ConcurrentStage({{g.a}})});
    std::vector<bool> failed;
    for (int call = 0; call < 200; ++call) {
      failed.push_back(!backend->Profile({plans[0].get()}, {}).ok());
    }
    return failed;
  };
  const std::vector<bool> failed = count_failures(options);
  const int failures = static_cast<int>(std::count(failed.begin(), failed.end(), true));
  EXPECT_GT(failures, 60);
  EXPECT_LT(failures, 140);
  EXPECT_EQ(count_failures(options), failed);  // same seed, same calls fail
  options.failure_probability = 1;
  const std::vector<bool> always = count_failures(options);
  EXPECT_EQ(std::count(always.begin(), always.end(), true), 200);
}

TEST(SimBackendTest, TimeScaleSleepsScaledSimulatedTime) {
  const testing::TwoConvs g = MakeTwoConvs(64, 8, 3);
  const scheduler::ios::Stage stage = ConcurrentStage({{g.a}, {g.b}});
  ProfileOptions profile;
  profile.warmup = 5;
  // 5 warm-up + 20 timed samples of the stage.
  auto exact = MakeBackend();
  const LatencyStats stats = ProfileStages(*exact, g.graph, {stage}, profile)[0];
  ASSERT_EQ(stats.repeats, 20);
  const double simulated_ms = 25 * stats.median_ms;

  SimOptions options;
  options.time_scale = 200.0 / simulated_ms;  // about 200 ms of wall time
  auto slow = MakeBackend(options);
  auto plans = *slow->Build(g.graph, {stage});
  const double wall_ms =
      WallMs([&] { ASSERT_TRUE(slow->Profile({plans[0].get()}, profile).ok()); });
  EXPECT_GE(wall_ms, 200.0 * 0.99);
  EXPECT_LT(wall_ms, 200.0 * 10);

  // Without a time scale nothing sleeps: 50000 samples of a 154 us stage are
  // 7.7 s of simulated time.
  const testing::TwoConvs big = MakeTwoConvs(64, 112, 3);
  ProfileOptions long_run;
  long_run.min_repeats = 50000;
  long_run.max_repeats = 50000;
  long_run.max_seconds = 100;
  std::vector<LatencyStats> long_stats;
  const double fast_ms = WallMs([&] {
    long_stats = ProfileStages(*exact, big.graph, {ConcurrentStage({{big.a}})}, long_run);
  });
  ASSERT_EQ(long_stats.size(), 1u);
  EXPECT_EQ(long_stats[0].repeats, 50000);
  EXPECT_GT(long_stats[0].median_ms * 50000, 7000);
  EXPECT_LT(fast_ms, 2000);
}

TEST(SimBackendTest, OneProfileAtATime) {
  const testing::TwoConvs g = MakeTwoConvs(64, 8, 3);
  const scheduler::ios::Stage stage = ConcurrentStage({{g.a}, {g.b}});
  auto exact = MakeBackend();
  const LatencyStats stats = ProfileStages(*exact, g.graph, {stage})[0];
  const double simulated_ms = (3 + stats.repeats) * stats.median_ms;
  SimOptions options;
  options.time_scale = 100.0 / simulated_ms;  // 100 ms per Profile call
  auto backend = MakeBackend(options);
  auto plans = *backend->Build(g.graph, {stage});
  const double wall_ms = WallMs([&] {
    std::thread other([&] { EXPECT_TRUE(backend->Profile({plans[0].get()}, {}).ok()); });
    EXPECT_TRUE(backend->Profile({plans[0].get()}, {}).ok());
    other.join();
  });
  // Serialised: at least both sleeps, one after the other.
  EXPECT_GE(wall_ms, 2 * 100.0 * 0.99);
  EXPECT_EQ(backend->profile_calls(), 2);
}

TEST(SimBackendTest, RejectsPlansOfAnotherInstanceAndBadStages) {
  const testing::TwoConvs g = MakeTwoConvs(8, 4, 1);
  auto first = MakeBackend();
  auto second = MakeBackend();
  auto plans = *first->Build(g.graph, {ConcurrentStage({{g.a}})});
  StatusOr<std::vector<LatencyStats>> stats = second->Profile({plans[0].get()}, {});
  EXPECT_EQ(stats.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(stats.status().message()), HasSubstr("plan 0 was not built by"));

  auto bad = first->Build(g.graph, {ConcurrentStage({{g.a}}), ConcurrentStage({{g.b}, {g.b}})});
  EXPECT_EQ(bad.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(bad.status().message()),
              HasSubstr("stage 1: stage op 'b' is listed twice"));

  ProfileOptions invalid;
  invalid.min_repeats = 0;
  EXPECT_EQ(first->Profile({plans[0].get()}, invalid).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(first->profile_calls(), 0);
}

TEST(SimBackendTest, RunScheduleSumsItsStages) {
  const testing::TwoConvs g = MakeTwoConvs(64, 8, 3);
  auto backend = MakeBackend();
  scheduler::ios::Schedule schedule;
  schedule.stages.push_back({ConcurrentStage({{g.a}}), 0, 0, 0});
  schedule.stages.push_back({ConcurrentStage({{g.b}}), 0, 0, 0});
  StatusOr<RunResult> result = backend->RunSchedule(g.graph, schedule, {});
  ASSERT_TRUE(result.ok()) << result.status();
  const double expected = *backend->StageLatencyMs(g.graph, schedule.stages[0].stage) +
                          *backend->StageLatencyMs(g.graph, schedule.stages[1].stage);
  EXPECT_NEAR(result->latency.median_ms, expected, 1e-12);
  EXPECT_EQ(result->latency.repeats, 20);
  EXPECT_TRUE(result->outputs.empty());

  RunOptions outputs;
  outputs.return_outputs = true;
  StatusOr<RunResult> refused = backend->RunSchedule(g.graph, schedule, outputs);
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kUnimplemented);
  EXPECT_THAT(std::string(refused.status().message()), HasSubstr("computes no tensor values"));

  schedule.stages.pop_back();
  StatusOr<RunResult> incomplete = backend->RunSchedule(g.graph, schedule, {});
  EXPECT_EQ(incomplete.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(incomplete.status().message()), HasSubstr("'b' is not scheduled"));
}

TEST(SimBackendTest, RunScheduleNoiseIsReproducible) {
  const testing::TwoConvs g = MakeTwoConvs(64, 8, 3);
  scheduler::ios::Schedule schedule = *scheduler::ios::SequentialSchedule(g.graph);
  SimOptions options;
  options.noise_sigma = 0.05;
  const RunResult a = *MakeBackend(options)->RunSchedule(g.graph, schedule, {});
  const RunResult b = *MakeBackend(options)->RunSchedule(g.graph, schedule, {});
  EXPECT_EQ(a.latency.median_ms, b.latency.median_ms);
  EXPECT_EQ(a.latency.p90_ms, b.latency.p90_ms);
  EXPECT_GT(a.latency.cv, 0);
}

// The model reproduces what IOS exploits on a real GPU: at batch 1 the
// greedy schedule of Inception V3 beats the sequential one, which lands in
// the paper's range (V100: sequential 6.5 ms, greedy 4.6 ms).
TEST(SimBackendTest, InceptionV3GreedyBeatsSequentialOnV100) {
  StatusOr<graph::Graph> model = graph::models::BuildZooModel("inception_v3", 1);
  ASSERT_TRUE(model.ok()) << model.status();
  auto backend = MakeBackend();
  const scheduler::ios::Schedule sequential = *scheduler::ios::SequentialSchedule(*model);
  const scheduler::ios::Schedule greedy = *scheduler::ios::GreedySchedule(*model, 8);
  const double sequential_ms = backend->RunSchedule(*model, sequential, {})->latency.median_ms;
  const double greedy_ms = backend->RunSchedule(*model, greedy, {})->latency.median_ms;
  std::printf("inception_v3 sim v100: sequential %.3f ms, greedy %.3f ms\n", sequential_ms,
              greedy_ms);
  EXPECT_GT(sequential_ms, 3.0);
  EXPECT_LT(sequential_ms, 13.0);
  EXPECT_LT(greedy_ms, 0.9 * sequential_ms);
}

}  // namespace
}  // namespace iosfarm::worker::sim
