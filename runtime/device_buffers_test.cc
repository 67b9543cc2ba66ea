// Device buffers on the cuda backend, through the public API only: inputs
// read from and outputs written to the GPU's own memory compute what host
// buffers compute, a producer's stream is waited for, and memory that is not
// the device's is refused with a message that names the buffer; tuning on
// first use times stages the way the session will run them. Skips, saying
// why, where no GPU answers (built only with the CUDA backend).
#include <cuda_runtime_api.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <optional>
#include <string>

#include "iosfarm/runtime.h"

namespace iosfarm {
namespace {

using ::testing::HasSubstr;

// A float array in device memory, freed on scope exit.
class DeviceArray {
 public:
  explicit DeviceArray(size_t n) : n_(n) {
    if (cudaMalloc(reinterpret_cast<void**>(&data_), n * sizeof(float)) != cudaSuccess) {
      data_ = nullptr;
    }
  }
  ~DeviceArray() { cudaFree(data_); }
  DeviceArray(const DeviceArray&) = delete;
  DeviceArray& operator=(const DeviceArray&) = delete;

  float* data() const { return data_; }
  std::span<float> span() const { return {data_, n_}; }
  std::vector<float> Download() const {
    std::vector<float> host(n_);
    EXPECT_EQ(cudaMemcpy(host.data(), data_, n_ * sizeof(float), cudaMemcpyDeviceToHost),
              cudaSuccess);
    return host;
  }

 private:
  size_t n_;
  float* data_ = nullptr;
};

// Same program, same input: the same logits up to the last bits that a
// nondeterministic cuDNN algorithm may change.
void ExpectSameLogits(const std::vector<float>& actual, const std::vector<float>& expected) {
  ASSERT_EQ(actual.size(), expected.size());
  for (size_t i = 0; i < actual.size(); ++i) {
    ASSERT_NEAR(actual[i], expected[i], 1e-5 * std::max(1.0f, std::abs(expected[i])))
        << "logit " << i;
  }
}

class DeviceBuffersTest : public ::testing::TestWithParam<bool> {
 protected:
  void SetUp() override {
    int count = 0;
    if (cudaGetDeviceCount(&count) != cudaSuccess || count == 0) {
      cudaGetLastError();
      GTEST_SKIP() << "no CUDA device answers here";
    }
    SessionOptions options;
    options.backend = "cuda";
    options.cuda_graph = GetParam();
    options.schedule = "greedy";  // several groups per stage: more than one stream
    session_.emplace("squeezenet", options);
    const TensorInfo& in = session_->inputs()[0];
    image_.resize(static_cast<size_t>(in.shape[0] * in.shape[1] * in.shape[2] * in.shape[3]));
    for (size_t i = 0; i < image_.size(); ++i) image_[i] = std::sin(0.001f * i);
    host_logits_ = session_->Run({{in.name, TensorView(image_, in.shape)}})
                       .at(session_->outputs()[0].name)
                       .data;
  }

  std::optional<Session> session_;
  std::vector<float> image_;
  std::vector<float> host_logits_;
};

TEST_P(DeviceBuffersTest, DeviceInputsAndOutputsComputeWhatHostBuffersCompute) {
  const TensorInfo& in = session_->inputs()[0];
  const std::string out = session_->outputs()[0].name;
  DeviceArray input(image_.size()), logits(host_logits_.size());
  ASSERT_NE(input.data(), nullptr);
  ASSERT_NE(logits.data(), nullptr);
  ASSERT_EQ(cudaMemcpy(input.data(), image_.data(), image_.size() * sizeof(float),
                       cudaMemcpyHostToDevice),
            cudaSuccess);
  session_->Run(
      {{in.name, TensorView(input.span(), in.shape, Memory::kCuda)}},
      std::map<std::string, OutputBuffer>{{out, OutputBuffer(logits.span(), Memory::kCuda)}});
  ExpectSameLogits(logits.Download(), host_logits_);

  // Mixed: a device input, a host output.
  std::vector<float> host(host_logits_.size(), -1);
  session_->Run({{in.name, TensorView(input.span(), in.shape, Memory::kCuda)}},
                {{out, std::span<float>(host)}});
  ExpectSameLogits(host, host_logits_);
}

TEST_P(DeviceBuffersTest, WaitsForTheProducersStream) {
  const TensorInfo& in = session_->inputs()[0];
  const std::string out = session_->outputs()[0].name;
  DeviceArray input(image_.size());
  ASSERT_NE(input.data(), nullptr);
  cudaStream_t producer = nullptr;
  ASSERT_EQ(cudaStreamCreateWithFlags(&producer, cudaStreamNonBlocking), cudaSuccess);
  ASSERT_EQ(cudaMemsetAsync(input.data(), 0, image_.size() * sizeof(float), producer), cudaSuccess);
  ASSERT_EQ(cudaStreamSynchronize(producer), cudaSuccess);
  // Queued, not finished, when Run is called: Run must wait for it.
  ASSERT_EQ(cudaMemcpyAsync(input.data(), image_.data(), image_.size() * sizeof(float),
                            cudaMemcpyHostToDevice, producer),
            cudaSuccess);
  const auto outputs =
      session_->Run({{in.name, TensorView(input.span(), in.shape, Memory::kCuda,
                                          reinterpret_cast<uintptr_t>(producer))}});
  ExpectSameLogits(outputs.at(out).data, host_logits_);
  cudaStreamDestroy(producer);
}

TEST_P(DeviceBuffersTest, HostMemoryPassedAsDeviceMemoryIsNamed) {
  const TensorInfo& in = session_->inputs()[0];
  try {
    session_->Run({{in.name, TensorView(image_, in.shape, Memory::kCuda)}});
    ADD_FAILURE() << "host memory was accepted as device memory";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
    EXPECT_THAT(e.what(), HasSubstr("input '" + in.name + "' was passed as device memory"));
  }
  // The session still works after the refusal.
  ExpectSameLogits(
      session_->Run({{in.name, TensorView(image_, in.shape)}}).at(session_->outputs()[0].name).data,
      host_logits_);
}

// A session replayed as one CUDA graph tunes with graph-timed stages under a
// key of their own ("<gpu>-graph-stages", as `iosfarm tune
// --cuda-graph-stages`); an eager session under the GPU's plain key. The two
// never share latencies.
TEST_P(DeviceBuffersTest, TuningTimesStagesTheWayTheSessionRuns) {
  const std::filesystem::path dir =
      std::filesystem::temp_directory_path() /
      ("iosfarm_devbuf_tune_" + std::to_string(getpid()) + (GetParam() ? "_graph" : "_eager"));
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  SessionOptions options;
  options.backend = "cuda";
  options.cuda_graph = GetParam();
  options.schedule = (dir / "squeezenet.schedule.json").string();
  options.tune_if_missing = true;
  options.latency_db = (dir / "latency.db").string();
  Session tuned("squeezenet", options);
  EXPECT_EQ(tuned.schedule_kind(), "ios");
  EXPECT_GT(tuned.tuning().stages_measured, 0);
  EXPECT_EQ(tuned.tuning().device_key.ends_with("-graph-stages"), GetParam())
      << tuned.tuning().device_key;

  // The other mode, same database: nothing of this key is reused.
  SessionOptions other = options;
  other.cuda_graph = !GetParam();
  other.schedule = (dir / "squeezenet.other.schedule.json").string();
  Session retuned("squeezenet", other);
  EXPECT_NE(retuned.tuning().device_key, tuned.tuning().device_key);
  EXPECT_EQ(retuned.tuning().stages_from_database, 0);
  EXPECT_GT(retuned.tuning().stages_measured, 0);
  std::filesystem::remove_all(dir);
}

INSTANTIATE_TEST_SUITE_P(EagerAndCudaGraph, DeviceBuffersTest, ::testing::Bool(),
                         [](const auto& info) { return info.param ? "cuda_graph" : "eager"; });

}  // namespace
}  // namespace iosfarm
