// ProfileBreakdown: where CudaBackend::Profile's host time goes, per stage.
//
// Measuring a stage on the GPU is more than its timed samples: the plan is
// instantiated on the device (arena and weight allocation, uploads, the
// convolution's algorithm choice on a cache miss), captured as a CUDA graph
// when stages are graph-timed, its sample size found from two one-run
// samples, sampled, and released (cudaFree waits for the device). A search
// measures thousands of stages, and the first GPU run spent 7-17 ms on each
// where the samples alone take one or two. The backend sums each part over
// its life and logs the means at debug level every kLogEvery stages and when
// it goes (`iosfarm-worker --log-level debug`; tools/gpu_run's farm step
// collects the last line). Not thread-safe: the backend's device lock guards
// it.
#ifndef IOSFARM_WORKER_BACKENDS_CUDA_PLANNER_PROFILE_BREAKDOWN_H_
#define IOSFARM_WORKER_BACKENDS_CUDA_PLANNER_PROFILE_BREAKDOWN_H_

#include <array>
#include <cstdint>
#include <string>

namespace iosfarm::worker::cuda {

class ProfileBreakdown {
 public:
  enum Part { kInstantiate, kCapture, kSizing, kSamples, kRelease, kNumParts };
  static constexpr int64_t kLogEvery = 256;

  void Add(Part part, double seconds) { seconds_[part] += seconds; }
  // Counts a measured stage; true when a summary is due (every kLogEvery).
  bool StageDone() { return ++stages_ % kLogEvery == 0; }
  int64_t stages() const { return stages_; }

  // "cuda profile breakdown: 512 stages, ms per stage: instantiate 2.104
  // capture 0.000 sizing 0.210 samples 1.330 release 0.402 total 4.046".
  std::string Summary() const;

 private:
  std::array<double, kNumParts> seconds_{};
  int64_t stages_ = 0;
};

}  // namespace iosfarm::worker::cuda

#endif  // IOSFARM_WORKER_BACKENDS_CUDA_PLANNER_PROFILE_BREAKDOWN_H_
