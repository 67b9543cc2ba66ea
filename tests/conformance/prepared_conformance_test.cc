// Prepared schedules (Backend::Prepare / RunPrepared, the runtime's path) and
// real inputs (RunOptions::inputs) on every backend: the values equal the
// reference executor's on the same inputs, a prepared schedule runs again
// and again on new inputs without stale state, and bad buffers are refused
// naming the input or output. A backend that computes no values (sim)
// answers Unimplemented.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "graph/models/zoo.h"
#include "scheduler/ios/baselines.h"
#include "tests/conformance/conformance_backends.h"
#include "tests/conformance/conformance_util.h"
#include "worker/backends/reference/compare.h"
#include "worker/backends/reference/executor.h"
#include "worker/backends/weights.h"

namespace iosfarm::conformance {
namespace {

using ::testing::HasSubstr;

class PreparedConformanceTest : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    auto built = graph::models::BuildZooModel("squeezenet", 1);
    ASSERT_TRUE(built.ok()) << built.status();
    graph_ = *std::move(built);
    auto greedy = scheduler::ios::GreedySchedule(graph_, 4);
    ASSERT_TRUE(greedy.ok()) << greedy.status();
    schedule_ = *std::move(greedy);
  }

  // The outputs of one prepared run on `inputs`.
  StatusOr<std::vector<graph::Tensor>> RunOnce(worker::Backend& backend,
                                               worker::PreparedSchedule& prepared,
                                               const std::vector<graph::Tensor>& inputs) {
    worker::InputBuffers in;
    for (const graph::Tensor& t : inputs) in.push_back(t.data);
    std::vector<graph::Tensor> outputs;
    for (graph::ValueId v : graph_.outputs()) {
      const graph::Shape& shape = graph_.value(v).shape;
      outputs.push_back({shape, std::vector<float>(graph::NumElements(shape), -7.f)});
    }
    worker::OutputBuffers out;
    for (graph::Tensor& t : outputs) out.push_back(t.data);
    RETURN_IF_ERROR(backend.RunPrepared(prepared, in, out));
    return outputs;
  }

  graph::Graph graph_{"unset"};
  scheduler::ios::Schedule schedule_;
};

TEST_P(PreparedConformanceTest, PreparedRunsMatchTheReferenceOnNewInputs) {
  IOSFARM_BACKEND_OR_SKIP(backend, GetParam(), /*needs_values=*/true);
  auto prepared = backend->Prepare(graph_, schedule_, worker::PrepareOptions{.cuda_graph = true});
  ASSERT_TRUE(prepared.ok()) << prepared.status();
  for (uint64_t seed : {3, 4, 3}) {
    SCOPED_TRACE(testing::Message() << "inputs of seed " << seed);
    const std::vector<graph::Tensor> inputs = worker::MakeGraphInputs(graph_, seed);
    auto expected = worker::reference::ExecuteSchedule(graph_, schedule_, inputs);
    ASSERT_TRUE(expected.ok()) << expected.status();
    auto outputs = RunOnce(*backend, **prepared, inputs);
    ASSERT_TRUE(outputs.ok()) << outputs.status();
    Status same = worker::reference::CompareTensorLists(*outputs, *expected, kTolerance,
                                                        "prepared squeezenet vs reference");
    EXPECT_TRUE(same.ok()) << same;
  }
}

TEST_P(PreparedConformanceTest, RunScheduleUsesTheGivenInputs) {
  IOSFARM_BACKEND_OR_SKIP(backend, GetParam(), /*needs_values=*/true);
  worker::RunOptions options;
  options.profile = QuickProfile();
  options.return_outputs = true;
  options.inputs = worker::MakeGraphInputs(graph_, 9);
  options.input_seed = 1;  // ignored: inputs are given
  auto result = backend->RunSchedule(graph_, schedule_, options);
  ASSERT_TRUE(result.ok()) << result.status();
  auto expected = worker::reference::ExecuteSchedule(graph_, schedule_, options.inputs);
  ASSERT_TRUE(expected.ok()) << expected.status();
  Status same = worker::reference::CompareTensorLists(result->outputs, *expected, kTolerance,
                                                      "squeezenet on given inputs vs reference");
  EXPECT_TRUE(same.ok()) << same;
}

TEST_P(PreparedConformanceTest, BadBuffersAreRefusedByName) {
  IOSFARM_BACKEND_OR_SKIP(backend, GetParam(), /*needs_values=*/true);
  auto prepared = backend->Prepare(graph_, schedule_, worker::PrepareOptions{});
  ASSERT_TRUE(prepared.ok()) << prepared.status();
  std::vector<graph::Tensor> inputs = worker::MakeGraphInputs(graph_, 1);
  inputs[0].data.resize(10);
  Status short_input = RunOnce(*backend, **prepared, inputs).status();
  EXPECT_EQ(short_input.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(short_input.message(), HasSubstr("input 'input' has 10 values, its shape "
                                               "[1,3,224,224] holds 150528"));
  Status no_inputs = RunOnce(*backend, **prepared, {}).status();
  EXPECT_THAT(no_inputs.message(), HasSubstr("has 1 inputs, got 0"));

  worker::RunOptions options;
  options.profile = QuickProfile();
  options.inputs = {graph::Tensor{{1, 3, 32, 32}, std::vector<float>(3 * 32 * 32)}};
  Status misshapen = backend->RunSchedule(graph_, schedule_, options).status();
  EXPECT_EQ(misshapen.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(misshapen.message(),
              HasSubstr("input 'input' has shape [1,3,32,32], the model wants [1,3,224,224]"));
}

// Buffer placement: vectors of the wrong length are refused; a backend
// that reads host memory only names the buffer marked as device memory
// (device buffers themselves: runtime/device_buffers_test.cc, on a GPU).
TEST_P(PreparedConformanceTest, BufferPlacementIsChecked) {
  IOSFARM_BACKEND_OR_SKIP(backend, GetParam(), /*needs_values=*/true);
  auto prepared = backend->Prepare(graph_, schedule_, worker::PrepareOptions{});
  ASSERT_TRUE(prepared.ok()) << prepared.status();
  const std::vector<graph::Tensor> inputs = worker::MakeGraphInputs(graph_, 1);
  const graph::Shape& shape = graph_.value(graph_.outputs()[0]).shape;
  std::vector<float> output(graph::NumElements(shape), -7.f);
  const worker::InputBuffers in = {inputs[0].data};
  const worker::OutputBuffers out = {output};

  worker::BufferPlacement too_many;
  too_many.device_inputs = {false, false};
  Status bad = backend->RunPrepared(**prepared, in, out, too_many);
  EXPECT_EQ(bad.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(bad.message(), HasSubstr("2 input placements for 1 graph values"));

  worker::BufferPlacement host;
  host.device_inputs = {false};
  host.device_outputs = {false};
  host.input_streams = {0};
  EXPECT_TRUE(backend->RunPrepared(**prepared, in, out, host).ok());
  EXPECT_NE(output[0], -7.f) << "the host placement ran";

  if (backend->accepts_device_buffers()) return;
  worker::BufferPlacement device_output;
  device_output.device_outputs = {true};
  Status refused = backend->RunPrepared(**prepared, in, out, device_output);
  EXPECT_EQ(refused.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(refused.message(), HasSubstr("output '" + graph_.value(graph_.outputs()[0]).name +
                                           "' is device memory, but the " + backend->name() +
                                           " backend reads and writes host memory only"));
}

TEST_P(PreparedConformanceTest, SimComputesNoValues) {
  IOSFARM_BACKEND_OR_SKIP(backend, GetParam(), /*needs_values=*/false);
  if (ComputesValues(GetParam())) GTEST_SKIP() << GetParam() << " computes values";
  auto prepared = backend->Prepare(graph_, schedule_, worker::PrepareOptions{});
  EXPECT_EQ(prepared.status().code(), absl::StatusCode::kUnimplemented);
  EXPECT_THAT(prepared.status().message(), HasSubstr("needs the cpu or cuda backend"));
}

INSTANTIATE_TEST_SUITE_P(Backends, PreparedConformanceTest,
                         ::testing::ValuesIn(ConformanceBackendNames()),
                         [](const auto& info) { return info.param; });

}  // namespace
}  // namespace iosfarm::conformance
