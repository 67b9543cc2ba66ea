#include "worker/backends/backend_factory.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "common/strings.h"

#ifdef IOSFARM_HAVE_CUDA
#include "worker/backends/cuda/device/cuda_device.h"
#endif

namespace iosfarm::worker {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::StartsWith;

std::string Message(const Status& status) { return std::string(status.message()); }

TEST(BackendFactoryTest, ListsTheBackends) {
  EXPECT_THAT(BackendNames(), ElementsAre("cuda", "cpu", "sim"));
}

TEST(BackendFactoryTest, CreatesTheSimBackend) {
  StatusOr<std::unique_ptr<Backend>> backend = CreateBackend("sim");
  ASSERT_TRUE(backend.ok()) << backend.status();
  EXPECT_EQ((*backend)->name(), "sim");
  EXPECT_THAT((*backend)->device_description(), StartsWith("sim v100 (80 SMs"));
}

TEST(BackendFactoryTest, SimPresetAndOptionsComeThrough) {
  BackendConfig config;
  config.sim.noise_sigma = 0.02;
  config.sim.seed = 9;
  StatusOr<std::unique_ptr<Backend>> backend = CreateBackend("sim:h100", config);
  ASSERT_TRUE(backend.ok()) << backend.status();
  EXPECT_THAT((*backend)->device_description(), StartsWith("sim h100 (132 SMs"));
  const auto* sim = dynamic_cast<const sim::SimBackend*>(backend->get());
  ASSERT_NE(sim, nullptr);
  EXPECT_EQ(sim->options().noise_sigma, 0.02);
  EXPECT_EQ(sim->options().seed, 9u);
  EXPECT_EQ(sim->options().device.sm_count, 132);

  StatusOr<std::unique_ptr<Backend>> unknown = CreateBackend("sim:p100");
  EXPECT_EQ(unknown.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(Message(unknown.status()), HasSubstr("\"p100\" (valid: v100, a100, h100"));
  EXPECT_EQ(CreateBackend("sim:").status().code(), absl::StatusCode::kNotFound);
  EXPECT_FALSE(sim->options().device.back_to_back);

  // Stages timed back to back, as the cuda backend times them.
  StatusOr<std::unique_ptr<Backend>> timed = CreateBackend("sim:h100:back-to-back", config);
  ASSERT_TRUE(timed.ok()) << timed.status();
  EXPECT_THAT((*timed)->device_description(), HasSubstr("timed back to back"));
  EXPECT_TRUE(dynamic_cast<const sim::SimBackend*>(timed->get())->options().device.back_to_back);
  EXPECT_TRUE((*timed)->device_floor().back_to_back);
  EXPECT_FALSE((*backend)->device_floor().back_to_back);
  EXPECT_EQ(CreateBackend("sim:back-to-back").status().code(), absl::StatusCode::kNotFound);
  StatusOr<std::unique_ptr<Backend>> typo = CreateBackend("sim:h100:back-to-bak");
  EXPECT_EQ(typo.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(Message(typo.status()),
              HasSubstr("unknown sim timing \"back-to-bak\" in \"sim:h100:back-to-bak\" (valid: "
                        "back-to-back)"));

  config.sim.noise_sigma = -1;
  EXPECT_EQ(CreateBackend("sim", config).status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(BackendFactoryTest, UnknownNameListsTheValidOnes) {
  StatusOr<std::unique_ptr<Backend>> backend = CreateBackend("tpu");
  EXPECT_EQ(backend.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(Message(backend.status()),
              HasSubstr("unknown backend \"tpu\" (valid: cuda, cpu, sim, sim:<v100|a100|"));
}

TEST(BackendFactoryTest, GraphTimedStagesAreForCudaOnly) {
  BackendConfig config;
  config.cuda_graph_stages = true;
  for (const char* name : {"cpu", "sim"}) {
    StatusOr<std::unique_ptr<Backend>> backend = CreateBackend(name, config);
    EXPECT_EQ(backend.status().code(), absl::StatusCode::kInvalidArgument) << name;
    EXPECT_THAT(Message(backend.status()),
                HasSubstr(StrCat("stages timed as CUDA graphs need the cuda backend, not ", name)));
  }
  // The L2 flush is a variant of graph timing: never alone, never off cuda.
  BackendConfig flush;
  flush.cuda_flush_l2 = true;
  EXPECT_THAT(Message(CreateBackend("cuda", flush).status()),
              HasSubstr("flushing the L2 cache before each timed replay needs stages timed as "
                        "CUDA graphs"));
  EXPECT_THAT(Message(CreateBackend("cpu", flush).status()),
              HasSubstr("need the cuda backend, not cpu"));
}

TEST(BackendFactoryTest, CreatesTheOneDnnCpuBackend) {
  BackendConfig config;
  config.cpu_threads = 1;
  StatusOr<std::unique_ptr<Backend>> backend = CreateBackend("cpu", config);
  ASSERT_TRUE(backend.ok()) << backend.status();
  EXPECT_EQ((*backend)->name(), "cpu");
  EXPECT_FALSE((*backend)->device_description().empty());
}

// Without a GPU (or without CUDA compiled in) "cuda" fails saying why; with
// one it gives the cuda backend on device 0, and a device that does not exist
// is named.
TEST(BackendFactoryTest, CudaRunsWhereAGpuAnswersElseSaysWhy) {
  StatusOr<std::unique_ptr<Backend>> backend = CreateBackend("cuda");
#ifdef IOSFARM_HAVE_CUDA
  if (!cuda::ListCudaDevices().ok()) {
    ASSERT_FALSE(backend.ok());
    EXPECT_EQ(backend.status().code(), absl::StatusCode::kUnavailable);
    EXPECT_THAT(Message(backend.status()), StartsWith("no CUDA device"));
  } else {
    ASSERT_TRUE(backend.ok()) << backend.status();
    EXPECT_EQ((*backend)->name(), "cuda");
    BackendConfig config;
    config.cuda_device = 1000;
    StatusOr<std::unique_ptr<Backend>> missing = CreateBackend("cuda", config);
    EXPECT_EQ(missing.status().code(), absl::StatusCode::kNotFound);
    EXPECT_THAT(Message(missing.status()), HasSubstr("CUDA device 1000 not found"));
  }
#else
  EXPECT_EQ(backend.status().code(), absl::StatusCode::kUnimplemented);
  EXPECT_THAT(Message(backend.status()), HasSubstr("cuda backend is not compiled in"));
#endif
}

TEST(BackendFactoryTest, BestAvailableIsCudaOnlyWhenAGpuAnswers) {
  const std::string best = BestAvailableBackendName();
#ifdef IOSFARM_HAVE_CUDA
  EXPECT_EQ(best, cuda::ListCudaDevices().ok() ? "cuda" : "cpu");
#else
  EXPECT_EQ(best, "cpu");
#endif
  // Whatever it picks, creating it gives that backend or that backend's error.
  StatusOr<std::unique_ptr<Backend>> backend = BestAvailableBackend();
  StatusOr<std::unique_ptr<Backend>> direct = CreateBackend(best);
  EXPECT_EQ(backend.status().code(), direct.status().code());
  if (backend.ok()) {
    EXPECT_EQ((*backend)->name(), best);
  }
}

}  // namespace
}  // namespace iosfarm::worker
