// runtime_bench: what the inference runtime costs beyond the schedule's own
// time. In one process, round after round, side by side on the same backend:
//   schedule  Session::TimeSchedule: the schedule alone, timed as `iosfarm
//             run --iterations` times it (inputs in place, nothing copied);
//   session   iosfarm::Session::Run (the public API): inputs checked and
//             copied in, the schedule run, outputs allocated and copied out;
//   into      Session::Run into caller buffers (no allocation);
//   device    (cuda, in a CUDA build) Session::Run with the input and the
//             outputs in the GPU's memory (Memory::kCuda): nothing crosses
//             to the host.
// Prints each round's medians and, over rounds, the median per-call overhead
// (session - schedule) in microseconds and the ratio.
//
//   runtime_bench --model squeezenet --backend cpu --rounds 5 --runs 200
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <functional>
#include <iostream>
#include <memory>
#include <numeric>

#include "common/flags/flags.h"
#include "iosfarm/runtime.h"

#ifdef IOSFARM_RUNTIME_BENCH_CUDA
#include <cuda_runtime_api.h>
#endif

namespace {

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

template <typename F>
double MedianMs(int runs, const F& run) {
  std::vector<double> ms;
  for (int i = 0; i < runs; ++i) {
    const auto start = std::chrono::steady_clock::now();
    run();
    ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
                     .count());
  }
  return Median(ms);
}

#ifdef IOSFARM_RUNTIME_BENCH_CUDA
// `n` floats of device memory holding `host` (zeros when empty); freed on
// scope exit. Throws iosfarm::Error when CUDA refuses.
class DeviceFloats {
 public:
  DeviceFloats(size_t n, const std::vector<float>& host) : n_(n) {
    if (cudaMalloc(reinterpret_cast<void**>(&data_), n * sizeof(float)) != cudaSuccess ||
        (!host.empty() && cudaMemcpy(data_, host.data(), n * sizeof(float),
                                     cudaMemcpyHostToDevice) != cudaSuccess)) {
      throw iosfarm::Error(iosfarm::ErrorCode::kInternal, "cudaMalloc/cudaMemcpy failed");
    }
  }
  ~DeviceFloats() { cudaFree(data_); }
  DeviceFloats(const DeviceFloats&) = delete;
  DeviceFloats& operator=(const DeviceFloats&) = delete;
  std::span<float> span() const { return {data_, n_}; }

 private:
  size_t n_;
  float* data_ = nullptr;
};
#endif

}  // namespace

int main(int argc, char** argv) {
  std::string model = "squeezenet";
  std::string backend_name = "cpu";
  std::string schedule_spec = "sequential";
  int threads = 0;
  int rounds = 5;
  int runs = 200;
  CLI::App app{"runtime_bench: Session::Run against the schedule's own time"};
  app.set_version_flag("--version", std::string("runtime_bench ") + IOSFARM_VERSION);
  app.add_option("--model", model, "zoo name or .onnx file")->capture_default_str();
  app.add_option("--backend", backend_name, "cpu or cuda")->capture_default_str();
  app.add_option("--schedule", schedule_spec, "sequential, greedy or a schedule file")
      ->capture_default_str();
  app.add_option("--threads", threads, "cpu threads (0 = all)")->check(CLI::Range(0, 1024));
  app.add_option("--rounds", rounds, "alternating rounds")
      ->check(CLI::Range(1, 1000))
      ->capture_default_str();
  app.add_option("--runs", runs, "timed runs per round and contender")
      ->check(CLI::Range(1, 1000000))
      ->capture_default_str();
  if (std::optional<int> exit = iosfarm::ParseFlags(app, argc, argv, std::cerr)) return *exit;

  try {
    iosfarm::SessionOptions options;
    options.backend = backend_name;
    options.schedule = schedule_spec;
    options.cpu_threads = threads;
    iosfarm::Session session(model, options);
    const iosfarm::TensorInfo& input = session.inputs().at(0);
    std::vector<float> image(static_cast<size_t>(
        std::accumulate(input.shape.begin(), input.shape.end(), int64_t{1}, std::multiplies<>())));
    for (size_t i = 0; i < image.size(); ++i) image[i] = std::sin(0.001f * i);
    const std::map<std::string, iosfarm::TensorView> feed = {
        {input.name, iosfarm::TensorView(image, input.shape)}};
    std::map<std::string, std::vector<float>> storage;
    std::map<std::string, std::span<float>> buffers;
    for (const iosfarm::TensorInfo& out : session.outputs()) {
      storage[out.name].resize(static_cast<size_t>(
          std::accumulate(out.shape.begin(), out.shape.end(), int64_t{1}, std::multiplies<>())));
      buffers.emplace(out.name, storage[out.name]);
    }
    for (int i = 0; i < 10; ++i) session.Run(feed);  // warm-up

    // The device contender: the same input and output buffers in GPU memory.
    std::function<void()> device_run;
#ifdef IOSFARM_RUNTIME_BENCH_CUDA
    std::vector<std::unique_ptr<DeviceFloats>> device_memory;
    std::map<std::string, iosfarm::TensorView> device_feed;
    std::map<std::string, iosfarm::OutputBuffer> device_outputs;
    if (backend_name.rfind("cuda", 0) == 0) {
      device_memory.push_back(std::make_unique<DeviceFloats>(image.size(), image));
      device_feed.emplace(input.name, iosfarm::TensorView(device_memory.back()->span(), input.shape,
                                                          iosfarm::Memory::kCuda));
      for (const auto& [name, host] : storage) {
        device_memory.push_back(std::make_unique<DeviceFloats>(host.size(), std::vector<float>()));
        device_outputs.emplace(
            name, iosfarm::OutputBuffer(device_memory.back()->span(), iosfarm::Memory::kCuda));
      }
      device_run = [&] { session.Run(device_feed, device_outputs); };
      for (int i = 0; i < 10; ++i) device_run();
    }
#endif

    std::printf("runtime_bench: %s, %s schedule (%d stages), %s\n", model.c_str(),
                session.schedule_kind().c_str(), session.num_stages(), session.device().c_str());
    std::printf("%-6s %14s %14s %14s %14s %14s\n", "round", "schedule ms", "session ms", "into ms",
                "device ms", "overhead us");
    std::vector<double> overhead_us, ratio, into_overhead_us, device_overhead_us;
    for (int round = 0; round < rounds; ++round) {
      const double schedule_ms = session.TimeSchedule(runs, 10).median_ms;
      const double session_ms = MedianMs(runs, [&] { session.Run(feed); });
      const double into_ms = MedianMs(runs, [&] { session.Run(feed, buffers); });
      const double device_ms = device_run ? MedianMs(runs, device_run) : NAN;
      overhead_us.push_back((session_ms - schedule_ms) * 1e3);
      into_overhead_us.push_back((into_ms - schedule_ms) * 1e3);
      if (device_run) device_overhead_us.push_back((device_ms - schedule_ms) * 1e3);
      ratio.push_back(session_ms / schedule_ms);
      std::printf("%-6d %14.4f %14.4f %14.4f %14.4f %14.1f\n", round, schedule_ms, session_ms,
                  into_ms, device_ms, overhead_us.back());
    }
    std::printf(
        "median over %d rounds: Session::Run overhead %.1f us per call (%.3fx the "
        "schedule's own time); into caller buffers %.1f us",
        rounds, Median(overhead_us), Median(ratio), Median(into_overhead_us));
    if (device_run) {
      std::printf("; device buffers %.1f us", Median(device_overhead_us));
    }
    std::printf("\n");
  } catch (const iosfarm::Error& e) {
    std::cerr << "runtime_bench: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
