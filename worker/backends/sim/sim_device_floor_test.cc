// The sim backend's device floor (SimDeviceFloor) against the model it
// bounds: no candidate stage of a zoo model's search is faster than it, and
// the bounded search that uses it finds the exhaustive DP's schedule.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <span>
#include <string>
#include <vector>

#include "common/strings.h"
#include "graph/models/zoo.h"
#include "scheduler/ios/bounded/audit/bound_audit.h"
#include "scheduler/ios/bounded/device_floor.h"
#include "scheduler/ios/inline_search.h"
#include "scheduler/ios/testing/testing_util.h"
#include "worker/backends/sim/kernel_model.h"
#include "worker/backends/sim/sim_backend.h"
#include "worker/backends/sim/stage_simulator.h"

namespace iosfarm::worker::sim {
namespace {

namespace ios = scheduler::ios;

std::unique_ptr<SimBackend> MakeBackend(std::string_view preset, double noise_sigma = 0,
                                        bool back_to_back = false) {
  SimOptions options;
  options.device = *SimDevicePreset(preset);
  options.device.back_to_back = back_to_back;
  options.noise_sigma = noise_sigma;
  StatusOr<std::unique_ptr<SimBackend>> backend = SimBackend::Create(std::move(options));
  EXPECT_TRUE(backend.ok()) << backend.status();
  return *std::move(backend);
}

// The floor of a concurrent stage as the bounded search takes it: each op
// weighed alone, and its last kernel running at least as long as the
// fastest of its kernels alone (an op's latency as a stage of its own, less
// the stage and one launch).
// With the backend's issue order, also its kernels' chains, issued in the
// stage's group order (IssuedChainsFloorMs).
StatusOr<double> ConcurrentFloorMs(const SimBackend& backend, const graph::Graph& graph,
                                   const ios::Stage& stage, const ios::DeviceFloor& floor) {
  double kernels = 0, work = 0, last = -1;
  std::vector<std::vector<double>> runs(stage.groups.size());
  for (size_t g = 0; g < stage.groups.size(); ++g) {
    for (graph::NodeId id : stage.groups[g]) {
      const ios::OpFloor op = ios::ComputeOpFloor(graph, graph.node(id), floor);
      kernels += op.kernels;
      work += op.work_ms();
      if (op.kernels <= 0) continue;
      ios::Stage alone;
      alone.groups = {{id}};
      ASSIGN_OR_RETURN(double alone_ms, backend.StageLatencyMs(graph, alone));
      const double run = std::max(0.0, alone_ms - floor.stage_ms - floor.launch_ms);
      last = last < 0 ? run : std::min(last, run);
      runs[g].push_back(run);
    }
  }
  std::vector<std::span<const double>> chains(runs.begin(), runs.end());
  return std::max(ios::StageFloorMs(floor, kernels, work, std::max(last, 0.0)),
                  ios::IssuedChainsFloorMs(floor, chains));
}

// The least a merged convolution of m branches costs by the shares a cost to
// go weighs them with (each branch 1/m of the kernel; their FLOPs, or their
// bytes).
double MergedShareFloorMs(const graph::Graph& graph, const ios::Stage& stage,
                          const ios::DeviceFloor& floor) {
  const int m = static_cast<int>(stage.groups.size());
  double kernels = 0, compute = 0, memory = 0;
  for (const auto& group : stage.groups) {
    const ios::OpFloor op = ios::ComputeOpFloor(graph, graph.node(group[0]), floor, m);
    kernels += op.kernels;
    compute += op.compute_ms;
    memory += op.memory_ms;
  }
  return ios::StageFloorMs(floor, kernels, std::max(compute, memory));
}

// Every candidate stage the exhaustive DP looks up for `model` at `batch` on
// `preset` costs at least its floor, and on some of Inception's stages of
// several groups the floor is above the slowest group alone (the bound the
// search has without it).
void ExpectNoCandidateBelowTheFloor(const char* model, const char* preset, int batch,
                                    bool back_to_back) {
  SCOPED_TRACE(StrCat(model, " ", preset, " batch ", batch, back_to_back ? " back to back" : ""));
  StatusOr<graph::Graph> graph = graph::models::BuildZooModel(model, batch);
  ASSERT_TRUE(graph.ok()) << graph.status();
  auto backend = MakeBackend(preset, 0, back_to_back);
  ASSERT_EQ(backend->device_floor().back_to_back, back_to_back);
  const ios::DeviceFloor floor = backend->device_floor();
  ASSERT_TRUE(floor.bounds_anything());
  int64_t stages = 0, below = 0, above_groups = 0, wide = 0;
  ios::SearchOptions options;
  options.exhaustive = true;
  auto result = ios::RunSearch(*graph, options, [&](const ios::Stage& stage) -> StatusOr<double> {
    ASSIGN_OR_RETURN(double ms, backend->StageLatencyMs(*graph, stage));
    double bound = 0;
    if (stage.strategy == ios::Strategy::kMerge) {
      bound = MergedShareFloorMs(*graph, stage, floor);
    } else {
      ASSIGN_OR_RETURN(bound, ConcurrentFloorMs(*backend, *graph, stage, floor));
    }
    ++stages;
    below += ms < bound * (1 - 1e-9);
    if (stage.groups.size() >= 2 && stage.strategy == ios::Strategy::kConcurrent) {
      double slowest = 0;
      for (const auto& group : stage.groups) {
        ios::Stage alone;
        alone.groups = {group};
        ASSIGN_OR_RETURN(double group_ms, backend->StageLatencyMs(*graph, alone));
        slowest = std::max(slowest, group_ms);
      }
      ++wide;
      above_groups += bound > slowest;
    }
    return ms;
  });
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_GT(stages, 40);
  EXPECT_EQ(below, 0);
  if (std::string(model) == "inception_v3") {
    EXPECT_GT(wide, 1000);
    // Few on Inception's larger kernels (38 of 4,742 on the h100 at
    // batch 1); RandWire's small ones are where it matters (below).
    EXPECT_GT(above_groups, 10) << above_groups << " of " << wide;
  }
}

// The same on two zoo models, two devices, batch 1 and 8, stages timed from
// an idle device and back to back.
TEST(SimDeviceFloorTest, NoCandidateStageBeatsTheFloor) {
  for (const char* model : {"inception_v3", "squeezenet"}) {
    for (const char* preset : {"h100", "t4"}) {
      for (int batch : {1, 8}) {
        for (bool back_to_back : {false, true}) {
          ExpectNoCandidateBelowTheFloor(model, preset, batch, back_to_back);
        }
      }
    }
  }
}

// The bounded search's own bounds (BlockBounds, not a copy of their
// terms) against the sim on every ending of every state of the random
// block sweep (2 to 12 ops), with the sim's floor: timed from
// an idle device (with its issue order's chains and each op's last kernel)
// and back to back. No ending is faster than its bound (merges included),
// the cost to go is consistent over the endings' latencies, and the floor
// raises many bounds above the slowest group.
TEST(SimDeviceFloorTest, NoEndingOfARandomBlockBeatsItsBound) {
  for (bool back_to_back : {false, true}) {
    SCOPED_TRACE(back_to_back ? "back to back" : "from idle");
    auto backend = MakeBackend("h100", 0, back_to_back);
    ASSERT_EQ(backend->device_floor().back_to_back, back_to_back);
    ios::BoundedSearchOptions options;
    options.device_floor = backend->device_floor();
    StatusOr<ios::BoundAudit> check = ios::testing::CheckSweepEndingsBound(
        options, [&](const ios::testing::RandomBlockCase& c) -> ios::StageLatencyFn {
          const graph::Graph* graph = c.graph;
          return [&backend, graph](const ios::Stage& stage) {
            return backend->StageLatencyMs(*graph, stage);
          };
        });
    ASSERT_TRUE(check.ok()) << check.status();
    EXPECT_EQ(check->below, 0) << check->first_failure;
    EXPECT_EQ(check->merge_below, 0);
    EXPECT_EQ(check->sub_below, 0) << check->first_failure;
    EXPECT_EQ(check->inconsistent, 0) << check->first_failure;
    std::printf("sim:h100%s: %lld endings, %lld bounds above the slowest group\n",
                back_to_back ? ":back-to-back" : "", static_cast<long long>(check->endings),
                static_cast<long long>(check->raised));
    EXPECT_GT(check->endings, 100'000);
    EXPECT_GT(check->raised * 10, check->endings);
  }
}

// The same on zoo models' own blocks (cut at 12 ops, r=3, s=8, merge on),
// at batch 1 and 8: kernels large enough that the device's work, not the
// launches, rules many stages. One part of the assumption does not hold in
// the sim: on inception_v3 at batch 1 a merged convolution is sometimes
// faster than its slowest branch alone (42 endings, by at most 0.254 us,
// under 4 % of the bound: the merged kernel's larger output keeps more SMs
// busy, kernel_model.h). Those are the bounded search's misses there (2, of
// 0.254 us). Timed from idle, 2 of its concurrent stages of three groups
// in Mixed_5d are faster than a stage of two of their groups, by at most
// 0.18 us (0.7 %; not traced: presumably the third group changes the
// round-robin issue order of the other two). The test pins
// both below 5 %, and checks the consistency of the cost to go where the
// latencies keep the bounds.
TEST(SimDeviceFloorTest, NoEndingOfAZooBlockBeatsItsBound) {
  for (const char* model : {"inception_v3", "randwire"}) {
    for (int batch : {1, 8}) {
      for (bool back_to_back : {false, true}) {
        SCOPED_TRACE(StrCat(model, " batch ", batch, back_to_back ? " back to back" : ""));
        StatusOr<graph::Graph> graph = graph::models::BuildZooModel(model, batch);
        ASSERT_TRUE(graph.ok()) << graph.status();
        auto backend = MakeBackend("h100", 0, back_to_back);
        ios::BoundedSearchOptions options;
        options.device_floor = backend->device_floor();
        auto oracle = [&](const ios::Stage& stage) {
          return backend->StageLatencyMs(*graph, stage);
        };
        StatusOr<ios::BoundAudit> check =
            ios::AuditGraphBounds(*graph, 12, options, ios::IgnoringSignature(oracle));
        ASSERT_TRUE(check.ok()) << check.status();
        EXPECT_EQ(check->below, 0) << check->first_failure;
        EXPECT_EQ(check->inconsistent, 0) << check->first_failure;
        std::printf(
            "%s batch %d sim:h100%s: %lld endings, %lld bounds above the slowest group, %lld "
            "merges below it (by up to %.3g ms, %.3g of the bound), %lld below a stage of all but "
            "one of their groups, %lld not consistent over the bound\n",
            model, batch, back_to_back ? ":back-to-back" : "",
            static_cast<long long>(check->endings), static_cast<long long>(check->raised),
            static_cast<long long>(check->merge_below), check->largest_merge_shortfall_ms,
            check->largest_merge_shortfall_share, static_cast<long long>(check->sub_below),
            static_cast<long long>(check->bound_inconsistent));
        EXPECT_GT(check->endings, 1000);
        EXPECT_GT(check->raised, 0);
        EXPECT_LT(check->largest_merge_shortfall_share, 0.05);
        EXPECT_LT(check->largest_sub_shortfall_share, 0.05) << check->first_failure;
      }
    }
  }
}

// Kernels that keep few SMs busy never share the device: the stage then
// takes exactly its chains issued round-robin, which is the floor the sim
// declares (its issue order), and more than the order-free floor.
TEST(SimDeviceFloorTest, ChainsAreExactWhereKernelsDoNotShareTheDevice) {
  const SimDeviceModel model = *SimDevicePreset("h100");
  const ios::DeviceFloor floor = SimDeviceFloor(model);
  ASSERT_EQ(floor.issue_order, ios::DeviceFloor::IssueOrder::kRoundRobin);
  GroupKernels groups = {{{4.0, 1}, {1.0, 2}}, {{9.0, 1}}, {{0.5, 3}, {2.0, 1}, {6.0, 2}}};
  std::vector<std::vector<double>> runs;
  double kernels = 0, last = 1e9;
  for (const auto& group : groups) {
    std::vector<double>& run = runs.emplace_back();
    for (const SimKernel& kernel : group) {
      run.push_back(kernel.AloneUs(model) / 1e3);
      kernels += 1;
      last = std::min(last, run.back());
    }
  }
  const std::vector<std::span<const double>> chains(runs.begin(), runs.end());
  const double simulated_ms = SimulateStageUs(groups, model) / 1e3;
  EXPECT_NEAR(ios::IssuedChainsFloorMs(floor, chains), simulated_ms, 1e-12);
  EXPECT_LT(ios::StageFloorMs(floor, kernels, 0, last), simulated_ms - 1e-3);
}

// With noise the backend lowers its floor: exp(-3 sigma) of the model's.
TEST(SimDeviceFloorTest, NoiseLowersTheDeclaredFloor) {
  const ios::DeviceFloor exact = MakeBackend("h100")->device_floor();
  const ios::DeviceFloor noisy = MakeBackend("h100", 0.1)->device_floor();
  EXPECT_NEAR(noisy.launch_ms, exact.launch_ms * std::exp(-0.3), 1e-12);
  EXPECT_NEAR(noisy.stage_ms, exact.stage_ms * std::exp(-0.3), 1e-12);
  EXPECT_NEAR(noisy.peak_gflops, exact.peak_gflops / std::exp(-0.3), 1e-6);
  EXPECT_DOUBLE_EQ(exact.launch_ms, SimDevicePreset("h100")->kernel_launch_us / 1e3);
}

// Search options on two threads without boundary windows (they depend on
// ties): exhaustive, or bounded with `floor`, in blocks of `block_ops`.
ios::SearchOptions Options(bool exhaustive, const ios::DeviceFloor& floor, int block_ops = 50) {
  ios::SearchOptions options;
  options.exhaustive = exhaustive;
  options.bounded.device_floor = floor;
  options.boundary_window_ops = 0;
  options.threads = 2;
  options.max_block_ops = block_ops;
  return options;
}

// The bounded search with the floor (and the cost-to-go DP as cost to go on every
// block) finds the exhaustive DP's latency on RandWire under sim:h100 from
// far fewer measurements: its stages of many small kernels are what the
// slowest group bounds badly and the floor well.
TEST(SimDeviceFloorTest, BoundedSearchWithTheFloorIsExactAndMeasuresFarLess) {
  StatusOr<graph::Graph> graph = graph::models::BuildZooModel("randwire", 1);
  ASSERT_TRUE(graph.ok()) << graph.status();
  auto backend = MakeBackend("h100");
  auto oracle = [&](const ios::Stage& stage) { return backend->StageLatencyMs(*graph, stage); };
  const ios::SearchOptions exhaustive_options = Options(true, {});
  const ios::SearchOptions floor_options = Options(false, backend->device_floor());
  auto exhaustive = ios::RunSearch(*graph, exhaustive_options, oracle);
  ASSERT_TRUE(exhaustive.ok()) << exhaustive.status();
  auto floored = ios::RunSearch(*graph, floor_options, oracle);
  ASSERT_TRUE(floored.ok()) << floored.status();
  EXPECT_NEAR(floored->schedule.latency_ms, exhaustive->schedule.latency_ms, 1e-9);
  std::printf("randwire sim:h100: %lld stages measured with the floor, %lld exhaustive\n",
              static_cast<long long>(floored->stats.stages_measured),
              static_cast<long long>(exhaustive->stats.stages_measured));
  EXPECT_LT(floored->stats.stages_measured * 50, exhaustive->stats.stages_measured);
}

// Stages timed back to back, with the floor that timing leaves (no issue
// order, no last kernel): the bounded search still finds the exhaustive
// DP's latency on RandWire (in blocks of 24 ops, to keep the exhaustive
// searches short) and measures far fewer stages than without the floor,
// whose launches rule its stages of small kernels.
TEST(SimDeviceFloorTest, BackToBackTimingAndItsFloorKeepTheSearchExact) {
  StatusOr<graph::Graph> graph = graph::models::BuildZooModel("randwire", 1);
  ASSERT_TRUE(graph.ok()) << graph.status();
  auto backend = MakeBackend("h100", 0, /*back_to_back=*/true);
  auto oracle = [&](const ios::Stage& stage) { return backend->StageLatencyMs(*graph, stage); };
  const ios::SearchOptions exhaustive_options = Options(true, {}, 24);
  const ios::SearchOptions plain_options = Options(false, {}, 24);
  const ios::SearchOptions floor_options = Options(false, backend->device_floor(), 24);
  ASSERT_TRUE(floor_options.bounded.device_floor.back_to_back);
  auto exhaustive = ios::RunSearch(*graph, exhaustive_options, oracle);
  ASSERT_TRUE(exhaustive.ok()) << exhaustive.status();
  auto plain = ios::RunSearch(*graph, plain_options, oracle);
  ASSERT_TRUE(plain.ok()) << plain.status();
  auto floored = ios::RunSearch(*graph, floor_options, oracle);
  ASSERT_TRUE(floored.ok()) << floored.status();
  EXPECT_NEAR(floored->schedule.latency_ms, exhaustive->schedule.latency_ms, 1e-9);
  EXPECT_NEAR(plain->schedule.latency_ms, exhaustive->schedule.latency_ms, 1e-9);
  std::printf(
      "randwire sim:h100:back-to-back, 24-op blocks: %lld stages measured with the floor, "
      "%lld without, %lld exhaustive\n",
      static_cast<long long>(floored->stats.stages_measured),
      static_cast<long long>(plain->stats.stages_measured),
      static_cast<long long>(exhaustive->stats.stages_measured));
  EXPECT_LT(floored->stats.stages_measured * 10, plain->stats.stages_measured);
}

}  // namespace
}  // namespace iosfarm::worker::sim
