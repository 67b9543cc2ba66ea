// Numerical truth: torchvision CNNs exported by PyTorch with random weights
// run through the public runtime on the cpu backend, with the sequential and
// the IOS schedule, and must compute what PyTorch's own forward pass computed
// on the same input (rtol 1e-4, atol 1e-5, numpy.allclose's rule, the atol
// times the largest |output| where that is over 1: fp32 forwards that sum in
// other orders differ by about 1e-6 of the output's scale, and on an AMD
// EPYC without AVX-512 PyTorch's own fp32 resnet50 misses a plain 1e-5
// against its float64 forward; docs/runtime.md). The cuda
// backend runs the same comparison where a GPU answers, at rtol 1e-3, atol
// 1e-4 (`iosfarm run --verify`'s tolerance): cuDNN's fp32 algorithms (FFT,
// Winograd, split reductions) sum in other orders than PyTorch's CPU forward.
// On a GPU most models meet even 1e-4/1e-5, but not all of them in every
// output, so the test keeps the wider tolerance.
//
// Like a user's program it uses the public API only (the internals live in
// the runtime's shared library); the IOS schedule comes from the `iosfarm
// search` binary (sim latencies: fast, and which oracle chose the stages does
// not change what they compute).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>

#include "graph/onnx/torchvision_export.h"
#include "iosfarm/runtime.h"
#include "runtime/cli_path_testing.h"

namespace iosfarm {
namespace {

struct Tolerance {
  double rtol;
  double atol;
};
Tolerance ToleranceFor(const std::string& backend) {
  return backend == "cuda" ? Tolerance{1e-3, 1e-4} : Tolerance{1e-4, 1e-5};
}

const std::vector<std::string> kModels = {"resnet50",        "inception_v3",      "googlenet",
                                          "squeezenet1_1",   "densenet121",       "mobilenet_v2",
                                          "efficientnet_b0", "shufflenet_v2_x1_0"};

// An IOS schedule for the model from `iosfarm search` (written atomically:
// parallel test processes may search the same model); empty with `error` set
// when the search fails.
std::string IosScheduleFile(const std::string& onnx, std::string& error) {
  const std::string path = onnx + ".ios.schedule.json";
  if (std::filesystem::exists(path)) return path;
  const std::string log = onnx + ".search.log";
  const std::string command = IosfarmCliForTests() + " search '" + onnx +
                              "' --backend sim:h100 -o '" + path + "' > '" + log + "' 2>&1";
  if (std::system(command.c_str()) != 0 || !std::filesystem::exists(path)) {
    std::ifstream file(log);
    std::stringstream text;
    text << file.rdbuf();
    error = command + " failed: " + text.str();
    return "";
  }
  return path;
}

// numpy.allclose(actual, expected, rtol, atol), naming the worst element.
void ExpectAllClose(const std::vector<float>& actual, const std::vector<float>& expected,
                    Tolerance tolerance) {
  ASSERT_EQ(actual.size(), expected.size());
  double scale = 1;
  for (float e : expected) scale = std::max(scale, std::abs(static_cast<double>(e)));
  tolerance.atol *= scale;
  size_t worst = 0;
  double worst_excess = -1;
  int bad = 0;
  for (size_t i = 0; i < actual.size(); ++i) {
    const double error = std::abs(static_cast<double>(actual[i]) - expected[i]);
    const double allowed =
        tolerance.atol + tolerance.rtol * std::abs(static_cast<double>(expected[i]));
    if (!(error <= allowed)) ++bad;
    if (error - allowed > worst_excess) {
      worst_excess = error - allowed;
      worst = i;
    }
  }
  EXPECT_EQ(bad, 0) << bad << " of " << actual.size()
                    << " outputs differ from PyTorch's beyond rtol " << tolerance.rtol << ", atol "
                    << tolerance.atol << "; worst: "
                    << "element " << worst << " is " << actual[worst] << ", PyTorch "
                    << expected[worst];
}

class TorchvisionTruthTest : public ::testing::TestWithParam<std::string> {
 protected:
  void Check(const std::string& backend) {
    auto reference = graph::onnx_import::testing::ExportTorchvisionReference(GetParam(), kModels);
    if (!reference.ok() && reference.status().code() == absl::StatusCode::kFailedPrecondition) {
      GTEST_SKIP() << reference.status().message();
    }
    ASSERT_TRUE(reference.ok()) << reference.status();
    const Tensor input = ReadNpy(reference->input);
    const Tensor expected = ReadNpy(reference->output);
    std::string error;
    const std::string ios = IosScheduleFile(reference->onnx, error);
    ASSERT_FALSE(ios.empty()) << error;
    for (const std::string& schedule : {std::string("sequential"), ios}) {
      SCOPED_TRACE(GetParam() + " on " + backend + ", schedule " + schedule);
      SessionOptions options;
      options.backend = backend;
      options.schedule = schedule;
      std::optional<Session> session;
      try {
        session.emplace(reference->onnx, options);
      } catch (const Error& e) {
        if (backend != "cpu" &&
            (e.code() == ErrorCode::kUnavailable || e.code() == ErrorCode::kUnimplemented)) {
          GTEST_SKIP() << "no " << backend << " here: " << e.what();
        }
        FAIL() << e.what();
      }
      ASSERT_EQ(session->inputs().size(), 1u);
      ASSERT_EQ(session->outputs().size(), 1u);
      if (schedule != "sequential") {
        EXPECT_EQ(session->schedule_kind(), "ios");
      }
      const auto outputs =
          session->Run({{session->inputs()[0].name, TensorView(input.data, input.shape)}});
      const Tensor& output = outputs.at(session->outputs()[0].name);
      EXPECT_EQ(output.shape, expected.shape);
      ExpectAllClose(output.data, expected.data, ToleranceFor(backend));
    }
  }
};

TEST_P(TorchvisionTruthTest, CpuMatchesPyTorch) { Check("cpu"); }
TEST_P(TorchvisionTruthTest, CudaMatchesPyTorch) { Check("cuda"); }

INSTANTIATE_TEST_SUITE_P(Torchvision, TorchvisionTruthTest, ::testing::ValuesIn(kModels),
                         [](const auto& info) { return info.param; });

}  // namespace
}  // namespace iosfarm
